// SPDX-License-Identifier: GPL-2.0

//! RDMA devices: allocation, registration, reference counting and events.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//!
//! ib_core requires a driver's device structure to begin with `struct ib_device`
//! and to be allocated by `_ib_alloc_device`. [`Device`] is that structure for a
//! driver `T`: the `ib_device` followed by the driver's data. Once registered,
//! the device belongs to ib_core, which frees it through `dealloc_driver` after
//! the last reference is gone; the driver only holds counted references
//! ([`ARef<Device<T>>`]).

use super::{bindings as b, driver::Driver, driver::OpsTable};
use crate::net::netdev::NetDevice;
use core::ptr::{self, NonNull};
use kernel::{
    error::to_result,
    prelude::*,
    sync::aref::{ARef, AlwaysRefCounted},
    types::Opaque,
};

/// Memory layout of a device: `struct ib_device` at offset 0, then driver data.
#[repr(C)]
struct Storage<T> {
    ib: Opaque<b::ib_device>,
    data: T,
}

/// An RDMA device of driver `T`.
///
/// # Invariants
///
/// `self` is the `ib` field of a `Storage<T>` allocated by `_ib_alloc_device`
/// with the size of `Storage<T>`; its `data` is initialised and stays so until
/// ib_core calls `dealloc_driver`, which only happens after the last reference
/// to the device is dropped.
#[repr(transparent)]
pub struct Device<T: Driver>(Storage<T>);

// SAFETY: The driver data is `Send + Sync` (required by `Driver`) and ib_core
// synchronises its own part of `struct ib_device`.
unsafe impl<T: Driver> Send for Device<T> {}
// SAFETY: See `Send` above.
unsafe impl<T: Driver> Sync for Device<T> {}

impl<T: Driver> Device<T> {
    /// Returns the device that contains `ib`.
    ///
    /// # Safety
    ///
    /// `ib` must point to the `ib_device` of a live `Device<T>`, and the device
    /// must stay alive for the returned lifetime.
    pub(crate) unsafe fn from_raw<'a>(ib: *mut b::ib_device) -> &'a Self {
        // SAFETY: `Device<T>` is `repr(transparent)` over `Storage<T>`, which is
        // `repr(C)` with the `ib_device` at offset 0; the caller guarantees the rest.
        unsafe { &*ib.cast::<Self>() }
    }

    /// Drops the driver data of a device ib_core is about to free.
    ///
    /// # Safety
    ///
    /// Only from `dealloc_driver`: the data is initialised and unused.
    pub(crate) unsafe fn drop_data(ib: *mut b::ib_device) {
        let storage = ib.cast::<Storage<T>>();
        // SAFETY: Guaranteed by the caller.
        unsafe { ptr::drop_in_place(ptr::addr_of_mut!((*storage).data)) };
    }

    /// Returns the raw `struct ib_device`.
    pub fn as_raw(&self) -> *mut b::ib_device {
        self.0.ib.get()
    }

    /// Returns the node GUID as ib_core stores it (network byte order).
    pub fn node_guid(&self) -> u64 {
        // SAFETY: By the invariant the device is alive; the GUID is set
        // before registration and never changes afterwards.
        unsafe { (*self.as_raw()).node_guid }
    }

    /// Returns the driver's data.
    pub fn data(&self) -> &T {
        &self.0.data
    }

