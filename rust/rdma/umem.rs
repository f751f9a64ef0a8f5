// SPDX-License-Identifier: GPL-2.0

//! Pinned user memory (`struct ib_umem`) and access to it from any task.
//!
//! C header: [`include/rdma/ib_umem.h`](srctree/include/rdma/ib_umem.h).
//!
//! The datapath runs in a kernel worker, not in the process that registered
//! the memory, so it cannot use `copy_to_user`: it reaches the pinned pages
//! themselves, mapping one page at a time with `kmap_local_page`.

use super::{bindings as b, device::Device, driver::Driver};
use crate::shared_bytes::SharedBytes;
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU64, Ordering},
};
use kernel::{
    error::{from_err_ptr, to_result},
    page::PAGE_SIZE,
    prelude::*,
};

/// User pages pinned for the lifetime of the object.
///
/// # Invariants
///
/// `raw` is a umem returned by `ib_umem_get_va` and not yet released;
/// `pages` are its pages in address order, pinned as long as `raw` is held;
/// byte 0 of the region is at `first` in `pages[0]`; the region is `len` bytes.
pub struct Umem {
    raw: NonNull<b::ib_umem>,
    pages: KVec<NonNull<b::page>>,
    first: usize,
    len: usize,
}

// SAFETY: A umem is only released once, by `drop`; its pages are pinned, and
// page access goes through per-call mappings.
unsafe impl Send for Umem {}
// SAFETY: Shared access reads the immutable description; the bytes of user
// memory are accessed with copies and atomics, never through references.
unsafe impl Sync for Umem {}

