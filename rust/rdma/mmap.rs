// SPDX-License-Identifier: GPL-2.0

//! Kernel buffers that user space maps (`rdma_user_mmap_entry`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//!
//! A [`UserBuf`] is zeroed `vmalloc_user` memory published in a user
//! context's mmap table; user space maps it at [`UserBuf::offset`] on the
//! uverbs file. ib_core reference-counts the table entry: dropping the
//! `UserBuf` removes the entry, and the memory is freed in `mmap_free` once no
//! `mmap` call is using it. Pages already mapped stay valid for the process
//! until it unmaps them (`remap_vmalloc_range` takes page references).

use super::{bindings as b, udata::Udata};
use core::ptr::NonNull;
use kernel::prelude::*;

/// The mmap table entry with the buffer it publishes.
#[repr(C)]
struct Entry {
    rdma: b::rdma_user_mmap_entry,
    buf: NonNull<u8>,
    size: usize,
}

/// A zeroed kernel buffer mapped into one user context.
///
/// # Invariants
///
/// `entry` is a live entry inserted into a ucontext's mmap table and not yet
/// removed; its `buf` is `size` bytes of `vmalloc_user` memory that stays
/// allocated until `mmap_free`, which only runs after the entry is removed.
pub struct UserBuf {
    entry: NonNull<Entry>,
    buf: NonNull<u8>,
    size: usize,
}

// SAFETY: The buffer is plain memory; concurrent access from user space is
// part of the queue protocols built on it, which use atomics for indices.
unsafe impl Send for UserBuf {}
// SAFETY: See `Send` above.
unsafe impl Sync for UserBuf {}

impl UserBuf {
    /// Allocates `size` zeroed bytes and publishes them to the user context
    /// of the verb that `udata` belongs to.
    pub fn new(udata: &Udata, size: usize) -> Result<Self> {
        let raw = udata.as_raw().ok_or(EOPNOTSUPP)?;
        // SAFETY: `raw` is the driver udata of a user verb, embedded in its
        // attribute bundle.
        let ctx = unsafe { b::rrxe_udata_to_ucontext(raw) };
        if ctx.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `vmalloc_user` has no preconditions; it returns zeroed memory.
        let buf = NonNull::new(unsafe { b::rrxe_vmalloc_user(size as c_ulong) }.cast::<u8>())
            .ok_or(ENOMEM)?;
        let entry = match KBox::new(
            Entry {
                rdma: Default::default(),
                buf,
                size,
            },
            GFP_KERNEL,
        ) {
            Ok(e) => KBox::into_raw(e),
            Err(e) => {
                // SAFETY: `buf` came from `vmalloc_user` and is not published.
                unsafe { b::vfree(buf.as_ptr().cast()) };
                return Err(e.into());
            }
        };
        // SAFETY: `ctx` is the live user context of this verb; `entry` is a
        // valid, pinned heap allocation.
        let ret = unsafe { b::rdma_user_mmap_entry_insert(ctx, &raw mut (*entry).rdma, size) };
        if ret != 0 {
            // SAFETY: Insertion failed, so we still own both allocations.
            unsafe {
                b::vfree(buf.as_ptr().cast());
                drop(KBox::from_raw(entry));
            }
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: The entry is inserted and owns `buf` until `mmap_free`.
        Ok(Self {
            // SAFETY: `entry` came from `KBox::into_raw`.
            entry: unsafe { NonNull::new_unchecked(entry) },
            buf,
            size,
        })
    }

    /// The offset user space passes to `mmap` on the uverbs file.
    pub fn offset(&self) -> u64 {
        // SAFETY: By the invariant the entry is live.
        (unsafe { b::rrxe_mmap_entry_offset(&raw const (*self.entry.as_ptr()).rdma) }) as u64
    }

    /// The buffer's size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The buffer's kernel address (valid for `size` bytes while `self` lives).
    pub fn as_ptr(&self) -> *mut u8 {
        self.buf.as_ptr()
    }

    /// Maps the entry `vma` asks for into user space (the `mmap` verb).
    ///
    /// # Safety
    ///
    /// `ctx` and `vma` must be the arguments of ib_core's `mmap` callback.
    pub(crate) unsafe fn mmap(ctx: *mut b::ib_ucontext, vma: *mut b::vm_area_struct) -> Result {
        // SAFETY: Guaranteed by the caller; the returned entry is referenced.
        let rdma = unsafe { b::rdma_user_mmap_entry_get(ctx, vma) };
        if rdma.is_null() {
            return Err(EINVAL);
        }
        let entry = rdma.cast::<Entry>();
        // SAFETY: Every entry rrxe inserts is an `Entry`; we hold a reference,
        // so the buffer is not freed. `rdma_user_mmap_entry_get` checked that
        // the vma is no larger than the entry.
        let ret = unsafe { b::remap_vmalloc_range(vma, (*entry).buf.as_ptr().cast(), 0) };
        // SAFETY: Drops the reference taken above.
        unsafe { b::rdma_user_mmap_entry_put(rdma) };
        kernel::error::to_result(ret)
    }

    /// Frees an entry and its buffer once ib_core is done with it (`mmap_free`).
    ///
    /// # Safety
    ///
    /// `rdma` must be the argument of ib_core's `mmap_free` callback.
    pub(crate) unsafe fn free(rdma: *mut b::rdma_user_mmap_entry) {
        let entry = rdma.cast::<Entry>();
        // SAFETY: Every entry rrxe inserts is an `Entry` from `KBox::into_raw`,
        // and ib_core calls `mmap_free` once, after the last reference.
        unsafe {
            b::vfree((*entry).buf.as_ptr().cast());
            drop(KBox::from_raw(entry));
        }
    }
}

impl Drop for UserBuf {
    fn drop(&mut self) {
        // SAFETY: By the invariant the entry is inserted and not removed yet.
        unsafe { b::rdma_user_mmap_entry_remove(&raw mut (*self.entry.as_ptr()).rdma) };
    }
}
