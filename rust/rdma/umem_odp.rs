// SPDX-License-Identifier: GPL-2.0

//! User memory paged in on demand (`struct ib_umem_odp`).
//!
//! C header: [`include/rdma/ib_umem_odp.h`](srctree/include/rdma/ib_umem_odp.h).
//!
//! Nothing is pinned: ib_core keeps a table of the pages the region holds
//! (`map.pfn_list`), filled by faulting them in with HMM and emptied by the
//! MMU notifier whenever the process unmaps, moves or discards a page. The
//! table is only meaningful while `umem_mutex` is held, and faulting sleeps,
//! so every access here is made from process context through a [`Mapped`]
//! guard that holds the mutex.

use super::{
    bindings as b,
    device::Device,
    driver::Driver,
    umem::{page_atomic_u64, page_copy},
};
use crate::shared_bytes::SharedBytes;
use core::ptr::NonNull;
use kernel::{
    error::{from_err_ptr, to_result},
    page::PAGE_SIZE,
    prelude::*,
};

/// The MMU notifier's callback: the process is about to change
/// `[range.start, range.end)`; forget the pages of that range.
///
/// # Safety
///
/// Only called by the MMU notifier, for the notifier of a umem made by
/// [`UmemOdp::get`] and not yet released.
unsafe extern "C" fn invalidate(
    mni: *mut b::mmu_interval_notifier,
    range: *const b::mmu_notifier_range,
    cur_seq: c_ulong,
) -> bool {
    // SAFETY: `range` is the notifier's live range description.
    if !unsafe { b::rrxe_mmu_range_blockable(range) } {
        // The caller retries in a context that may sleep.
        return false;
    }
    // SAFETY: `mni` is embedded in a live `ib_umem_odp` (the function's
    // safety requirement); taking its mutex may sleep, which a blockable
    // range allows. The sequence is set and the pages unmapped under the
    // mutex, so a datapath access either ends before or sees them gone.
    unsafe {
        let odp = b::rrxe_umem_odp_of_notifier(mni);
        b::rrxe_umem_odp_lock(odp);
        b::rrxe_mmu_interval_set_seq(mni, cur_seq);
        let start = (*range).start.max(b::rrxe_umem_odp_start(odp));
        let end = (*range).end.min(b::rrxe_umem_odp_end(odp));
        if start < end {
            b::ib_umem_odp_unmap_dma_pages(odp, start as u64, end as u64);
        }
        b::rrxe_umem_odp_unlock(odp);
    }
    true
}

static NOTIFIER_OPS: b::mmu_interval_notifier_ops = b::mmu_interval_notifier_ops {
    invalidate: Some(invalidate),
    invalidate_start: None,
    invalidate_finish: None,
};

/// User memory registered for on-demand paging.
///
/// # Invariants
///
/// `raw` is a umem returned by `ib_umem_odp_get` with [`NOTIFIER_OPS`] and
/// not yet released; it covers the user addresses `[addr, addr + len)`.
pub struct UmemOdp {
    raw: NonNull<b::ib_umem_odp>,
    addr: u64,
    len: usize,
}

// SAFETY: The umem is released once, by `drop`; its page table is only
// read or changed under its mutex.
unsafe impl Send for UmemOdp {}
// SAFETY: Shared access reads the immutable description or goes through
// the umem's mutex.
unsafe impl Sync for UmemOdp {}

impl UmemOdp {
    /// Registers `[addr, addr + len)` of the calling process for on-demand
    /// paging with IB `access` flags (which include `IB_ACCESS_ON_DEMAND`),
    /// and takes note of the pages already present (none is faulted in).
    /// Implicit ODP (the whole address space) is `EOPNOTSUPP`.
    pub fn get<T: Driver>(dev: &Device<T>, addr: u64, len: u64, access: u32) -> Result<Self> {
        if addr == 0 && len == u64::MAX {
            return Err(EOPNOTSUPP);
        }
        if access & b::ib_access_flags_IB_ACCESS_ON_DEMAND == 0 {
            return Err(EINVAL);
        }
        let ulen = usize::try_from(len).map_err(|_| EINVAL)?;
        let uaddr = usize::try_from(addr).map_err(|_| EINVAL)?;
        // SAFETY: `dev` is a live device; ib_core checks the range and
        // returns an error pointer on failure. `NOTIFIER_OPS` is static.
        let raw = from_err_ptr(unsafe {
            b::ib_umem_odp_get(
                dev.as_raw(),
                uaddr as c_ulong,
                ulen,
                access as c_int,
                &NOTIFIER_OPS,
            )
        })?;
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // INVARIANT: `raw` is a fresh umem with the notifier ops; from here
        // on `drop` releases it.
        let this = Self {
            raw,
            addr,
            len: ulen,
        };
        if ulen != 0 {
            let write = this.writable();
            drop(this.map_and_lock(0, ulen, write, false)?);
        }
        Ok(this)
    }

