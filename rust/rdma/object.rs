// SPDX-License-Identifier: GPL-2.0

//! Driver objects whose memory ib_core allocates (ucontext, PD, CQ, QP, ...).
//!
//! ib_core allocates each object with the size the driver declares in
//! `ib_device_ops.size_ib_*`, zeroed, with the core structure at offset 0, and
//! frees it after the driver's destroy callback. [`Object`] is that layout: the
//! core structure followed by the driver's data, which the abstraction writes
//! in the create callback and drops in the destroy callback.

use kernel::{prelude::*, types::Opaque};

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

    /// Initialises the data of a freshly allocated object in place.
    ///
    /// # Safety
    ///
    /// `core` must be the core structure of an allocation of `SIZE` bytes whose
    /// data is not initialised, and that does not move until it is freed.
    pub(crate) unsafe fn init(core: *mut B, data: impl PinInit<D, Error>) -> Result {
        let obj = core.cast::<Self>();
        // SAFETY: Guaranteed by the caller: the slot is valid, uninitialised
        // and pinned (ib_core never moves its objects). On error the
        // initialiser leaves nothing behind to drop.
        unsafe { data.__init(core::ptr::addr_of_mut!((*obj).data)) }
    }

    /// Writes the data of a freshly allocated object.
    ///
    /// # Safety
    ///
    /// As for [`Object::init`].
    pub(crate) unsafe fn init_value(core: *mut B, data: D) {
        let obj = core.cast::<Self>();
        // SAFETY: Guaranteed by the caller.
        unsafe { core::ptr::addr_of_mut!((*obj).data).write(data) };
    }

    /// Returns the object containing the core structure at `core`.
    ///
    /// # Safety
    ///
    /// `core` must be the core structure of an `Object<B, D>` whose data is
    /// initialised and stays so for `'a`.
    pub(crate) unsafe fn from_raw<'a>(core: *mut B) -> &'a Self {
        // SAFETY: `Object` is `repr(C)` with the core structure at offset 0.
        unsafe { &*core.cast::<Self>() }
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

    /// Allocates a zeroed object on the heap for a driver-allocated object
    /// (ib_core lets drivers allocate MRs themselves) and initialises its data.
    pub(crate) fn new_boxed(data: D) -> Result<*mut B> {
        let mut slot = KBox::<Self>::new_uninit(GFP_KERNEL | __GFP_ZERO)?;
        let obj = slot.as_mut_ptr();
        // SAFETY: `obj` is valid, zeroed memory for an `Object`.
        unsafe { Self::init_value(obj.cast(), data) };
        // SAFETY: The core structure is zero-initialised (as ib_core expects)
        // and the data was just initialised.
        let obj = KBox::into_raw(unsafe { slot.assume_init() });
        Ok(obj.cast())
    }

    /// Drops and frees an object made by [`Object::new_boxed`].
    ///
    /// # Safety
    ///
    /// `core` must come from `new_boxed` and not be used afterwards.
    pub(crate) unsafe fn free_boxed(core: *mut B) {
        // SAFETY: Guaranteed by the caller.
        drop(unsafe { KBox::from_raw(core.cast::<Self>()) });
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
