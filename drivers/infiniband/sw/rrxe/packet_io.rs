// SPDX-License-Identifier: GPL-2.0

//! Packet I/O: the RoCE v2 UDP sockets (port 4791, IPv4 and IPv6), sending a
//! built IP packet, and the queue of received packets the worker drains.
//!
//! The sockets are UDP tunnel sockets: the UDP layer hands every datagram to
//! rrxe's `encap_rcv` hook (in `rrxe_shims.c`), which queues it and kicks the
//! worker. Everything else happens in the worker, in process context.

use crate::{bindings as b, net::netdev::NetDevice};
use core::ptr::NonNull;
use kernel::{error::from_err_ptr, prelude::*};

/// The RoCE v2 UDP sockets of the initial network namespace.
///
/// # Invariants
///
/// `v4` and `v6` are sockets from `rrxe_udp_open`, released only in `drop`.
pub(crate) struct Sockets {
    v4: NonNull<b::socket>,
    v6: Option<NonNull<b::socket>>,
}

// SAFETY: The sockets are only released, once, by `drop`.
unsafe impl Send for Sockets {}
// SAFETY: `Sockets` has no methods that use the sockets through `&self`.
unsafe impl Sync for Sockets {}

fn open(ipv6: bool) -> Result<NonNull<b::socket>> {
    // SAFETY: The shim has no preconditions; it returns a socket or an error pointer.
    let sock = from_err_ptr(unsafe { b::rrxe_udp_open(ipv6) })?;
    NonNull::new(sock).ok_or(ENOMEM)
}

impl Sockets {
    /// Starts the worker and opens port 4791. IPv6 is optional: without it
    /// (e.g. `ipv6.disable=1`) rrxe carries IPv4 only.
    pub(crate) fn open(run: extern "C" fn()) -> Result<Self> {
        // SAFETY: Called once at module load, before any socket can deliver.
        unsafe { b::rrxe_worker_init(Some(run)) };
        let v4 = open(false)?;
        let v6 = match open(true) {
            Ok(s) => Some(s),
            Err(e) => {
                pr_warn!("no IPv6 RoCE v2 socket ({:?}): IPv4 only\n", e);
                None
            }
        };
        // INVARIANT: Both come from `rrxe_udp_open`.
        Ok(Self { v4, v6 })
    }
}

impl Drop for Sockets {
    fn drop(&mut self) {
        // SAFETY: By the invariant the sockets are open and released only here.
        unsafe {
            b::rrxe_udp_close(self.v4.as_ptr());
            if let Some(s) = self.v6 {
                b::rrxe_udp_close(s.as_ptr());
            }
        }
        // Nothing queues packets any more; drop those queued.
        stop_worker();
    }
}

/// Stops the worker and drops queued packets. Closing the sockets does it;
/// call it again once every device is gone, as a last doorbell may have
/// kicked the worker meanwhile.
pub(crate) fn stop_worker() {
    // SAFETY: The worker was initialised by `Sockets::open`.
    unsafe { b::rrxe_worker_stop() };
}

/// Runs the worker soon.
pub(crate) fn kick() {
    // SAFETY: Queueing the worker's work item has no preconditions once
    // initialised; before that no device exists to call this.
    unsafe { b::rrxe_worker_kick() };
}

/// Whether received packets wait in the queue.
pub(crate) fn rx_pending() -> bool {
    // SAFETY: Looking at the queue's length has no preconditions.
    unsafe { b::rrxe_rx_pending() }
}

/// Runs the worker after `delay` jiffies, replacing any earlier setting.
pub(crate) fn arm_timer(delay: c_ulong) {
    // SAFETY: As for `kick`.
    unsafe { b::rrxe_worker_arm(delay) };
}

/// Sends a whole IP packet (IP header first, ICRC last) out of `netdev`.
pub(crate) fn xmit(netdev: &NetDevice, pkt: &[u8]) -> Result {
    let len = u32::try_from(pkt.len()).map_err(|_| EINVAL)?;
    // SAFETY: `netdev` is a live net device (we hold a reference); the shim
    // copies `len` bytes from `pkt` into a new skb before returning.
    let ret = unsafe { b::rrxe_xmit(netdev.as_raw(), pkt.as_ptr().cast(), len) };
    if ret < 0 {
        return Err(Error::from_errno(ret));
    }
    Ok(())
}

/// A received packet, owned until dropped.
///
/// # Invariants
///
/// `skb` is a linear skb taken off the receive queue, freed only by `drop`.
pub(crate) struct RxPacket {
    skb: NonNull<b::sk_buff>,
}

impl RxPacket {
    /// The next received packet, if any.
    pub(crate) fn pop() -> Option<Self> {
        // SAFETY: Dequeueing has no preconditions once the worker is set up.
        let skb = NonNull::new(unsafe { b::rrxe_rx_pop() })?;
        // INVARIANT: The queue holds linearised skbs and gives each out once.
        Some(Self { skb })
    }

    /// The whole IP packet: IP header, UDP header, RoCE v2 headers, payload, ICRC.
    pub(crate) fn ip(&self) -> &[u8] {
        let mut len = 0u32;
        // SAFETY: By the invariant the skb is valid and linear, so its network
        // header through its tail is one contiguous buffer that lives as
        // long as `self`.
        unsafe {
            let p = b::rrxe_skb_ip(self.skb.as_ptr(), &mut len);
            core::slice::from_raw_parts(p.cast::<u8>(), len as usize)
        }
    }

    /// Address of the net device the packet was sent to (for comparison only).
    pub(crate) fn netdev(&self) -> usize {
        // SAFETY: By the invariant the skb is valid.
        unsafe { b::rrxe_skb_netdev(self.skb.as_ptr()) as usize }
    }
}

impl Drop for RxPacket {
    fn drop(&mut self) {
        // SAFETY: By the invariant the skb is ours and freed only here.
        unsafe { b::rrxe_skb_free(self.skb.as_ptr()) };
    }
}