    /// Length of the region in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `rereg_mr` may change the region as `flags`
    /// (`enum ib_mr_rereg_flags`) and `access` ask, pages kept: ib_core's
    /// answer (`EACCES` for rights to write to a region registered
    /// read-only).
    pub fn check_rereg(&self, flags: u32, access: u32) -> Result {
        // SAFETY: `raw` is a valid ODP umem (invariant), which embeds its
        // `ib_umem`; the call only reads it.
        to_result(unsafe {
            b::ib_umem_check_rereg(
                &raw mut (*self.raw.as_ptr()).umem,
                flags as c_int,
                access as c_int,
            )
        })
    }

    /// Whether the region was registered with a right to write to it.
    pub fn writable(&self) -> bool {
        // SAFETY: `raw` is valid (invariant).
        unsafe { b::rrxe_umem_odp_writable(self.raw.as_ptr()) }
    }

    /// The user address of byte `off`, if `[off, off + len)` is inside the
    /// region and not empty.
    fn user_range(&self, off: usize, len: usize) -> Result<u64> {
        let end = off.checked_add(len).ok_or(EFAULT)?;
        if len == 0 || end > self.len {
            return Err(EFAULT);
        }
        self.addr.checked_add(off as u64).ok_or(EFAULT)
    }

    /// Maps the pages of `[off, off + len)` (faulting them in, writable if
    /// `write`, when `fault`; otherwise taking only those already present)
    /// and returns with the region locked. May sleep.
    pub fn map_and_lock(
        &self,
        off: usize,
        len: usize,
        write: bool,
        fault: bool,
    ) -> Result<Mapped<'_>> {
        let va = self.user_range(off, len)?;
        // SAFETY: `raw` is valid (invariant); the range is inside the
        // region. On success the call returns holding `umem_mutex`.
        let ret = unsafe {
            b::rrxe_umem_odp_map_and_lock(self.raw.as_ptr(), va, len as u64, write, fault)
        };
        kernel::error::to_result(ret)?;
        // INVARIANT: the call returned with the mutex held.
        Ok(Mapped { umem: self })
    }

    /// Locks the region with every page of `[off, off + len)` present (and
    /// writable if `write`), faulting in what is missing, as the datapath
    /// needs it. May sleep.
    pub fn access(&self, off: usize, len: usize, write: bool) -> Result<Mapped<'_>> {
        self.user_range(off, len)?;
        // SAFETY: `raw` is valid; taking its mutex may sleep (the caller's
        // promise).
        unsafe { b::rrxe_umem_odp_lock(self.raw.as_ptr()) };
        // INVARIANT: the mutex is held.
        let m = Mapped { umem: self };
        if m.present(off, len, write) {
            return Ok(m);
        }
        drop(m);
        let m = self.map_and_lock(off, len, write, true)?;
        if m.present(off, len, write) {
            Ok(m)
        } else {
            Err(EFAULT)
        }
    }
}

impl Drop for UmemOdp {
    fn drop(&mut self) {
        // SAFETY: By the invariant `raw` is valid and released only here;
        // releasing unmaps every page and removes the notifier (it sleeps:
        // a region is dropped in process context).
        unsafe { b::ib_umem_odp_release(self.raw.as_ptr()) };
    }
}

