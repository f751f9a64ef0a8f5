// SPDX-License-Identifier: GPL-2.0

//! Completion queues: a ring of completions librxe polls in user space.

use crate::{
    params as p,
    queue::Queue,
    rdma::{bindings as b, udata::Udata},
    uapi::CQE_SIZE,
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{new_mutex, prelude::*, sync::Mutex};

/// Driver data of a completion queue.
#[pin_data]
pub(crate) struct Cq {
    #[pin]
    ring: Mutex<Queue>,
    /// Armed notification (`IB_CQ_SOLICITED` / `IB_CQ_NEXT_COMP`).
    notify: AtomicU32,
}

fn check_size(cqe: u32) -> Result {
    if cqe == 0 || cqe > p::MAX_CQE {
        return Err(EINVAL);
    }
    Ok(())
}

impl Cq {
    /// Creates a CQ of at least `attr.cqe` entries mapped into the caller.
    pub(crate) fn new(
        attr: &b::ib_cq_init_attr,
        cqe: &mut u32,
        udata: &mut Udata,
    ) -> Result<impl PinInit<Self, Error>> {
        if attr.flags != 0 {
            return Err(EOPNOTSUPP);
        }
        if !udata.is_user() {
            return Err(EOPNOTSUPP);
        }
        check_size(attr.cqe)?;
        let ring = Queue::new(udata, attr.cqe, CQE_SIZE)?;
        udata.write(&b::rxe_create_cq_resp { mi: ring.mminfo() })?;
        *cqe = ring.capacity();
        Ok(try_pin_init!(Self {
            ring <- new_mutex!(ring),
            notify: AtomicU32::new(0),
        }))
    }

    /// Resizes to at least `cqe` entries, keeping pending completions.
    pub(crate) fn resize(&self, cqe: u32, udata: &mut Udata) -> Result<u32> {
        check_size(cqe)?;
        let mut ring = self.ring.lock();
        let new = ring.resized(udata, cqe)?;
        udata.write(&b::rxe_resize_cq_resp { mi: new.mminfo() })?;
        let cap = new.capacity();
        *ring = new;
        Ok(cap)
    }

    /// Arms notification; reports whether completions are already waiting.
    pub(crate) fn req_notify(&self, flags: u32) -> bool {
        self.notify
            .fetch_or(flags & b::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK, Ordering::AcqRel);
        flags & b::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0 && self.ring.lock().count() != 0
    }
}
