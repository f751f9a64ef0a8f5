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
use core::{
    mem::MaybeUninit,
    sync::atomic::{AtomicU32, Ordering},
};
use kernel::{prelude::*, sync::Arc};

const PRODUCER: usize = 128;
const CONSUMER: usize = 256;
const DATA: usize = 384;
/// Smallest slot: a cache line, as rxe and librxe assume.
const MIN_ELEM: usize = 64;

/// Which index of a ring the driver owns.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// The driver produces, user space consumes (completion queues).
    Produce,
    /// User space produces, the driver consumes (send and receive queues).
    Consume,
}

/// The memory of a ring: mapped into a user context, or kernel-only for the
/// queues of in-kernel callers.
enum Storage {
    User(UserBuf),
    /// Kernel memory; `ptr` is the vector's buffer, never reallocated.
    Kernel {
        _vec: KVVec<u8>,
        ptr: *mut u8,
    },
}

// SAFETY: The kernel buffer is only accessed through raw pointers, with the
// index protocol below; the vector itself is never touched after creation.
unsafe impl Send for Storage {}
// SAFETY: As above.
unsafe impl Sync for Storage {}

impl Storage {
    fn as_ptr(&self) -> *mut u8 {
        match self {
            Storage::User(b) => b.as_ptr(),
            Storage::Kernel { ptr, .. } => *ptr,
        }
    }
}

/// A ring's memory and geometry, shared by its two sides.
struct Ring {
    storage: Storage,
    log2_elem: u32,
    mask: u32,
}

impl Ring {
    /// The 32-bit word at byte `off` of the header.
    fn word(&self, off: usize) -> &AtomicU32 {
        build_assert!(DATA <= 4096);
        debug_assert!(off.is_multiple_of(4) && off < DATA);
        // SAFETY: `off` is a 4-aligned offset inside the header, which lies
        // in the buffer (page aligned, or at least 8-aligned kvmalloc memory)
        // that lives as long as `self`; all accesses to it, from both sides,
        // are atomic.
        unsafe { AtomicU32::from_ptr(self.storage.as_ptr().add(off).cast()) }
    }

    /// The slot at masked index `i`.
    #[allow(
        clippy::arithmetic_side_effects,
        reason = "`geometry` checked that DATA + (mask + 1) << log2_elem fits the buffer"
    )]
    fn slot(&self, i: u32) -> *mut u8 {
        let off = DATA + (((i & self.mask) as usize) << self.log2_elem);
        // SAFETY: `i & mask <= mask`, so the slot lies inside the data area.
        unsafe { self.storage.as_ptr().add(off) }
    }

    /// Bytes of the data area (all slots).
    #[allow(
        clippy::arithmetic_side_effects,
        reason = "`geometry` checked that (mask + 1) << log2_elem fits the buffer"
    )]
    fn data_len(&self) -> usize {
        (self.mask as usize + 1) << self.log2_elem
    }

    fn elem_size(&self) -> usize {
        1 << self.log2_elem
    }
}

/// The first bytes of a ring element, copied out of the ring (at most `N`),
/// so that what the driver parses cannot change under it. It starts
/// uninitialised: an entry copies only the bytes it has, with no clearing
/// of the rest first.
pub(crate) struct ElemCopy<const N: usize> {
    buf: [MaybeUninit<u8>; N],
    /// The bytes of `buf` copied in so far.
    len: usize,
}

impl<const N: usize> ElemCopy<N> {
    /// An empty copy.
    pub(crate) const fn new() -> Self {
        Self {
            buf: [const { MaybeUninit::uninit() }; N],
            len: 0,
        }
    }

    /// The bytes copied.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: The first `len <= N` bytes of `buf` were written by
        // `fill_from`.
        unsafe { core::slice::from_raw_parts(self.buf.as_ptr().cast::<u8>(), self.len) }
    }

    /// Copies bytes `len..end` of the element at `src` after those already
    /// copied (nothing when `end <= len`; `end` at most `N`).
    ///
    /// # Safety
    ///
    /// `src` must be valid for reads of `end` bytes.
    unsafe fn fill_from(&mut self, src: *const u8, end: usize) {
        let end = end.min(N);
        let Some(n) = end.checked_sub(self.len).filter(|&n| n > 0) else {
            return;
        };
        // SAFETY: `len < end <= N`, so both ranges are in bounds (`src` by
        // the caller's guarantee); the ring and this copy do not overlap.
        unsafe {
            core::ptr::copy_nonoverlapping(
                src.add(self.len),
                self.buf.as_mut_ptr().cast::<u8>().add(self.len),
                n,
            )
        };
        self.len = end;
    }
}

