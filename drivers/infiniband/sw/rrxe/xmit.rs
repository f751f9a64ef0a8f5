// SPDX-License-Identifier: GPL-2.0

//! Where a QP's packets go, and how they get there.
//!
//! A packet is built straight into a socket buffer ([`Packet`]): the
//! protocol engine writes the RoCE headers and payload after room for the
//! IP and UDP headers (or, for a QP of this device, only the headers, with
//! the payload's user pages as fragments: [`Path::packet_by_ref`]). Then
//! [`Path::send`] either
//!
//! * hands it to a QP of the same device (the destination MAC is the
//!   device's own): the IP and UDP headers are written for the receiver to
//!   read (a UD receive reports them as the GRH), but no ICRC is computed
//!   or checked, as the packet never leaves memory; or
//! * sends it on the wire: headers, ICRC over the finished packet, and
//!   the IP layer, over the route the connection cached.

use crate::{
    ah::AhInfo,
    datapath::Datapath,
    exec::QpCore,
    mem::PdMemory,
    net::{
        route::{self, Endpoints, IpAddr, Route, HEADROOM},
        skb::SkBuff,
    },
    proto::{headers::ROCE_V2_PORT, icrc, PayloadRef},
    stats::Counter,
};
use core::cell::OnceCell;
use kernel::{prelude::*, sync::Arc};

/// A packet delivered locally with at least this many bytes (BTH to ICRC)
/// lets its receiver run from its stream work item (see [`Path::send`]).
const PIPELINE_BYTES: u64 = 1024;

/// Most payload bytes a connected QP puts in one packet for a QP of this
/// device: a local segment of as many path MTUs
/// ([`crate::proto::QpConfig::segment_pkts`]). 16 KiB of user pages are at
/// most 5 fragments of a socket buffer, and as a copy (kernel memory) one
/// allocation of 16 KiB plus headers.
const SEGMENT_BYTES: u32 = 16384;

/// A payload of at least this many bytes for a QP of this device is sent
/// from its pages by reference (see [`Path::packet_by_ref`]); a smaller one
/// costs less to copy than the page references and fragments it would
/// take.
const BY_REF_BYTES: u32 = 512;

/// The kernel's CRC-32 (`crc32_le`) for the ICRC.
pub(crate) fn crc32(crc: u32, data: &[u8]) -> u32 {
    // SAFETY: `data` is a valid buffer of `data.len()` bytes.
    unsafe { crate::bindings::crc32_le(crc, data.as_ptr().cast(), data.len()) }
}

/// The IPv4 address a RoCE v2 GID holds (`::ffff:a.b.c.d`), if it does.
fn ipv4_of(gid: &[u8; 16]) -> Option<[u8; 4]> {
    let (prefix, v4) = gid.split_at(12);
    let v4: [u8; 4] = v4.try_into().ok()?;
    (prefix == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]).then_some(v4)
}

/// The IP address of a RoCE v2 GID.
fn ip_of(gid: &[u8; 16]) -> IpAddr {
    match ipv4_of(gid) {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(*gid),
    }
}

/// A RoCE v2 packet being built: room for the IP and UDP headers in
/// front, then the bytes the engine writes.
pub(crate) struct Packet {
    skb: SkBuff,
    /// The payload is user pages sent by reference.
    by_ref: bool,
}

impl Packet {
    /// A packet of `len` bytes from the BTH to the ICRC; `None` without
    /// memory (the protocol then behaves as if it were lost).
    pub(crate) fn new(len: usize) -> Option<Self> {
        Self::reusing(None, len)
    }

    /// As [`Packet::new`], in `spare` (a packet received and handled) if it
    /// can be reused ([`SkBuff::reuse`]).
    pub(crate) fn reusing(spare: Option<SkBuff>, len: usize) -> Option<Self> {
        let mut skb = match spare.and_then(|s| s.reuse(HEADROOM, len)) {
            Some(skb) => skb,
            None => SkBuff::alloc(HEADROOM, len)?,
        };
        skb.put(len)?;
        Some(Self { skb, by_ref: false })
    }

    /// The bytes from the BTH on that the packet holds itself: all of them
    /// up to the ICRC, or for a packet whose payload is sent by reference
    /// ([`Path::packet_by_ref`]) the headers.
    pub(crate) fn bytes(&mut self) -> &mut [u8] {
        let len = self.skb.linear().len();
        // SAFETY: `data` starts the linear area's `len` bytes, which only
        // this object reaches.
        unsafe { core::slice::from_raw_parts_mut((*self.skb.as_raw()).data, len) }
    }
}

