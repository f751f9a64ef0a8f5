// SPDX-License-Identifier: GPL-2.0

//! rxe's shared queue, the ring librxe reads and writes in user space.
//!
//! Layout (`struct rxe_queue_buf` of `rdma_user_rxe.h`): a 384-byte header with
//! `log2_elem_size` at 0, `index_mask` at 4, the producer index at 128 and the
//! consumer index at 256 (each on its own cache lines), then `index_mask + 1`
//! slots of `1 << log2_elem_size` bytes. One slot always stays free, so the
//! capacity is `index_mask`. Indices stored in the buffer are masked.
//!
//! User space can write anything into the buffer at any time: the driver
//! reads the other side's index with acquire ordering, masks it, and never
//! lets a value read from the buffer index memory unchecked.

use crate::rdma::{bindings as b, mmap::UserBuf, udata::Udata};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::prelude::*;

const PRODUCER: usize = 128;
const CONSUMER: usize = 256;
const DATA: usize = 384;
/// Smallest slot: a cache line, as rxe and librxe assume.
const MIN_ELEM: usize = 64;

/// A ring shared with user space.
pub(crate) struct Queue {
    buf: UserBuf,
    log2_elem: u32,
    mask: u32,
}

impl Queue {
    /// Allocates a ring for at least `n` elements of `elem_size` bytes and
    /// publishes it to the verb's user context.
    pub(crate) fn new(udata: &Udata, n: u32, elem_size: usize) -> Result<Self> {
        let slots = n.checked_add(1).and_then(u32::checked_next_power_of_two).ok_or(EINVAL)?;
        let elem = elem_size.max(MIN_ELEM).checked_next_power_of_two().ok_or(EINVAL)?;
        let size = (slots as usize).checked_mul(elem).and_then(|d| d.checked_add(DATA)).ok_or(EINVAL)?;
        let buf = UserBuf::new(udata, size)?;
        let q = Self {
            buf,
            log2_elem: elem.trailing_zeros(),
            mask: slots - 1,
        };
        q.word(0).store(q.log2_elem, Ordering::Relaxed);
        q.word(4).store(q.mask, Ordering::Relaxed);
        Ok(q)
    }

    /// The 32-bit word at byte `off` of the header.
    fn word(&self, off: usize) -> &AtomicU32 {
        build_assert!(DATA <= 4096);
        debug_assert!(off % 4 == 0 && off + 4 <= DATA);
        // SAFETY: `off` is a 4-aligned offset inside the header, which lies
        // in the `vmalloc_user` buffer (page aligned) that lives as long as
        // `self.buf`; all accesses to it, from both sides, are atomic.
        unsafe { AtomicU32::from_ptr(self.buf.as_ptr().add(off).cast()) }
    }

    /// Number of elements the ring holds at most.
    pub(crate) fn capacity(&self) -> u32 {
        self.mask
    }

    /// Size of one slot in bytes.
    pub(crate) fn elem_size(&self) -> usize {
        1 << self.log2_elem
    }

    /// Elements currently queued.
    pub(crate) fn count(&self) -> u32 {
        let prod = self.word(PRODUCER).load(Ordering::Acquire);
        let cons = self.word(CONSUMER).load(Ordering::Acquire);
        prod.wrapping_sub(cons) & self.mask
    }

    /// Where user space maps the ring (`struct mminfo`).
    pub(crate) fn mminfo(&self) -> b::mminfo {
        b::mminfo {
            offset: self.buf.offset(),
            size: self.buf.size() as u32,
            pad: 0,
        }
    }

    /// Clears every slot (QP reset); the indices stay where they are, as
    /// user space keeps its own copies of them.
    pub(crate) fn clear(&self) {
        let len = (self.mask as usize + 1) << self.log2_elem;
        // SAFETY: The data area is `len` bytes after the header, inside the buffer.
        unsafe { core::ptr::write_bytes(self.buf.as_ptr().add(DATA), 0, len) };
    }

    /// Makes a ring for at least `n` elements holding this ring's pending
    /// elements (resize); fails with `EINVAL` if they do not fit.
    pub(crate) fn resized(&self, udata: &Udata, n: u32) -> Result<Self> {
        let count = self.count();
        if n < count {
            return Err(EINVAL);
        }
        let new = Self::new(udata, n, self.elem_size())?;
        let cons = self.word(CONSUMER).load(Ordering::Acquire) & self.mask;
        let elem = self.elem_size();
        for i in 0..count {
            let from = ((cons.wrapping_add(i) & self.mask) as usize) << self.log2_elem;
            let to = (i as usize) << new.log2_elem;
            // SAFETY: Both slots lie inside their buffers (indices masked,
            // element sizes equal); the buffers are distinct allocations.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    self.buf.as_ptr().add(DATA + from),
                    new.buf.as_ptr().add(DATA + to),
                    elem,
                )
            };
        }
        new.word(PRODUCER).store(count, Ordering::Release);
        Ok(new)
    }
}
