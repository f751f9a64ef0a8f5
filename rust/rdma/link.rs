// SPDX-License-Identifier: GPL-2.0

//! `rdma link add NAME type TYPE netdev DEV` (`struct rdma_link_ops`).
//!
//! C header: [`include/rdma/rdma_netlink.h`](srctree/include/rdma/rdma_netlink.h).

use super::bindings as b;
use crate::net::netdev::NetDevice;
use core::marker::PhantomData;
use kernel::{error::from_result, prelude::*, types::Opaque};

/// Creates devices for `rdma link add`.
pub trait LinkHandler: 'static {
    /// The link type users name (`rdma link add … type TYPE`).
    const TYPE: &'static CStr;
    /// Creates a device called `name` over `netdev`.
    fn newlink(name: &CStr, netdev: &NetDevice) -> Result;
}

/// A registered link type.
///
/// # Invariants
///
/// `ops` is registered with `rdma_link_register` while the object exists.
#[pin_data(PinnedDrop)]
pub struct LinkRegistration<L: LinkHandler> {
    #[pin]
    ops: Opaque<b::rdma_link_ops>,
    _p: PhantomData<L>,
}

// SAFETY: The ops table is only read by the RDMA core after registration.
unsafe impl<L: LinkHandler> Send for LinkRegistration<L> {}
// SAFETY: See `Send` above.
unsafe impl<L: LinkHandler> Sync for LinkRegistration<L> {}

impl<L: LinkHandler> LinkRegistration<L> {
    /// Registers link type `L::TYPE`.
    pub fn register() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            ops <- Opaque::try_ffi_init(|ops: *mut b::rdma_link_ops| {
                // SAFETY: `ops` is valid, pinned memory; it is unregistered in
                // `drop` before it goes away.
                unsafe {
                    ops.write(b::rdma_link_ops {
                        type_: L::TYPE.as_char_ptr(),
                        newlink: Some(Self::newlink),
                        ..Default::default()
                    });
                    b::rdma_link_register(ops);
                }
                Ok::<(), Error>(())
            }),
            _p: PhantomData,
        })
    }

    /// # Safety
    ///
    /// Only called by the RDMA core, as the `newlink` callback of the registered link ops.
    unsafe extern "C" fn newlink(name: *const c_char, ndev: *mut b::net_device) -> c_int {
        from_result(|| {
            // SAFETY: The RDMA core passes a NUL-terminated name and a net
            // device it holds a reference to for the duration of the call.
            let (name, ndev) = unsafe { (CStr::from_char_ptr(name), NetDevice::from_raw(ndev)) };
            L::newlink(name, ndev)?;
            Ok(0)
        })
    }
}

#[pinned_drop]
impl<L: LinkHandler> PinnedDrop for LinkRegistration<L> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the invariant `ops` is registered.
        unsafe { b::rdma_link_unregister(self.ops.get()) };
    }
}
