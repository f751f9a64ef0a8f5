// SPDX-License-Identifier: GPL-2.0

//! Sending UDP datagrams whose payload must be sealed after the IP and UDP
//! headers are final (RoCE v2: the ICRC covers most of the IP header), over
//! a route looked up once and cached (`struct dst_cache`).
//!
//! C headers: [`include/net/route.h`](srctree/include/net/route.h),
//! [`include/net/ip6_route.h`](srctree/include/net/ip6_route.h),
//! [`include/net/dst_cache.h`](srctree/include/net/dst_cache.h).
//!
//! The kernel's UDP tunnel transmit helpers choose the IPv4 identification
//! field while they send, after the last moment at which a RoCE v2 ICRC
//! (which covers it) can be computed. So [`Route::send`] builds the IP and
//! UDP headers in the packet's headroom itself, lets the caller seal the
//! packet, and hands it to `ip_local_out`/`ip6_local_out`, which fill in
//! the IPv4 header checksum and lengths. [`send`] does this over a
//! [`Route`]'s cached route, or a route looked up for one packet.

use super::{netdev::NetDevice, skb::SkBuff};
use crate::bindings as b;
use crate::sync::bh;
use core::ptr::NonNull;
use kernel::{error::from_err_ptr, prelude::*, types::Opaque};

/// Bytes of an IPv4 header without options.
pub const IPV4_HLEN: usize = 20;
/// Bytes of an IPv6 header.
pub const IPV6_HLEN: usize = 40;
/// Bytes of a UDP header.
pub const UDP_HLEN: usize = 8;
/// Headroom a packet needs for the link layer, IP and UDP headers.
pub const HEADROOM: usize = 128;

const IPPROTO_UDP: u8 = 17;

/// The addresses and header fields of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoints {
    /// Source address: an IPv4 address or an IPv6 one.
    pub src: IpAddr,
    /// Destination address, of the same family.
    pub dst: IpAddr,
    /// Type of service / traffic class.
    pub tclass: u8,
    /// Time to live / hop limit.
    pub ttl: u8,
    /// IPv6 flow label (20 bits).
    pub flow_label: u32,
    /// UDP source port.
    pub sport: u16,
    /// UDP destination port.
    pub dport: u16,
}

/// An IP address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpAddr {
    /// IPv4, network byte order.
    V4([u8; 4]),
    /// IPv6, network byte order.
    V6([u8; 16]),
}

impl Endpoints {
    /// Bytes of IP and UDP header in front of the payload.
    pub fn header_len(&self) -> usize {
        match self.src {
            IpAddr::V4(_) => IPV4_HLEN + UDP_HLEN,
            IpAddr::V6(_) => IPV6_HLEN + UDP_HLEN,
        }
    }

    /// Writes the IP and UDP headers of a datagram with `payload` bytes
    /// into `out` (`header_len()` bytes). The IPv4 checksum is left zero
    /// (output computes it); the identification is zero, as for any
    /// datagram that may not be fragmented.
    pub fn write_headers(&self, out: &mut [u8], payload: usize) -> Result {
        let udp_len = payload.checked_add(UDP_HLEN).ok_or(EMSGSIZE)?;
        let udp_len16 = u16::try_from(udp_len).map_err(|_| EMSGSIZE)?;
        let (ip, udp) = match (self.src, self.dst) {
            (IpAddr::V4(src), IpAddr::V4(dst)) => {
                let total = u16::try_from(udp_len.checked_add(IPV4_HLEN).ok_or(EMSGSIZE)?)
                    .map_err(|_| EMSGSIZE)?;
                let (ip, udp) = out.split_at_mut_checked(IPV4_HLEN).ok_or(EINVAL)?;
                let mut h = [0u8; IPV4_HLEN];
                h[0] = 0x45;
                h[1] = self.tclass;
                h[2..4].copy_from_slice(&total.to_be_bytes());
                // Identification 0, don't fragment.
                h[6] = 0x40;
                h[8] = self.ttl;
                h[9] = IPPROTO_UDP;
                h[12..16].copy_from_slice(&src);
                h[16..20].copy_from_slice(&dst);
                ip.copy_from_slice(&h);
                (IPV4_HLEN, udp)
            }
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                let (ip, udp) = out.split_at_mut_checked(IPV6_HLEN).ok_or(EINVAL)?;
                let mut h = [0u8; IPV6_HLEN];
                let word =
                    (6u32 << 28) | (u32::from(self.tclass) << 20) | (self.flow_label & 0xf_ffff);
                h[0..4].copy_from_slice(&word.to_be_bytes());
                h[4..6].copy_from_slice(&udp_len16.to_be_bytes());
                h[6] = IPPROTO_UDP;
                h[7] = self.ttl;
                h[8..24].copy_from_slice(&src);
                h[24..40].copy_from_slice(&dst);
                ip.copy_from_slice(&h);
                (IPV6_HLEN, udp)
            }
            _ => return Err(EAFNOSUPPORT),
        };
        let _ = ip;
        let udp: &mut [u8; UDP_HLEN] = udp
            .get_mut(..UDP_HLEN)
            .and_then(|u| u.try_into().ok())
            .ok_or(EINVAL)?;
        udp[0..2].copy_from_slice(&self.sport.to_be_bytes());
        udp[2..4].copy_from_slice(&self.dport.to_be_bytes());
        udp[4..6].copy_from_slice(&udp_len16.to_be_bytes());
        // A zero UDP checksum: RoCE v2 relies on its ICRC.
        udp[6] = 0;
        udp[7] = 0;
        Ok(())
    }

    /// Whether a received datagram whose IP header starts `ip` came the
    /// other way along these endpoints: from `dst` to `src`. A header too
    /// short for its version, or of the other family, does not.
    pub fn is_reply(&self, ip: &[u8]) -> bool {
        match (self.src, self.dst, ip.first().map(|b| b >> 4)) {
            (IpAddr::V4(src), IpAddr::V4(dst), Some(4)) => {
                ip.get(12..16) == Some(&dst[..]) && ip.get(16..20) == Some(&src[..])
            }
            (IpAddr::V6(src), IpAddr::V6(dst), Some(6)) => {
                ip.get(8..24) == Some(&dst[..]) && ip.get(24..40) == Some(&src[..])
            }
            _ => false,
        }
    }
}