    /// Allocates a device, registers it with ib_core under `name` (e.g. `rrxe0`),
    /// with `netdev` as the net device of port 1.
    ///
    /// `setup` fills the device's static attributes (node GUID, node type, ...)
    /// before registration. On success the device belongs to ib_core; it is
    /// freed after [`DeviceMemory::unregister`], `rdma link delete`, or
    /// `ib_unregister_device_queued`. On failure everything is undone.
    pub fn register(
        name: &CStr,
        netdev: &NetDevice,
        data: T,
        setup: impl FnOnce(&mut DeviceSetup<'_>),
    ) -> Result {
        let size = core::mem::size_of::<Storage<T>>();
        // SAFETY: `init_net` is a static of the networking core; `size` covers
        // `struct ib_device` at offset 0 as `_ib_alloc_device` requires.
        let raw = unsafe { b::_ib_alloc_device(size, ptr::addr_of_mut!(b::init_net)) };
        let ib = NonNull::new(raw).ok_or(ENOMEM)?;
        let storage = ib.as_ptr().cast::<Storage<T>>();
        // SAFETY: `storage` is a fresh, suitably sized and aligned allocation
        // (kzalloc alignment covers `T`, checked below at compile time); the
        // `data` field is uninitialised and nothing else refers to it yet.
        unsafe { ptr::addr_of_mut!((*storage).data).write(data) };
        const { assert!(core::mem::align_of::<Storage<T>>() <= 8) };

        // SAFETY: `ib` is a valid, exclusively owned `ib_device` until registered.
        let dev = unsafe { &mut *ib.as_ptr() };
        OpsTable::<T>::install(dev);
        dev.phys_port_cnt = 1;
        // One completion vector per CPU, as rxe offers: kernel ULPs spread
        // their queues' CQs over the vectors.
        dev.num_comp_vectors = i32::try_from(kernel::cpu::nr_cpu_ids()).unwrap_or(1).max(1);
        // Under the net device's own parent, as a NIC's RDMA function is:
        // `/sys/class/infiniband/NAME/device/net/` names the net device, which
        // is where rdma-core and rdma_cm tools look for it. The device model
        // holds a reference to the parent while `ib` is registered.
        // (`dev` is in an anonymous union with `coredev`, whose first member
        // it is.)
        dev.__bindgen_anon_1.dev.parent = netdev.parent_device();
        setup(&mut DeviceSetup { dev });

        // SAFETY: `ib` is a valid device and `netdev` a live net device; ib_core
        // takes its own reference to the net device.
        let ret = unsafe { b::ib_device_set_netdev(ib.as_ptr(), netdev.as_raw(), 1) };
        let ret = to_result(ret).and_then(|()| {
            // SAFETY: `ib` is fully set up; a NULL DMA device makes ib_core use
            // virtual addresses in SGEs, which is what a software device wants.
            to_result(unsafe {
                b::ib_register_device(ib.as_ptr(), name.as_char_ptr(), ptr::null_mut())
            })
        });
        if let Err(e) = ret {
            // SAFETY: Registration failed, so the caller still owns `ib`;
            // `ib_dealloc_device` calls `dealloc_driver`, which drops `data`,
            // and releases the net device reference if one was taken.
            unsafe { b::ib_dealloc_device(ib.as_ptr()) };
            return Err(e);
        }
        Ok(())
    }

    /// Takes a reference to the device at `ib` unless it is being unregistered.
    ///
    /// # Safety
    ///
    /// `ib` must point to a `Device<T>` whose memory has not been freed yet
    /// (e.g. it is still on a list that `dealloc_driver` removes it from, and
    /// that list's lock is held).
    pub unsafe fn try_get(ib: *mut b::ib_device) -> Option<ARef<Self>> {
        // SAFETY: The caller guarantees `ib` is not freed.
        if unsafe { b::rrxe_ib_device_try_get(ib) } {
            // SAFETY: We just took a reference, which the `ARef` now owns.
            Some(unsafe { ARef::from_raw(NonNull::new_unchecked(ib.cast::<Self>())) })
        } else {
            None
        }
    }

    /// Takes a reference to the memory of the device at `ib` (not to its
    /// registration: it may be going away), for [`DeviceMemory::unregister`].
    ///
    /// # Safety
    ///
    /// As for [`Device::try_get`]: `ib` must point to a `Device<T>` whose
    /// memory has not been freed yet.
    pub unsafe fn hold_memory(ib: *mut b::ib_device) -> DeviceMemory {
        // SAFETY: The caller guarantees `ib` is not freed; `get_device`
        // keeps it allocated until the matching `put_device`.
        unsafe { b::rrxe_ib_device_hold(ib) };
        // INVARIANT: We just took the reference.
        DeviceMemory(ib)
    }

    /// Queues unregistration of the device (safe from a netdev notifier).
    pub fn unregister_queued(&self) {
        // SAFETY: `self` is a registered device; ib_core serialises unregistration.
        unsafe { b::ib_unregister_device_queued(self.as_raw()) };
    }
}

/// A reference to a device's memory (`get_device`), which outlives its
/// registration.
///
/// # Invariants
///
/// The pointer is a device on which this object holds one `get_device`
/// reference.
pub struct DeviceMemory(*mut b::ib_device);

impl DeviceMemory {
    /// Unregisters the device unless that is done or under way elsewhere,
    /// and in every case returns only once no unregistration of it is in
    /// progress: `dealloc_driver` has returned, so none of the driver's
    /// code runs for this device any more (a module may then unload).
    pub fn unregister(self) {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: By the invariant the pointer is valid and we hold a
        // reference, which the call consumes (`this` is not dropped);
        // ib_core serialises unregistrations.
        unsafe { b::rrxe_ib_device_unregister_and_release(this.0) };
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        // SAFETY: By the invariant we hold a reference; this drops it.
        unsafe { b::rrxe_ib_device_release(self.0) };
    }
}

// SAFETY: ib_core reference-counts devices with `ib_device_try_get` and
// `ib_device_put`; the memory stays valid while the count is non-zero.
unsafe impl<T: Driver> AlwaysRefCounted for Device<T> {
    fn inc_ref(&self) {
        // SAFETY: We hold a reference, so the count is non-zero and this succeeds.
        let ok = unsafe { b::rrxe_ib_device_try_get(self.as_raw()) };
        debug_assert!(ok);
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller owns a reference.
        unsafe { b::ib_device_put(obj.as_ptr().cast()) };
    }
}

/// Static attributes of a device being set up for registration.
pub struct DeviceSetup<'a> {
    dev: &'a mut b::ib_device,
}

impl DeviceSetup<'_> {
    /// Sets the node GUID (big-endian on the wire, as ib_core stores it).
    pub fn node_guid(&mut self, guid: [u8; 8]) {
        self.dev.node_guid = u64::from_ne_bytes(guid);
    }

    /// Sets the node description shown by `ibv_devinfo -v`.
    pub fn node_desc(&mut self, desc: &[u8]) {
        // Room for the terminating NUL, which the zeroed device provides.
        let n = desc.len().min(self.dev.node_desc.len().saturating_sub(1));
        for (d, s) in self.dev.node_desc.iter_mut().zip(desc.iter().take(n)) {
            *d = *s as kernel::ffi::c_char;
        }
    }

    /// Marks the device as a channel adapter (`RDMA_NODE_IB_CA`).
    pub fn node_type_ca(&mut self) {
        self.dev.node_type = b::RDMA_NODE_IB_CA as u8;
    }

    /// Lets `rdma link delete` unregister the device (`IBK_ALLOW_USER_UNREG`).
    pub fn allow_user_unregister(&mut self) {
        self.dev.attrs.kernel_cap_flags |= u64::from(b::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG);
    }
}
