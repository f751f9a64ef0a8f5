// SPDX-License-Identifier: GPL-2.0

//! UD multicast: the groups of a device and the QPs attached to each.
//!
//! A group is named by its GID, the multicast IP address (IPv4-mapped or
//! IPv6) its datagrams are sent to; they carry the multicast QP number
//! (0xFFFFFF) and are delivered to every UD QP attached to the group. The
//! first attachment to a group adds its Ethernet multicast address to the
//! net device's receive filter, the last detachment removes it. (Joining
//! the IP group is the consumer's business, as for rxe: `rdma_cm` does it
//! in `rdma_join_multicast`.)
//!
//! The table is small and changed only by verbs, so it is a vector under a
//! spinlock that the receive path holds just long enough to copy a group's
//! QP numbers.

use crate::{net::netdev::NetDevice, params as p};
use kernel::{new_spinlock_irq, prelude::*, sync::SpinLockIrq};

/// One group and its attached QPs.
struct Group {
    mgid: [u8; 16],
    qpns: KVec<u32>,
}

/// The multicast groups of a device.
#[pin_data]
pub(crate) struct Groups {
    #[pin]
    groups: SpinLockIrq<KVec<Group>>,
}

/// The QPs of one group, copied out of the table.
pub(crate) type Members = ([u32; p::MAX_MCAST_QP_ATTACH], usize);

impl Groups {
    /// No groups.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self { groups <- new_spinlock_irq!(KVec::new()) })
    }

    /// Attaches QP `qpn` to group `mgid` (`ib_attach_mcast`; ib_core checked
    /// that `mgid` is a multicast address and the QP a UD one). Attaching
    /// twice is not an error.
    pub(crate) fn attach(&self, netdev: &NetDevice, mgid: [u8; 16], qpn: u32) -> Result {
        let mut new_group = false;
        {
            let mut groups = self.groups.lock();
            let total: usize = groups.iter().map(|g| g.qpns.len()).sum();
            match groups.iter_mut().find(|g| g.mgid == mgid) {
                Some(g) if g.qpns.contains(&qpn) => return Ok(()),
                Some(g) => {
                    if g.qpns.len() >= p::MAX_MCAST_QP_ATTACH
                        || total >= p::MAX_TOTAL_MCAST_QP_ATTACH
                    {
                        return Err(ENOMEM);
                    }
                    g.qpns.push(qpn, GFP_ATOMIC)?;
                }
                None => {
                    if groups.len() >= p::MAX_MCAST_GRP as usize
                        || total >= p::MAX_TOTAL_MCAST_QP_ATTACH
                    {
                        return Err(ENOMEM);
                    }
                    let mut qpns = KVec::with_capacity(1, GFP_ATOMIC)?;
                    qpns.push(qpn, GFP_ATOMIC)?;
                    groups.push(Group { mgid, qpns }, GFP_ATOMIC)?;
                    new_group = true;
                }
            }
        }
        if new_group {
            if let Err(e) = netdev.mc_add(&mac_of(&mgid)) {
                self.detach(netdev, mgid, qpn).ok();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Detaches QP `qpn` from group `mgid`; `EINVAL` if it was not attached.
    pub(crate) fn detach(&self, netdev: &NetDevice, mgid: [u8; 16], qpn: u32) -> Result {
        let emptied = {
            let mut groups = self.groups.lock();
            let i = groups.iter().position(|g| g.mgid == mgid).ok_or(EINVAL)?;
            let g = groups.get_mut(i).ok_or(EINVAL)?;
            let j = g.qpns.iter().position(|&q| q == qpn).ok_or(EINVAL)?;
            g.qpns.remove(j).map_err(|_| EINVAL)?;
            if g.qpns.is_empty() {
                groups.remove(i).map_err(|_| EINVAL)?;
                true
            } else {
                false
            }
        };
        if emptied {
            netdev.mc_del(&mac_of(&mgid));
        }
        Ok(())
    }

    /// Detaches QP `qpn` from every group (it is being destroyed).
    pub(crate) fn detach_all(&self, netdev: &NetDevice, qpn: u32) {
        loop {
            let mgid = {
                let groups = self.groups.lock();
                match groups.iter().find(|g| g.qpns.contains(&qpn)) {
                    Some(g) => g.mgid,
                    None => return,
                }
            };
            if self.detach(netdev, mgid, qpn).is_err() {
                return;
            }
        }
    }

    /// The QPs attached to group `mgid` (none if there is no such group).
    pub(crate) fn members(&self, mgid: &[u8; 16]) -> Members {
        let mut out: Members = ([0u32; p::MAX_MCAST_QP_ATTACH], 0);
        let groups = self.groups.lock();
        if let Some(g) = groups.iter().find(|g| &g.mgid == mgid) {
            for (slot, &q) in out.0.iter_mut().zip(g.qpns.iter()) {
                *slot = q;
                out.1 = out.1.saturating_add(1);
            }
        }
        out
    }
}

/// The Ethernet multicast address of the group with GID `mgid`: the IPv4
/// mapping (01:00:5e and the low 23 bits) for an IPv4-mapped GID, the IPv6
/// one (33:33 and the low 32 bits) otherwise.
fn mac_of(mgid: &[u8; 16]) -> [u8; 6] {
    match *mgid {
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, _, b13, b14, b15] => {
            [0x01, 0x00, 0x5e, b13 & 0x7f, b14, b15]
        }
        [.., b12, b13, b14, b15] => [0x33, 0x33, b12, b13, b14, b15],
    }
}
