// SPDX-License-Identifier: GPL-2.0

//! Socket buffers (`struct sk_buff`): packets the driver builds, sends,
//! receives and queues.
//!
//! C header: [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h).
//!
//! [`SkBuff`] owns one packet. Its bytes are in a linear area and, for
//! received packets, possibly in page fragments as well;
//! [`SkBuff::for_each_piece`] gives all of them in order without copying (no linearisation), and
//! names the fragments that others may write rather than hand them out as
//! slices ([`SkBuff::shared_frag`]).
//! [`SkbQueue`] is a queue of packets that any context may add to.

use crate::{bindings as b, shared_bytes::SharedBytes, sync::bh};
use core::ptr::NonNull;
use kernel::{prelude::*, types::Opaque};

/// Most pieces a packet's bytes are in: the linear area and the page
/// fragments (`MAX_SKB_FRAGS`, 17 by default).
pub const MAX_PIECES: usize = 18;

/// One piece of a packet's bytes (see [`SkBuff::for_each_piece`]).
#[derive(Clone, Copy)]
pub enum Piece<'a> {
    /// Bytes only the packet holds.
    Bytes(&'a [u8]),
    /// `len` bytes of fragment `index`, which others may write while the
    /// packet lives: reached through [`SkBuff::shared_frag`].
    Shared {
        /// The fragment.
        index: usize,
        /// Its length.
        len: usize,
    },
}

/// An owned socket buffer.
///
/// # Invariants
///
/// `raw` is a valid skb that this object owns (no one else frees it); it is
/// freed only by `drop` or handed on by [`SkBuff::into_raw`].
pub struct SkBuff {
    raw: NonNull<b::sk_buff>,
}

// SAFETY: An skb that is owned may be processed and freed on any CPU.
unsafe impl Send for SkBuff {}

impl SkBuff {
    /// A new, empty packet with `headroom` bytes reserved in front (for
    /// the headers added later with [`SkBuff::push`]) and room for `len`
    /// more. Allocates atomically: callable in any context.
    pub fn alloc(headroom: usize, len: usize) -> Option<Self> {
        let total = u32::try_from(headroom.checked_add(len)?).ok()?;
        let headroom = c_int::try_from(headroom).ok()?;
        // SAFETY: The shim allocates with GFP_ATOMIC; NULL on failure.
        let raw = NonNull::new(unsafe { b::rrxe_alloc_skb(total) })?;
        // SAFETY: `raw` is a fresh, empty skb with `total >= headroom` bytes.
        unsafe { b::rrxe_skb_reserve(raw.as_ptr(), headroom) };
        // INVARIANT: the new skb is ours.
        Some(Self { raw })
    }

    /// Takes ownership of `raw`.
    ///
    /// # Safety
    ///
    /// `raw` must be a valid skb whose ownership passes to the new object.
    pub unsafe fn from_raw(raw: NonNull<b::sk_buff>) -> Self {
        // INVARIANT: guaranteed by the caller.
        Self { raw }
    }

    /// Whether the packet, once its owner is done with it, can become an
    /// empty one again ([`SkBuff::reuse`]): one that [`SkBuff::alloc`] made,
    /// linear, never cloned, holding no route, socket or other reference. A
    /// packet that is may be kept for that without pinning anything.
    pub fn is_reusable(&self) -> bool {
        // SAFETY: By the invariant the skb is valid.
        unsafe { b::rrxe_skb_reusable(self.raw.as_ptr()) }
    }

    /// This packet, emptied as [`SkBuff::alloc`] leaves a new one with
    /// `headroom` bytes reserved and room for `len` more, if it is reusable
    /// ([`SkBuff::is_reusable`]) and large enough; `None` (the packet
    /// freed) otherwise. It saves the allocation and the free.
    pub fn reuse(self, headroom: usize, len: usize) -> Option<Self> {
        let total = u32::try_from(headroom.checked_add(len)?).ok()?;
        let headroom = u32::try_from(headroom).ok()?;
        // SAFETY: By the invariant the skb is valid and ours alone (`self`
        // is consumed, so nothing borrows its data); the shim changes it
        // only if it has a single owner and no shared or held state.
        if unsafe { b::rrxe_skb_reuse(self.raw.as_ptr(), headroom, total) } {
            Some(self)
        } else {
            None
        }
    }

