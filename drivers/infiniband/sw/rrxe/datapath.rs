// SPDX-License-Identifier: GPL-2.0

//! The packet-moving state of one device: its QPs, memory regions and
//! address handles by number, its counters, and the hand-over of a packet
//! to the QP it is for.
//!
//! Every table is looked up under a short bottom-half-safe spinlock that
//! only guards taking a reference ([`Table`]), so the packet path never
//! sleeps and never waits for a verb.

use crate::{
    ah::AhInfo,
    exec::QpCore,
    mcast::Groups,
    mem::Regions,
    net::{netdev::NetDevice, skb::SkBuff},
    proto::icrc::IpHeader,
    stats::{Counter, Stats},
    sync::table::Table,
};
use kernel::{
    prelude::*,
    sync::{aref::ARef, Arc},
};

/// The address of a user AH, by its number.
pub(crate) struct AhEntry(pub(crate) AhInfo);

/// The packet-moving state of one device.
#[pin_data]
pub(crate) struct Datapath {
    netdev: ARef<NetDevice>,
    mac: [u8; 6],
    /// Every QP of the device by number.
    #[pin]
    qps: Table<QpCore>,
    /// Every registered memory region of the device.
    #[pin]
    pub(crate) regions: Regions,
    /// The addresses of user AHs by number (librxe names them so in WQEs).
    #[pin]
    ahs: Table<AhEntry>,
    /// The multicast groups and their QPs.
    #[pin]
    pub(crate) mcast: Groups,
    /// The port counters.
    pub(crate) stats: Stats,
}

impl Datapath {
    /// The datapath of a device over `netdev`.
    pub(crate) fn new(netdev: &NetDevice) -> Result<Arc<Self>> {
        Arc::pin_init(
            try_pin_init!(Self {
                netdev: netdev.into(),
                mac: netdev.mac(),
                qps <- Table::new(),
                regions <- Regions::new(),
                ahs <- Table::new(),
                mcast <- Groups::new(),
                stats: Stats::new(),
            }),
            GFP_KERNEL,
        )
    }

    /// The net device packets leave through.
    pub(crate) fn netdev(&self) -> &NetDevice {
        &self.netdev
    }

    /// The net device's Ethernet address (packets to it stay local).
    pub(crate) fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// Makes `qp` reachable by packets.
    pub(crate) fn add_qp(&self, qpn: u32, qp: Arc<QpCore>) -> Result {
        self.qps.insert(qpn, qp)
    }

    /// Makes QP `qpn` unreachable; returns the table's reference.
    pub(crate) fn remove_qp(&self, qpn: u32) -> Option<Arc<QpCore>> {
        self.qps.remove(qpn)
    }

    /// Whether a QP numbered `qpn` exists.
    pub(crate) fn has_qp(&self, qpn: u32) -> bool {
        self.qps.get(qpn).is_some()
    }

    /// The QP numbered `qpn`, if it exists.
    pub(crate) fn qp(&self, qpn: u32) -> Option<Arc<QpCore>> {
        self.qps.get(qpn)
    }

    /// Enters user AH `num`.
    pub(crate) fn add_ah(&self, num: u32, info: AhInfo) -> Result {
        self.ahs.insert(num, Arc::new(AhEntry(info), GFP_KERNEL)?)
    }

    /// Removes user AH `num`.
    pub(crate) fn remove_ah(&self, num: u32) {
        drop(self.ahs.remove(num));
    }

    /// The address of user AH `num`.
    pub(crate) fn ah(&self, num: u32) -> Option<AhInfo> {
        self.ahs.get(num).map(|e| e.0)
    }

    /// Counts a received packet dropped for reason `why`.
    pub(crate) fn drop_packet(&self, why: Counter) {
        self.stats.inc(why);
    }

    /// Hands `skb` (data at its BTH, IP and UDP headers in front), which
    /// stands for `psns` packets of the path MTU (1 but for a local
    /// segment), to QP `qpn`, which runs at once unless it is already
    /// running somewhere (then it takes the packet before it stops) or
    /// `depth` says this is already a QP run nested in another. Returns
    /// `false` only if the QP's backlog was full and the sender `may_wait`
    /// (see [`QpCore::receive`]).
    pub(crate) fn deliver(
        &self,
        qpn: u32,
        skb: SkBuff,
        psns: u32,
        depth: u8,
        may_wait: bool,
    ) -> bool {
        if qpn == crate::params::MULTICAST_QPN {
            self.deliver_multicast(skb, depth);
            return true;
        }
        match self.qps.get(qpn) {
            Some(qp) => QpCore::receive(&qp, skb, psns, depth, may_wait),
            None => {
                self.drop_packet(Counter::RcvdNoQp);
                true
            }
        }
    }

    /// Hands a multicast datagram to every QP attached to the group its
    /// destination address names (a clone each but the last).
    fn deliver_multicast(&self, skb: SkBuff, depth: u8) {
        let Some(mgid) = destination_gid(skb.network_header()) else {
            return self.drop_packet(Counter::RcvdHdrErr);
        };
        let (qpns, n) = self.mcast.members(&mgid);
        let Some((&last, others)) = qpns.get(..n).and_then(|q| q.split_last()) else {
            return self.drop_packet(Counter::RcvdNoQp);
        };
        for &qpn in others {
            // Unreliable service: a member that gets no copy loses the datagram.
            if let (Some(copy), Some(qp)) = (skb.try_clone(), self.qps.get(qpn)) {
                let _ = QpCore::receive(&qp, copy, 1, depth, false);
            }
        }
        match self.qps.get(last) {
            Some(qp) => {
                let _ = QpCore::receive(&qp, skb, 1, depth, false);
            }
            None => self.drop_packet(Counter::RcvdNoQp),
        }
    }
}

/// The destination address of a packet whose IP header starts `hdr`, as a
/// GID (IPv4-mapped for IPv4).
fn destination_gid(hdr: &[u8]) -> Option<[u8; 16]> {
    let mut gid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0];
    match IpHeader::of(hdr)? {
        IpHeader::V4(h) => gid.get_mut(12..)?.copy_from_slice(h.get(16..20)?),
        IpHeader::V6(h) => gid.copy_from_slice(h.get(24..40)?),
    }
    Some(gid)
}