/// A ring shared with user space, or with an in-kernel caller.
///
/// The driver keeps its own index privately in `own` and only publishes it;
/// it never reads its own index back from the shared buffer.
pub(crate) struct Queue {
    ring: Arc<Ring>,
    side: Side,
    own: u32,
}

/// Geometry for at least `n` elements of `elem_size` bytes: slots, element
/// size and total bytes.
fn geometry(n: u32, elem_size: usize) -> Result<(u32, usize, usize)> {
    let slots = n
        .checked_add(1)
        .and_then(u32::checked_next_power_of_two)
        .ok_or(EINVAL)?;
    let elem = elem_size
        .max(MIN_ELEM)
        .checked_next_power_of_two()
        .ok_or(EINVAL)?;
    let size = (slots as usize)
        .checked_mul(elem)
        .and_then(|d| d.checked_add(DATA))
        .ok_or(EINVAL)?;
    // `struct mminfo` tells user space the size in 32 bits.
    if u32::try_from(size).is_err() {
        return Err(EINVAL);
    }
    Ok((slots, elem, size))
}

impl Queue {
    fn with_storage(storage: Storage, side: Side, slots: u32, elem: usize) -> Result<Self> {
        let ring = Arc::new(
            Ring {
                storage,
                log2_elem: elem.trailing_zeros(),
                // `geometry` makes `slots` a power of two, at least 1.
                mask: slots.saturating_sub(1),
            },
            GFP_KERNEL,
        )?;
        ring.word(0).store(ring.log2_elem, Ordering::Relaxed);
        ring.word(4).store(ring.mask, Ordering::Relaxed);
        Ok(Self { ring, side, own: 0 })
    }

    /// Allocates a ring for at least `n` elements of `elem_size` bytes and
    /// publishes it to the verb's user context.
    pub(crate) fn new(udata: &Udata, side: Side, n: u32, elem_size: usize) -> Result<Self> {
        let (slots, elem, size) = geometry(n, elem_size)?;
        Self::with_storage(Storage::User(UserBuf::new(udata, size)?), side, slots, elem)
    }

    /// Allocates a kernel-only ring for at least `n` elements of `elem_size`
    /// bytes; the other side is an in-kernel caller (see [`KernelSide`]).
    pub(crate) fn new_kernel(side: Side, n: u32, elem_size: usize) -> Result<Self> {
        let (slots, elem, size) = geometry(n, elem_size)?;
        let mut vec = KVVec::from_elem(0u8, size, GFP_KERNEL)?;
        let ptr = vec.as_mut_ptr();
        Self::with_storage(Storage::Kernel { _vec: vec, ptr }, side, slots, elem)
    }

    /// The other side of a kernel ring, for the in-kernel caller.
    pub(crate) fn kernel_side(&self) -> KernelSide {
        KernelSide {
            ring: self.ring.clone(),
            own: 0,
        }
    }

    /// The 32-bit word at byte `off` of the header.
    fn word(&self, off: usize) -> &AtomicU32 {
        self.ring.word(off)
    }

    /// Number of elements the ring holds at most.
    pub(crate) fn capacity(&self) -> u32 {
        self.ring.mask
    }

    /// Size of one slot in bytes.
    pub(crate) fn elem_size(&self) -> usize {
        self.ring.elem_size()
    }

    /// The producer and consumer indices, masked; the driver's own from `own`.
    fn indices(&self) -> (u32, u32) {
        match self.side {
            Side::Produce => (
                self.own,
                self.word(CONSUMER).load(Ordering::Acquire) & self.ring.mask,
            ),
            Side::Consume => (
                self.word(PRODUCER).load(Ordering::Acquire) & self.ring.mask,
                self.own,
            ),
        }
    }

    /// Elements currently queued.
    pub(crate) fn count(&self) -> u32 {
        let (prod, cons) = self.indices();
        prod.wrapping_sub(cons) & self.ring.mask
    }

    /// The slot at masked index `i`.
    fn slot(&self, i: u32) -> *mut u8 {
        self.ring.slot(i)
    }