    /// A second packet sharing this one's data (read-only for both), for
    /// delivery to several receivers. Allocates atomically.
    pub fn try_clone(&self) -> Option<Self> {
        // SAFETY: By the invariant the skb is valid; the shim clones with
        // GFP_ATOMIC and returns NULL on failure.
        let raw = NonNull::new(unsafe { b::rrxe_skb_clone(self.raw.as_ptr()) })?;
        // INVARIANT: the clone is a new skb that is ours.
        Some(Self { raw })
    }

    /// Gives up ownership (to C code that consumes the skb).
    pub fn into_raw(self) -> NonNull<b::sk_buff> {
        let raw = self.raw;
        core::mem::forget(self);
        raw
    }

    /// The raw skb, still owned by `self`.
    pub fn as_raw(&self) -> *mut b::sk_buff {
        self.raw.as_ptr()
    }

    /// Length of the packet from the current data pointer (all pieces).
    pub fn len(&self) -> usize {
        // SAFETY: By the invariant the skb is valid.
        unsafe { (*self.as_raw()).len as usize }
    }

    /// Whether the packet is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `len` bytes at the end of the linear area and returns them.
    /// The caller makes sure there is room (see [`SkBuff::alloc`]); `None`
    /// once the packet has fragments, which follow the linear area.
    pub fn put(&mut self, len: usize) -> Option<&mut [u8]> {
        // SAFETY: By the invariant the skb is valid; `data_len` is the bytes
        // outside the linear area.
        let (room, nonlinear) = unsafe {
            (
                b::rrxe_skb_tailroom(self.as_raw()),
                (*self.as_raw()).data_len != 0,
            )
        };
        if nonlinear || usize::try_from(room).map_or(true, |r| len > r) {
            return None;
        }
        let n = u32::try_from(len).ok()?;
        // SAFETY: There are `len` bytes of tail room (checked), so `skb_put`
        // does not panic; it returns their start, inside the skb's buffer,
        // which lives as long as `self`.
        unsafe {
            let p = b::skb_put(self.as_raw(), n).cast::<u8>();
            Some(core::slice::from_raw_parts_mut(p, len))
        }
    }

    /// Appends `len` bytes at offset `off` of `page`, a page of memory that
    /// others may write (a user process's), to the packet as its next
    /// fragment, and marks the packet as having such fragments
    /// (`SKBFL_SHARED_FRAG`): [`SkBuff::for_each_piece`] reports them as
    /// [`Piece::Shared`]. The skb takes a page reference of its own, so the
    /// bytes stay readable for as long as it lives, whatever becomes of the
    /// page's other users. `false` if no fragment slot is left.
    ///
    /// # Safety
    ///
    /// `page` is a valid page that stays allocated for the call, and
    /// `off + len <= PAGE_SIZE`.
    pub unsafe fn add_shared_page(
        &mut self,
        page: NonNull<b::page>,
        off: usize,
        len: usize,
    ) -> bool {
        let (Ok(off), Ok(len)) = (u32::try_from(off), u32::try_from(len)) else {
            return false;
        };
        // SAFETY: The skb is valid (invariant); the page and the range are
        // valid by the caller's promise; the shim checks the fragment slots.
        unsafe { b::rrxe_skb_add_page(self.as_raw(), page.as_ptr(), off, len, true) }
    }

