// SPDX-License-Identifier: GPL-2.0

//! Hardware counters of a port (`struct rdma_hw_stats`), which ib_core shows
//! under `/sys/class/infiniband/DEV/ports/N/hw_counters/` and through
//! `rdma statistic`.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//!
//! A driver names its counters once, in a constant table
//! ([`Driver::HW_COUNTERS`](super::driver::Driver::HW_COUNTERS)); ib_core
//! allocates the value array for each port and asks the driver to fill it
//! ([`Driver::get_hw_stats`](super::driver::Driver::get_hw_stats)) at most
//! every few milliseconds.

use super::bindings as b;
use kernel::prelude::*;

/// Corresponds to the kernel's [`struct rdma_stat_desc`]: the name of one
/// counter.
///
/// # Invariants
///
/// `name` points to a NUL-terminated string with `'static` lifetime; `priv`
/// is NULL.
#[repr(transparent)]
pub struct CounterDesc(b::rdma_stat_desc);

// SAFETY: The descriptor only holds a pointer to a static string, never
// written through.
unsafe impl Sync for CounterDesc {}

impl CounterDesc {
    /// A counter called `name` (a file name under `hw_counters/`).
    pub const fn new(name: &'static CStr) -> Self {
        // INVARIANT: `name` is a static, NUL-terminated string.
        Self(b::rdma_stat_desc {
            name: kernel::str::as_char_ptr_in_const_context(name),
            flags: 0,
            priv_: core::ptr::null(),
        })
    }

    /// A table of descriptors as ib_core takes it.
    pub(crate) fn table_ptr(table: &'static [Self]) -> *const b::rdma_stat_desc {
        // `CounterDesc` is `repr(transparent)` over `rdma_stat_desc`.
        table.as_ptr().cast()
    }
}

/// The value array of an `rdma_hw_stats` ib_core allocated for a port.
///
/// # Safety
///
/// `stats` must point to a live `rdma_hw_stats` from `rdma_alloc_hw_stats_struct`
/// that the caller may write (ib_core holds its lock), for `'a`.
pub(crate) unsafe fn values<'a>(stats: *mut b::rdma_hw_stats) -> &'a mut [u64] {
    // SAFETY: Guaranteed by the caller: the structure is live and ours to
    // write; `value` is a flexible array of `num_counters` elements.
    unsafe {
        let n = usize::try_from((*stats).num_counters).unwrap_or(0);
        (*stats).value.as_mut_slice(n)
    }
}
