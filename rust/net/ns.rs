// SPDX-License-Identifier: GPL-2.0

//! Network namespaces: the namespace a net device lives in, and per-namespace
//! teardown hooks (`pernet_operations`).
//!
//! C header: [`include/net/net_namespace.h`](srctree/include/net/net_namespace.h).

use crate::bindings as b;
use core::marker::PhantomData;
use kernel::{prelude::*, types::Opaque};

/// A network namespace (`struct net`).
///
/// # Invariants
///
/// Instances are only created from pointers to live namespaces, borrowed
/// from something that keeps them alive (a net device in it, or a pernet
/// callback running for it).
#[repr(transparent)]
pub struct Net(Opaque<b::net>);

// SAFETY: The networking core synchronises access to `struct net`.
unsafe impl Send for Net {}
// SAFETY: See `Send` above.
unsafe impl Sync for Net {}

impl Net {
    /// Borrows the namespace at `raw`.
    ///
    /// # Safety
    ///
    /// `raw` must point to a namespace that stays alive for `'a`.
    pub unsafe fn from_raw<'a>(raw: *mut b::net) -> &'a Self {
        // SAFETY: `Net` is `repr(transparent)` over the C structure.
        unsafe { &*raw.cast::<Self>() }
    }

    /// Returns the raw `struct net`.
    pub fn as_raw(&self) -> *mut b::net {
        self.0.get()
    }

    /// The namespace's address, as a key that tells namespaces apart while
    /// they exist (a later namespace may reuse it).
    pub fn key(&self) -> usize {
        self.as_raw() as usize
    }
}

/// Learns when a network namespace goes away.
pub trait PernetHandler: 'static {
    /// Called, in process context, when `net` is being dismantled (after
    /// its net devices are gone), and for every namespace when the
    /// registration is dropped.
    fn exit(net: &Net);
}

/// A registered `pernet_operations` (a "subsys": its exit runs after the
/// net devices of a dying namespace are unregistered).
///
/// # Invariants
///
/// `ops` is registered with `register_pernet_subsys` for the lifetime of the
/// object.
#[pin_data(PinnedDrop)]
pub struct PernetRegistration<H: PernetHandler> {
    #[pin]
    ops: Opaque<b::pernet_operations>,
    _h: PhantomData<H>,
}

// SAFETY: The operations are only touched by the namespace core, under its
// own lock.
unsafe impl<H: PernetHandler> Send for PernetRegistration<H> {}
// SAFETY: `&PernetRegistration` gives no access to anything.
unsafe impl<H: PernetHandler> Sync for PernetRegistration<H> {}

impl<H: PernetHandler> PernetRegistration<H> {
    /// Registers `H` for namespace teardown.
    pub fn register() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            ops <- Opaque::try_ffi_init(|ops: *mut b::pernet_operations| {
                // SAFETY: `ops` is valid, pinned memory for the operations.
                unsafe {
                    ops.write(b::pernet_operations {
                        exit: Some(Self::exit),
                        ..Default::default()
                    });
                }
                // SAFETY: `ops` is initialised and pinned; it is
                // unregistered in `drop` before its memory goes away.
                kernel::error::to_result(unsafe { b::register_pernet_subsys(ops) })
            }),
            _h: PhantomData,
        })
    }

    /// # Safety
    ///
    /// Only called by the namespace core, as the exit method of the
    /// registered operations.
    unsafe extern "C" fn exit(net: *mut b::net) {
        // SAFETY: The namespace is alive during its exit methods.
        H::exit(unsafe { Net::from_raw(net) });
    }
}

#[pinned_drop]
impl<H: PernetHandler> PinnedDrop for PernetRegistration<H> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the invariant `ops` is registered. Unregistering runs
        // the exit method for every namespace that still exists.
        unsafe { b::unregister_pernet_subsys(self.ops.get()) };
    }
}
