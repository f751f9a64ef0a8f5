// SPDX-License-Identifier: GPL-2.0

//! Bytes that others may write while they are read.
//!
//! A local packet whose payload is sent by reference carries pages of its
//! sender's user memory, which the process (or a NIC, or the receiver's
//! own copy) may write at any time while the packet lives. A Rust slice
//! over such bytes would promise that they do not change. [`SharedBytes`]
//! promises only that they stay mapped: it is never turned into a
//! reference, only copied from with a `memmove`, as the kernel's C code
//! copies such memory.

use core::{marker::PhantomData, ptr::NonNull};

/// `len` bytes that stay readable for `'a` and that others may write.
///
/// # Invariants
///
/// `ptr` is valid for reads of `len` bytes for `'a`.
#[derive(Clone, Copy)]
pub struct SharedBytes<'a> {
    ptr: NonNull<u8>,
    len: usize,
    _bytes: PhantomData<&'a [u8]>,
}

impl<'a> SharedBytes<'a> {
    /// The `len` bytes at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is valid for reads of `len` bytes for `'a` (whoever else may
    /// write them meanwhile).
    pub unsafe fn from_raw(ptr: NonNull<u8>, len: usize) -> Self {
        // INVARIANT: guaranteed by the caller.
        Self {
            ptr,
            len,
            _bytes: PhantomData,
        }
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `len` bytes at `off`, or `None` if they are not all there.
    pub fn sub(&self, off: usize, len: usize) -> Option<Self> {
        if off.checked_add(len)? > self.len {
            return None;
        }
        // SAFETY: `off < self.len` or `len == 0` (`off + len <= self.len`),
        // so the pointer stays within (or one past) the bytes of `self`.
        let ptr = unsafe { self.ptr.add(off) };
        // INVARIANT: `[off, off + len)` lies inside the bytes of `self`.
        Some(Self {
            ptr,
            len,
            _bytes: PhantomData,
        })
    }

    /// The address of the first byte, for a copy (`core::ptr::copy`) of
    /// at most [`Self::len`] bytes while `'a` lasts; never to be made
    /// into a reference.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }
}

impl<'a> From<&'a [u8]> for SharedBytes<'a> {
    /// A slice's bytes, which nobody writes: a special case.
    fn from(bytes: &'a [u8]) -> Self {
        let ptr = NonNull::from(bytes).cast::<u8>();
        // INVARIANT: a slice is valid for reads of its length for `'a`.
        Self {
            ptr,
            len: bytes.len(),
            _bytes: PhantomData,
        }
    }
}
