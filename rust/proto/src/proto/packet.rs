//! Whole-packet parsing and header emission for the RoCE v2 UDP payload
//! (BTH through ICRC).

use crate::proto::headers::{
    AethRepr, AtomicAckRepr, AtomicEthRepr, BthRepr, DethRepr, FethRepr, IethRepr, ImmDtRepr,
    RethRepr,
};
use crate::proto::opcode::{mask, opcode_info, ExtHeader, OpcodeInfo, BTH_LEN, ICRC_LEN};
use crate::proto::payload::{Chunk, Payload};
use crate::proto::wire::HeaderRepr;

/// Largest payload the parser accepts: four times the largest IB path MTU
/// (4096), for a local segment ([`QpConfig::segment_pkts`]). A packet from
/// a network is held to its QP's path MTU by the responder, or to the
/// port's by UD.
///
/// [`QpConfig::segment_pkts`]: crate::proto::qp::QpConfig::segment_pkts
pub const MAX_PAYLOAD: usize = 16384;

/// Longest BTH plus extension headers of any opcode (a BTH, RETH and
/// immediate data, or a BTH and AtomicETH, are the longest).
pub const MAX_HDR_LEN: usize = 64;

/// Why a packet was rejected. Each reason is meant to be counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParseError {
    /// Shorter than its headers plus ICRC.
    Truncated,
    /// BTH transport version is not 0.
    BadVersion,
    /// Opcode not in the table (RD, CNP, vendor, reserved...).
    UnknownOpcode,
    /// Pad count larger than the payload, payload plus pad not a multiple
    /// of four bytes, or padding on a packet that carries no payload.
    BadPad,
    /// Payload bytes on an opcode that carries none.
    UnexpectedPayload,
    /// Reserved AETH syndrome.
    BadSyndrome,
    /// Payload larger than [`MAX_PAYLOAD`].
    TooLong,
}

impl ParseError {
    /// Number of variants, for sizing a counter array.
    pub const COUNT: usize = 7;

    /// Dense index in `0..COUNT`, for counter arrays.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Short name for statistics.
    pub const fn name(self) -> &'static str {
        match self {
            ParseError::Truncated => "truncated",
            ParseError::BadVersion => "bad_version",
            ParseError::UnknownOpcode => "unknown_opcode",
            ParseError::BadPad => "bad_pad",
            ParseError::UnexpectedPayload => "unexpected_payload",
            ParseError::BadSyndrome => "bad_syndrome",
            ParseError::TooLong => "too_long",
        }
    }
}

/// Why headers could not be emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EmitError {
    /// The opcode is not in the table.
    UnknownOpcode,
    /// The optional headers present do not match the opcode.
    HeaderMismatch,
    /// A payload was given for an opcode without one, or it is too long.
    BadPayload,
    /// The output buffer is shorter than [`Headers::packet_len`].
    BufferTooSmall,
}

/// The BTH and extension headers of one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Headers {
    /// Base transport header. `pad_count` is recomputed by [`Headers::emit`].
    pub bth: BthRepr,
    /// DETH (UD).
    pub deth: Option<DethRepr>,
    /// FETH (FLUSH).
    pub feth: Option<FethRepr>,
    /// RETH (RDMA WRITE first/only, READ request, ATOMIC WRITE, FLUSH).
    pub reth: Option<RethRepr>,
    /// AtomicETH (CMP_SWP, FETCH_ADD).
    pub atomic: Option<AtomicEthRepr>,
    /// AETH (responses).
    pub aeth: Option<AethRepr>,
    /// AtomicAckETH: original remote value.
    pub atomic_ack: Option<u64>,
    /// Immediate data.
    pub imm: Option<u32>,
    /// R_Key to invalidate.
    pub ieth: Option<u32>,
}

/// Per-header emit/parse action, so the list of headers is written once:
/// `f` gets each header the opcode has, with its offset, in wire order.
fn for_each_ext<E>(
    info: &OpcodeInfo,
    mut f: impl FnMut(ExtHeader, usize) -> Result<(), E>,
) -> Result<(), E> {
    let mut off = BTH_LEN;
    for h in ExtHeader::ORDER {
        if info.mask & h.mask() != 0 {
            f(h, off)?;
            off = off.wrapping_add(h.wire_len());
        }
    }
    Ok(())
}

