// SPDX-License-Identifier: GPL-2.0

//! Data of work requests that the RC engine holds but that does not sit in
//! one registered region: inline data (copied out of the send WQE) and
//! scatter/gather lists of more than one element.
//!
//! The engine names memory by key and address only, with one SGE per
//! request. A staged request gets a reserved key (index 0, which no region
//! ever has) and an address whose upper 32 bits pick a slot here; reads and
//! writes through such a key are resolved here, and for lists passed on to
//! the protection domain's regions element by element, with every check.
//! Slots are reused in order, and there are as many as the engine holds
//! send requests, so a slot is only reused after its request completed
//! (RC completes in order). The store is sized by the QP's capabilities:
//! a QP without inline data or lists stages nothing.

use crate::{
    mem::PdMemory,
    net::skb::SkBuff,
    proto::{Access, AtomicOp, LocalOp, MemError, MemoryAccess, Placement, Sge, SharedRange},
    shared_bytes::SharedBytes,
    wqe::SgeList,
};
use kernel::prelude::*;

/// Key of inline data.
pub(crate) const INLINE_KEY: u32 = 0;
/// Key of a send request's gather list.
pub(crate) const SEND_SGL_KEY: u32 = 1;
/// Key of a receive request's scatter list.
pub(crate) const RECV_SGL_KEY: u32 = 2;
/// Keys at or below this are reserved (user SGEs naming them are remapped).
pub(crate) const LAST_RESERVED_KEY: u32 = 0xff;

/// Receive slots: twice the receive WQEs the engine takes ahead.
pub(crate) const RECV_SLOTS: usize = 4;

/// What a send request carries besides its one SGE.
pub(crate) enum Extra<'a> {
    /// Nothing: the SGE names registered memory.
    None,
    /// Inline data.
    Inline(&'a [u8]),
    /// A gather list of several elements.
    List(SgeList<'a>),
}

/// The staging store of one connected QP.
pub(crate) struct Staging {
    /// Send slots.
    slots: usize,
    /// Inline bytes per send slot.
    inline_per: usize,
    inline: KVVec<u8>,
    /// List elements per send slot (0 if the QP sends one SGE at most).
    sgl_per: usize,
    send: KVVec<Sge>,
    send_len: KVVec<usize>,
    /// List elements per receive slot.
    rsgl_per: usize,
    recv: KVVec<Sge>,
    recv_len: [usize; RECV_SLOTS],
    next_send: usize,
    next_recv: usize,
}

fn zeroed<T: Copy + Default>(n: usize) -> Result<KVVec<T>> {
    Ok(KVVec::from_elem(T::default(), n, GFP_KERNEL)?)
}

/// The address naming byte 0 of `slot`.
fn slot_va(slot: usize) -> u64 {
    (slot as u64) << 32
}

fn copy_list(dst: &mut [Sge], list: SgeList<'_>) -> Option<(usize, u32)> {
    let mut n = 0usize;
    let mut total = 0u32;
    for s in list.iter() {
        *dst.get_mut(n)? = s;
        n = n.checked_add(1)?;
        total = total.checked_add(s.length)?;
    }
    Some((n, total))
}

/// The `len` elements of slot `slot` of a store of `width` elements per slot.
fn slot_range(slot: usize, width: usize, len: usize) -> Option<core::ops::Range<usize>> {
    let start = slot.checked_mul(width)?;
    Some(start..start.checked_add(len)?)
}

impl Staging {
    /// A store for `slots` send requests of at most `max_inline` inline
    /// bytes or `max_send_sge` SGEs, and receive requests of at most
    /// `max_recv_sge` SGEs.
    pub(crate) fn new(
        slots: usize,
        max_inline: usize,
        max_send_sge: usize,
        max_recv_sge: usize,
    ) -> Result<Self> {
        let sgl_per = if max_send_sge > 1 { max_send_sge } else { 0 };
        let rsgl_per = if max_recv_sge > 1 { max_recv_sge } else { 0 };
        let sized = |per: usize| slots.checked_mul(per).ok_or(ENOMEM);
        Ok(Self {
            slots,
            inline_per: max_inline,
            inline: zeroed(sized(max_inline)?)?,
            sgl_per,
            send: zeroed(sized(sgl_per)?)?,
            send_len: zeroed(if sgl_per > 0 { slots } else { 0 })?,
            rsgl_per,
            recv: zeroed(RECV_SLOTS.checked_mul(rsgl_per).ok_or(ENOMEM)?)?,
            recv_len: [0; RECV_SLOTS],
            next_send: 0,
            next_recv: 0,
        })
    }

    /// Stages what a send request carries besides `sge`; returns the SGE the
    /// engine gets, or `None` if it cannot be staged (more than the QP's
    /// capabilities allow).
    pub(crate) fn stage_send(&mut self, sge: Sge, extra: Extra<'_>) -> Option<Sge> {
        let slot = self.next_send.checked_rem(self.slots)?;
        let sge = match extra {
            Extra::None => return Some(sge),
            Extra::Inline(data) => {
                if data.len() > self.inline_per {
                    return None;
                }
                self.inline
                    .get_mut(slot_range(slot, self.inline_per, data.len())?)?
                    .copy_from_slice(data);
                Sge {
                    addr: slot_va(slot),
                    length: u32::try_from(data.len()).ok()?,
                    lkey: INLINE_KEY,
                }
            }
            Extra::List(list) => {
                let dst = self
                    .send
                    .get_mut(slot_range(slot, self.sgl_per, self.sgl_per)?)?;
                let (n, total) = copy_list(dst, list)?;
                *self.send_len.get_mut(slot)? = n;
                Sge {
                    addr: slot_va(slot),
                    length: total,
                    lkey: SEND_SGL_KEY,
                }
            }
        };
        self.next_send = self.next_send.wrapping_add(1);
        Some(sge)
    }

    /// Stages a receive request's scatter list; returns the SGE the engine gets.
    pub(crate) fn stage_recv(&mut self, list: SgeList<'_>) -> Option<Sge> {
        let slot = self.next_recv.checked_rem(RECV_SLOTS)?;
        let dst = self
            .recv
            .get_mut(slot_range(slot, self.rsgl_per, self.rsgl_per)?)?;
        let (n, total) = copy_list(dst, list)?;
        *self.recv_len.get_mut(slot)? = n;
        self.next_recv = self.next_recv.wrapping_add(1);
        Some(Sge {
            addr: slot_va(slot),
            length: total,
            lkey: RECV_SGL_KEY,
        })
    }

    /// The memory the engine of a QP of protection domain `pd` reaches.
    pub(crate) fn memory<'a>(&'a self, pd: PdMemory<'a>) -> StagedMemory<'a> {
        StagedMemory {
            pd,
            st: self,
            packet: None,
        }
    }

    fn list(&self, key: u32, slot: usize) -> Option<&[Sge]> {
        match key {
            SEND_SGL_KEY => {
                self.send
                    .get(slot_range(slot, self.sgl_per, *self.send_len.get(slot)?)?)
            }
            RECV_SGL_KEY => {
                self.recv
                    .get(slot_range(slot, self.rsgl_per, *self.recv_len.get(slot)?)?)
            }
            _ => None,
        }
    }
}

/// Registered memory of a PD plus the staging store.
pub(crate) struct StagedMemory<'a> {
    pd: PdMemory<'a>,
    st: &'a Staging,
    /// The packet being handled, whose shared fragments
    /// ([`MemoryAccess::write_shared`]) are copied from.
    packet: Option<&'a SkBuff>,
}

