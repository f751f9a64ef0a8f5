// SPDX-License-Identifier: GPL-2.0

//! An rrxe device: one RoCE v2 port over one net device.
//!
//! ib_core owns registered devices; rrxe keeps their addresses on a list so
//! that net device events can find them and `rmmod` can remove them all
//! (`ib_unregister_driver` cannot be used: upstream rxe shares the driver id).
//! Port state events are ib_core's job: it follows the net device it was
//! given with `ib_device_set_netdev`.

use crate::{
    datapath::Datapath,
    index::Indices,
    net::netdev::{NetDevice, NetdevEvent, NetdevHandler},
    params as p,
    rdma::device::Device,
};
use core::sync::atomic::AtomicU8;
use kernel::{
    prelude::*,
    sync::{aref::ARef, Arc},
};

kernel::sync::global_lock! {
    // SAFETY: Initialised in the module initialiser before any device exists.
    unsafe(uninit) static DEVICES: Mutex<KVec<Entry>> = KVec::new();
}

/// Initialises the device list; call once from the module initialiser.
pub(crate) fn init() {
    // SAFETY: Called exactly once, before any other use of `DEVICES`.
    unsafe { DEVICES.init() };
}

/// A registered device, the net device it runs over, and where its packets
/// come in: the namespace and interface index the net device had when the
/// device was added (it may move or be renumbered before the device goes).
struct Entry {
    ib: usize,
    netdev: usize,
    space: Arc<crate::netns::Space>,
    ifindex: u32,
}

/// Driver data of an rrxe device.
pub(crate) struct RrxeDev {
    netdev: ARef<NetDevice>,
    /// QP numbers.
    pub(crate) qpns: Arc<Indices>,
    /// SRQ numbers.
    pub(crate) srqns: Arc<Indices>,
    /// Address handle numbers.
    pub(crate) ahns: Arc<Indices>,
    /// Memory region indices (the upper 24 bits of their keys).
    pub(crate) mrns: Arc<Indices>,
    /// Low 8 bits of the next memory key.
    pub(crate) key_variant: AtomicU8,
    /// QPs and memory regions as the datapath reaches them.
    pub(crate) dp: Arc<Datapath>,
}

impl RrxeDev {
    /// The net device of port 1.
    pub(crate) fn netdev(&self) -> &NetDevice {
        &self.netdev
    }

    /// Whether the port is up: interface running with carrier.
    pub(crate) fn port_is_active(&self) -> bool {
        self.netdev.is_running() && self.netdev.has_carrier()
    }
}

/// Creates and registers device `name` over `netdev` (`rdma link add`).
pub(crate) fn add(name: &CStr, netdev: &NetDevice) -> Result {
    // ib_core gives a device on a VLAN device no GIDs for its addresses (it
    // expects the real device, whose GID table holds the VLANs'): refuse,
    // as rxe does.
    if netdev.is_vlan() {
        pr_err!(
            "{}: a VLAN device; create it on the real device\n",
            name.to_str()?
        );
        return Err(EPERM);
    }
    if DEVICES
        .lock()
        .iter()
        .any(|e| e.netdev == netdev.as_raw() as usize)
    {
        return Err(EEXIST);
    }
    let mac = netdev.mac();
    let data = RrxeDev {
        netdev: netdev.into(),
        qpns: Arc::new(
            Indices::new(p::MIN_QPN, p::MIN_QPN + p::MAX_QP - 1)?,
            GFP_KERNEL,
        )?,
        srqns: Arc::new(
            Indices::new(p::MIN_SRQN, p::MIN_SRQN + p::MAX_SRQ - 1)?,
            GFP_KERNEL,
        )?,
        ahns: Arc::new(Indices::new(1, p::MAX_AH)?, GFP_KERNEL)?,
        mrns: Arc::new(Indices::new(1, p::MAX_MR)?, GFP_KERNEL)?,
        key_variant: AtomicU8::new(0),
        dp: Datapath::new(netdev)?,
    };
    Device::register(name, netdev, data, |setup| {
        // Modified EUI-64 from the MAC, as for IPv6 interface identifiers.
        setup.node_guid([
            mac[0] ^ 2,
            mac[1],
            mac[2],
            0xff,
            0xfe,
            mac[3],
            mac[4],
            mac[5],
        ]);
        setup.node_desc(b"rrxe");
        setup.node_type_ca();
        setup.allow_user_unregister();
    })
}