fn pad_for(len: usize) -> usize {
    len.wrapping_neg() & 3
}

/// Length of a packet of opcode `info` with `payload_len` bytes of payload
/// (at most [`MAX_PAYLOAD`]: no overflow), pad and ICRC included.
fn total_len(info: &OpcodeInfo, payload_len: usize) -> usize {
    info.hdr_len
        .wrapping_add(payload_len)
        .wrapping_add(pad_for(payload_len))
        .wrapping_add(ICRC_LEN)
}

impl Headers {
    /// Headers with only a BTH set.
    pub fn new(bth: BthRepr) -> Self {
        Headers {
            bth,
            ..Headers::default()
        }
    }

    fn present_mask(&self) -> u32 {
        let bit = |present: bool, m: u32| if present { m } else { 0 };
        bit(self.deth.is_some(), mask::DETH)
            | bit(self.feth.is_some(), mask::FETH)
            | bit(self.reth.is_some(), mask::RETH)
            | bit(self.atomic.is_some(), mask::ATMETH)
            | bit(self.aeth.is_some(), mask::AETH)
            | bit(self.atomic_ack.is_some(), mask::ATMACK)
            | bit(self.imm.is_some(), mask::IMMDT)
            | bit(self.ieth.is_some(), mask::IETH)
    }

    fn checked_info(&self, payload_len: usize) -> Result<&'static OpcodeInfo, EmitError> {
        let info = opcode_info(self.bth.opcode).ok_or(EmitError::UnknownOpcode)?;
        let ext = mask::DETH
            | mask::FETH
            | mask::RETH
            | mask::ATMETH
            | mask::AETH
            | mask::ATMACK
            | mask::IMMDT
            | mask::IETH;
        if info.mask & ext != self.present_mask() {
            return Err(EmitError::HeaderMismatch);
        }
        if payload_len > MAX_PAYLOAD || (payload_len > 0 && !info.has(mask::PAYLOAD)) {
            return Err(EmitError::BadPayload);
        }
        Ok(info)
    }

    /// Total packet length (headers, payload, pad and ICRC).
    pub fn packet_len(&self, payload_len: usize) -> Result<usize, EmitError> {
        self.layout(payload_len).map(|(_, total)| total)
    }

    /// Write the headers to `buf`, zero the pad bytes and the ICRC, and
    /// return the offset at which the caller must place `payload_len`
    /// payload bytes. The BTH pad count is derived from `payload_len`.
    pub fn emit(&self, buf: &mut [u8], payload_len: usize) -> Result<usize, EmitError> {
        let info = self.checked_info(payload_len)?;
        let total = total_len(info, payload_len);
        let buf = buf.get_mut(..total).ok_or(EmitError::BufferTooSmall)?;
        let off = self.write_headers(info, buf, payload_len)?;
        let tail_start = off.wrapping_add(payload_len);
        if let Some(tail) = buf.get_mut(tail_start..) {
            tail.fill(0);
        }
        Ok(off)
    }

    /// The length of the headers (BTH and extension headers: the offset of
    /// the payload) and the total packet length (headers, payload, pad and
    /// ICRC), from one check of the headers.
    pub fn layout(&self, payload_len: usize) -> Result<(usize, usize), EmitError> {
        let info = self.checked_info(payload_len)?;
        Ok((info.hdr_len, total_len(info, payload_len)))
    }

    /// Write only the headers to `buf` (at least as many bytes as
    /// [`Headers::layout`] gives them), for a packet of `payload_len`
    /// payload bytes that the caller places elsewhere, and return their
    /// length. The BTH pad count is derived from `payload_len`.
    pub fn emit_headers(&self, buf: &mut [u8], payload_len: usize) -> Result<usize, EmitError> {
        let info = self.checked_info(payload_len)?;
        self.write_headers(info, buf, payload_len)
    }

    /// [`Headers::emit_headers`] for checked headers of opcode `info`.
    fn write_headers(
        &self,
        info: &OpcodeInfo,
        buf: &mut [u8],
        payload_len: usize,
    ) -> Result<usize, EmitError> {
        let buf = buf
            .get_mut(..info.hdr_len)
            .ok_or(EmitError::BufferTooSmall)?;
        let mut bth = self.bth;
        bth.pad_count = u8::try_from(pad_for(payload_len)).unwrap_or(0);
        let small = |_| EmitError::BufferTooSmall;
        bth.emit(buf).map_err(small)?;
        for_each_ext(info, |h, off| {
            let b = buf.get_mut(off..).ok_or(EmitError::BufferTooSmall)?;
            let r = match h {
                ExtHeader::Deth => self.deth.map(|x| x.emit(b)),
                ExtHeader::Feth => self.feth.map(|x| x.emit(b)),
                ExtHeader::Reth => self.reth.map(|x| x.emit(b)),
                ExtHeader::AtomicEth => self.atomic.map(|x| x.emit(b)),
                ExtHeader::Aeth => self.aeth.map(|x| x.emit(b)),
                ExtHeader::AtomicAckEth => self.atomic_ack.map(|x| AtomicAckRepr(x).emit(b)),
                ExtHeader::ImmDt => self.imm.map(|x| ImmDtRepr(x).emit(b)),
                ExtHeader::Ieth => self.ieth.map(|x| IethRepr(x).emit(b)),
            };
            r.ok_or(EmitError::HeaderMismatch)?.map_err(small)
        })?;
        Ok(info.hdr_len)
    }
}

