// SPDX-License-Identifier: GPL-2.0

//! The datapath worker: one work item that drains received packets, serves
//! send doorbells and fires protocol timers for every QP of every device.
//!
//! Everything that moves packets runs here, in process context and never
//! twice at once; verbs called by user space meanwhile (modify, destroy, the
//! doorbell itself) synchronise with it through each QP's lock.

use crate::{
    ah::AhInfo,
    device,
    mem::Regions,
    net::netdev::NetDevice,
    packet_io::{self as net, RxPacket},
    path,
    proto::{icrc, parse},
    qp::QpCore,
    stats::{Counter, Stats},
};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::{
    new_mutex,
    prelude::*,
    rbtree::RBTree,
    sync::{aref::ARef, Arc, Mutex},
};

/// The packet-moving state of one device.
#[pin_data]
pub(crate) struct Datapath {
    netdev: ARef<NetDevice>,
    /// Every QP of the device by number.
    #[pin]
    qps: Mutex<RBTree<u32, Arc<QpCore>>>,
    /// Every registered memory region of the device.
    #[pin]
    pub(crate) regions: Regions,
    /// The addresses of user AHs by number (librxe names them so in WQEs).
    #[pin]
    ahs: Mutex<RBTree<u32, AhInfo>>,
    /// The port counters.
    pub(crate) stats: Stats,
}

