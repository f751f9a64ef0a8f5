// SPDX-License-Identifier: GPL-2.0

//! Network devices a RoCE device runs over, and their notifier events.
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h).

use crate::bindings as b;
use core::ptr::NonNull;
use kernel::{prelude::*, sync::aref::AlwaysRefCounted, types::Opaque};

/// A network device (`struct net_device`).
///
/// # Invariants
///
/// Instances are only created from pointers to live net devices, borrowed for
/// a callback or held through a reference count ([`ARef<NetDevice>`]).
#[repr(transparent)]
pub struct NetDevice(Opaque<b::net_device>);

// SAFETY: The networking core synchronises access to `struct net_device`.
unsafe impl Send for NetDevice {}
// SAFETY: See `Send` above.
unsafe impl Sync for NetDevice {}

impl NetDevice {
    /// Borrows the net device at `raw`.
    ///
    /// # Safety
    ///
    /// `raw` must point to a net device that stays alive for `'a`.
    pub unsafe fn from_raw<'a>(raw: *mut b::net_device) -> &'a Self {
        // SAFETY: `NetDevice` is `repr(transparent)` over the C structure.
        unsafe { &*raw.cast::<Self>() }
    }

    /// Returns the raw `struct net_device`.
    pub fn as_raw(&self) -> *mut b::net_device {
        self.0.get()
    }

    /// Whether the interface is administratively up.
    pub fn is_running(&self) -> bool {
        // SAFETY: By the invariant the device is alive.
        unsafe { b::rrxe_netif_running(self.as_raw()) }
    }

    /// Whether this is a VLAN device (802.1Q).
    pub fn is_vlan(&self) -> bool {
        // SAFETY: By the invariant the device is alive.
        unsafe { b::rrxe_netdev_is_vlan(self.as_raw()) }
    }

    /// Whether the link has carrier.
    pub fn has_carrier(&self) -> bool {
        // SAFETY: By the invariant the device is alive.
        unsafe { b::rrxe_netif_carrier_ok(self.as_raw()) }
    }

    /// The interface MTU in bytes.
    pub fn mtu(&self) -> u32 {
        // SAFETY: By the invariant the device is alive.
        unsafe { b::rrxe_netdev_mtu(self.as_raw()) }
    }

    /// The interface index.
    pub fn ifindex(&self) -> i32 {
        // SAFETY: By the invariant the device is alive; the index is fixed
        // while it is registered.
        unsafe { (*self.as_raw()).ifindex }
    }

    /// The device the net device hangs off in the device model (a PCI or
    /// virtio function), NULL for a virtual one (veth, VLAN, loopback).
    pub fn parent_device(&self) -> *mut b::device {
        // SAFETY: By the invariant the device is alive; its parent is set
        // before registration and does not change while it is registered.
        unsafe { (*self.as_raw()).dev.parent }
    }

    /// The network namespace the device is in (for route lookups and
    /// output; valid while the device is).
    pub(crate) fn net(&self) -> *mut b::net {
        // SAFETY: By the invariant the device is alive.
        unsafe { b::rrxe_dev_net(self.as_raw()) }
    }

    /// The network namespace the device is in.
    ///
    /// A device can move to another namespace (under RTNL); the one it was
    /// in then lives on at least until that namespace's exit methods run.
    pub fn namespace(&self) -> &super::ns::Net {
        // SAFETY: By the invariant the device is alive; a namespace is
        // dismantled only after its devices are unregistered or moved out,
        // and its exit methods run before its memory goes.
        unsafe { super::ns::Net::from_raw(self.net()) }
    }

    /// The 6-byte Ethernet address.
    pub fn mac(&self) -> [u8; 6] {
        let mut mac = [0u8; 6];
        // SAFETY: By the invariant the device is alive; an Ethernet device's
        // `dev_addr` holds at least `ETH_ALEN` bytes.
        let addr = unsafe { b::rrxe_netdev_addr(self.as_raw()) };
        if !addr.is_null() {
            // SAFETY: See above.
            unsafe { core::ptr::copy_nonoverlapping(addr, mac.as_mut_ptr(), mac.len()) };
        }
        mac
    }

    /// Adds the Ethernet multicast address `mac` to the device's receive
    /// filter (counted: each add needs a [`NetDevice::mc_del`]).
    pub fn mc_add(&self, mac: &[u8; 6]) -> Result {
        // SAFETY: By the invariant the device is alive; `mac` has ETH_ALEN bytes.
        kernel::error::to_result(unsafe { b::dev_mc_add(self.as_raw(), mac.as_ptr()) })
    }

