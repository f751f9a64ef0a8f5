//! The RoCE v2 invariant CRC (ICRC).
//!
//! The ICRC is a CRC-32 (the Ethernet polynomial, reflected) over a
//! pseudo-packet: eight 0xFF bytes standing in for the InfiniBand LRH,
//! the IP header with its variant fields set to all ones, the UDP header
//! with its checksum set to all ones, the BTH with its `resv8a` byte
//! (FECN/BECN) set to all ones, and the rest of the UDP payload up to the
//! ICRC itself. The final value is inverted and sent least significant
//! byte first.
//!
//! The CRC engine is supplied by the caller through [`Crc32`] with the
//! semantics of Linux `crc32_le`: no implicit pre- or post-inversion.

use crate::proto::opcode::{BTH_LEN, ICRC_LEN};
use crate::proto::payload::{Chunk, Payload};

/// A raw CRC-32 (polynomial 0xEDB88320, reflected) update step, like
/// Linux `crc32_le(crc, data, len)`: no inversion on entry or exit.
pub trait Crc32 {
    /// Feed `data` into the running register value `crc`.
    fn update(&mut self, crc: u32, data: &[u8]) -> u32;
}

impl<F: FnMut(u32, &[u8]) -> u32> Crc32 for F {
    fn update(&mut self, crc: u32, data: &[u8]) -> u32 {
        self(crc, data)
    }
}

// Only evaluated at compile time (static initialiser).
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const fn make_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0u32;
    while i < 256 {
        let mut c = i;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i as usize] = c;
        i += 1;
    }
    t
}

static TABLE: [u32; 256] = make_table();

/// Portable table-driven [`Crc32`], for hosts and tests. The kernel should
/// pass `crc32_le` instead.
#[derive(Debug, Clone, Copy, Default)]
pub struct SoftCrc32;

impl Crc32 for SoftCrc32 {
    fn update(&mut self, mut crc: u32, data: &[u8]) -> u32 {
        for &b in data {
            let idx = usize::from((crc as u8) ^ b);
            crc = TABLE.get(idx).copied().unwrap_or(0) ^ (crc >> 8);
        }
        crc
    }
}

/// Register value after `0xFFFFFFFF` and the eight masked LRH bytes.
pub const ICRC_SEED: u32 = 0xdebb_20e3;

/// Errors from the ICRC helpers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IcrcError {
    /// Header or packet shorter than required.
    Truncated,
    /// IP version is neither 4 nor 6.
    BadIpVersion,
    /// IPv4 header with options (IHL != 5): not used by RoCE v2.
    Ipv4Options,
    /// The ICRC does not match.
    Mismatch,
    /// Part of the packet is memory that others may write
    /// ([`crate::proto::Piece::Shared`]), which no CRC is computed over.
    Shared,
}