impl<'a> StagedMemory<'a> {
    /// The memory, for handling `packet`: its payload may lie in
    /// fragments that only the packet reaches.
    pub(crate) fn for_packet(self, packet: &'a SkBuff) -> Self {
        Self {
            packet: Some(packet),
            ..self
        }
    }

    /// [`MemoryAccess::write`] of bytes that may be a slice or memory
    /// that others may write.
    fn write_from(
        &mut self,
        key: u32,
        va: u64,
        data: SharedBytes<'_>,
        access: Access,
    ) -> Result<(), MemError> {
        match key {
            SEND_SGL_KEY | RECV_SGL_KEY if access == Access::LocalWrite => {
                let (list, off) = resolve(self.st, key, va, data.len())?;
                for p in pieces(list, off, data.len()) {
                    let p = p?;
                    let src = data.sub(p.at, p.len).ok_or(MemError::OutOfRange)?;
                    self.pd.write_from(p.sge.lkey, p.va, src, access)?;
                }
                Ok(())
            }
            _ => self.pd.write_from(key, va, data, access),
        }
    }
}

/// One piece of a range of a list's concatenation: the element, the
/// address in it the piece starts at, where the piece starts in the range,
/// and its length.
struct Piece {
    sge: Sge,
    va: u64,
    at: usize,
    len: usize,
}

/// Splits `[off, off + len)` of a list's concatenation into per-element
/// pieces. The range must lie inside the list (see [`resolve`]); an element
/// whose address range would pass 2^64 ends the split with `OutOfRange`.
fn pieces(
    list: &[Sge],
    off: u64,
    len: usize,
) -> impl Iterator<Item = Result<Piece, MemError>> + '_ {
    let end = u64::try_from(len).ok().and_then(|l| off.checked_add(l));
    let mut start = 0u64;
    list.iter().filter_map(move |s| {
        let lo = start;
        let hi = lo.saturating_add(u64::from(s.length));
        start = hi;
        let end = end?;
        let a = off.max(lo);
        let b = end.min(hi);
        if a >= b {
            return None;
        }
        // `a - lo < s.length` and `a - off`, `b - a` are below `len`.
        let piece = (|| {
            Some(Piece {
                sge: *s,
                va: s.addr.checked_add(a.checked_sub(lo)?)?,
                at: usize::try_from(a.checked_sub(off)?).ok()?,
                len: usize::try_from(b.checked_sub(a)?).ok()?,
            })
        })();
        Some(piece.ok_or(MemError::OutOfRange))
    })
}

