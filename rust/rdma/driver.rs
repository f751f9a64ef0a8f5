// SPDX-License-Identifier: GPL-2.0

//! The operations a driver provides to ib_core (`struct ib_device_ops`).
//!
//! A driver implements [`Driver`]; [`OpsTable`] builds the C ops table from it,
//! filling only the callbacks the driver implements (`#[vtable]`), declaring
//! the object sizes ib_core allocates, and translating every raw pointer into
//! the safe types of this crate before the driver sees it.

use super::{
    attr::{DeviceAttr, PortAttr, PortImmutable},
    bindings as b,
    device::Device,
    object::Object,
    udata::Udata,
};
use core::marker::PhantomData;
use kernel::{error::from_result, prelude::*};

/// A user context (`struct ib_ucontext`) with driver data `T::Ucontext`.
pub type Ucontext<T> = Object<b::ib_ucontext, <T as Driver>::Ucontext>;
/// A protection domain (`struct ib_pd`) with driver data `T::Pd`.
pub type Pd<T> = Object<b::ib_pd, <T as Driver>::Pd>;

/// An RDMA driver: its device data type, object types and verbs.
#[vtable]
pub trait Driver: Sized + Send + Sync + 'static {
    /// Driver data of a user context.
    type Ucontext: Send + Sync;
    /// Driver data of a protection domain.
    type Pd: Send + Sync;

    /// Driver id user space matches providers by (`enum rdma_driver_id`).
    const DRIVER_ID: u32;
    /// uverbs ABI version of the driver's udata structures.
    const UVERBS_ABI_VERSION: u32;

    /// Fills the device capabilities.
    fn query_device(dev: &Device<Self>, attr: &mut DeviceAttr<'_>, udata: &Udata) -> Result;
    /// Fills the attributes of `port`.
    fn query_port(dev: &Device<Self>, port: u32, attr: &mut PortAttr<'_>) -> Result;
    /// Fills the immutable data of `port`.
    fn get_port_immutable(dev: &Device<Self>, port: u32, imm: &mut PortImmutable<'_>) -> Result;
    /// Returns the P_Key at `index` of `port`.
    fn query_pkey(dev: &Device<Self>, port: u32, index: u16) -> Result<u16>;
    /// Returns whether `port` is Ethernet (RoCE) rather than InfiniBand.
    fn link_layer_is_ethernet(dev: &Device<Self>, port: u32) -> bool;
    /// Creates the driver data of a user context.
    fn alloc_ucontext(dev: &Device<Self>, udata: &mut Udata) -> Result<Self::Ucontext>;
    /// Creates the driver data of a protection domain.
    fn alloc_pd(dev: &Device<Self>, udata: &mut Udata) -> Result<Self::Pd>;
    /// Called once the device is registered, before ib_core's clients see it.
    fn enable(_dev: &Device<Self>) -> Result {
        Ok(())
    }
    /// Called once the device is unregistered, right before its data is dropped.
    fn release(_dev: &Device<Self>) {}
}

/// Builds `struct ib_device_ops` for driver `T`.
pub(crate) struct OpsTable<T>(PhantomData<T>);

impl<T: Driver> OpsTable<T> {
    /// Installs `T`'s operations into a device that is not registered yet.
    pub(crate) fn install(dev: &mut b::ib_device) {
        let ops = b::ib_device_ops {
            driver_id: T::DRIVER_ID,
            uverbs_abi_ver: T::UVERBS_ABI_VERSION,
            query_device: if T::HAS_QUERY_DEVICE { Some(Self::query_device) } else { None },
            query_port: if T::HAS_QUERY_PORT { Some(Self::query_port) } else { None },
            get_port_immutable: if T::HAS_GET_PORT_IMMUTABLE { Some(Self::get_port_immutable) } else { None },
            query_pkey: if T::HAS_QUERY_PKEY { Some(Self::query_pkey) } else { None },
            get_link_layer: if T::HAS_LINK_LAYER_IS_ETHERNET { Some(Self::get_link_layer) } else { None },
            alloc_ucontext: if T::HAS_ALLOC_UCONTEXT { Some(Self::alloc_ucontext) } else { None },
            dealloc_ucontext: if T::HAS_ALLOC_UCONTEXT { Some(Self::dealloc_ucontext) } else { None },
            alloc_pd: if T::HAS_ALLOC_PD { Some(Self::alloc_pd) } else { None },
            dealloc_pd: if T::HAS_ALLOC_PD { Some(Self::dealloc_pd) } else { None },
            enable_driver: Some(Self::enable_driver),
            dealloc_driver: Some(Self::dealloc_driver),
            size_ib_ucontext: Ucontext::<T>::SIZE,
            size_ib_pd: Pd::<T>::SIZE,
            ..Default::default()
        };
        // SAFETY: `dev` is a valid device; `ib_set_device_ops` copies the
        // non-NULL entries of `ops`.
        unsafe { b::ib_set_device_ops(dev, &ops) };
    }

    /// # Safety
    ///
    /// `ib` must be a registered (or registering) device of driver `T`.
    unsafe fn dev<'a>(ib: *mut b::ib_device) -> &'a Device<T> {
        // SAFETY: ib_core only calls a device's ops while the device is alive.
        unsafe { Device::from_raw(ib) }
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `query_device` callback of a device of driver `T`.
    unsafe extern "C" fn query_device(
        ib: *mut b::ib_device,
        attr: *mut b::ib_device_attr,
        udata: *mut b::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device, a valid attribute buffer
            // and a NULL or valid udata for the duration of the call.
            let (dev, attr, udata) = unsafe { (Self::dev(ib), &mut *attr, Udata::from_raw(udata)) };
            T::query_device(dev, &mut DeviceAttr(attr), &udata)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `query_port` callback of a device of driver `T`.
    unsafe extern "C" fn query_port(ib: *mut b::ib_device, port: u32, attr: *mut b::ib_port_attr) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device and a valid, zeroed buffer.
            let (dev, attr) = unsafe { (Self::dev(ib), &mut *attr) };
            T::query_port(dev, port, &mut PortAttr(attr))?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `get_port_immutable` callback of a device of driver `T`.
    unsafe extern "C" fn get_port_immutable(
        ib: *mut b::ib_device,
        port: u32,
        imm: *mut b::ib_port_immutable,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device and a valid buffer.
            let (dev, imm) = unsafe { (Self::dev(ib), &mut *imm) };
            T::get_port_immutable(dev, port, &mut PortImmutable(imm))?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `query_pkey` callback of a device of driver `T`.
    unsafe extern "C" fn query_pkey(ib: *mut b::ib_device, port: u32, index: u16, pkey: *mut u16) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device.
            let val = T::query_pkey(unsafe { Self::dev(ib) }, port, index)?;
            // SAFETY: ib_core passes a valid output location.
            unsafe { pkey.write(val) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `get_link_layer` callback of a device of driver `T`.
    unsafe extern "C" fn get_link_layer(ib: *mut b::ib_device, port: u32) -> b::rdma_link_layer {
        // SAFETY: ib_core passes a live device.
        if T::link_layer_is_ethernet(unsafe { Self::dev(ib) }, port) {
            b::rdma_link_layer_IB_LINK_LAYER_ETHERNET
        } else {
            b::rdma_link_layer_IB_LINK_LAYER_INFINIBAND
        }
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `alloc_ucontext` callback of a device of driver `T`.
    unsafe extern "C" fn alloc_ucontext(ctx: *mut b::ib_ucontext, udata: *mut b::ib_udata) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a freshly allocated context of
            // `size_ib_ucontext` bytes whose `device` is set, and a valid udata.
            let (dev, mut udata) = unsafe { (Self::dev((*ctx).device), Udata::from_raw(udata)) };
            let data = T::alloc_ucontext(dev, &mut udata)?;
            // SAFETY: `ctx` was allocated with `Ucontext::<T>::SIZE` bytes.
            unsafe { Ucontext::<T>::init(ctx, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `dealloc_ucontext` callback of a device of driver `T`.
    unsafe extern "C" fn dealloc_ucontext(ctx: *mut b::ib_ucontext) {
        // SAFETY: `alloc_ucontext` succeeded for `ctx`, and ib_core destroys it once.
        unsafe { Ucontext::<T>::drop_data(ctx) };
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `alloc_pd` callback of a device of driver `T`.
    unsafe extern "C" fn alloc_pd(pd: *mut b::ib_pd, udata: *mut b::ib_udata) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a freshly allocated PD whose `device` is
            // set, and a NULL or valid udata.
            let (dev, mut udata) = unsafe { (Self::dev((*pd).device), Udata::from_raw(udata)) };
            let data = T::alloc_pd(dev, &mut udata)?;
            // SAFETY: `pd` was allocated with `Pd::<T>::SIZE` bytes.
            unsafe { Pd::<T>::init(pd, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `dealloc_pd` callback of a device of driver `T`.
    unsafe extern "C" fn dealloc_pd(pd: *mut b::ib_pd, _udata: *mut b::ib_udata) -> c_int {
        // SAFETY: `alloc_pd` succeeded for `pd`; ib_core checked that no
        // object uses the PD any more and destroys it once.
        unsafe { Pd::<T>::drop_data(pd) };
        0
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `enable_driver` callback of a device of driver `T`.
    unsafe extern "C" fn enable_driver(ib: *mut b::ib_device) -> c_int {
        from_result(|| {
            // SAFETY: ib_core calls this on a device being registered.
            T::enable(unsafe { Self::dev(ib) })?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `dealloc_driver` callback of a device of driver `T`.
    unsafe extern "C" fn dealloc_driver(ib: *mut b::ib_device) {
        // SAFETY: ib_core calls this once, after the last reference is gone (or
        // when registration failed); the data was initialised in `register`.
        unsafe {
            T::release(Self::dev(ib));
            Device::<T>::drop_data(ib);
        }
    }
}
