// SPDX-License-Identifier: GPL-2.0

//! The network path of a connected QP: the IP and UDP headers in front of
//! every packet it sends.

use crate::{
    datapath::Datapath,
    proto::{
        headers::{Ipv4, Udp, ROCE_V2_PORT},
        icrc,
    },
    stats::Counter,
};
use kernel::prelude::*;

const IPV4_LEN: usize = 20;
const IPV6_LEN: usize = 40;
const UDP_LEN: usize = 8;
const IPPROTO_UDP: u8 = 17;

/// A RoCE v2 GID holding an IPv4 address (`::ffff:a.b.c.d`).
fn ipv4_of(gid: &[u8; 16]) -> Option<[u8; 4]> {
    if gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff {
        Some([gid[12], gid[13], gid[14], gid[15]])
    } else {
        None
    }
}

/// Source and destination of a connection, from its address vector.
pub(crate) struct Path {
    v4: bool,
    src: [u8; 16],
    dst: [u8; 16],
    hop_limit: u8,
    tclass: u8,
    flow_label: u32,
    sport: u16,
}

impl Path {
    /// A path between two GIDs of the same family (`EINVAL` otherwise).
    pub(crate) fn new(
        sgid: [u8; 16],
        dgid: [u8; 16],
        hop_limit: u8,
        tclass: u8,
        flow_label: u32,
        sport: u16,
    ) -> Result<Self> {
        let v4 = match (ipv4_of(&sgid), ipv4_of(&dgid)) {
            (Some(_), Some(_)) => true,
            (None, None) => false,
            _ => return Err(EINVAL),
        };
        Ok(Self {
            v4,
            src: sgid,
            dst: dgid,
            hop_limit: if hop_limit == 0 { 64 } else { hop_limit },
            tclass,
            flow_label: flow_label & 0xf_ffff,
            sport,
        })
    }

    /// Bytes of IP and UDP header in front of the RoCE v2 packet.
    pub(crate) fn header_len(&self) -> usize {
        if self.v4 {
            IPV4_LEN + UDP_LEN
        } else {
            IPV6_LEN + UDP_LEN
        }
    }

    /// Completes `pkt`, a whole packet whose UDP payload (BTH to ICRC) follows
    /// `header_len()` bytes of room, with its IP and UDP headers and ICRC, and
    /// sends it out of `netdev`.
    pub(crate) fn send(&self, dp: &Datapath, pkt: &mut [u8]) -> Result {
        self.write_headers(pkt)?;
        fill_icrc(pkt)?;
        let res = crate::packet_io::xmit(dp.netdev(), pkt);
        match res {
            Ok(()) => {
                dp.stats.inc(Counter::SentPkts);
                let roce = pkt.len().saturating_sub(self.header_len());
                dp.stats.add(Counter::SentBytes, roce as u64);
            }
            Err(_) => dp.stats.inc(Counter::SendErr),
        }
        res
    }

    /// Writes the IP and UDP headers into the first `header_len()` bytes of
    /// `pkt`, a whole packet whose UDP payload (BTH to ICRC) follows them.
    fn write_headers(&self, pkt: &mut [u8]) -> Result {
        let total = pkt.len();
        let ip_len = if self.v4 { IPV4_LEN } else { IPV6_LEN };
        let udp_len = total
            .checked_sub(ip_len)
            .and_then(|l| u16::try_from(l).ok())
            .ok_or(EINVAL)?;
        let (ip, rest) = pkt.split_at_mut_checked(ip_len).ok_or(EINVAL)?;
        if self.v4 {
            let mut h = Ipv4::new_checked(&mut *ip).map_err(|_| EINVAL)?;
            h.set_ver_ihl(0x45);
            h.set_tos(self.tclass);
            h.set_total_len(u16::try_from(total).map_err(|_| EINVAL)?);
            h.set_ident(0);
            h.set_frag(0x4000); // Don't fragment.
            h.set_ttl(self.hop_limit);
            h.set_protocol(IPPROTO_UDP);
            let (src, dst) = (&self.src, &self.dst);
            h.set_src(u32::from_be_bytes([src[12], src[13], src[14], src[15]]));
            h.set_dst(u32::from_be_bytes([dst[12], dst[13], dst[14], dst[15]]));
            let sum = h.compute_checksum();
            h.set_checksum(sum);
        } else {
            let word = (6u32 << 28) | (u32::from(self.tclass) << 20) | self.flow_label;
            let mut h = [0u8; IPV6_LEN];
            h[0..4].copy_from_slice(&word.to_be_bytes());
            h[4..6].copy_from_slice(&udp_len.to_be_bytes());
            h[6] = IPPROTO_UDP;
            h[7] = self.hop_limit;
            h[8..24].copy_from_slice(&self.src);
            h[24..40].copy_from_slice(&self.dst);
            ip.copy_from_slice(&h);
        }
        let udp = rest.get_mut(..UDP_LEN).ok_or(EINVAL)?;
        let mut u = Udp::new_checked(udp).map_err(|_| EINVAL)?;
        u.set_src_port(self.sport);
        u.set_dst_port(ROCE_V2_PORT);
        u.set_length(udp_len);
        u.set_checksum(0);
        Ok(())
    }
}

/// The kernel's CRC-32 (`crc32_le`) for the ICRC.
pub(crate) fn crc32(crc: u32, data: &[u8]) -> u32 {
    // SAFETY: `data` is a valid buffer of `data.len()` bytes.
    unsafe { crate::rdma::bindings::crc32_le(crc, data.as_ptr().cast(), data.len()) }
}

/// Fills in the ICRC of a whole packet built by `write_headers`.
fn fill_icrc(pkt: &mut [u8]) -> Result {
    icrc::fill_ip_packet(&mut crc32, pkt).map_err(|_| EINVAL)
}