/// The list and range a staged address names, checked against its total.
fn resolve(st: &Staging, key: u32, va: u64, len: usize) -> Result<(&[Sge], u64), MemError> {
    let list = st.list(key, slot_of(va)).ok_or(MemError::BadKey)?;
    let off = va & 0xffff_ffff;
    let total = list
        .iter()
        .fold(0u64, |t, s| t.saturating_add(u64::from(s.length)));
    let end = u64::try_from(len)
        .ok()
        .and_then(|l| off.checked_add(l))
        .ok_or(MemError::OutOfRange)?;
    if end > total {
        return Err(MemError::OutOfRange);
    }
    Ok((list, off))
}

/// The slot a staged address names.
fn slot_of(va: u64) -> usize {
    usize::try_from(va >> 32).unwrap_or(usize::MAX)
}

impl MemoryAccess for StagedMemory<'_> {
    fn check(&mut self, key: u32, va: u64, len: u32, access: Access) -> Result<(), MemError> {
        let n = usize::try_from(len).map_err(|_| MemError::OutOfRange)?;
        match key {
            INLINE_KEY if access == Access::LocalRead => read_inline(self.st, va, n).map(|_| ()),
            SEND_SGL_KEY | RECV_SGL_KEY
                if matches!(access, Access::LocalRead | Access::LocalWrite) =>
            {
                let (list, off) = resolve(self.st, key, va, n)?;
                for p in pieces(list, off, n) {
                    let p = p?;
                    let plen = u32::try_from(p.len).map_err(|_| MemError::OutOfRange)?;
                    self.pd.check(p.sge.lkey, p.va, plen, access)?;
                }
                Ok(())
            }
            _ => self.pd.check(key, va, len, access),
        }
    }

    fn read(&mut self, key: u32, va: u64, buf: &mut [u8], access: Access) -> Result<(), MemError> {
        match key {
            INLINE_KEY if access == Access::LocalRead => {
                buf.copy_from_slice(read_inline(self.st, va, buf.len())?);
                Ok(())
            }
            SEND_SGL_KEY | RECV_SGL_KEY if access == Access::LocalRead => {
                let (list, off) = resolve(self.st, key, va, buf.len())?;
                for p in pieces(list, off, buf.len()) {
                    let p = p?;
                    let dst = buf
                        .get_mut(p.at..p.at.saturating_add(p.len))
                        .ok_or(MemError::OutOfRange)?;
                    self.pd.read(p.sge.lkey, p.va, dst, access)?;
                }
                Ok(())
            }
            _ => self.pd.read(key, va, buf, access),
        }
    }

    fn write(&mut self, key: u32, va: u64, data: &[u8], access: Access) -> Result<(), MemError> {
        self.write_from(key, va, data.into(), access)
    }

    fn write_shared(
        &mut self,
        key: u32,
        va: u64,
        range: SharedRange,
        access: Access,
    ) -> Result<(), MemError> {
        let data = self
            .packet
            .and_then(|skb| skb.shared_frag(range.index, range.off, range.len))
            .ok_or(MemError::OutOfRange)?;
        self.write_from(key, va, data, access)
    }

    fn atomic(&mut self, rkey: u32, va: u64, op: AtomicOp) -> Result<u64, MemError> {
        self.pd.atomic(rkey, va, op)
    }

    fn flush(
        &mut self,
        rkey: u32,
        range: Option<(u64, u32)>,
        placement: Placement,
    ) -> Result<(), MemError> {
        self.pd.flush(rkey, range, placement)
    }

    fn invalidate(&mut self, rkey: u32) -> Result<(), MemError> {
        self.pd.invalidate(rkey)
    }

    fn local(&mut self, op: LocalOp) -> Result<(), MemError> {
        self.pd.local(op)
    }
}

/// The inline data a staged address names.
fn read_inline(st: &Staging, va: u64, len: usize) -> Result<&[u8], MemError> {
    let slot = slot_of(va);
    let off = usize::try_from(va & 0xffff_ffff).map_err(|_| MemError::OutOfRange)?;
    let end = off.checked_add(len).ok_or(MemError::OutOfRange)?;
    if slot >= st.slots || end > st.inline_per {
        return Err(MemError::OutOfRange);
    }
    let base = slot
        .checked_mul(st.inline_per)
        .ok_or(MemError::OutOfRange)?;
    let (start, stop) = (base.checked_add(off), base.checked_add(end));
    let range = start
        .zip(stop)
        .map(|(a, b)| a..b)
        .ok_or(MemError::OutOfRange)?;
    st.inline.get(range).ok_or(MemError::OutOfRange)
}
