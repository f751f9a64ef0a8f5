// SPDX-License-Identifier: GPL-2.0

//! Driver objects whose memory ib_core allocates (ucontext, PD, CQ, QP, ...).
//!
//! ib_core allocates each object with the size the driver declares in
//! `ib_device_ops.size_ib_*`, zeroed, with the core structure at offset 0, and
//! frees it after the driver's destroy callback. [`Object`] is that layout: the
//! core structure followed by the driver's data, which the abstraction writes
//! in the create callback and drops in the destroy callback.

use kernel::types::Opaque;

/// A driver object: ib_core's structure `B` followed by driver data `D`.
///
/// # Invariants
///
/// While a reference to an `Object` exists, `data` is initialised: it is
/// written before the create callback returns success and dropped only in the
/// destroy callback, after which ib_core no longer hands the object out.
#[repr(C)]
pub struct Object<B, D> {
    core: Opaque<B>,
    data: D,
}

impl<B, D> Object<B, D> {
    /// Size to declare in `ib_device_ops.size_ib_*`.
    pub(crate) const SIZE: usize = {
        // ib_core allocates with kzalloc, which aligns to at least 8 bytes.
        assert!(core::mem::align_of::<Self>() <= 8);
        core::mem::size_of::<Self>()
    };

    /// Writes the data of a freshly allocated object.
    ///
    /// # Safety
    ///
    /// `core` must be the core structure of an allocation of `SIZE` bytes whose
    /// data is not initialised.
    pub(crate) unsafe fn init(core: *mut B, data: D) {
        let obj = core.cast::<Self>();
        // SAFETY: Guaranteed by the caller.
        unsafe { core::ptr::addr_of_mut!((*obj).data).write(data) };
    }

    /// Drops the data; the object must not be used as initialised afterwards.
    ///
    /// # Safety
    ///
    /// `core` must be the core structure of an `Object<B, D>` with initialised
    /// data that nothing else refers to any more.
    pub(crate) unsafe fn drop_data(core: *mut B) {
        let obj = core.cast::<Self>();
        // SAFETY: Guaranteed by the caller.
        unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*obj).data)) };
    }

    /// Returns the core structure.
    pub fn as_raw(&self) -> *mut B {
        self.core.get()
    }

    /// Returns the driver's data.
    pub fn data(&self) -> &D {
        &self.data
    }
}