    /// Appends `len` zeros (at most a page) to the packet as its next
    /// fragment, from the kernel's page of zeros. `false` if they do not
    /// fit in a page or no fragment slot is left.
    pub fn add_zeros(&mut self, len: usize) -> bool {
        let Ok(n) = u32::try_from(len) else {
            return false;
        };
        if len > kernel::page::PAGE_SIZE {
            return false;
        }
        // SAFETY: The skb is valid (invariant); the zero page is never
        // freed and `len` bytes from its start lie in it (checked).
        unsafe { b::rrxe_skb_add_page(self.as_raw(), b::rrxe_zero_page(), 0, n, false) }
    }

    /// Prepends `len` bytes (a header) to the data and returns them; the
    /// caller makes sure there is headroom.
    pub fn push(&mut self, len: usize) -> Option<&mut [u8]> {
        // SAFETY: By the invariant the skb is valid.
        let room = unsafe { b::rrxe_skb_headroom(self.as_raw()) };
        if usize::try_from(room).map_or(true, |r| len > r) {
            return None;
        }
        let n = u32::try_from(len).ok()?;
        // SAFETY: There are `len` bytes of headroom (checked); `skb_push`
        // returns the new data start, valid for the skb's lifetime.
        unsafe {
            let p = b::skb_push(self.as_raw(), n).cast::<u8>();
            Some(core::slice::from_raw_parts_mut(p, len))
        }
    }

    /// The linear area from the data pointer on.
    pub fn linear(&self) -> &[u8] {
        // SAFETY: By the invariant the skb is valid; `data` points to
        // `skb_headlen` bytes of its linear area.
        unsafe {
            let skb = self.as_raw();
            let len = b::rrxe_skb_headlen(skb) as usize;
            core::slice::from_raw_parts((*skb).data.cast_const(), len)
        }
    }

    /// Makes the first `len` bytes from the data pointer linear (pulling
    /// them out of the fragments if needed); `false` if the packet is
    /// shorter or memory is short.
    pub fn pull_into_linear(&mut self, len: usize) -> bool {
        let Ok(n) = u32::try_from(len) else {
            return false;
        };
        // SAFETY: By the invariant the skb is valid and ours.
        unsafe { b::rrxe_skb_may_pull(self.as_raw(), n) }
    }

    /// Moves the data pointer `len` bytes on (dropping a header from the
    /// front); `len` must lie in the linear area.
    pub fn pull(&mut self, len: usize) -> bool {
        if len > self.linear().len() {
            return false;
        }
        let Ok(n) = u32::try_from(len) else {
            return false;
        };
        // SAFETY: `len` bytes are linear (checked), so `skb_pull` moves the
        // data pointer within the buffer.
        unsafe { b::skb_pull(self.as_raw(), n) };
        true
    }

    /// Calls `f` with each piece of the packet's bytes from the data
    /// pointer on, in order, without copying: the linear area, then each
    /// page fragment. A fragment that others may write (see
    /// [`SkBuff::add_shared_page`]) is only named, as a [`Piece::Shared`],
    /// for [`SkBuff::shared_frag`] to reach. `None` if the packet has a
    /// fragment list or a fragment whose memory is not readable, or if `f`
    /// returns `None` (the caller drops the packet).
    pub fn for_each_piece<'a>(&'a self, mut f: impl FnMut(Piece<'a>) -> Option<()>) -> Option<()> {
        let skb = self.as_raw();
        // SAFETY: By the invariant the skb is valid.
        if unsafe { b::rrxe_skb_has_frag_list(skb) } {
            return None;
        }
        let linear = self.linear();
        if !linear.is_empty() {
            f(Piece::Bytes(linear))?;
        }
        // SAFETY: As above.
        let frags = unsafe { b::rrxe_skb_nr_frags(skb) };
        for i in 0..frags {
            let (p, len, shared) = self.frag(i)?;
            let piece = if shared {
                Piece::Shared {
                    index: usize::try_from(i).ok()?,
                    len,
                }
            } else {
                // SAFETY: Fragment pages are mapped (no highmem on the
                // architectures rrxe builds for) and stay referenced by the
                // skb for as long as `self` lives; `frag` gave the
                // fragment's address and length. Nobody writes a fragment
                // that is not shared: a received page was written before
                // the packet was handed on, the zero page never is.
                Piece::Bytes(unsafe { core::slice::from_raw_parts(p.as_ptr(), len) })
            };
            f(piece)?;
        }
        Some(())
    }