/// An ODP region whose page table is locked (`umem_mutex` held): the pages
/// it lists stay mapped until the guard goes.
///
/// # Invariants
///
/// The current task holds `umem.raw`'s `umem_mutex`, released on drop.
pub struct Mapped<'a> {
    umem: &'a UmemOdp,
}

impl Mapped<'_> {
    /// The page holding byte `off` of the region, if it is mapped (and
    /// writable if `write`).
    fn page(&self, off: usize, write: bool) -> Option<NonNull<b::page>> {
        let va = self.umem.addr.checked_add(off as u64)?;
        let va = usize::try_from(va).ok()?;
        // SAFETY: The mutex is held (invariant); the shim checks that `va`
        // lies inside the region before it reads the table.
        NonNull::new(unsafe { b::rrxe_umem_odp_page(self.umem.raw.as_ptr(), va as c_ulong, write) })
    }

    /// Whether every page of `[off, off + len)` is mapped (writable if
    /// `write`).
    fn present(&self, off: usize, len: usize, write: bool) -> bool {
        self.for_each_piece(off, len, write, |_, _, _| {}).is_ok()
    }

    /// Calls `f(page, offset in page, range of the caller's buffer)` for
    /// every page piece of `[off, off + len)`; `EFAULT` if it leaves the
    /// region or a page is not mapped as asked.
    fn for_each_piece(
        &self,
        off: usize,
        len: usize,
        write: bool,
        mut f: impl FnMut(NonNull<b::page>, usize, core::ops::Range<usize>),
    ) -> Result {
        let va = self.umem.user_range(off, len)?;
        let first = usize::try_from(va).map_err(|_| EFAULT)? % PAGE_SIZE;
        let mut done = 0usize;
        while done < len {
            let in_page = first.checked_add(done).ok_or(EFAULT)? % PAGE_SIZE;
            let n = PAGE_SIZE
                .saturating_sub(in_page)
                .min(len.saturating_sub(done));
            let page = self
                .page(off.checked_add(done).ok_or(EFAULT)?, write)
                .ok_or(EFAULT)?;
            let next = done.saturating_add(n);
            f(page, in_page, done..next);
            done = next;
        }
        Ok(())
    }

    /// Copies `buf.len()` bytes at offset `off` of the region into `buf`.
    pub fn read(&self, off: usize, buf: &mut [u8]) -> Result {
        let dst = buf.as_mut_ptr();
        self.for_each_piece(off, buf.len(), false, |page, in_page, r| {
            // SAFETY: `page` stays in the region while the mutex is held
            // (invariant); `in_page + r.len() <= PAGE_SIZE`; `r` lies inside
            // `buf`.
            unsafe { page_copy(page, in_page, dst.add(r.start), r.len(), false) }
        })
    }

    /// Copies `data` (see [`crate::rdma::umem::Umem::write`]) to offset
    /// `off` of the region.
    pub fn write(&self, off: usize, data: SharedBytes<'_>) -> Result {
        let src = data.as_ptr().cast_mut();
        self.for_each_piece(off, data.len(), true, |page, in_page, r| {
            // SAFETY: As in `read`, into a page mapped writable; `r` lies
            // inside `data`, which is readable for the call, and the copy
            // only reads it.
            unsafe { page_copy(page, in_page, src.add(r.start), r.len(), true) }
        })
    }

    /// Atomically replaces the 8-byte word at `off` (8-aligned as a user
    /// address) with `f(old)` and returns `old`.
    pub fn atomic_u64(&self, off: usize, f: impl Fn(u64) -> u64) -> Result<u64> {
        let va = self.umem.user_range(off, 8)?;
        if !va.is_multiple_of(8) {
            return Err(EINVAL);
        }
        let mut old = 0;
        self.for_each_piece(off, 8, true, |page, in_page, _| {
            // SAFETY: The word is 8-aligned and so inside one page, mapped
            // writable while the mutex is held (invariant).
            old = unsafe { page_atomic_u64(page, in_page, &f) };
        })?;
        Ok(old)
    }
}

impl Drop for Mapped<'_> {
    fn drop(&mut self) {
        // SAFETY: The mutex is held by this task (invariant).
        unsafe { b::rrxe_umem_odp_unlock(self.umem.raw.as_ptr()) };
    }
}
