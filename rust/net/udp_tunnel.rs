// SPDX-License-Identifier: GPL-2.0

//! Kernel UDP tunnel sockets: a UDP port whose every datagram the UDP layer
//! hands to a callback in softirq context, as encapsulated packets.
//!
//! C header: [`include/net/udp_tunnel.h`](srctree/include/net/udp_tunnel.h).

use super::{ns::Net, skb::SkBuff};
use crate::bindings as b;
use core::ptr::NonNull;
use kernel::{prelude::*, sync::Arc};

/// Takes the datagrams of a [`TunnelSocket`].
pub trait EncapReceiver: Send + Sync + 'static {
    /// Called in softirq context for each datagram, which `skb` owns; its
    /// data starts at the UDP header.
    fn receive(&self, skb: SkBuff);
}

/// Address family of a socket.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Family {
    /// IPv4 (`AF_INET`).
    V4,
    /// IPv6 only (`AF_INET6` with `IPV6_V6ONLY`).
    V6,
}

/// A UDP tunnel socket of one network namespace, delivering to a receiver.
///
/// A kernel socket holds no reference to its namespace (else the namespace
/// could never go away): whoever owns one drops it before the namespace is
/// dismantled, from a [`super::ns::PernetHandler`] at the latest.
///
/// # Invariants
///
/// `sock` comes from `udp_sock_create4`/`udp_sock_create6`, set up with
/// `setup_udp_tunnel_sock` to deliver to `_receiver` (its `sk_user_data`),
/// and is released only in `drop`.
pub struct TunnelSocket<R: EncapReceiver> {
    sock: NonNull<b::socket>,
    /// What `sk_user_data` points to, alive while the socket may deliver.
    _receiver: Arc<R>,
}

// SAFETY: The socket is only released, once, by `drop`; `R` is `Send + Sync`.
unsafe impl<R: EncapReceiver> Send for TunnelSocket<R> {}
// SAFETY: `&TunnelSocket` gives no access to the socket.
unsafe impl<R: EncapReceiver> Sync for TunnelSocket<R> {}

impl<R: EncapReceiver> TunnelSocket<R> {
    /// Binds UDP `port` on every address of `family` in `net` and delivers
    /// its datagrams to `receiver`.
    ///
    /// # Safety
    ///
    /// The socket must be dropped before `net` is dismantled (at the latest
    /// in the exit method of pernet operations).
    pub unsafe fn open(net: &Net, family: Family, port: u16, receiver: Arc<R>) -> Result<Self> {
        let mut cfg = b::udp_port_cfg {
            local_udp_port: port.to_be(),
            ..Default::default()
        };
        let mut sock: *mut b::socket = core::ptr::null_mut();
        // SAFETY: `net` is a live namespace (its invariant); `cfg` and
        // `sock` are valid for the call.
        let ret = unsafe {
            match family {
                Family::V4 => {
                    cfg.family = b::AF_INET as u8;
                    b::udp_sock_create4(net.as_raw(), &mut cfg, &mut sock)
                }
                Family::V6 => {
                    cfg.family = b::AF_INET6 as u8;
                    // Zero UDP checksums are accepted on receive (as RoCE v2
                    // peers send them), which `udp_sock_create6` derives
                    // from `use_udp6_rx_checksums` being clear.
                    cfg.set_ipv6_v6only(1);
                    b::udp_sock_create6(net.as_raw(), &mut cfg, &mut sock)
                }
            }
        };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        let sock = NonNull::new(sock).ok_or(ENOMEM)?;
        let mut tcfg = b::udp_tunnel_sock_cfg {
            sk_user_data: Arc::as_ptr(&receiver).cast_mut().cast(),
            encap_type: 1,
            encap_rcv: Some(Self::encap_rcv),
            ..Default::default()
        };
        // SAFETY: `sock` is the socket just created in `net`; `tcfg` is
        // valid for the call (the tunnel code copies what it needs). The
        // receiver `sk_user_data` points to is kept alive by `self` until
        // after the socket is released.
        unsafe { b::setup_udp_tunnel_sock(net.as_raw(), (*sock.as_ptr()).sk, &mut tcfg) };
        // INVARIANT: created and set up above.
        Ok(Self {
            sock,
            _receiver: receiver,
        })
    }

    /// # Safety
    ///
    /// Only called by the UDP layer, under the RCU read lock, as the
    /// `encap_rcv` callback of a socket set up by [`TunnelSocket::open`].
    unsafe extern "C" fn encap_rcv(sk: *mut b::sock, skb: *mut b::sk_buff) -> c_int {
        let Some(skb) = NonNull::new(skb) else {
            return 0;
        };
        // SAFETY: The UDP layer passes ownership of the skb to the
        // callback, which returns 0 to say it consumed it.
        let skb = unsafe { SkBuff::from_raw(skb) };
        // SAFETY: `sk` is the socket, under the RCU read lock.
        let r = unsafe { b::rrxe_sk_user_data(sk) }.cast::<R>();
        if !r.is_null() {
            // SAFETY: `sk_user_data` is the receiver of the owning
            // `TunnelSocket`, which lives until a grace period after the
            // socket is released (and `sk_user_data` cleared).
            unsafe { &*r }.receive(skb);
        }
        0
    }
}

impl<R: EncapReceiver> Drop for TunnelSocket<R> {
    fn drop(&mut self) {
        // SAFETY: By the invariant the socket is live and released only
        // here. Receive callbacks run under RCU: once the socket is gone and
        // a grace period has passed, none is running any more, and
        // `_receiver` (dropped after this) may go.
        unsafe {
            b::udp_tunnel_sock_release((*self.sock.as_ptr()).sk);
            b::synchronize_net();
        }
    }
}
