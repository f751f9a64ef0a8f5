// SPDX-License-Identifier: GPL-2.0

//! Received packets: from the UDP socket (softirq) to the QP they are for.
//!
//! The UDP layer hands every datagram on port 4791 to the sockets' namespace
//! ([`crate::netns::Space`]), which finds the device by the interface the
//! packet came in on; [`dispatch`] checks the ICRC over
//! the packet's pieces where they lie (no linearisation), and queues the
//! packet on its destination QP, which then runs at once in this softirq
//! (or is asked to run again by whichever context is running it). Nothing
//! here sleeps or takes a lock that a process holds for long.

use crate::{
    datapath::Datapath,
    net::skb::{SkBuff, MAX_PIECES},
    proto::{
        headers::BthRepr,
        icrc::{self, IpHeader},
        opcode::BTH_LEN,
        parse_payload, HeaderRepr, Packet, Payload,
    },
    stats::Counter,
    xmit::crc32,
};
use kernel::sync::Arc;

/// Bytes of a UDP header.
const UDP_HLEN: usize = 8;

/// Checks a packet that came from the wire and queues it on its QP.
pub(crate) fn dispatch(dp: &Arc<Datapath>, mut skb: SkBuff) {
    // The UDP and IP headers go to the front of the skb's data, the RoCE
    // headers must be in one place to be read.
    if !skb.pull_into_linear(UDP_HLEN.saturating_add(BTH_LEN)) || !skb.pull(UDP_HLEN) {
        return dp.drop_packet(Counter::RcvdHdrErr);
    }
    let Some(qpn) = verify(&skb) else {
        return dp.drop_packet(Counter::RcvdIcrcErr);
    };
    dp.stats.inc(Counter::RcvdPkts);
    dp.stats.add(Counter::RcvdBytes, skb.len() as u64);
    dp.deliver(qpn, skb, 0);
}

/// Verifies the ICRC of a received packet (data at the BTH, IP and UDP
/// headers in front of it) and returns its destination QP number.
fn verify(skb: &SkBuff) -> Option<u32> {
    let hdrs = skb.network_header();
    let ip_len = hdrs.len().checked_sub(UDP_HLEN)?;
    let (ip, udp) = hdrs.split_at_checked(ip_len)?;
    let ip = IpHeader::of(ip)?;
    let mut pieces: [&[u8]; MAX_PIECES] = [&[]; MAX_PIECES];
    let n = skb.pieces(&mut pieces)?;
    let (first, rest) = pieces.get(..n)?.split_first()?;
    let payload = Payload::from_pieces(first, rest);
    icrc::verify_payload(&mut crc32, ip, udp, &payload).ok()?;
    let bth = BthRepr::parse(first).ok()?;
    Some(bth.dest_qpn)
}

/// Parses a packet a QP received (data at its BTH) where its pieces lie and
/// hands it to `f`; `None` if it does not parse.
pub(crate) fn with_packet<R>(skb: &SkBuff, f: impl FnOnce(&Packet<'_>) -> R) -> Option<R> {
    let mut pieces: [&[u8]; MAX_PIECES] = [&[]; MAX_PIECES];
    let n = skb.pieces(&mut pieces)?;
    let (first, rest) = pieces.get(..n)?.split_first()?;
    // Borrowed where it was parsed: moving the packet out of the `Result`
    // would copy its 200 bytes (a `memcpy` per packet).
    parse_payload(Payload::from_pieces(first, rest))
        .as_ref()
        .ok()
        .map(f)
}