/// Where one flow of packets goes: its endpoints, whether it stays on this
/// device, and (for the wire) its cached route.
pub(crate) struct Path {
    ep: Endpoints,
    /// The destination is this device (its own MAC address).
    local: bool,
    /// The route, for a connection (UD sends look theirs up each time).
    route: Option<Route>,
    /// Interface the packets leave through (the source GID's), 0: the
    /// device's own.
    oif: i32,
    /// A connection's path to a QP of this device: that QP, found by its
    /// number at the first packet, so later ones skip the device's table.
    /// A QP destroyed meanwhile takes no more packets (its runs drop what
    /// arrives, as they do for a connection to a QP that is gone); a new
    /// QP given its number is not this connection's peer, and a new
    /// connection (`modify_qp` to RTR) makes a new path.
    peer: Option<OnceCell<Arc<QpCore>>>,
}

impl Path {
    /// A path to the address `to` (its GIDs of one family, `EINVAL`
    /// otherwise) with UDP source port `sport`; `cached` keeps the route
    /// between sends.
    pub(crate) fn new(dp: &Datapath, to: &AhInfo, sport: u16, cached: bool) -> Result<Self> {
        let (src, dst) = (ip_of(&to.sgid), ip_of(&to.dgid));
        if matches!(
            (src, dst),
            (IpAddr::V4(_), IpAddr::V6(_)) | (IpAddr::V6(_), IpAddr::V4(_))
        ) {
            return Err(EINVAL);
        }
        let local = to.dmac == dp.mac();
        Ok(Self {
            ep: Endpoints {
                src,
                dst,
                tclass: to.tclass,
                ttl: if to.hop_limit == 0 { 64 } else { to.hop_limit },
                flow_label: to.flow_label & 0xf_ffff,
                sport,
                dport: ROCE_V2_PORT,
            },
            local,
            route: if cached && !local {
                Some(Route::new()?)
            } else {
                None
            },
            oif: to.ifindex,
            peer: (cached && local).then(OnceCell::new),
        })
    }

    /// How many PSNs of `mtu` bytes one of a connection's SEND or WRITE
    /// packets, or READ responses, may stand for
    /// ([`crate::proto::QpConfig::segment_pkts`]): 1 to another host; up to
    /// [`SEGMENT_BYTES`] of payload to a QP of this device, whose
    /// connection to this one makes the same choice, as the packet never
    /// leaves memory.
    pub(crate) fn segments(&self, mtu: u32) -> u32 {
        if !self.local {
            return 1;
        }
        SEGMENT_BYTES.checked_div(mtu).unwrap_or(1).max(1)
    }

    /// A packet of `len` bytes from the BTH to the ICRC whose first `head`
    /// bytes (the headers) the caller writes into [`Packet::bytes`] and
    /// whose payload, next, is `payload`, sent from the pages it lies in
    /// rather than copied; the pad and ICRC bytes are zeros. The packet
    /// holds a reference to each page, so a deregistration or an exiting
    /// process cannot free them under it.
    ///
    /// Only on a local path, where no ICRC is computed, and only for memory
    /// of pinned user pages; `None` otherwise (and when memory is short),
    /// and the caller copies the payload into a [`Packet::new`].
    pub(crate) fn packet_by_ref(
        &self,
        mem: &PdMemory<'_>,
        len: usize,
        head: usize,
        payload: PayloadRef,
    ) -> Option<Packet> {
        if !self.local || payload.len < BY_REF_BYTES {
            return None;
        }
        let tail = len.checked_sub(head)?.checked_sub(payload.len as usize)?;
        // The packet is only allocated once the payload is known to be in
        // user pages: a kernel caller's memory is copied instead.
        let mut pkt = mem.user_pages(
            payload.key,
            payload.va,
            payload.len,
            payload.access,
            || Packet::new(head),
            |pkt, page, off, n| {
                // SAFETY: `user_pages` keeps the page pinned for the call and
                // names a piece within it.
                unsafe { pkt.skb.add_shared_page(page, off, n) }
            },
        )?;
        // The pad and ICRC (at most 7 bytes).
        if tail > 0 && !pkt.skb.add_zeros(tail) {
            return None;
        }
        pkt.by_ref = true;
        Some(pkt)
    }

    /// A connection's peer on this device, QP `qpn` (looked up once, then
    /// kept); `None` for any other path, or if there is no such QP (yet).
    fn local_peer(&self, dp: &Datapath, qpn: u32) -> Option<&Arc<QpCore>> {
        let cell = self.peer.as_ref()?;
        if let Some(qp) = cell.get() {
            return Some(qp);
        }
        let qp = dp.qp(qpn)?;
        Some(cell.get_or_init(|| qp))
    }

    /// Whether the path runs over IPv6 (else IPv4).
    pub(crate) fn is_ipv6(&self) -> bool {
        matches!(self.ep.dst, IpAddr::V6(_))
    }

    /// Whether `skb`, received (its network header set), came from the
    /// other end of this path to this end, as a connected QP's packets
    /// must: anything else on its QP number is someone else's.
    pub(crate) fn is_from_peer(&self, skb: &SkBuff) -> bool {
        self.ep.is_reply(skb.network_header())
    }