/// The route of one flow of datagrams, looked up on first use and cached
/// (the cache notices when routes change).
///
/// # Invariants
///
/// `cache` is initialised with `dst_cache_init` and destroyed only in `drop`.
pub struct Route {
    cache: KBox<Opaque<b::dst_cache>>,
}

// SAFETY: A dst_cache is per-CPU internally and safe to use from any
// context and CPU concurrently.
unsafe impl Send for Route {}
// SAFETY: As above.
unsafe impl Sync for Route {}

impl Route {
    /// An empty route cache. Allocates, may sleep.
    pub fn new() -> Result<Self> {
        let cache = KBox::new(Opaque::<b::dst_cache>::uninit(), GFP_KERNEL)?;
        // SAFETY: `cache` is valid memory for a dst_cache that does not move
        // (it is boxed).
        let ret = unsafe { b::rrxe_dst_cache_init(cache.get()) };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        // INVARIANT: initialised above.
        Ok(Self { cache })
    }

    /// Forgets the cached route (looked up again on the next send).
    pub fn reset(&self) {
        // SAFETY: By the invariant the cache is initialised.
        unsafe { b::dst_cache_reset_now(self.cache.get()) };
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        // SAFETY: By the invariant the cache is initialised and destroyed
        // only here.
        unsafe { b::dst_cache_destroy(self.cache.get()) };
    }
}

/// Sends `skb`, whose data is a UDP payload, as a datagram between `ep`'s
/// endpoints out of interface `oif` (0: `netdev`; an upper device of it,
/// such as a VLAN, for an address of that device): pushes the IP and UDP headers, lets `seal`
/// finish the whole packet (IP header first, linear), and hands it to the
/// IP layer, over `route`'s cached route or, without one, a route looked up
/// for this packet alone. Callable in any context but hard interrupts.
///
/// `ENOBUFS` means a queue on the way was full (the qdisc returned
/// `NET_XMIT_DROP`, or `NET_XMIT_CN`: congestion, this packet or another
/// dropped) or memory was short: the packet was most likely not sent, and
/// the caller may send it again a little later (at worst a duplicate, which
/// the receiver discards). Any other error is not transient.
pub fn send(
    route: Option<&Route>,
    netdev: &NetDevice,
    oif: i32,
    ep: &Endpoints,
    mut skb: SkBuff,
    seal: impl FnOnce(&mut [u8]) -> Result,
) -> Result {
    let payload = skb.len();
    let hlen = ep.header_len();
    let hdr = skb.push(hlen).ok_or(EINVAL)?;
    ep.write_headers(hdr, payload)?;
    skb.reset_network_header();
    skb.set_transport_after_network(hlen.saturating_sub(UDP_HLEN));
    let total = skb.len();
    if skb.linear().len() != total {
        return Err(EINVAL);
    }
    // SAFETY: The packet is linear (checked): `data` holds `total` bytes
    // that only this function touches until they are sent.
    let packet = unsafe { core::slice::from_raw_parts_mut((*skb.as_raw()).data, total) };
    seal(packet)?;
    let out = Output {
        cache: route.map_or(core::ptr::null_mut(), |r| r.cache.get()),
        net: netdev.net(),
        oif: if oif > 0 { oif } else { netdev.ifindex() },
    };
    // The route cache's per-CPU slots are shared with softirq context, so
    // doorbells and work items use them with softirqs disabled, as the
    // receive path (a softirq) does anyway.
    let _bh = bh::disable();
    match (ep.src, ep.dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => out.v4(skb, src, dst, ep.tclass),
        (IpAddr::V6(src), IpAddr::V6(dst)) => out.v6(skb, src, dst),
        _ => Err(EAFNOSUPPORT),
    }
}

