// SPDX-License-Identifier: GPL-2.0

//! Kernel UDP tunnel sockets: a UDP port whose every datagram the UDP layer
//! hands to a callback in softirq context, as encapsulated packets.
//!
//! C header: [`include/net/udp_tunnel.h`](srctree/include/net/udp_tunnel.h).

use super::skb::SkBuff;
use crate::bindings as b;
use core::{marker::PhantomData, ptr::NonNull};
use kernel::prelude::*;

/// Takes the datagrams of a [`TunnelSocket`].
pub trait EncapReceiver: 'static {
    /// Called in softirq context for each datagram, which `skb` owns; its
    /// data starts at the UDP header.
    fn receive(skb: SkBuff);
}

/// Address family of a socket.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Family {
    /// IPv4 (`AF_INET`).
    V4,
    /// IPv6 only (`AF_INET6` with `IPV6_V6ONLY`).
    V6,
}

/// A UDP tunnel socket of the initial network namespace.
///
/// # Invariants
///
/// `sock` comes from `udp_sock_create4`/`udp_sock_create6`, set up with
/// `setup_udp_tunnel_sock` to deliver to `R`, and is released only in `drop`.
pub struct TunnelSocket<R: EncapReceiver> {
    sock: NonNull<b::socket>,
    _r: PhantomData<R>,
}

// SAFETY: The socket is only released, once, by `drop`.
unsafe impl<R: EncapReceiver> Send for TunnelSocket<R> {}
// SAFETY: `&TunnelSocket` gives no access to the socket.
unsafe impl<R: EncapReceiver> Sync for TunnelSocket<R> {}

impl<R: EncapReceiver> TunnelSocket<R> {
    /// Binds UDP `port` on every address of `family` and delivers its
    /// datagrams to `R`.
    pub fn open(family: Family, port: u16) -> Result<Self> {
        let mut cfg = b::udp_port_cfg {
            local_udp_port: port.to_be(),
            ..Default::default()
        };
        let mut sock: *mut b::socket = core::ptr::null_mut();
        // SAFETY: `init_net` is a static of the networking core; `cfg` and
        // `sock` are valid for the call.
        let ret = unsafe {
            match family {
                Family::V4 => {
                    cfg.family = b::AF_INET as u8;
                    b::udp_sock_create4(&raw mut b::init_net, &mut cfg, &mut sock)
                }
                Family::V6 => {
                    cfg.family = b::AF_INET6 as u8;
                    // Zero UDP checksums are accepted on receive (as RoCE v2
                    // peers send them), which `udp_sock_create6` derives
                    // from `use_udp6_rx_checksums` being clear.
                    cfg.set_ipv6_v6only(1);
                    b::udp_sock_create6(&raw mut b::init_net, &mut cfg, &mut sock)
                }
            }
        };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        let sock = NonNull::new(sock).ok_or(ENOMEM)?;
        let mut tcfg = b::udp_tunnel_sock_cfg {
            encap_type: 1,
            encap_rcv: Some(Self::encap_rcv),
            ..Default::default()
        };
        // SAFETY: `sock` is the socket just created; `tcfg` is valid for the
        // call (the tunnel code copies what it needs).
        unsafe { b::setup_udp_tunnel_sock(&raw mut b::init_net, (*sock.as_ptr()).sk, &mut tcfg) };
        // INVARIANT: created and set up above.
        Ok(Self {
            sock,
            _r: PhantomData,
        })
    }

    /// # Safety
    ///
    /// Only called by the UDP layer, as the `encap_rcv` callback of a socket
    /// set up by [`TunnelSocket::open`].
    unsafe extern "C" fn encap_rcv(_sk: *mut b::sock, skb: *mut b::sk_buff) -> c_int {
        if let Some(skb) = NonNull::new(skb) {
            // SAFETY: The UDP layer passes ownership of the skb to the
            // callback, which returns 0 to say it consumed it.
            R::receive(unsafe { SkBuff::from_raw(skb) });
        }
        0
    }
}

impl<R: EncapReceiver> Drop for TunnelSocket<R> {
    fn drop(&mut self) {
        // SAFETY: By the invariant the socket is live and released only
        // here. Receive callbacks run under RCU: once the socket is gone and
        // a grace period has passed, none is running any more.
        unsafe {
            b::udp_tunnel_sock_release((*self.sock.as_ptr()).sk);
            b::synchronize_net();
        }
    }
}