    /// Appends the `len` bytes at `src` (a producer ring; as many as fit in
    /// a slot); `ENOSPC` when full.
    ///
    /// # Safety
    ///
    /// `src` must be valid for reads of `len` bytes.
    unsafe fn push_raw(&mut self, src: *const u8, len: usize) -> Result {
        debug_assert!(self.side == Side::Produce);
        let (prod, cons) = self.indices();
        let next = prod.wrapping_add(1) & self.ring.mask;
        if next == cons {
            return Err(ENOSPC);
        }
        let len = len.min(self.elem_size());
        // SAFETY: `src` is readable for `len` bytes (guaranteed by the caller);
        // the slot holds `elem_size` bytes and user space does not read it
        // before the producer index below is published.
        unsafe { core::ptr::copy_nonoverlapping(src, self.slot(prod), len) };
        self.own = next;
        self.word(PRODUCER).store(next, Ordering::Release);
        Ok(())
    }

    /// Appends `elem` (a producer ring); `ENOSPC` when full.
    pub(crate) fn push(&mut self, elem: &[u8]) -> Result {
        // SAFETY: `elem` is readable for its length.
        unsafe { self.push_raw(elem.as_ptr(), elem.len()) }
    }

    /// Appends a plain-data value (a producer ring of a kernel CQ).
    pub(crate) fn push_value<T: Copy>(&mut self, v: &T) -> Result {
        // SAFETY: `v` is readable for its size; its bytes (padding included)
        // are copied as raw memory, never viewed as initialised bytes.
        unsafe {
            self.push_raw(
                core::ptr::from_ref(v).cast::<u8>(),
                core::mem::size_of::<T>(),
            )
        }
    }

    /// Takes the next work request of a consumer ring and returns its
    /// `wr_id` (the first 8 bytes of rxe's send and receive WQEs).
    pub(crate) fn pop_wr_id(&mut self) -> Option<u64> {
        debug_assert!(self.side == Side::Consume);
        let (prod, cons) = self.indices();
        if prod == cons {
            return None;
        }
        // SAFETY: The slot is 8-aligned (slots are at least 64 bytes after a
        // 384-byte header) and inside the buffer; user space published it with
        // a release store of the producer index that `indices` acquired.
        let wr_id = unsafe { core::ptr::read_volatile(self.slot(cons).cast::<u64>()) };
        self.own = cons.wrapping_add(1) & self.ring.mask;
        self.word(CONSUMER).store(self.own, Ordering::Release);
        Some(wr_id)
    }

    /// Copies the oldest element of a consumer ring into `out` without
    /// taking it, in two parts: its first `head` bytes, then the `tail(head
    /// bytes)` bytes after them (each as much as the slot and `out` hold), so
    /// that a short entry in a large slot costs only its own bytes. `false`
    /// if the ring is empty.
    pub(crate) fn peek_parts<const N: usize>(
        &self,
        out: &mut ElemCopy<N>,
        head: usize,
        tail: impl FnOnce(&[u8]) -> usize,
    ) -> bool {
        debug_assert!(self.side == Side::Consume);
        let (prod, cons) = self.indices();
        if prod == cons {
            return false;
        }
        let slot = self.slot(cons);
        let cap = N.min(self.elem_size());
        out.len = 0;
        // SAFETY: The slot holds `elem_size` bytes inside the buffer, so its
        // first `cap` are readable; user space published it with the release
        // store `indices` acquired (and may scribble over it: the copy is
        // parsed with every value checked).
        unsafe { out.fill_from(slot, head.min(cap)) };
        let end = head.saturating_add(tail(out.bytes())).min(cap);
        // SAFETY: As above, `end <= cap`.
        unsafe { out.fill_from(slot, end) };
        true
    }

    /// Takes the oldest element of a consumer ring (after [`Queue::peek_parts`]).
    pub(crate) fn advance(&mut self) {
        debug_assert!(self.side == Side::Consume);
        let (prod, cons) = self.indices();
        if prod != cons {
            self.own = cons.wrapping_add(1) & self.ring.mask;
            self.word(CONSUMER).store(self.own, Ordering::Release);
        }
    }

    /// Where user space maps the ring (`struct mminfo`); zero for kernel rings.
    pub(crate) fn mminfo(&self) -> b::mminfo {
        match &self.ring.storage {
            Storage::User(buf) => b::mminfo {
                offset: buf.offset(),
                // `geometry` keeps every ring below 4 GiB.
                size: u32::try_from(buf.size()).unwrap_or(u32::MAX),
                pad: 0,
            },
            Storage::Kernel { .. } => b::mminfo::default(),
        }
    }

    /// Clears every slot (QP reset); the indices stay where they are, as
    /// user space keeps its own copies of them.
    pub(crate) fn clear(&self) {
        let len = self.ring.data_len();
        // SAFETY: The data area is `len` bytes after the header, inside the buffer.
        unsafe { core::ptr::write_bytes(self.ring.storage.as_ptr().add(DATA), 0, len) };
    }