/// A parsed RoCE v2 packet borrowing its payload from the input buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// Opcode table entry.
    pub info: &'static OpcodeInfo,
    /// All headers.
    pub hdr: Headers,
    /// Payload without pad bytes.
    pub payload: Payload<'a>,
    /// The ICRC exactly as on the wire.
    pub icrc: [u8; 4],
}

/// Parse a UDP payload (BTH first, ICRC in the last four bytes).
///
/// Never panics; rejects short, inconsistent or unknown packets. The ICRC
/// is returned but not checked (see [`crate::proto::icrc`]).
pub fn parse(buf: &[u8]) -> Result<Packet<'_>, ParseError> {
    parse_payload(Payload::from_slice(buf))
}

/// Parse a UDP payload that may lie in several pieces (a received packet's
/// fragments), as [`parse`] does; the packet's payload borrows the pieces.
pub fn parse_payload(udp_payload: Payload<'_>) -> Result<Packet<'_>, ParseError> {
    parse_payload_with(udp_payload, |pkt| *pkt)
}

/// [`parse_payload`], lending the packet to `f` where it was parsed rather
/// than returning it: a caller that only reads it saves the copy of its
/// headers.
pub fn parse_payload_with<'a, R>(
    udp_payload: Payload<'a>,
    f: impl FnOnce(&Packet<'a>) -> R,
) -> Result<R, ParseError> {
    // The headers in one place: as many bytes as any headers take, or
    // fewer where the payload (or its readable bytes) ends. Read where they
    // lie if they are in one readable piece, as in a linear packet, and
    // gathered otherwise (they may cross pieces).
    let front = udp_payload.sub(0, udp_payload.len().min(MAX_HDR_LEN));
    let gathered: [u8; MAX_HDR_LEN];
    let buf: &[u8] = match front.and_then(|f| f.as_slice()) {
        Some(bytes) => bytes,
        None => {
            let got;
            (gathered, got) = gather_headers(front);
            gathered.get(..got).ok_or(ParseError::Truncated)?
        }
    };
    let bth = BthRepr::parse(buf)?;
    let info = opcode_info(bth.opcode).ok_or(ParseError::UnknownOpcode)?;
    let body_end = udp_payload
        .len()
        .checked_sub(ICRC_LEN)
        .ok_or(ParseError::Truncated)?;
    if body_end < info.hdr_len {
        return Err(ParseError::Truncated);
    }
    let icrc = read_icrc(udp_payload.sub(body_end, ICRC_LEN)).ok_or(ParseError::Truncated)?;
    let padded = body_end
        .checked_sub(info.hdr_len)
        .ok_or(ParseError::Truncated)?;
    // Payload plus pad fills whole 4-byte words (all headers do too).
    if padded & 3 != 0 {
        return Err(ParseError::BadPad);
    }
    let pad = usize::from(bth.pad_count);
    let payload_len = padded.checked_sub(pad).ok_or(ParseError::BadPad)?;
    if !info.has(mask::PAYLOAD) {
        if pad != 0 {
            return Err(ParseError::BadPad);
        }
        if payload_len != 0 {
            return Err(ParseError::UnexpectedPayload);
        }
    }
    if payload_len > MAX_PAYLOAD {
        return Err(ParseError::TooLong);
    }
    let payload = udp_payload
        .sub(info.hdr_len, payload_len)
        .ok_or(ParseError::BadPad)?;
    // Built where it is lent, the extension headers filled in place.
    let mut pkt = Packet {
        info,
        hdr: Headers::new(bth),
        payload,
        icrc,
    };
    let hdr = &mut pkt.hdr;
    for_each_ext(info, |h, off| {
        let b = buf.get(off..).ok_or(ParseError::Truncated)?;
        match h {
            ExtHeader::Deth => hdr.deth = Some(DethRepr::parse(b)?),
            ExtHeader::Feth => hdr.feth = Some(FethRepr::parse(b)?),
            ExtHeader::Reth => hdr.reth = Some(RethRepr::parse(b)?),
            ExtHeader::AtomicEth => hdr.atomic = Some(AtomicEthRepr::parse(b)?),
            ExtHeader::Aeth => hdr.aeth = Some(AethRepr::parse(b)?),
            ExtHeader::AtomicAckEth => hdr.atomic_ack = Some(AtomicAckRepr::parse(b)?.0),
            ExtHeader::ImmDt => hdr.imm = Some(ImmDtRepr::parse(b)?.0),
            ExtHeader::Ieth => hdr.ieth = Some(IethRepr::parse(b)?.0),
        }
        Ok(())
    })?;
    Ok(f(&pkt))
}

/// The headers at the front of a payload (`front`, at most
/// [`MAX_HDR_LEN`] bytes) gathered from the pieces they lie in, and how
/// many bytes were readable: the copy stops at the first shared piece.
fn gather_headers(front: Option<Payload<'_>>) -> ([u8; MAX_HDR_LEN], usize) {
    let mut hbuf = [0u8; MAX_HDR_LEN];
    let mut got = 0usize;
    for chunk in front.iter().flat_map(|f| f.chunks()) {
        let Chunk::Bytes(c) = chunk else { break };
        let end = got.saturating_add(c.len());
        // `..c.len()` makes the lengths equal, so the copy cannot panic.
        if let Some(d) = hbuf.get_mut(got..).and_then(|d| d.get_mut(..c.len())) {
            d.copy_from_slice(c);
        }
        got = end;
    }
    (hbuf, got)
}

/// The ICRC bytes (`tail`, the last [`ICRC_LEN`] of the payload), read in
/// place if they lie in one readable piece; `None` if any is not readable.
fn read_icrc(tail: Option<Payload<'_>>) -> Option<[u8; ICRC_LEN]> {
    let tail = tail?;
    if let Some(icrc) = tail
        .as_slice()
        .and_then(|s| <[u8; ICRC_LEN]>::try_from(s).ok())
    {
        return Some(icrc);
    }
    let mut icrc = [0u8; ICRC_LEN];
    tail.copy_to(&mut icrc).then_some(icrc)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::proto::opcode::rc;
    use crate::proto::{Msn, Psn, Syndrome};

    fn bth(op: u8) -> BthRepr {
        BthRepr {
            opcode: op,
            pkey: 0xffff,
            dest_qpn: 0x11,
            psn: Psn::new(0xabcdef),
            ack_req: true,
            ..BthRepr::default()
        }
    }

    #[test]
    fn emit_parse_write_imm() {
        let mut h = Headers::new(bth(rc::RDMA_WRITE_ONLY_WITH_IMMEDIATE));
        h.reth = Some(RethRepr {
            va: 0x1000,
            rkey: 7,
            len: 5,
        });
        h.imm = Some(0xdeadbeef);
        let mut buf = [0xaau8; 64];
        let len = h.packet_len(5).unwrap();
        assert_eq!(len, 32 + 5 + 3 + 4);
        let off = h.emit(&mut buf, 5).unwrap();
        buf[off..off + 5].copy_from_slice(b"hello");
        let p = parse(&buf[..len]).unwrap();
        assert!(p.payload == *b"hello".as_slice());
        assert_eq!(p.hdr.bth.pad_count, 3);
        assert_eq!(p.hdr.reth, h.reth);
        assert_eq!(p.hdr.imm, Some(0xdeadbeef));
        assert_eq!(p.icrc, [0; 4]);
    }

    #[test]
    fn flush_headers() {
        let mut h = Headers::new(bth(rc::FLUSH));
        h.feth = Some(FethRepr {
            placement: FethRepr::GLOBAL,
            selectivity: FethRepr::REGION,
        });
        h.reth = Some(RethRepr {
            va: 0x1000,
            rkey: 0x1234,
            len: 64,
        });
        let mut buf = [0xaau8; 64];
        let len = h.packet_len(0).unwrap();
        assert_eq!(len, 12 + 4 + 16 + 4);
        h.emit(&mut buf, 0).unwrap();
        // FETH right after the BTH: placement in bits 3-0, selectivity in
        // bits 5-4 of its last byte; then the RETH.
        assert_eq!(buf[12..16], [0, 0, 0, 0x11]);
        assert_eq!(buf[16..24], 0x1000u64.to_be_bytes());
        let p = parse(&buf[..len]).unwrap();
        assert_eq!(p.hdr.feth, h.feth);
        assert_eq!(p.hdr.reth, h.reth);
        // Reserved bits are ignored.
        buf[12] = 0xff;
        buf[15] = 0xc2;
        let p = parse(&buf[..len]).unwrap();
        assert_eq!(
            p.hdr.feth,
            Some(FethRepr {
                placement: FethRepr::PERSISTENT,
                selectivity: 0,
            })
        );
        // A FLUSH has no payload.
        assert_eq!(h.emit(&mut buf, 4), Err(EmitError::BadPayload));
        let mut no_feth = h;
        no_feth.feth = None;
        assert_eq!(no_feth.emit(&mut buf, 0), Err(EmitError::HeaderMismatch));
    }

    #[test]
    fn rejects() {
        let mut h = Headers::new(bth(rc::ACKNOWLEDGE));
        h.aeth = Some(AethRepr {
            syndrome: Syndrome::Nak(crate::proto::NakCode::PsnSeqError),
            msn: Msn::new(3),
        });
        let mut buf = [0u8; 20];
        assert_eq!(h.packet_len(0), Ok(20));
        h.emit(&mut buf, 0).unwrap();
        assert!(parse(&buf).is_ok());
        assert_eq!(parse(&buf[..19]), Err(ParseError::Truncated));
        assert_eq!(parse(&buf[..3]), Err(ParseError::Truncated));
        let mut long = [0u8; 24];
        long[..20].copy_from_slice(&buf);
        assert_eq!(parse(&long), Err(ParseError::UnexpectedPayload));
        let mut b2 = buf;
        b2[1] |= 0x10;
        assert_eq!(parse(&b2), Err(ParseError::BadPad));
        let mut b3 = buf;
        b3[1] |= 0x01;
        assert_eq!(parse(&b3), Err(ParseError::BadVersion));
        let mut b4 = buf;
        b4[0] = 0x15;
        assert_eq!(parse(&b4), Err(ParseError::UnknownOpcode));
        // Found by the fuzzer: pad count inconsistent with the length.
        let unaligned = [0, 0, 0, 0, 0x0e, 0, 0x7e, 0, 0, 0, 0, 0, 0x3f, 0, 0, 0, 0];
        assert_eq!(parse(&unaligned), Err(ParseError::BadPad));
        let mut b5 = buf;
        b5[12] = 0x40;
        assert_eq!(parse(&b5), Err(ParseError::BadSyndrome));
        assert_eq!(
            Headers::new(bth(rc::ACKNOWLEDGE)).emit(&mut buf, 0),
            Err(EmitError::HeaderMismatch)
        );
        assert_eq!(h.emit(&mut buf, 1), Err(EmitError::BadPayload));
        assert_eq!(h.emit(&mut buf[..10], 0), Err(EmitError::BufferTooSmall));
    }
}
