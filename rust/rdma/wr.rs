// SPDX-License-Identifier: GPL-2.0

//! Work requests posted by in-kernel callers (`struct ib_send_wr`,
//! `struct ib_recv_wr` and the typed send requests that embed the former).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//!
//! ib_core hands `post_send`/`post_recv` a linked list; the abstraction walks
//! it and gives the driver one read-only view per request. Which typed
//! request embeds an `ib_send_wr` follows from the QP type (UD and GSI QPs
//! take `ib_ud_wr`) and the opcode (`ib_rdma_wr`, `ib_atomic_wr`), as the
//! ULP contract of `ib_post_send` says.

use super::{
    bindings as b,
    driver::{Ah, Driver},
};
use core::marker::PhantomData;

/// A scatter/gather element of a kernel work request.
pub type Sge = b::ib_sge;

/// The scatter list `(sg_list, num_sge)` of a request.
///
/// # Safety
///
/// `list` must be NULL or point to `n` valid elements that outlive `'a`.
unsafe fn sges<'a>(list: *mut b::ib_sge, n: i32) -> &'a [Sge] {
    match usize::try_from(n) {
        Ok(n) if n > 0 && !list.is_null() => {
            // SAFETY: Guaranteed by the caller.
            unsafe { core::slice::from_raw_parts(list, n) }
        }
        _ => &[],
    }
}

/// One send work request of an in-kernel caller.
///
/// # Invariants
///
/// `raw` is a request ib_core passed to `post_send` for a QP of driver `T`;
/// if `ud`, it is embedded in a `struct ib_ud_wr` whose `ah` is an AH of `T`.
/// If `raw` is flagged `IB_SEND_INLINE`, the `addr` of each of its SGEs is
/// the kernel virtual address of `length` readable bytes for the call (the
/// ULP contract of inline sends: the device copies the data at the post and
/// ignores the `lkey`).
pub struct SendWr<'a, T: Driver> {
    raw: &'a b::ib_send_wr,
    ud: bool,
    _t: PhantomData<T>,
}

/// The datagram part of a send request on a UD or GSI QP.
pub struct UdWr<'a, T: Driver> {
    /// Where the datagram goes.
    pub ah: &'a Ah<T>,
    /// Destination QP number.
    pub remote_qpn: u32,
    /// Q_Key (the QP's own if its high bit is set).
    pub remote_qkey: u32,
}

impl<'a, T: Driver> SendWr<'a, T> {
    /// # Safety
    ///
    /// As the type invariant requires.
    pub(crate) unsafe fn new(raw: &'a b::ib_send_wr, ud: bool) -> Self {
        Self {
            raw,
            ud,
            _t: PhantomData,
        }
    }

    /// The caller's 64-bit identifier (`wr_id`, or the `wr_cqe` pointer),
    /// returned unchanged in the completion.
    pub fn wr_id(&self) -> u64 {
        // SAFETY: Both members of the union are 64 bits; any bit pattern is a
        // valid `u64`.
        unsafe { self.raw.__bindgen_anon_1.wr_id }
    }

    /// `enum ib_wr_opcode`.
    pub fn opcode(&self) -> u32 {
        self.raw.opcode
    }

    /// `IB_SEND_*` flags.
    pub fn send_flags(&self) -> u32 {
        self.raw.send_flags as u32
    }

    /// Immediate data (as it travels, big endian) or the R_Key to invalidate.
    pub fn ex(&self) -> u32 {
        // SAFETY: Both members of the union are 32-bit integers.
        unsafe { self.raw.ex.invalidate_rkey }
    }