    /// The address and length of fragment `i` and whether others may
    /// write it; `None` if there is no such fragment or its memory is not
    /// readable.
    fn frag(&self, i: u32) -> Option<(NonNull<u8>, usize, bool)> {
        let mut len = 0u32;
        let mut shared = false;
        // SAFETY: By the invariant the skb is valid; the shim checks `i`
        // against its number of fragments and returns the fragment's
        // kernel address and length, or NULL.
        let p = unsafe { b::rrxe_skb_frag_data(self.as_raw(), i, &mut len, &mut shared) };
        Some((
            NonNull::new(p.cast_mut().cast::<u8>())?,
            len as usize,
            shared,
        ))
    }

    /// The `len` bytes at `off` of fragment `index`, as bytes others may
    /// write; `None` if there are no such bytes.
    pub fn shared_frag(&self, index: usize, off: usize, len: usize) -> Option<SharedBytes<'_>> {
        let (p, flen, _) = self.frag(u32::try_from(index).ok()?)?;
        // SAFETY: Fragment pages are mapped (no highmem on the
        // architectures rrxe builds for) and referenced by the skb for as
        // long as `self` lives; others may write them, which `SharedBytes`
        // allows.
        let all = unsafe { SharedBytes::from_raw(p, flen) };
        all.sub(off, len)
    }

    /// Whether others may write some of the packet's fragments
    /// (`SKBFL_SHARED_FRAG`: pages spliced from a file or a process).
    pub fn has_shared_frag(&self) -> bool {
        // SAFETY: By the invariant the skb is valid.
        unsafe { b::rrxe_skb_has_shared_frag(self.as_raw()) }
    }

    /// The network (IP) header and everything up to the data pointer (for
    /// received packets whose UDP header was pulled: IP header + UDP
    /// header), as long as it is linear.
    pub fn network_header(&self) -> &[u8] {
        // SAFETY: By the invariant the skb is valid; the shim returns the
        // offset of the network header from `data` (negative or zero) and
        // that range lies in the linear area, which lives as long as `self`.
        unsafe {
            let skb = self.as_raw();
            let off = b::rrxe_skb_network_offset(skb);
            let Ok(before) = usize::try_from(off.unsigned_abs()) else {
                return &[];
            };
            if off > 0 {
                return &[];
            }
            core::slice::from_raw_parts((*skb).data.cast_const().sub(before), before)
        }
    }

    /// Marks the current data pointer as the network header's start.
    pub fn reset_network_header(&mut self) {
        // SAFETY: By the invariant the skb is valid.
        unsafe { b::rrxe_skb_reset_network_header(self.as_raw()) };
    }

    /// Sets the transport header `off` bytes after the network header.
    pub fn set_transport_after_network(&mut self, off: usize) {
        if let Ok(off) = c_int::try_from(off) {
            // SAFETY: By the invariant the skb is valid.
            unsafe { b::rrxe_skb_set_transport_after_network(self.as_raw(), off) };
        }
    }

    /// The first word of the control buffer (`cb`), which belongs to
    /// whoever holds the packet: a value its owner keeps with it while the
    /// packet waits (set with [`SkBuff::set_cb_word`]).
    pub fn cb_word(&self) -> u32 {
        // SAFETY: By the invariant the skb is valid; its `cb` is a plain
        // byte array of 48 bytes, of which the first 4 are read (without
        // assuming their alignment).
        unsafe {
            let cb = core::ptr::addr_of!((*self.as_raw()).cb);
            core::ptr::read_unaligned(cb.cast::<u32>())
        }
    }

    /// Sets the first word of the control buffer (see [`SkBuff::cb_word`]).
    /// Only the owner of the packet, which no other layer reads now, calls
    /// this.
    pub fn set_cb_word(&mut self, v: u32) {
        // SAFETY: By the invariant the skb is valid and ours (`&mut self`):
        // no one else reads or writes its control buffer meanwhile, whose
        // first 4 of 48 bytes are written (without assuming alignment).
        unsafe {
            core::ptr::write_unaligned(
                core::ptr::addr_of_mut!((*self.as_raw()).cb).cast::<u32>(),
                v,
            )
        }
    }

    /// The interface index of the device the packet came in on (a VLAN
    /// device's real device), 0 if none.
    pub fn ifindex(&self) -> i32 {
        // SAFETY: By the invariant the skb is valid.
        unsafe { b::rrxe_skb_ifindex(self.as_raw()) }
    }

    /// The VLAN the packet came in on, if it came in on a VLAN device.
    pub fn vlan_id(&self) -> Option<u16> {
        // SAFETY: By the invariant the skb is valid.
        u16::try_from(unsafe { b::rrxe_skb_vlan_id(self.as_raw()) }).ok()
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // Where softirqs may be disabled, the packet's head goes to this
        // CPU's cache of skb heads (the one NAPI feeds), which `alloc_skb`
        // takes from next: a packet built and consumed on one CPU, as a
        // local one is, then costs no slab allocation for its head.
        if bh::may_disable() {
            let _bh = bh::disable();
            // SAFETY: By the invariant the skb is ours and freed only here;
            // a non-zero budget asks for softirq context, which `_bh` gives.
            unsafe { b::napi_consume_skb(self.as_raw(), 1) };
        } else {
            // SAFETY: By the invariant the skb is ours and freed only here.
            unsafe { b::rrxe_skb_free(self.as_raw()) };
        }
    }
}