    /// The side and element size, to make a ring like this one with
    /// [`Queue::new_like`].
    pub(crate) fn shape(&self) -> (Side, usize) {
        (self.side, self.elem_size())
    }

    /// A new, empty ring of `shape` (see [`Queue::shape`]) for at least `n`
    /// elements, mapped into the verb's user context: the first step of a
    /// resize (it allocates and may sleep, so no lock may be held).
    pub(crate) fn new_like(udata: &Udata, shape: (Side, usize), n: u32) -> Result<Self> {
        Self::new(udata, shape.0, n, shape.1)
    }

    /// Moves this ring's pending elements into `new` (the second step of a
    /// resize, done under the lock that guards the ring); `EINVAL` if they
    /// do not fit. `new` must come from [`Queue::new_like`].
    pub(crate) fn move_pending_to(&self, new: &mut Self) -> Result {
        let count = self.count();
        if count > new.capacity() || new.elem_size() != self.elem_size() {
            return Err(EINVAL);
        }
        let (_, cons) = self.indices();
        let elem = self.elem_size();
        for i in 0..count {
            // SAFETY: `slot` keeps both inside their buffers; the element sizes
            // are equal and the buffers are distinct allocations.
            unsafe {
                core::ptr::copy_nonoverlapping(self.slot(cons.wrapping_add(i)), new.slot(i), elem)
            };
        }
        // The new ring holds the elements at 0..count.
        if self.side == Side::Produce {
            new.own = count;
        }
        new.word(PRODUCER).store(count, Ordering::Release);
        Ok(())
    }
}

/// The in-kernel caller's side of a kernel ring: the producer of a send or
/// receive queue (`post_send`/`post_recv`), or the consumer of a CQ
/// (`poll_cq`). Kernel memory is not shared with user space, so the indices
/// in it can be trusted. The caller serialises its own uses (a spinlock:
/// in-kernel callers post and poll in atomic context).
pub(crate) struct KernelSide {
    ring: Arc<Ring>,
    own: u32,
}

impl KernelSide {
    /// Appends `elem` to a send or receive queue; `ENOMEM` when full.
    pub(crate) fn push(&mut self, elem: &[u8]) -> Result {
        let r = &self.ring;
        let cons = r.word(CONSUMER).load(Ordering::Acquire) & r.mask;
        let next = self.own.wrapping_add(1) & r.mask;
        if next == cons {
            return Err(ENOMEM);
        }
        let len = elem.len().min(r.elem_size());
        // SAFETY: The slot holds `elem_size` bytes; the consumer does not read
        // it before the producer index below is published.
        unsafe {
            core::ptr::write_bytes(r.slot(self.own), 0, r.elem_size());
            core::ptr::copy_nonoverlapping(elem.as_ptr(), r.slot(self.own), len);
        }
        self.own = next;
        r.word(PRODUCER).store(next, Ordering::Release);
        Ok(())
    }

    /// Takes the oldest element of a CQ; `None` if empty.
    ///
    /// # Safety
    ///
    /// Every element of the ring must have been written by
    /// [`Queue::push_value`] with a `T`.
    pub(crate) unsafe fn pop_value<T: Copy>(&mut self) -> Option<T> {
        let r = &self.ring;
        let prod = r.word(PRODUCER).load(Ordering::Acquire) & r.mask;
        if prod == self.own || core::mem::size_of::<T>() > r.elem_size() {
            return None;
        }
        let mut v = core::mem::MaybeUninit::<T>::uninit();
        // SAFETY: The slot was published by the producer's release store and
        // holds a `T` (guaranteed by the caller), which fits in it.
        let v = unsafe {
            core::ptr::copy_nonoverlapping(
                r.slot(self.own),
                v.as_mut_ptr().cast::<u8>(),
                core::mem::size_of::<T>(),
            );
            v.assume_init()
        };
        self.own = self.own.wrapping_add(1) & r.mask;
        r.word(CONSUMER).store(self.own, Ordering::Release);
        Some(v)
    }

    /// Elements waiting (for a CQ: completions not yet polled).
    pub(crate) fn count(&self) -> u32 {
        let r = &self.ring;
        let prod = r.word(PRODUCER).load(Ordering::Acquire) & r.mask;
        let cons = r.word(CONSUMER).load(Ordering::Acquire) & r.mask;
        prod.wrapping_sub(cons) & r.mask
    }
}
