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
    net::skb::{self, SkBuff, MAX_PIECES},
    proto::{
        headers::BthRepr,
        icrc::{self, IpHeader},
        opcode::BTH_LEN,
        parse_payload_with, HeaderRepr, Packet, Payload, Piece,
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
    // Pages that others may write (spliced into a local UDP socket) are
    // copied first: the ICRC is checked over bytes that then stay put.
    if skb.has_shared_frag() && !skb.pull_into_linear(skb.len()) {
        return dp.drop_packet(Counter::RcvdHdrErr);
    }
    let Some(qpn) = verify(&skb) else {
        return dp.drop_packet(Counter::RcvdIcrcErr);
    };
    dp.stats.inc(Counter::RcvdPkts);
    dp.stats.add(Counter::RcvdBytes, skb.len() as u64);
    // From the network: a full backlog drops it.
    let _ = dp.deliver(qpn, skb, 1, 0, false);
}

/// Verifies the ICRC of a received packet (data at the BTH, IP and UDP
/// headers in front of it) and returns its destination QP number.
fn verify(skb: &SkBuff) -> Option<u32> {
    let hdrs = skb.network_header();
    let ip_len = hdrs.len().checked_sub(UDP_HLEN)?;
    let (ip, udp) = hdrs.split_at_checked(ip_len)?;
    let ip = IpHeader::of(ip)?;
    let mut pieces = [Piece::Bytes(&[]); MAX_PIECES];
    let (first, rest) = split(skb, &mut pieces)?;
    let payload = Payload::from_pieces(first, rest);
    icrc::verify_payload(&mut crc32, ip, udp, &payload).ok()?;
    let bth = BthRepr::parse(first).ok()?;
    Some(bth.dest_qpn)
}

/// The packet's pieces (see [`SkBuff::for_each_piece`]) as the protocol
/// core takes them, in `out`: the first, which holds the headers and must
/// be readable, and the rest; `None` if there are none, more than `out`
/// holds, or the first is shared.
fn split<'a>(skb: &'a SkBuff, out: &'a mut [Piece<'a>]) -> Option<(&'a [u8], &'a [Piece<'a>])> {
    let mut n = 0usize;
    skb.for_each_piece(|p| {
        *out.get_mut(n)? = match p {
            skb::Piece::Bytes(b) => Piece::Bytes(b),
            skb::Piece::Shared { index, len } => Piece::Shared { index, len },
        };
        n = n.checked_add(1)?;
        Some(())
    })?;
    match out.get(..n)?.split_first()? {
        (Piece::Bytes(first), rest) => Some((first, rest)),
        (Piece::Shared { .. }, _) => None,
    }
}

/// Parses a packet a QP received (data at its BTH) where its pieces lie and
/// lends it to `f`; `None` if it does not parse.
pub(crate) fn with_packet<R>(skb: &SkBuff, f: impl FnOnce(&Packet<'_>) -> R) -> Option<R> {
    // A packet in one piece (a small one, or one linearised) needs no list
    // of pieces.
    let linear = skb.linear();
    if linear.len() == skb.len() {
        return parse_payload_with(Payload::from_slice(linear), f).ok();
    }
    let mut pieces = [Piece::Bytes(&[]); MAX_PIECES];
    let (first, rest) = split(skb, &mut pieces)?;
    parse_payload_with(Payload::from_pieces(first, rest), f).ok()
}