/// A queue of packets (`struct sk_buff_head`), safe to use from any
/// context; its lock is taken with interrupts off.
///
/// # Invariants
///
/// `head` is an initialised list head whose every entry is an skb the queue
/// owns.
#[pin_data(PinnedDrop)]
pub struct SkbQueue {
    #[pin]
    head: Opaque<b::sk_buff_head>,
}

// SAFETY: The list has its own lock; the skbs in it are owned by the queue.
unsafe impl Send for SkbQueue {}
// SAFETY: As above.
unsafe impl Sync for SkbQueue {}

impl SkbQueue {
    /// An empty queue.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `head` is valid, pinned memory for a list head.
            // INVARIANT: initialised empty.
            head <- Opaque::ffi_init(|h| unsafe { b::rrxe_skb_queue_init(h) }),
        })
    }

    /// Appends `skb`.
    pub fn push(&self, skb: SkBuff) {
        // SAFETY: The head is initialised (invariant); the queue takes
        // ownership of the skb.
        unsafe { b::skb_queue_tail(self.head.get(), skb.into_raw().as_ptr()) };
    }

    /// Takes the oldest packet. An empty queue is seen without its lock (a
    /// packet pushed meanwhile may or may not be taken, as with the lock).
    pub fn pop(&self) -> Option<SkBuff> {
        if self.is_empty() {
            return None;
        }
        // SAFETY: The head is initialised (invariant).
        let raw = NonNull::new(unsafe { b::skb_dequeue(self.head.get()) })?;
        // SAFETY: Dequeued skbs are owned by the queue, and now by us.
        Some(unsafe { SkBuff::from_raw(raw) })
    }

    /// Number of packets queued (a snapshot).
    pub fn len(&self) -> usize {
        // SAFETY: The head is initialised; reading the length is racy but
        // harmless (a snapshot).
        unsafe { b::rrxe_skb_queue_len(self.head.get()) as usize }
    }

    /// Whether the queue is empty (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Frees every queued packet.
    pub fn purge(&self) {
        while self.pop().is_some() {}
    }
}

#[pinned_drop]
impl PinnedDrop for SkbQueue {
    fn drop(self: Pin<&mut Self>) {
        self.purge();
    }
}