impl Datapath {
    /// The datapath of a device over `netdev`.
    pub(crate) fn new(netdev: &NetDevice) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Self {
                netdev: netdev.into(),
                qps <- new_mutex!(RBTree::new()),
                regions <- Regions::new(),
                ahs <- new_mutex!(RBTree::new()),
                stats: Stats::new(),
            }),
            GFP_KERNEL,
        )
    }

    /// The net device packets leave through.
    pub(crate) fn netdev(&self) -> &NetDevice {
        &self.netdev
    }

    /// Makes `qp` reachable by packets and the worker.
    pub(crate) fn add_qp(&self, qpn: u32, qp: Arc<QpCore>) -> Result {
        self.qps.lock().try_create_and_insert(qpn, qp, GFP_KERNEL)?;
        Ok(())
    }

    /// Makes QP `qpn` unreachable.
    pub(crate) fn remove_qp(&self, qpn: u32) {
        let _ = self.qps.lock().remove(&qpn);
    }

    /// Enters user AH `num`.
    pub(crate) fn add_ah(&self, num: u32, info: AhInfo) -> Result {
        self.ahs
            .lock()
            .try_create_and_insert(num, info, GFP_KERNEL)?;
        Ok(())
    }

    /// Removes user AH `num`.
    pub(crate) fn remove_ah(&self, num: u32) {
        let _ = self.ahs.lock().remove(&num);
    }

    /// The address of user AH `num`.
    pub(crate) fn ah(&self, num: u32) -> Option<AhInfo> {
        self.ahs.lock().get(&num).copied()
    }

    /// Whether a QP numbered `qpn` exists.
    pub(crate) fn has_qp(&self, qpn: u32) -> bool {
        self.qps.lock().get(&qpn).is_some()
    }

    fn qp(&self, qpn: u32) -> Option<Arc<QpCore>> {
        self.qps.lock().get(&qpn).cloned()
    }

    fn qps(&self) -> Result<KVec<Arc<QpCore>>> {
        let map = self.qps.lock();
        let mut v = KVec::with_capacity(map.values().count(), GFP_KERNEL)?;
        for qp in map.values() {
            v.push(qp.clone(), GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// Counts a received packet dropped for reason `why`.
    pub(crate) fn drop_packet(&self, why: Counter) {
        self.stats.inc(why);
    }
}

/// Monotonic time in microseconds.
pub(crate) fn now_us() -> u64 {
    // SAFETY: `ktime_get` has no preconditions.
    let ns = unsafe { kernel::bindings::ktime_get() };
    u64::try_from(ns).unwrap_or(0) / 1000
}

/// Hands one received packet to its QP.
fn receive(pkt: &RxPacket, now: u64) {
    let Some(dev) = device::find_by_netdev_addr(pkt.netdev()) else {
        return;
    };
    let dp = &dev.data().dp;
    let Ok((hdr, udp, payload)) = icrc::split_ip_packet(pkt.ip()) else {
        return dp.drop_packet(Counter::RcvdHdrErr);
    };
    if icrc::verify(&mut path::crc32, hdr, udp, payload).is_err() {
        return dp.drop_packet(Counter::RcvdIcrcErr);
    }
    let Ok(p) = parse(payload) else {
        return dp.drop_packet(Counter::RcvdHdrErr);
    };
    let ip_hdr = match hdr {
        icrc::IpHeader::V4(h) | icrc::IpHeader::V6(h) => h,
    };
    match dp.qp(p.hdr.bth.dest_qpn) {
        Some(qp) => {
            dp.stats.inc(Counter::RcvdPkts);
            dp.stats.add(Counter::RcvdBytes, payload.len() as u64);
            qp.service(dp, now, Some((&p, ip_hdr)));
        }
        None => dp.drop_packet(Counter::RcvdNoQp),
    }
}

/// The deadline (µs) the timer is armed for, `u64::MAX` for none.
static ARMED: AtomicU64 = AtomicU64::new(u64::MAX);

/// Arms the timer for `deadline` unless it is already due no later.
pub(crate) fn arm_for(deadline: u64) {
    if deadline == u64::MAX || ARMED.fetch_min(deadline, Ordering::AcqRel) <= deadline {
        return;
    }
    arm_timer_at(deadline);
}

fn arm_timer_at(deadline: u64) {
    let us = deadline.saturating_sub(now_us());
    let ms = u32::try_from(us.div_ceil(1000)).unwrap_or(u32::MAX);
    net::arm_timer(kernel::time::msecs_to_jiffies(ms));
}

/// Someone is taking packets off the receive queue.
static DRAINING: AtomicBool = AtomicBool::new(false);

/// Hands received packets to their QPs, at most `budget` of them; returns
/// whether the queue was left empty. One task drains at a time, so packets
/// of one QP are handled in the order they came; a task that finds another
/// draining leaves the packets to it (the other one looks again after it
/// lets go, so a packet queued meanwhile is not stranded).
fn drain_rx(now: u64, mut budget: usize) -> bool {
    loop {
        if DRAINING
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return true;
        }
        while budget > 0 {
            let Some(pkt) = RxPacket::pop() else { break };
            receive(&pkt, now);
            budget = budget.saturating_sub(1);
        }
        DRAINING.store(false, Ordering::Release);
        if !net::rx_pending() {
            return true;
        }
        if budget == 0 {
            return false;
        }
    }
}

/// Packets a doorbell drains in the caller's task before leaving the rest to
/// the worker.
const DOORBELL_RX_BUDGET: usize = 64;

/// Serves a user QP's send doorbell right away, in the calling task, and
/// handles the packets that sending made arrive (for a peer on this host,
/// the whole exchange): saves the worker's wake-ups on the latency path.
pub(crate) fn serve_now(dp: &Datapath, qp: &QpCore) {
    let now = now_us();
    qp.service(dp, now, None);
    if !drain_rx(now, DOORBELL_RX_BUDGET) {
        net::kick();
    }
    arm_for(qp.deadline());
}

/// The worker (see the module documentation).
pub(crate) extern "C" fn run() {
    let now = now_us();
    drain_rx(now, usize::MAX);
    let mut next = u64::MAX;
    for dev in device::all() {
        let dp = &dev.data().dp;
        let Ok(qps) = dp.qps() else {
            // Out of memory: come back soon rather than lose the work.
            next = next.min(now.saturating_add(1000));
            continue;
        };
        for qp in qps.iter() {
            if qp.wants_service(now) {
                qp.service(dp, now, None);
            }
            next = next.min(qp.deadline());
        }
    }
    // The worker saw every QP: its minimum replaces whatever was armed.
    ARMED.store(next, Ordering::Release);
    if next != u64::MAX {
        arm_timer_at(next);
    }
}