impl Umem {
    /// Pins `[addr, addr + len)` of the calling process with IB `access` flags.
    pub fn get<T: Driver>(dev: &Device<T>, addr: u64, len: u64, access: u32) -> Result<Self> {
        let addr = usize::try_from(addr).map_err(|_| EINVAL)?;
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        // SAFETY: `dev` is a live device; ib_core validates the range against
        // the caller's address space and returns an error pointer on failure.
        let raw = from_err_ptr(unsafe {
            b::rrxe_umem_get(dev.as_raw(), addr as c_ulong, len, access as c_int)
        })?;
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // From here on `release` undoes the pinning on every error path.
        let release = |e| {
            // SAFETY: `raw` is a umem not released yet and not stored anywhere.
            unsafe { b::ib_umem_release(raw.as_ptr()) };
            e
        };
        // SAFETY: `raw` is a valid umem.
        let n = unsafe { b::rrxe_umem_num_pages(raw.as_ptr()) } as usize;
        let mut pages = KVec::with_capacity(n, GFP_KERNEL).map_err(|e| release(e.into()))?;
        // SAFETY: `pages` has room for `n` pointers; the shim writes at most `n`.
        let got = unsafe {
            b::rrxe_umem_pages(
                raw.as_ptr(),
                pages.spare_capacity_mut().as_mut_ptr().cast(),
                n as c_ulong,
            )
        };
        if got as usize != n {
            return Err(release(EFAULT));
        }
        // SAFETY: The shim initialised `n` elements, all non-NULL page pointers.
        unsafe { pages.inc_len(n) };
        // INVARIANT: `raw` is valid and owned; `pages` lists its pinned pages.
        Ok(Self {
            raw,
            pages,
            first: addr % PAGE_SIZE,
            len,
        })
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
    /// answer (`EACCES` for rights to write to pages pinned read-only).
    pub fn check_rereg(&self, flags: u32, access: u32) -> Result {
        // SAFETY: `raw` is a valid umem (invariant); the call only reads it.
        to_result(unsafe {
            b::ib_umem_check_rereg(self.raw.as_ptr(), flags as c_int, access as c_int)
        })
    }

    /// Calls `f(page, offset in page, range of the caller's buffer)` for every
    /// page piece of `[off, off + len)`; `EFAULT` if it leaves the region.
    fn for_each_piece(
        &self,
        off: usize,
        len: usize,
        mut f: impl FnMut(NonNull<b::page>, usize, core::ops::Range<usize>),
    ) -> Result {
        let end = off.checked_add(len).ok_or(EFAULT)?;
        if end > self.len {
            return Err(EFAULT);
        }
        // `first + end` fits: the pinned pages cover `first + self.len` bytes.
        let start = self.first.checked_add(off).ok_or(EFAULT)?;
        let mut done = 0usize;
        while done < len {
            let abs = start.checked_add(done).ok_or(EFAULT)?;
            let page = *self.pages.get(abs / PAGE_SIZE).ok_or(EFAULT)?;
            let in_page = abs % PAGE_SIZE;
            let n = PAGE_SIZE
                .saturating_sub(in_page)
                .min(len.saturating_sub(done));
            let next = done.saturating_add(n);
            f(page, in_page, done..next);
            done = next;
        }
        Ok(())
    }

    /// Calls `f(page, offset in page, length)` for every page piece of
    /// `[off, off + len)`, in order, until `f` returns `false`; returns
    /// whether every piece was taken, `EFAULT` if the range leaves the
    /// region. The pages are pinned for as long as `self` lives: a caller
    /// that keeps one longer takes a page reference of its own.
    pub fn for_each_page(
        &self,
        off: usize,
        len: usize,
        mut f: impl FnMut(NonNull<b::page>, usize, usize) -> bool,
    ) -> Result<bool> {
        let mut taken = true;
        self.for_each_piece(off, len, |page, in_page, r| {
            taken = taken && f(page, in_page, r.len());
        })?;
        Ok(taken)
    }

    /// Copies `buf.len()` bytes at offset `off` of the region into `buf`.
    pub fn read(&self, off: usize, buf: &mut [u8]) -> Result {
        let dst = buf.as_mut_ptr();
        self.for_each_piece(off, buf.len(), |page, in_page, r| {
            // SAFETY: `page` is pinned (invariant); `in_page + r.len() <=
            // PAGE_SIZE`; `r` lies inside `buf`.
            unsafe { page_copy(page, in_page, dst.add(r.start), r.len(), false) }
        })
    }

    /// Copies `data` to offset `off` of the region: bytes of a slice, or
    /// of memory that others may write (a local packet's payload sent by
    /// reference, [`SharedBytes`]).
    pub fn write(&self, off: usize, data: SharedBytes<'_>) -> Result {
        let src = data.as_ptr().cast_mut();
        self.for_each_piece(off, data.len(), |page, in_page, r| {
            // SAFETY: As in `read`; `r` lies inside `data`, which is
            // readable for the call, and the copy only reads it.
            unsafe { page_copy(page, in_page, src.add(r.start), r.len(), true) }
        })
    }

    /// Atomically replaces the 8-byte word at `off` (8-aligned in the region's
    /// address space) with `f(old)` and returns `old`.
    pub fn atomic_u64(&self, off: usize, f: impl Fn(u64) -> u64) -> Result<u64> {
        if !self.first.checked_add(off).ok_or(EINVAL)?.is_multiple_of(8) {
            return Err(EINVAL);
        }
        let mut old = 0;
        self.for_each_piece(off, 8, |page, in_page, _| {
            // SAFETY: The word is 8-aligned and so inside one pinned page.
            old = unsafe { page_atomic_u64(page, in_page, &f) };
        })?;
        Ok(old)
    }
}

/// Copies `len` bytes between `buf` and offset `in_page` of a user page
/// (into the page if `to_page`), through a temporary kernel mapping.
///
/// # Safety
///
/// `page` stays allocated to the user memory for the call; `in_page + len
/// <= PAGE_SIZE`; `buf` is valid for `len` bytes of writes (of reads if
/// `to_page`). User space may touch the same bytes concurrently, which is
/// its affair: they are never read back as Rust values.
///
/// `buf` may lie in the same page: a packet sent by reference carries the
/// sender's user pages as fragments, and a QP that reads or writes its own
/// buffer (loopback) copies from a page into itself. The copy is therefore a
/// `memmove`, never a `memcpy`.
pub(crate) unsafe fn page_copy(
    page: NonNull<b::page>,
    in_page: usize,
    buf: *mut u8,
    len: usize,
    to_page: bool,
) {
    // SAFETY: The mapping covers the whole page until `kunmap_local`; the
    // ranges are valid by the caller's promise.
    unsafe {
        let va = b::rrxe_kmap_local_page(page.as_ptr()).cast::<u8>();
        if to_page {
            core::ptr::copy(buf.cast_const(), va.add(in_page), len);
        } else {
            core::ptr::copy(va.add(in_page), buf, len);
        }
        b::rrxe_kunmap_local(va.cast());
    }
}

/// Atomically replaces the 8-byte word at offset `in_page` of a user page
/// with `f(old)` and returns `old`.
///
/// # Safety
///
/// `page` stays allocated to the user memory for the call; `in_page` is a
/// multiple of 8 below `PAGE_SIZE`.
pub(crate) unsafe fn page_atomic_u64(
    page: NonNull<b::page>,
    in_page: usize,
    f: impl Fn(u64) -> u64,
) -> u64 {
    // SAFETY: The word is aligned and inside the page, mapped until
    // `kunmap_local`. User space may access it concurrently, with atomics of
    // its own or plain stores: the CPU's compare-exchange keeps the update
    // indivisible either way.
    unsafe {
        let va = b::rrxe_kmap_local_page(page.as_ptr()).cast::<u8>();
        let word = AtomicU64::from_ptr(va.add(in_page).cast());
        let old = match word.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| Some(f(v))) {
            Ok(v) | Err(v) => v,
        };
        b::rrxe_kunmap_local(va.cast());
        old
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: By the invariant `raw` is valid and released only here.
        unsafe { b::ib_umem_release(self.raw.as_ptr()) };
    }
}
