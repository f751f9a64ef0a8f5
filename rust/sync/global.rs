// SPDX-License-Identifier: GPL-2.0

//! An object the whole module reaches from any context, through a `static`:
//! set up when the module loads, taken down when it unloads.
//!
//! Callbacks such as a UDP socket's receive hook or a timer reach module
//! state through statics; [`Global`] is such a static for an object that
//! needs pinning and initialising at run time (a table, a workqueue).

use core::{
    pin::Pin,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::prelude::*;

/// A module-wide object of type `T`.
///
/// # Invariants
///
/// `ptr` is NULL or comes from `KBox::into_raw` of a pinned box that this
/// object owns until [`Global::take`] hands it back.
pub struct Global<T: Send + Sync> {
    ptr: AtomicPtr<T>,
}

impl<T: Send + Sync> Default for Global<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Send + Sync> Global<T> {
    /// Not set up yet.
    pub const fn new() -> Self {
        Self {
            ptr: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// Sets the object up; `EBUSY` if it already is.
    pub fn set(&self, obj: Pin<KBox<T>>) -> Result {
        // SAFETY: The box stays pinned: it is only turned back into a
        // pinned box by `take`, and never moved out of meanwhile.
        let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(obj) });
        if self
            .ptr
            .compare_exchange(
                core::ptr::null_mut(),
                raw,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // SAFETY: `raw` was not published; it came from `into_raw` above.
            drop(unsafe { Pin::new_unchecked(KBox::from_raw(raw)) });
            return Err(EBUSY);
        }
        // INVARIANT: stored the raw box.
        Ok(())
    }

    /// The object, if it is set up.
    pub fn get(&self) -> Option<Pin<&T>> {
        let raw = self.ptr.load(Ordering::Acquire);
        // SAFETY: By the invariant a non-NULL pointer is a live, pinned box
        // that `take` has not returned yet; `take`'s callers promise that no
        // reference from `get` outlives it.
        unsafe { raw.as_ref().map(|r| Pin::new_unchecked(r)) }
    }

    /// Takes the object down (the caller drops it).
    ///
    /// # Safety
    ///
    /// No reference that [`Global::get`] returned may be used after this
    /// call, and `get` may only be called again by code that copes with
    /// `None` (the object's own callbacks while it is being dropped).
    pub unsafe fn take(&self) -> Option<Pin<KBox<T>>> {
        let raw = self.ptr.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if raw.is_null() {
            return None;
        }
        // SAFETY: By the invariant `raw` came from `into_raw` of a pinned box
        // this object owned; it is no longer reachable through `ptr`.
        Some(unsafe { Pin::new_unchecked(KBox::from_raw(raw)) })
    }
}