/// The output side of one send.
///
/// # Invariants
///
/// `cache` is NULL or an initialised route cache, and `net` the live
/// namespace of interface `oif`, for the duration of the send.
struct Output {
    cache: *mut b::dst_cache,
    net: *mut b::net,
    oif: i32,
}

impl Output {
    fn v4(&self, skb: SkBuff, src: [u8; 4], dst: [u8; 4], tos: u8) -> Result {
        let saddr = u32::from_ne_bytes(src);
        let mut cached_src = saddr;
        let mut rt = if self.cache.is_null() {
            core::ptr::null_mut()
        } else {
            // SAFETY: The cache is initialised (invariant); on a hit it
            // returns a route with a reference for us.
            unsafe { b::dst_cache_get_ip4(self.cache, &mut cached_src) }
        };
        if !rt.is_null() && cached_src != saddr {
            // SAFETY: We hold a reference to the cached route.
            unsafe { b::dst_release(&raw mut (*rt).dst) };
            rt = core::ptr::null_mut();
        }
        if rt.is_null() {
            let mut fl = b::flowi4 {
                saddr,
                daddr: u32::from_ne_bytes(dst),
                ..Default::default()
            };
            fl.__fl_common.flowic_oif = self.oif;
            fl.__fl_common.flowic_proto = IPPROTO_UDP;
            fl.__fl_common.flowic_dscp = tos >> 2;
            // SAFETY: `net` is live (invariant); the lookup returns a
            // referenced route or an error pointer.
            rt = from_err_ptr(unsafe {
                b::ip_route_output_flow(self.net, &mut fl, core::ptr::null())
            })?;
            if rt.is_null() {
                return Err(EHOSTUNREACH);
            }
            if !self.cache.is_null() {
                // SAFETY: `rt` is referenced; the cache takes its own.
                unsafe { b::dst_cache_set_ip4(self.cache, &raw mut (*rt).dst, saddr) };
            }
        }
        let skb = skb.into_raw().as_ptr();
        // SAFETY: `skb` is ours; the skb takes over our reference to `rt`;
        // `ip_local_out` consumes the skb whatever it returns.
        let ret = unsafe {
            b::rrxe_skb_prepare_output(skb, &raw mut (*rt).dst, false);
            b::ip_local_out(self.net, core::ptr::null_mut(), skb)
        };
        output_result(ret)
    }

    fn v6(&self, skb: SkBuff, src: [u8; 16], dst: [u8; 16]) -> Result {
        let mut cached_src = b::in6_addr::default();
        let mut d = if self.cache.is_null() {
            core::ptr::null_mut()
        } else {
            // SAFETY: The cache is initialised (invariant); on a hit it
            // returns a referenced route.
            unsafe { b::dst_cache_get_ip6(self.cache, &mut cached_src) }
        };
        // SAFETY: `in6_addr` is a union of views of the same 16 bytes.
        if !d.is_null() && unsafe { cached_src.in6_u.u6_addr8 } != src {
            // SAFETY: We hold a reference to the cached route.
            unsafe { b::dst_release(d) };
            d = core::ptr::null_mut();
        }
        if d.is_null() {
            let mut fl = b::flowi6::default();
            fl.__fl_common.flowic_oif = self.oif;
            fl.__fl_common.flowic_proto = IPPROTO_UDP;
            fl.saddr.in6_u.u6_addr8 = src;
            fl.daddr.in6_u.u6_addr8 = dst;
            // SAFETY: `net` is live (invariant); the lookup always returns a
            // referenced dst, whose `error` says whether it is usable.
            d = unsafe { b::ip6_route_output_flags(self.net, core::ptr::null(), &mut fl, 0) };
            let Some(dn) = NonNull::new(d) else {
                return Err(EHOSTUNREACH);
            };
            // SAFETY: `dn` is a valid dst.
            let err = unsafe { (*dn.as_ptr()).error };
            if err != 0 {
                // SAFETY: We hold the lookup's reference.
                unsafe { b::dst_release(d) };
                return Err(Error::from_errno(i32::from(err)));
            }
            if !self.cache.is_null() {
                // SAFETY: `d` is referenced; the cache takes its own.
                unsafe { b::dst_cache_set_ip6(self.cache, d, &fl.saddr) };
            }
        }
        let skb = skb.into_raw().as_ptr();
        // SAFETY: As in `v4`.
        let ret = unsafe {
            b::rrxe_skb_prepare_output(skb, d, true);
            b::ip6_local_out(self.net, core::ptr::null_mut(), skb)
        };
        output_result(ret)
    }
}

/// `ip_local_out`'s result: negative errors, or positive `NET_XMIT_*` codes
/// of which only success counts as sent; a qdisc's drop (`NET_XMIT_DROP`)
/// or congestion notice (`NET_XMIT_CN`) is `ENOBUFS`, a full queue.
fn output_result(ret: c_int) -> Result {
    match ret {
        0 => Ok(()),
        r if r < 0 => Err(Error::from_errno(r)),
        _ => Err(ENOBUFS),
    }
}
