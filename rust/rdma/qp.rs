// SPDX-License-Identifier: GPL-2.0

//! Queue pair and shared receive queue attributes.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//!
//! The create attributes carry pointers to other objects (CQs, SRQ, XRC
//! domain); the driver only sees what it needs through methods, and the
//! capabilities it may adjust.

use super::bindings as b;
use core::ops::Deref;

/// Initial attributes of a queue pair being created (`struct ib_qp_init_attr`).
pub struct QpInit<'a>(&'a mut b::ib_qp_init_attr, usize);

impl<'a> QpInit<'a> {
    pub(crate) fn new(raw: &'a mut b::ib_qp_init_attr, qp: usize) -> Self {
        Self(raw, qp)
    }

    /// Address of the `struct ib_qp` being created, for completions of kernel
    /// CQs (`ib_wc.qp`); never dereferenced by the driver.
    pub fn qp_addr(&self) -> usize {
        self.1
    }

    /// The QP being created, as the target of its asynchronous events.
    pub fn event_target(&self) -> QpEvents {
        // INVARIANT: ib_core passes the QP being created, with its event
        // handler already set; it lives until its `destroy_qp` returns.
        QpEvents(self.1 as *mut b::ib_qp)
    }
}

/// Where a QP's asynchronous events go (`IB_EVENT_QP_FATAL`,
/// `IB_EVENT_QP_ACCESS_ERR`, ...).
///
/// # Invariants
///
/// Points to the `struct ib_qp` of a QP from its `create_qp` until its
/// `destroy_qp` returns. Not `Clone`: it is made once per QP, and the driver
/// must drop it before `destroy_qp` returns (with the rest of what it keeps
/// of the QP until then).
pub struct QpEvents(*mut b::ib_qp);

// SAFETY: Raising an event only reads fields ib_core set at creation and
// calls ib_core's handler, which may run in any task.
unsafe impl Send for QpEvents {}
// SAFETY: As above.
unsafe impl Sync for QpEvents {}

impl QpEvents {
    /// Raises `event` (`enum ib_event_type`) on the QP.
    pub fn raise(&self, event: b::ib_event_type) {
        // SAFETY: By the invariant the QP is alive, with its handler set.
        unsafe { super::driver::qp_event(self.0, event) };
    }
}

impl QpInit<'_> {
    /// Transport type (`enum ib_qp_type`: RC, UC, UD, ...).
    pub fn qp_type(&self) -> u32 {
        self.0.qp_type
    }

    /// `IB_QP_CREATE_*` flags.
    pub fn create_flags(&self) -> u32 {
        self.0.create_flags
    }

    /// Whether every send work request generates a completion.
    pub fn sq_sig_all(&self) -> bool {
        self.0.sq_sig_type == b::ib_sig_type_IB_SIGNAL_ALL_WR
    }

    /// Whether receives come from a shared receive queue.
    pub fn has_srq(&self) -> bool {
        !self.0.srq.is_null()
    }

    pub(crate) fn srq(&self) -> *mut b::ib_srq {
        self.0.srq
    }

    /// Requested capabilities; the driver writes back what it provides.
    pub fn cap(&mut self) -> &mut b::ib_qp_cap {
        &mut self.0.cap
    }
}

/// Initial attributes of a shared receive queue (`struct ib_srq_init_attr`).
pub struct SrqInit<'a>(&'a mut b::ib_srq_init_attr);

impl<'a> SrqInit<'a> {
    pub(crate) fn new(raw: &'a mut b::ib_srq_init_attr) -> Self {
        Self(raw)
    }

    /// Kind of SRQ (`enum ib_srq_type`).
    pub fn srq_type(&self) -> u32 {
        self.0.srq_type
    }

    /// Requested size, SGE count and limit; the driver writes back what it provides.
    pub fn attr(&mut self) -> &mut b::ib_srq_attr {
        &mut self.0.attr
    }
}

/// Attributes of a `modify_qp` call (`struct ib_qp_attr`), read-only.
pub struct QpAttr<'a>(&'a b::ib_qp_attr);

impl<'a> QpAttr<'a> {
    pub(crate) fn new(raw: &'a b::ib_qp_attr) -> Self {
        Self(raw)
    }

    /// The source GID of the address vector (`IB_QP_AV`): the raw 16 bytes of
    /// the GID table entry ib_core resolved for `ah_attr.grh.sgid_index`.
    pub fn source_gid(&self) -> Option<[u8; 16]> {
        ah_source_gid(&self.0.ah_attr)
    }

    /// The interface of the source GID's entry (a VLAN device, for a GID
    /// of one), which packets of the address vector leave through.
    pub fn source_ifindex(&self) -> Option<i32> {
        ah_source_ifindex(&self.0.ah_attr)
    }
}

/// The address vector of a `create_ah` call (`struct rdma_ah_attr`), read-only.
pub struct AhAttr<'a>(&'a b::rdma_ah_attr);

impl<'a> AhAttr<'a> {
    pub(crate) fn new(raw: &'a b::rdma_ah_attr) -> Self {
        Self(raw)
    }

    /// The source GID: the raw 16 bytes of the GID table entry ib_core
    /// resolved for `grh.sgid_index`.
    pub fn source_gid(&self) -> Option<[u8; 16]> {
        ah_source_gid(self.0)
    }

    /// The interface of the source GID's entry, as for [`QpAttr`].
    pub fn source_ifindex(&self) -> Option<i32> {
        ah_source_ifindex(self.0)
    }
}

impl Deref for AhAttr<'_> {
    type Target = b::rdma_ah_attr;
    fn deref(&self) -> &b::rdma_ah_attr {
        self.0
    }
}

/// The source GID of an address vector ib_core handed to a verb.
///
/// Only for attributes ib_core passed in (whose `sgid_attr` it set), hence
/// not public: the wrappers above are the only callers.
fn ah_source_gid(attr: &b::rdma_ah_attr) -> Option<[u8; 16]> {
    let entry = attr.grh.sgid_attr;
    if entry.is_null() {
        return None;
    }
    // SAFETY: ib_core sets `sgid_attr` to a GID table entry it holds a
    // reference on while the verb runs, which is as long as `attr` is
    // borrowed; `gid.raw` is plain bytes.
    Some(unsafe { (*entry).gid.raw })
}

/// The interface of the source GID entry of an address vector ib_core
/// handed to a verb (as [`ah_source_gid`]); `None` if it has none.
fn ah_source_ifindex(attr: &b::rdma_ah_attr) -> Option<i32> {
    let entry = attr.grh.sgid_attr;
    if entry.is_null() {
        return None;
    }
    // SAFETY: As in `ah_source_gid`; the shim reads the entry's net device
    // under the RCU read lock.
    let ifindex = unsafe { b::rrxe_gid_attr_ifindex(entry) };
    (ifindex > 0).then_some(ifindex)
}

impl Deref for QpAttr<'_> {
    type Target = b::ib_qp_attr;
    fn deref(&self) -> &b::ib_qp_attr {
        self.0
    }
}

/// Whether the IB specification's QP state table allows moving a QP of
/// `qp_type` from `cur` to `next` with exactly the attributes in `mask`.
pub fn modify_is_ok(cur: u32, next: u32, qp_type: u32, mask: u32) -> bool {
    // SAFETY: `ib_modify_qp_is_ok` is a pure table lookup; out-of-range
    // states or types are rejected by it.
    unsafe { b::ib_modify_qp_is_ok(cur, next, qp_type, mask) }
}
