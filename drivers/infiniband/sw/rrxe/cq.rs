// SPDX-License-Identifier: GPL-2.0

//! Completion queues: a ring of completions, polled by librxe in user space
//! (`struct ib_uverbs_wc` entries) or by an in-kernel caller through
//! `poll_cq` (`struct ib_wc` entries, with the QP pointer ib_core expects).

use crate::{
    device::RrxeDev,
    params as p,
    queue::{KernelSide, Queue, Side},
    rdma::{
        bindings as b, driver,
        udata::{Udata, UserPod},
    },
    uapi::CQE_SIZE,
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{new_spinlock_irq, prelude::*, sync::SpinLockIrq};

/// Driver data of a completion queue.
#[pin_data]
pub(crate) struct Cq {
    /// The producer side (QP runs in any context, and the verbs).
    #[pin]
    ring: SpinLockIrq<Queue>,
    /// For a kernel CQ, the consumer side `poll_cq` uses, possibly in atomic
    /// context (hence a spinlock with interrupts off).
    #[pin]
    kernel: SpinLockIrq<Option<KernelSide>>,
    is_kernel: bool,
    /// Armed notification (`IB_CQ_SOLICITED` / `IB_CQ_NEXT_COMP`).
    notify: AtomicU32,
}

fn check_size(cqe: u32) -> Result {
    if cqe == 0 || cqe > p::MAX_CQE {
        return Err(EINVAL);
    }
    Ok(())
}

/// Bytes of a kernel completion entry.
const KERNEL_CQE_SIZE: usize = core::mem::size_of::<b::ib_wc>();

impl Cq {
    /// Creates a CQ of at least `attr.cqe` entries, mapped into the caller
    /// if it is user space.
    pub(crate) fn new(
        attr: &b::ib_cq_init_attr,
        cqe: &mut u32,
        udata: &mut Udata,
    ) -> Result<impl PinInit<Self, Error>> {
        if attr.flags != 0 {
            return Err(EOPNOTSUPP);
        }
        check_size(attr.cqe)?;
        let is_kernel = !udata.is_user();
        let (ring, kside) = if is_kernel {
            let ring = Queue::new_kernel(Side::Produce, attr.cqe, KERNEL_CQE_SIZE)?;
            let kside = ring.kernel_side();
            (ring, Some(kside))
        } else {
            let ring = Queue::new(udata, Side::Produce, attr.cqe, CQE_SIZE)?;
            udata.write(&b::rxe_create_cq_resp { mi: ring.mminfo() })?;
            (ring, None)
        };
        *cqe = ring.capacity();
        Ok(try_pin_init!(Self {
            ring <- new_spinlock_irq!(ring),
            kernel <- new_spinlock_irq!(kside),
            is_kernel,
            notify: AtomicU32::new(0),
        }))
    }

    /// Resizes to at least `cqe` entries, keeping pending completions.
    pub(crate) fn resize(&self, cqe: u32, udata: &mut Udata) -> Result<u32> {
        if self.is_kernel {
            return Err(EOPNOTSUPP);
        }
        check_size(cqe)?;
        let shape = self.ring.lock().shape();
        let mut new = Queue::new_like(udata, shape, cqe)?;
        udata.write(&b::rxe_resize_cq_resp { mi: new.mminfo() })?;
        let mut ring = self.ring.lock();
        ring.move_pending_to(&mut new)?;
        let cap = new.capacity();
        let old = core::mem::replace(&mut *ring, new);
        drop(ring);
        // The old ring's mapping is removed outside the lock.
        drop(old);
        Ok(cap)
    }

    /// Arms notification; reports whether completions are already waiting.
    pub(crate) fn req_notify(&self, flags: u32) -> bool {
        self.notify.fetch_or(
            flags & b::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK,
            Ordering::AcqRel,
        );
        if flags & b::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS == 0 {
            return false;
        }
        if self.is_kernel {
            // Possibly atomic context: only the consumer side's spinlock.
            Option::as_ref(&*self.kernel.lock()).is_some_and(|k| k.count() != 0)
        } else {
            self.ring.lock().count() != 0
        }
    }

    /// Takes completions for an in-kernel caller (`poll_cq`).
    pub(crate) fn poll(&self, out: &mut [b::ib_wc]) -> usize {
        let mut guard = self.kernel.lock();
        let Some(k) = Option::as_mut(&mut *guard) else {
            return 0;
        };
        let mut n = 0usize;
        for wc in out.iter_mut() {
            // SAFETY: A kernel CQ's ring only ever gets `ib_wc`s (`complete`).
            let Some(v) = (unsafe { k.pop_value::<b::ib_wc>() }) else {
                break;
            };
            *wc = v;
            n = n.saturating_add(1);
        }
        n
    }
}

/// The in-kernel form of a completion of the QP at `qp` (`struct ib_qp`).
fn kernel_wc(wc: &b::ib_uverbs_wc, qp: usize) -> b::ib_wc {
    let mut k = b::ib_wc {
        status: wc.status,
        opcode: wc.opcode,
        vendor_err: wc.vendor_err,
        byte_len: wc.byte_len,
        qp: qp as *mut b::ib_qp,
        src_qp: wc.src_qp,
        slid: wc.slid.into(),
        wc_flags: wc.wc_flags as i32,
        pkey_index: wc.pkey_index,
        sl: wc.sl,
        dlid_path_bits: wc.dlid_path_bits,
        port_num: wc.port_num.into(),
        ..Default::default()
    };
    k.__bindgen_anon_1.wr_id = wc.wr_id;
    // SAFETY: Both members of the union are 32-bit integers.
    k.ex.invalidate_rkey = unsafe { wc.ex.invalidate_rkey };
    k
}

/// How a received message arrived, which an in-kernel consumer's completion
/// of it reports (user space's completion has no room for it, as in rxe).
#[derive(Clone, Copy)]
pub(crate) struct Arrival {
    /// Over IPv6 (else IPv4): `network_hdr_type`, which ib_core's address
    /// resolution from a completion (`ib_init_ah_attr_from_wc`) reads.
    pub(crate) ipv6: bool,
    /// The VLAN it came in on (`IB_WC_WITH_VLAN`; the connection manager
    /// finds the receiving GID by it).
    pub(crate) vlan: Option<u16>,
}

/// Adds a completion as [`complete`] does; if the CQ overran, tells its
/// consumer with `IB_EVENT_CQ_ERR` (as the spec asks) and returns `false`.
pub(crate) fn complete_or_report(
    cq: &driver::Cq<RrxeDev>,
    wc: &b::ib_uverbs_wc,
    qp: usize,
    solicited: bool,
) -> bool {
    complete_or_report_received(cq, wc, qp, solicited, None)
}

/// As [`complete_or_report`], for a receive; a successful one tells an
/// in-kernel consumer how the message arrived (`arrival`), as rxe's do.
pub(crate) fn complete_or_report_received(
    cq: &driver::Cq<RrxeDev>,
    wc: &b::ib_uverbs_wc,
    qp: usize,
    solicited: bool,
    arrival: Option<Arrival>,
) -> bool {
    if complete(cq, wc, qp, solicited, arrival).is_err() {
        cq.error_event();
        return false;
    }
    true
}

/// Adds a completion to `cq` (of the QP whose `struct ib_qp` is at `qp`) and
/// signals the completion event if the CQ was armed for it
/// (`IB_CQ_NEXT_COMP`, or `IB_CQ_SOLICITED` for a solicited one). A full CQ
/// drops the completion and returns `ENOSPC`.
fn complete(
    cq: &driver::Cq<RrxeDev>,
    wc: &b::ib_uverbs_wc,
    qp: usize,
    solicited: bool,
    arrival: Option<Arrival>,
) -> Result {
    let data = cq.data();
    if data.is_kernel {
        let mut k = kernel_wc(wc, qp);
        if let Some(a) = arrival.filter(|_| wc.status == b::ib_wc_status_IB_WC_SUCCESS) {
            k.wc_flags |= b::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE as i32;
            k.network_hdr_type = if a.ipv6 {
                b::rdma_network_type_RDMA_NETWORK_IPV6
            } else {
                b::rdma_network_type_RDMA_NETWORK_IPV4
            } as u8;
            if let Some(vlan) = a.vlan {
                k.wc_flags |= b::ib_wc_flags_IB_WC_WITH_VLAN as i32;
                k.vlan_id = vlan;
            }
        }
        data.ring.lock().push_value(&k)?;
    } else {
        data.ring.lock().push(wc.as_bytes())?;
    }
    let armed = data.notify.load(Ordering::Acquire);
    let fire = armed & b::ib_cq_notify_flags_IB_CQ_NEXT_COMP != 0
        || (solicited && armed & b::ib_cq_notify_flags_IB_CQ_SOLICITED != 0);
    // Notification is one-shot: whoever clears it signals.
    if fire && data.notify.swap(0, Ordering::AcqRel) != 0 {
        cq.completion_event();
    }
    Ok(())
}
