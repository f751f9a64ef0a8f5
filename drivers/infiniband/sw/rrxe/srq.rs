// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: one receive ring for many QPs, with a low-water
//! limit that raises `IB_EVENT_SRQ_LIMIT_REACHED` once armed. A user SRQ's
//! ring is mapped into its process, which posts into it; an in-kernel
//! caller's ring is in kernel memory, and `post_srq_recv` writes its WQEs.

use crate::{
    index::Index,
    params as p,
    queue::{KernelSide, Queue, Side},
    rdma::{bindings as b, qp::SrqInit, udata::Udata, wr::RecvWr},
    uapi::{RECV_WQE_HDR, SGE_SIZE},
    wqe,
};
use kernel::{new_spinlock_irq, prelude::*, sync::SpinLockIrq};

struct State {
    ring: Queue,
    limit: u32,
    /// The producer side of an in-kernel caller's ring.
    kernel: Option<KernelSide>,
}

/// Driver data of a shared receive queue.
#[pin_data]
pub(crate) struct Srq {
    num: Index,
    max_sge: u32,
    /// Taken by QP runs in any context, and by the verbs.
    #[pin]
    state: SpinLockIrq<State>,
}

fn check_wr(max_wr: u32) -> Result {
    if max_wr == 0 || max_wr > p::MAX_SRQ_WR {
        return Err(EINVAL);
    }
    Ok(())
}

impl Srq {
    /// Creates an SRQ with its ring mapped into the caller.
    pub(crate) fn new(
        num: Index,
        init: &mut SrqInit<'_>,
        udata: &mut Udata,
    ) -> Result<impl PinInit<Self, Error>> {
        if init.srq_type() != b::ib_srq_type_IB_SRQT_BASIC {
            return Err(EOPNOTSUPP);
        }
        let attr = init.attr();
        check_wr(attr.max_wr)?;
        if attr.max_sge == 0 || attr.max_sge > p::MAX_SRQ_SGE {
            return Err(EINVAL);
        }
        // `max_sge` was checked against MAX_SRQ_SGE above.
        let elem = RECV_WQE_HDR.saturating_add((attr.max_sge as usize).saturating_mul(SGE_SIZE));
        let user = udata.is_user();
        let ring = if user {
            Queue::new(udata, Side::Consume, attr.max_wr, elem)?
        } else {
            Queue::new_kernel(Side::Consume, attr.max_wr, elem)?
        };
        if attr.srq_limit > ring.capacity() {
            return Err(EINVAL);
        }
        if user {
            udata.write(&b::rxe_create_srq_resp {
                mi: ring.mminfo(),
                srq_num: num.get(),
                reserved: 0,
            })?;
        }
        let kernel = (!user).then(|| ring.kernel_side());
        attr.max_wr = ring.capacity();
        let (max_sge, limit) = (attr.max_sge, attr.srq_limit);
        Ok(try_pin_init!(Self {
            num,
            max_sge,
            state <- new_spinlock_irq!(State { ring, limit, kernel }),
        }))
    }

    /// Resizes (`IB_SRQ_MAX_WR`) and/or arms the limit (`IB_SRQ_LIMIT`).
    pub(crate) fn modify(&self, attr: &b::ib_srq_attr, mask: u32, udata: &mut Udata) -> Result {
        if mask & b::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0 {
            // Resizing maps a new ring into the process: user SRQs only.
            if !udata.is_user() {
                return Err(EOPNOTSUPP);
            }
            check_wr(attr.max_wr)?;
            let (limit, shape) = {
                let st = self.state.lock();
                (st.limit, st.ring.shape())
            };
            if limit != 0 && attr.max_wr < limit {
                return Err(EINVAL);
            }
            // librxe passes where to write the new ring's mmap information.
            let cmd: b::rxe_modify_srq_cmd = udata.read()?;
            let mut ring = Queue::new_like(udata, shape, attr.max_wr)?;
            udata.write_to_user(cmd.mmap_info_addr, &ring.mminfo())?;
            let mut st = self.state.lock();
            st.ring.move_pending_to(&mut ring)?;
            let old = core::mem::replace(&mut st.ring, ring);
            drop(st);
            // The old ring's mapping is removed outside the lock.
            drop(old);
        }
        let mut st = self.state.lock();
        if mask & b::ib_srq_attr_mask_IB_SRQ_LIMIT != 0 {
            if attr.srq_limit > st.ring.capacity() {
                return Err(EINVAL);
            }
            st.limit = attr.srq_limit;
        }
        Ok(())
    }

    /// Takes the oldest receive WQE into `buf`. Returns whether there was one,
    /// and whether taking it crossed the armed limit (which disarms it; the
    /// caller raises `IB_EVENT_SRQ_LIMIT_REACHED`).
    pub(crate) fn take(&self, buf: &mut wqe::RecvCopy) -> (bool, bool) {
        let mut st = self.state.lock();
        if !wqe::peek_recv(&st.ring, buf) {
            return (false, false);
        }
        st.ring.advance();
        let crossed = st.limit != 0 && st.ring.count() < st.limit;
        if crossed {
            st.limit = 0;
        }
        (true, crossed)
    }

    /// Queues a receive request of an in-kernel caller (`ib_post_srq_recv`);
    /// `EINVAL` for a user SRQ, `ENOMEM` when the ring is full.
    pub(crate) fn post_recv(&self, wr: &RecvWr<'_>) -> Result {
        let mut wqe = [0u8; wqe::RECV_WQE_READ_ALL];
        wqe::kernel_recv(&mut wqe, wr, self.max_sge as usize)?;
        let mut st = self.state.lock();
        st.kernel.as_mut().ok_or(EINVAL)?.push(&wqe)
    }

    /// Most SGEs a receive request of this SRQ may have.
    pub(crate) fn max_sge(&self) -> u32 {
        self.max_sge
    }

    /// Reports the attributes (`query_srq`).
    pub(crate) fn query(&self, attr: &mut b::ib_srq_attr) {
        let st = self.state.lock();
        attr.max_wr = st.ring.capacity();
        attr.max_sge = self.max_sge;
        attr.srq_limit = st.limit;
    }
}
