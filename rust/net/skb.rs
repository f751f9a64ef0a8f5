// SPDX-License-Identifier: GPL-2.0

//! Socket buffers (`struct sk_buff`): packets the driver builds, sends,
//! receives and queues.
//!
//! C header: [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h).
//!
//! [`SkBuff`] owns one packet. Its bytes are in a linear area and, for
//! received packets, possibly in page fragments as well; [`SkBuff::pieces`]
//! gives all of them in order without copying (no linearisation).
//! [`SkbQueue`] is a queue of packets that any context may add to.

use crate::bindings as b;
use core::ptr::NonNull;
use kernel::{prelude::*, types::Opaque};

/// Most pieces a packet's bytes are in: the linear area and the page
/// fragments (`MAX_SKB_FRAGS`, 17 by default).
pub const MAX_PIECES: usize = 18;

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

    /// Appends `len` bytes at offset `off` of `page` to the packet, as its
    /// next fragment. The skb takes a page reference of its own, so the
    /// bytes stay readable for as long as it lives, whatever becomes of the
    /// page's other users. `false` if no fragment slot is left.
    ///
    /// # Safety
    ///
    /// `page` is a valid page that stays allocated for the call, and
    /// `off + len <= PAGE_SIZE`.
    pub unsafe fn add_page(&mut self, page: NonNull<b::page>, off: usize, len: usize) -> bool {
        let (Ok(off), Ok(len)) = (u32::try_from(off), u32::try_from(len)) else {
            return false;
        };
        // SAFETY: The skb is valid (invariant); the page and the range are
        // valid by the caller's promise; the shim checks the fragment slots.
        unsafe { b::rrxe_skb_add_page(self.as_raw(), page.as_ptr(), off, len) }
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

    /// Fills `out` with the packet's bytes from the data pointer on, in
    /// order, without copying: the linear area, then each page fragment.
    /// Returns how many pieces were stored, or `None` if the packet has a
    /// fragment list or more pieces than `out` holds (the caller drops it)
    /// or a fragment whose memory is not readable.
    pub fn pieces<'a>(&'a self, out: &mut [&'a [u8]]) -> Option<usize> {
        let skb = self.as_raw();
        // SAFETY: By the invariant the skb is valid.
        if unsafe { b::rrxe_skb_has_frag_list(skb) } {
            return None;
        }
        let mut n = 0usize;
        let linear = self.linear();
        if !linear.is_empty() {
            *out.get_mut(n)? = linear;
            n = n.checked_add(1)?;
        }
        // SAFETY: As above.
        let frags = unsafe { b::rrxe_skb_nr_frags(skb) };
        for i in 0..frags {
            let mut len = 0u32;
            // SAFETY: `i` is below the skb's number of fragments; the shim
            // returns the fragment's kernel address and length, or NULL.
            let p = unsafe { b::rrxe_skb_frag_data(skb, i, &mut len) };
            if p.is_null() {
                return None;
            }
            // SAFETY: Fragment pages are mapped (no highmem on the
            // architectures rrxe builds for) and stay referenced by the skb
            // for as long as `self` lives. A fragment added with `add_page`
            // may be a page of user memory, which its process may write at
            // any time, as a NIC's DMA may write memory it was given, and
            // which the receiver's own copy may write too (a READ onto its
            // source: the copies into registered memory are `memmove`s for
            // that). Such a piece holds payload only, which its readers copy
            // and never interpret.
            let piece = unsafe { core::slice::from_raw_parts(p.cast::<u8>(), len as usize) };
            *out.get_mut(n)? = piece;
            n = n.checked_add(1)?;
        }
        Some(n)
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
        // SAFETY: By the invariant the skb is ours and freed only here.
        unsafe { b::rrxe_skb_free(self.as_raw()) };
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

    /// Takes the oldest packet.
    pub fn pop(&self) -> Option<SkBuff> {
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