/// Records a device that has just been registered, and makes its packets
/// reach it (opening its namespace's sockets if it is the first there).
pub(crate) fn track(dev: &Device<RrxeDev>) -> Result {
    // ib_core enables a device again after moving it to another namespace
    // (`rdma dev set DEV netns NS` in exclusive mode): packets reach it
    // already, through its net device's namespace, which did not change.
    if DEVICES.lock().iter().any(|e| e.ib == dev.as_raw() as usize) {
        return Ok(());
    }
    let netdev = &dev.data().netdev;
    let ifindex = u32::try_from(netdev.ifindex()).map_err(|_| EINVAL)?;
    let space = crate::netns::join(netdev)?;
    let entry = Entry {
        ib: dev.as_raw() as usize,
        netdev: netdev.as_raw() as usize,
        space: space.clone(),
        ifindex,
    };
    let added = space.add(ifindex, dev.data().dp.clone()).and_then(|()| {
        DEVICES.lock().push(entry, GFP_KERNEL).map_err(|e| {
            space.remove(ifindex);
            e.into()
        })
    });
    if added.is_err() {
        crate::netns::leave(&space);
    }
    added
}

/// Forgets a device ib_core is about to free; its packets are dropped from
/// now on (and its namespace's sockets close if it was the last there).
pub(crate) fn untrack(dev: &Device<RrxeDev>) {
    let entry = {
        let mut list = DEVICES.lock();
        match list.iter().position(|e| e.ib == dev.as_raw() as usize) {
            Some(i) => list.remove(i).ok(),
            None => None,
        }
    };
    if let Some(e) = entry {
        e.space.remove(e.ifindex);
        crate::netns::leave(&e.space);
    }
}

/// Takes a reference to the device over the net device at `addr`, if any.
pub(crate) fn find_by_netdev_addr(addr: usize) -> Option<ARef<Device<RrxeDev>>> {
    let list = DEVICES.lock();
    let e = list.iter().find(|e| e.netdev == addr)?;
    // SAFETY: `untrack` removes the entry under this lock before the device
    // is freed, so the device's memory is still there.
    unsafe { Device::try_get(e.ib as *mut _) }
}

/// Takes a reference to the device over `netdev`, if there is one.
fn find(netdev: &NetDevice) -> Option<ARef<Device<RrxeDev>>> {
    find_by_netdev_addr(netdev.as_raw() as usize)
}

/// Unregisters every rrxe device, and waits for the ones already going away
/// (a net device that vanished queues its device's unregistration) until
/// their `dealloc_driver` has returned: `untrack`, early in it, is not the
/// end of the driver's code for the device, and the module's code must
/// outlast it. Then frees the list's memory: the list is a static, which
/// is never dropped.
pub(crate) fn remove_all() {
    loop {
        let next = {
            let list = DEVICES.lock();
            let Some(e) = list.first() else { break };
            // SAFETY: As in `find_by_netdev_addr`.
            unsafe { Device::<RrxeDev>::hold_memory(e.ib as *mut _) }
        };
        // Without the list's lock, which `dealloc_driver` takes.
        next.unregister();
    }
    *DEVICES.lock() = KVec::new();
}

/// Follows net device events: a vanishing net device takes its device along.
pub(crate) struct NetdevEvents;

impl NetdevHandler for NetdevEvents {
    fn event(&self, netdev: &NetDevice, event: NetdevEvent) {
        match event {
            NetdevEvent::Unregister => {
                if let Some(dev) = find(netdev) {
                    dev.unregister_queued();
                }
            }
            NetdevEvent::Down => {
                if let Some(dev) = find(netdev) {
                    dev.data().dp.stats.inc(crate::stats::Counter::LinkDowned);
                }
            }
            _ => {}
        }
    }
}