/// The network header that precedes the UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpHeader<'a> {
    /// A 20-byte IPv4 header.
    V4(&'a [u8]),
    /// A 40-byte IPv6 header.
    V6(&'a [u8]),
}

impl<'a> IpHeader<'a> {
    /// The IP header that starts `hdr`, by its version (its first four
    /// bits); `None` for an empty header or a version other than 4 and 6.
    /// The header's length is not checked.
    pub fn of(hdr: &'a [u8]) -> Option<Self> {
        match hdr.first().map(|b| b >> 4) {
            Some(4) => Some(Self::V4(hdr)),
            Some(6) => Some(Self::V6(hdr)),
            _ => None,
        }
    }
}

const V4_LEN: usize = 20;
const V6_LEN: usize = 40;
const UDP_LEN: usize = 8;

/// Compute the ICRC, returning the four bytes as they appear on the wire.
///
/// `body` is the UDP payload without the ICRC trailer (BTH first).
pub fn compute<C: Crc32>(
    crc: &mut C,
    ip: IpHeader<'_>,
    udp: &[u8],
    body: &[u8],
) -> Result<[u8; 4], IcrcError> {
    compute_payload(crc, ip, udp, &Payload::from_slice(body))
}

/// [`compute`] for a body that may lie in several pieces.
pub fn compute_payload<C: Crc32>(
    crc: &mut C,
    ip: IpHeader<'_>,
    udp: &[u8],
    body: &Payload<'_>,
) -> Result<[u8; 4], IcrcError> {
    // Masked copy of IP + UDP + BTH: at most 40 + 8 + 12 bytes.
    let mut pseudo = [0u8; V6_LEN + UDP_LEN + BTH_LEN];
    let ip_len = match ip {
        IpHeader::V4(h) => {
            let h = h.get(..V4_LEN).ok_or(IcrcError::Truncated)?;
            if !matches!(IpHeader::of(h), Some(IpHeader::V4(_))) {
                return Err(IcrcError::BadIpVersion);
            }
            if h.first().map(|b| b & 0xf) != Some(5) {
                return Err(IcrcError::Ipv4Options);
            }
            copy(&mut pseudo, 0, h);
            // TOS, TTL and header checksum vary hop by hop.
            fill(&mut pseudo, 1..2);
            fill(&mut pseudo, 8..9);
            fill(&mut pseudo, 10..12);
            V4_LEN
        }
        IpHeader::V6(h) => {
            let h = h.get(..V6_LEN).ok_or(IcrcError::Truncated)?;
            if !matches!(IpHeader::of(h), Some(IpHeader::V6(_))) {
                return Err(IcrcError::BadIpVersion);
            }
            copy(&mut pseudo, 0, h);
            // Traffic class, flow label and hop limit.
            if let Some(b) = pseudo.first_mut() {
                *b |= 0x0f;
            }
            fill(&mut pseudo, 1..4);
            fill(&mut pseudo, 7..8);
            V6_LEN
        }
    };
    let udp = udp.get(..UDP_LEN).ok_or(IcrcError::Truncated)?;
    copy(&mut pseudo, ip_len, udp);
    let udp_csum = ip_len.wrapping_add(6);
    fill(&mut pseudo, udp_csum..udp_csum.wrapping_add(2));
    let mut bth = [0u8; BTH_LEN];
    if !body.sub(0, BTH_LEN).is_some_and(|b| b.copy_to(&mut bth)) {
        return Err(IcrcError::Truncated);
    }
    let bth_off = ip_len.wrapping_add(UDP_LEN);
    copy(&mut pseudo, bth_off, &bth);
    let resv8a = bth_off.wrapping_add(4);
    fill(&mut pseudo, resv8a..resv8a.wrapping_add(1));
    let pseudo_len = bth_off.wrapping_add(BTH_LEN);
    let mut c = crc.update(ICRC_SEED, pseudo.get(..pseudo_len).unwrap_or(&[]));
    let rest = body
        .sub(BTH_LEN, body.len().saturating_sub(BTH_LEN))
        .unwrap_or(Payload::empty());
    for chunk in rest.chunks() {
        let Chunk::Bytes(chunk) = chunk else {
            return Err(IcrcError::Shared);
        };
        c = crc.update(c, chunk);
    }
    Ok((!c).to_le_bytes())
}

fn copy(dst: &mut [u8], off: usize, src: &[u8]) {
    // `..src.len()` makes the lengths equal by construction, so the copy
    // has no length-mismatch panic path.
    if let Some(d) = dst.get_mut(off..).and_then(|d| d.get_mut(..src.len())) {
        d.copy_from_slice(src);
    }
}

fn fill(dst: &mut [u8], r: core::ops::Range<usize>) {
    if let Some(d) = dst.get_mut(r) {
        d.fill(0xff);
    }
}

/// Check the ICRC of a UDP payload that ends with its ICRC trailer.
pub fn verify<C: Crc32>(
    crc: &mut C,
    ip: IpHeader<'_>,
    udp: &[u8],
    udp_payload: &[u8],
) -> Result<(), IcrcError> {
    let end = udp_payload
        .len()
        .checked_sub(ICRC_LEN)
        .ok_or(IcrcError::Truncated)?;
    let (body, trailer) = (
        udp_payload.get(..end).ok_or(IcrcError::Truncated)?,
        udp_payload.get(end..).ok_or(IcrcError::Truncated)?,
    );
    if compute(crc, ip, udp, body)? == trailer {
        Ok(())
    } else {
        Err(IcrcError::Mismatch)
    }
}

/// [`verify`] for a UDP payload that may lie in several pieces.
pub fn verify_payload<C: Crc32>(
    crc: &mut C,
    ip: IpHeader<'_>,
    udp: &[u8],
    udp_payload: &Payload<'_>,
) -> Result<(), IcrcError> {
    let end = udp_payload
        .len()
        .checked_sub(ICRC_LEN)
        .ok_or(IcrcError::Truncated)?;
    let body = udp_payload.sub(0, end).ok_or(IcrcError::Truncated)?;
    let mut trailer = [0u8; ICRC_LEN];
    if !udp_payload
        .sub(end, ICRC_LEN)
        .is_some_and(|t| t.copy_to(&mut trailer))
    {
        return Err(IcrcError::Truncated);
    }
    if compute_payload(crc, ip, udp, &body)? == trailer {
        Ok(())
    } else {
        Err(IcrcError::Mismatch)
    }
}

/// Split a whole IP packet (IPv4 without options, or IPv6) into its IP
/// header, UDP header and UDP payload.
pub fn split_ip_packet(pkt: &[u8]) -> Result<(IpHeader<'_>, &[u8], &[u8]), IcrcError> {
    let ip_len = match IpHeader::of(pkt) {
        Some(IpHeader::V4(_)) => V4_LEN,
        Some(IpHeader::V6(_)) => V6_LEN,
        None if pkt.is_empty() => return Err(IcrcError::Truncated),
        None => return Err(IcrcError::BadIpVersion),
    };
    let ip = pkt.get(..ip_len).ok_or(IcrcError::Truncated)?;
    let udp_end = ip_len.wrapping_add(UDP_LEN);
    let udp = pkt.get(ip_len..udp_end).ok_or(IcrcError::Truncated)?;
    let payload = pkt.get(udp_end..).ok_or(IcrcError::Truncated)?;
    let ip = if ip_len == V4_LEN {
        IpHeader::V4(ip)
    } else {
        IpHeader::V6(ip)
    };
    Ok((ip, udp, payload))
}

/// Verify the ICRC at the end of a whole IP packet.
pub fn verify_ip_packet<C: Crc32>(crc: &mut C, pkt: &[u8]) -> Result<(), IcrcError> {
    let (ip, udp, payload) = split_ip_packet(pkt)?;
    verify(crc, ip, udp, payload)
}

/// Compute and store the ICRC in the last four bytes of a whole IP packet.
pub fn fill_ip_packet<C: Crc32>(crc: &mut C, pkt: &mut [u8]) -> Result<(), IcrcError> {
    let v = {
        let (ip, udp, payload) = split_ip_packet(pkt)?;
        let end = payload
            .len()
            .checked_sub(ICRC_LEN)
            .ok_or(IcrcError::Truncated)?;
        compute(
            crc,
            ip,
            udp,
            payload.get(..end).ok_or(IcrcError::Truncated)?,
        )?
    };
    let (_, tail) = pkt
        .split_last_chunk_mut::<ICRC_LEN>()
        .ok_or(IcrcError::Truncated)?;
    *tail = v;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_matches_masked_lrh() {
        assert_eq!(SoftCrc32.update(0xffff_ffff, &[0xff; 8]), ICRC_SEED);
    }

    #[test]
    fn soft_crc_check_value() {
        // The standard CRC-32 check value for "123456789".
        assert_eq!(!SoftCrc32.update(!0, b"123456789"), 0xcbf4_3926);
    }
}