    /// Drops one reference to the multicast address `mac` from the filter.
    pub fn mc_del(&self, mac: &[u8; 6]) {
        // SAFETY: As in `mc_add`.
        let _ = unsafe { b::dev_mc_del(self.as_raw(), mac.as_ptr()) };
    }
}

// SAFETY: `dev_hold`/`dev_put` keep the net device's memory alive.
unsafe impl AlwaysRefCounted for NetDevice {
    fn inc_ref(&self) {
        // SAFETY: The device is alive while `self` exists.
        unsafe { b::rrxe_dev_hold(self.as_raw()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller owns a reference.
        unsafe { b::rrxe_dev_put(obj.as_ptr().cast()) };
    }
}

/// A net device event the notifier reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetdevEvent {
    /// The interface went up (`NETDEV_UP`).
    Up,
    /// The interface went down (`NETDEV_DOWN`).
    Down,
    /// Carrier or flags changed (`NETDEV_CHANGE`).
    Change,
    /// The MTU changed (`NETDEV_CHANGEMTU`).
    ChangeMtu,
    /// The interface is being unregistered (`NETDEV_UNREGISTER`).
    Unregister,
}

/// Receives net device events.
pub trait NetdevHandler: Sync + 'static {
    /// Called for every event of every net device in the system.
    fn event(&self, netdev: &NetDevice, event: NetdevEvent);
}

/// A registered net device notifier.
///
/// # Invariants
///
/// `nb` is registered with `register_netdevice_notifier` for the lifetime of
/// the object, and `handler` outlives it.
#[pin_data(PinnedDrop)]
pub struct NetdevNotifier<H: NetdevHandler> {
    #[pin]
    nb: Opaque<b::notifier_block>,
    handler: H,
}

// SAFETY: The notifier block is only touched by the notifier chain, which
// has its own locking; the handler is `Sync`.
unsafe impl<H: NetdevHandler> Send for NetdevNotifier<H> {}
// SAFETY: See `Send` above.
unsafe impl<H: NetdevHandler> Sync for NetdevNotifier<H> {}

impl<H: NetdevHandler> NetdevNotifier<H> {
    /// Registers `handler` for net device events.
    pub fn register(handler: H) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            nb <- Opaque::try_ffi_init(|nb: *mut b::notifier_block| {
                // SAFETY: `nb` is valid, pinned memory for a notifier block.
                unsafe {
                    nb.write(b::notifier_block {
                        notifier_call: Some(Self::call),
                        ..Default::default()
                    });
                }
                // SAFETY: `nb` is initialised and pinned; it is unregistered in
                // `drop` before its memory goes away.
                kernel::error::to_result(unsafe { b::register_netdevice_notifier(nb) })
            }),
            handler,
        })
    }

    /// # Safety
    ///
    /// Only called by the notifier chain, as the callback of the registered notifier block.
    unsafe extern "C" fn call(
        nb: *mut b::notifier_block,
        event: c_ulong,
        info: *mut c_void,
    ) -> c_int {
        // SAFETY: `nb` is the `nb` field of a registered `NetdevNotifier<H>`.
        let this = unsafe { &*kernel::container_of!(Opaque::cast_from(nb), Self, nb) };
        let ev = match event as u32 {
            b::netdev_cmd_NETDEV_UP => NetdevEvent::Up,
            b::netdev_cmd_NETDEV_DOWN => NetdevEvent::Down,
            b::netdev_cmd_NETDEV_CHANGE => NetdevEvent::Change,
            b::netdev_cmd_NETDEV_CHANGEMTU => NetdevEvent::ChangeMtu,
            b::netdev_cmd_NETDEV_UNREGISTER => NetdevEvent::Unregister,
            _ => return b::NOTIFY_DONE as c_int,
        };
        // SAFETY: For these events `info` is a `netdev_notifier_info` whose
        // device is alive during the call (RTNL is held).
        let ndev = unsafe { NetDevice::from_raw(b::rrxe_netdev_notifier_info_to_dev(info)) };
        this.handler.event(ndev, ev);
        b::NOTIFY_DONE as c_int
    }

    /// The handler.
    pub fn handler(&self) -> &H {
        &self.handler
    }
}

#[pinned_drop]
impl<H: NetdevHandler> PinnedDrop for NetdevNotifier<H> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the invariant `nb` is registered.
        unsafe { b::unregister_netdevice_notifier(self.nb.get()) };
    }
}
