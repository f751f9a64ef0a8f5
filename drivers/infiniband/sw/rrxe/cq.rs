// SPDX-License-Identifier: GPL-2.0

//! Completion queues: a ring of completions librxe polls in user space.

use crate::{
    device::RrxeDev,
    params as p,
    queue::{Queue, Side},
    rdma::{
        bindings as b,
        driver,
        udata::{Udata, UserPod},
    },
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
        let ring = Queue::new(udata, Side::Produce, attr.cqe, CQE_SIZE)?;
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

/// Adds a completion to `cq` and signals the completion event if the CQ was
/// armed for it (`IB_CQ_NEXT_COMP`, or `IB_CQ_SOLICITED` for a solicited one).
/// A full CQ drops the completion and returns `ENOSPC`.
pub(crate) fn complete(cq: &driver::Cq<RrxeDev>, wc: &b::ib_uverbs_wc, solicited: bool) -> Result {
    let data = cq.data();
    data.ring.lock().push(wc.as_bytes())?;
    let armed = data.notify.load(Ordering::Acquire);
    let fire = armed & b::ib_cq_notify_flags_IB_CQ_NEXT_COMP != 0
        || (solicited && armed & b::ib_cq_notify_flags_IB_CQ_SOLICITED != 0);
    // Notification is one-shot: whoever clears it signals.
    if fire && data.notify.swap(0, Ordering::AcqRel) != 0 {
        cq.completion_event();
    }
    Ok(())
}