    /// Writes the IP and UDP headers of a packet for a QP of this device
    /// in front of `skb`'s data (its `len` bytes from the BTH on), for the
    /// receiver to read, and leaves the data where it starts; `false` if
    /// they cannot be written.
    fn local_headers(&self, skb: &mut SkBuff, len: usize) -> bool {
        let hlen = self.ep.header_len();
        let Some(hdr) = skb.push(hlen) else {
            return false;
        };
        if self.ep.write_headers(hdr, len).is_err() {
            return false;
        }
        skb.reset_network_header();
        skb.pull(hlen)
    }

    /// Sends `pkt`, which stands for `psns` packets of the path MTU (more
    /// than 1 for a local segment; counted so, as on a wire), to the QP
    /// `dest_qpn` at the other end. `depth` is how deep the caller is in QP
    /// runs nested by local delivery (0 when the caller runs on its own).
    /// Returns `false` if the net device's
    /// transmit queue was full (`send_queue_full`), or if the receiving QP
    /// is one of this device with a full backlog (`rcvd_backlog_full`,
    /// [`crate::exec::RX_BACKLOG_MAX`]) and the caller `may_wait` (a
    /// connected QP): the packet was not sent, and the caller may send it
    /// again later. Any other packet that cannot be sent is lost, as on a
    /// wire (a datagram for a full backlog too); the protocol recovers.
    #[must_use]
    pub(crate) fn send(
        &self,
        dp: &Datapath,
        mut pkt: Packet,
        psns: u32,
        dest_qpn: u32,
        depth: u8,
        may_wait: bool,
    ) -> bool {
        let stream = self.local && asks_for_a_stream(pkt.bytes());
        let by_ref = pkt.by_ref;
        let mut skb = pkt.skb;
        let len = skb.len() as u64;
        if self.local {
            let n = u64::from(psns);
            if !self.local_headers(&mut skb, len as usize) {
                dp.stats.inc(Counter::SendErr);
                return true;
            }
            // A full-size packet is part of a stream: the receiving QP runs
            // from its stream work item, on another CPU, while this one
            // builds the next packets, so the two ends of a transfer run side
            // by side; so does a READ request for a stream of responses
            // ([`asks_for_a_stream`]). Small packets (latency, small
            // messages, ACKs, small READs and atomics) are served at once,
            // in this context.
            let depth = if len >= PIPELINE_BYTES || stream {
                crate::exec::DEFER
            } else {
                depth.saturating_add(1)
            };
            let delivered = match self.local_peer(dp, dest_qpn) {
                Some(qp) => QpCore::receive(qp, skb, psns, depth, may_wait),
                None => dp.deliver(dest_qpn, skb, psns, depth, may_wait),
            };
            if !delivered {
                return false;
            }
            dp.stats.add(Counter::SentPkts, n);
            dp.stats.add(Counter::SentBytes, len);
            dp.stats.add(Counter::RcvdPkts, n);
            dp.stats.add(Counter::RcvdBytes, len);
            if by_ref {
                dp.stats.add(Counter::ZeroCopyPkts, n);
            }
            if n > 1 {
                dp.stats.inc(Counter::LocalSegments);
            }
            return true;
        }
        let seal = |p: &mut [u8]| icrc::fill_ip_packet(&mut crc32, p).map_err(|_| EINVAL);
        let res = route::send(
            self.route.as_ref(),
            dp.netdev(),
            self.oif,
            &self.ep,
            skb,
            seal,
        );
        match res {
            Ok(()) => {
                dp.stats.inc(Counter::SentPkts);
                dp.stats.add(Counter::SentBytes, len);
                true
            }
            Err(e) if e == ENOBUFS => {
                dp.stats.inc(Counter::SendQueueFull);
                false
            }
            Err(_) => {
                dp.stats.inc(Counter::SendErr);
                true
            }
        }
    }
}

/// A READ request whose response carries [`PIPELINE_BYTES`] or more: the
/// responder streams it from its stream work item, on another CPU, while
/// the requester's caller returns to user space. A smaller READ and an atomic
/// are answered at once, in this context, like a small SEND, so the
/// requester has its response before its system call returns.
fn asks_for_a_stream(bth: &[u8]) -> bool {
    use crate::proto::{
        headers::RethRepr,
        opcode::{mask, opcode_info, ExtHeader},
        HeaderRepr,
    };
    let Some(info) = bth.first().and_then(|&op| opcode_info(op)) else {
        return false;
    };
    if !info.is_request() || !info.has(mask::READ) {
        return false;
    }
    info.offset(ExtHeader::Reth)
        .and_then(|at| bth.get(at..))
        .and_then(|reth| RethRepr::parse(reth).ok())
        .is_none_or(|reth| u64::from(reth.len) >= PIPELINE_BYTES)
}