    /// The gather list.
    pub fn sges(&self) -> &'a [Sge] {
        // SAFETY: ib_core passes a valid list of `num_sge` elements for the call.
        unsafe { sges(self.raw.sg_list, self.raw.num_sge) }
    }

    /// Copies the data of an inline request (`IB_SEND_INLINE`), the bytes
    /// its SGEs point at, one after another into `out`, and returns their
    /// length; `None` if the request is not inline or its data does not fit.
    pub fn copy_inline(&self, out: &mut [u8]) -> Option<usize> {
        if self.send_flags() & b::ib_send_flags_IB_SEND_INLINE as u32 == 0 {
            return None;
        }
        let mut at = 0usize;
        for s in self.sges() {
            let len = usize::try_from(s.length).ok()?;
            let end = at.checked_add(len)?;
            let dst = out.get_mut(at..end)?;
            if len != 0 {
                let src = usize::try_from(s.addr).ok()? as *const u8;
                // SAFETY: By the type invariant, an inline request's SGE
                // addresses `len` readable bytes of kernel memory for the call.
                let src = unsafe { core::slice::from_raw_parts(src, len) };
                dst.copy_from_slice(src);
            }
            at = end;
        }
        Some(at)
    }

    /// The datagram fields, for a request on a UD or GSI QP.
    pub fn ud(&self) -> Option<UdWr<'a, T>> {
        if !self.ud {
            return None;
        }
        // SAFETY: By the invariant, on a UD/GSI QP the request is the `wr`
        // member of an `ib_ud_wr`.
        let ud = unsafe {
            &*kernel::container_of!(core::ptr::from_ref(self.raw).cast_mut(), b::ib_ud_wr, wr)
        };
        if ud.ah.is_null() {
            return None;
        }
        Some(UdWr {
            // SAFETY: By the invariant `ah` is a live AH of driver `T`.
            ah: unsafe { Ah::<T>::from_raw(ud.ah) },
            remote_qpn: ud.remote_qpn,
            remote_qkey: ud.remote_qkey,
        })
    }

    /// Remote address and key of an RDMA WRITE/READ request.
    pub fn rdma(&self) -> Option<(u64, u32)> {
        use b::*;
        if self.ud
            || ![
                ib_wr_opcode_IB_WR_RDMA_WRITE,
                ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM,
                ib_wr_opcode_IB_WR_RDMA_READ,
            ]
            .contains(&self.raw.opcode)
        {
            return None;
        }
        // SAFETY: RDMA opcodes are posted in an `ib_rdma_wr` (ULP contract).
        let r = unsafe {
            &*kernel::container_of!(core::ptr::from_ref(self.raw).cast_mut(), b::ib_rdma_wr, wr)
        };
        Some((r.remote_addr, r.rkey))
    }

    /// Remote address, compare/add and swap operands and key of an atomic.
    pub fn atomic(&self) -> Option<(u64, u64, u64, u32)> {
        use b::*;
        if self.ud
            || ![
                ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP,
                ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD,
            ]
            .contains(&self.raw.opcode)
        {
            return None;
        }
        // SAFETY: Atomic opcodes are posted in an `ib_atomic_wr` (ULP contract).
        let a = unsafe {
            &*kernel::container_of!(
                core::ptr::from_ref(self.raw).cast_mut(),
                b::ib_atomic_wr,
                wr
            )
        };
        Some((a.remote_addr, a.compare_add, a.swap, a.rkey))
    }
}

impl<T: Driver> SendWr<'_, T> {
    /// The new key and access flags of a fast registration
    /// (`IB_WR_REG_MR`), with the local key the region had when posted.
    pub fn reg(&self) -> Option<RegWr> {
        if self.ud || self.raw.opcode != b::ib_wr_opcode_IB_WR_REG_MR {
            return None;
        }
        // SAFETY: REG_MR is posted in an `ib_reg_wr` (ULP contract).
        let r = unsafe {
            &*kernel::container_of!(core::ptr::from_ref(self.raw).cast_mut(), b::ib_reg_wr, wr)
        };
        if r.mr.is_null() {
            return None;
        }
        Some(RegWr {
            key: r.key,
            access: r.access as u32,
            // SAFETY: The caller's region stays alive while it is posted.
            mr_lkey: unsafe { (*r.mr).lkey },
        })
    }
}

/// A fast registration request.
pub struct RegWr {
    /// The key the region is registered under.
    pub key: u32,
    /// `IB_ACCESS_*` flags.
    pub access: u32,
    /// The region's local key at posting (its index must match `key`'s).
    pub mr_lkey: u32,
}

/// One receive work request of an in-kernel caller.
pub struct RecvWr<'a> {
    raw: &'a b::ib_recv_wr,
}

impl<'a> RecvWr<'a> {
    pub(crate) fn new(raw: &'a b::ib_recv_wr) -> Self {
        Self { raw }
    }

    /// The caller's 64-bit identifier (`wr_id` or `wr_cqe`).
    pub fn wr_id(&self) -> u64 {
        // SAFETY: Both members of the union are 64 bits.
        unsafe { self.raw.__bindgen_anon_1.wr_id }
    }

    /// The scatter list.
    pub fn sges(&self) -> &'a [Sge] {
        // SAFETY: ib_core passes a valid list of `num_sge` elements for the call.
        unsafe { sges(self.raw.sg_list, self.raw.num_sge) }
    }
}
