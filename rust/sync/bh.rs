// SPDX-License-Identifier: GPL-2.0

//! Sections that run with bottom halves (softirqs) disabled on this CPU.
//!
//! Some kernel per-CPU structures may only be touched from softirq context
//! or with softirqs disabled, because a softirq on the same CPU uses them
//! too; `struct dst_cache` is one (its per-CPU slots are guarded by a
//! `local_lock_nested_bh`, which lockdep checks). [`disable`] gives a guard
//! under which such code may run from process context as well.
//!
//! C header: [`include/linux/bottom_half.h`](srctree/include/linux/bottom_half.h).

use crate::bindings as b;

/// Softirqs are disabled on this CPU while this value lives.
///
/// # Invariants
///
/// Made only by [`disable`], after `local_bh_disable`; dropping it calls
/// `local_bh_enable` once, on the same CPU (the guard is not [`Send`]).
pub struct BhDisabled {
    _not_send: core::marker::PhantomData<*mut ()>,
}

/// Whether [`disable`] may be called here: not in a hard interrupt, nor
/// with hard interrupts disabled.
pub fn may_disable() -> bool {
    // SAFETY: Reads this CPU's context; no preconditions.
    unsafe { b::rrxe_bh_may_disable() }
}

/// Disables softirqs on this CPU until the returned guard is dropped.
///
/// Nests: in softirq context or under another guard it only deepens the
/// count. Must not be called with hard interrupts disabled, since enabling
/// softirqs again may run the pending ones.
#[must_use = "softirqs are enabled again as soon as the guard is dropped"]
pub fn disable() -> BhDisabled {
    // SAFETY: Always safe outside hard interrupts (documented above); the
    // guard undoes it.
    unsafe { b::rrxe_local_bh_disable() };
    BhDisabled {
        _not_send: core::marker::PhantomData,
    }
}

impl Drop for BhDisabled {
    fn drop(&mut self) {
        // SAFETY: Pairs with the `local_bh_disable` in `disable`, on the same
        // CPU (type invariant).
        unsafe { b::rrxe_local_bh_enable() };
    }
}
