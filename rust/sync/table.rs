// SPDX-License-Identifier: GPL-2.0

//! A table of reference-counted objects by number (QPs by QPN, memory
//! regions by key index, devices by interface index) that the packet path
//! looks up in softirq context.
//!
//! C header: [`include/linux/xarray.h`](srctree/include/linux/xarray.h).
//!
//! The kernel crate's `XArray` takes its lock without disabling bottom
//! halves, so it cannot be shared with softirq context. [`Table`] is an
//! xarray initialised with `XA_FLAGS_LOCK_BH`, every lock taken with bottom
//! halves off, and a lookup that returns a new reference ([`Arc`]) taken
//! under the lock: an object removed from the table stays alive for whoever
//! looked it up before, and goes when the last of them lets go.

use crate::bindings as b;
use core::marker::PhantomData;
use kernel::{
    ffi::c_void,
    prelude::*,
    sync::{Arc, ArcBorrow},
    types::{ForeignOwnable, Opaque},
};

/// Objects of type `T` by number.
///
/// # Invariants
///
/// `xa` is an initialised xarray (with `XA_FLAGS_LOCK_BH`) whose every entry
/// is a pointer from `Arc::<T>::into_foreign`, owned by the table.
#[pin_data(PinnedDrop)]
pub struct Table<T: Send + Sync + 'static> {
    #[pin]
    xa: Opaque<b::xarray>,
    _p: PhantomData<Arc<T>>,
}

// SAFETY: The xarray synchronises itself; the entries are `Arc<T>`s, which
// may be shared and sent between threads when `T: Send + Sync`.
unsafe impl<T: Send + Sync> Send for Table<T> {}
// SAFETY: As above.
unsafe impl<T: Send + Sync> Sync for Table<T> {}

impl<T: Send + Sync> Table<T> {
    /// An empty table.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `xa` is valid, pinned memory for an xarray.
            // INVARIANT: initialised empty, with BH-safe locking.
            xa <- Opaque::ffi_init(|xa| unsafe { b::rrxe_xa_init_bh(xa) }),
            _p: PhantomData,
        })
    }

    fn xa(&self) -> *mut b::xarray {
        self.xa.get()
    }

    /// Enters `obj` at `index`; `EBUSY` if the number is taken.
    pub fn insert(&self, index: u32, obj: Arc<T>) -> Result {
        let ptr = obj.into_foreign();
        // SAFETY: `xa` is initialised (invariant); `ptr` is a valid entry
        // (an aligned, non-NULL pointer) whose ownership passes to the table
        // on success.
        let ret = unsafe { b::rrxe_xa_insert_bh(self.xa(), index as usize, ptr) };
        if ret != 0 {
            // SAFETY: The table did not take `ptr`, which came from `into_foreign`.
            drop(unsafe { Arc::<T>::from_foreign(ptr) });
            return Err(Error::from_errno(ret));
        }
        Ok(())
    }

    /// Removes the object at `index` and returns the table's reference.
    pub fn remove(&self, index: u32) -> Option<Arc<T>> {
        // SAFETY: `xa` is initialised (invariant).
        let ptr = unsafe { b::rrxe_xa_erase_bh(self.xa(), index as usize) };
        if ptr.is_null() {
            return None;
        }
        // SAFETY: Every entry came from `into_foreign` (invariant), and the
        // erase gave the table's ownership of it to us.
        Some(unsafe { Arc::<T>::from_foreign(ptr) })
    }

    /// A new reference to the object at `index`, if there is one.
    pub fn get(&self, index: u32) -> Option<Arc<T>> {
        self.get_and(index, |_| ())
    }

    /// As [`Table::get`], and calls `f` on the object under the table's
    /// lock, so that `f` happens either before a [`Table::remove`] of the
    /// object or not at all.
    pub fn get_and(&self, index: u32, f: impl FnOnce(&T)) -> Option<Arc<T>> {
        // SAFETY: `xa` is initialised (invariant).
        unsafe { b::rrxe_xa_lock_bh(self.xa()) };
        // SAFETY: As above.
        let ptr = unsafe { b::xa_load(self.xa(), index as usize) };
        let obj = self.reference(ptr);
        if let Some(o) = &obj {
            f(o);
        }
        // SAFETY: Locked above.
        unsafe { b::rrxe_xa_unlock_bh(self.xa()) };
        obj
    }

    /// A new reference to the entry `ptr` (or `None` for NULL); only under
    /// the lock, which keeps the entry in the table until the reference is
    /// taken.
    fn reference(&self, ptr: *mut c_void) -> Option<Arc<T>> {
        if ptr.is_null() {
            return None;
        }
        // SAFETY: Every entry came from `into_foreign` (invariant) and the
        // table holds it under the caller's lock; the borrow ends here.
        let borrowed: ArcBorrow<'_, T> = unsafe { Arc::<T>::borrow(ptr) };
        Some(Arc::from(borrowed))
    }

    /// Calls `f` on a reference to each object, in index order. Objects
    /// entered or removed meanwhile may or may not be seen.
    pub fn for_each(&self, mut f: impl FnMut(Arc<T>)) {
        let mut index: usize = 0;
        loop {
            // SAFETY: `xa` is initialised (invariant).
            unsafe { b::rrxe_xa_lock_bh(self.xa()) };
            // SAFETY: As above; `index` is valid for the call.
            let ptr = unsafe { b::rrxe_xa_find_from(self.xa(), &mut index) };
            let obj = self.reference(ptr);
            // SAFETY: Locked above.
            unsafe { b::rrxe_xa_unlock_bh(self.xa()) };
            let Some(obj) = obj else { return };
            f(obj);
            let Some(next) = index.checked_add(1) else {
                return;
            };
            index = next;
        }
    }
}

#[pinned_drop]
impl<T: Send + Sync> PinnedDrop for Table<T> {
    fn drop(self: Pin<&mut Self>) {
        let mut index: usize = 0;
        loop {
            // SAFETY: `xa` is initialised; no one else uses the table any
            // more (we are dropping it).
            let ptr = unsafe { b::rrxe_xa_find_from(self.xa(), &mut index) };
            if ptr.is_null() {
                break;
            }
            // SAFETY: As above; the entry is erased before it is dropped.
            unsafe { b::rrxe_xa_erase_bh(self.xa(), index) };
            // SAFETY: The entry came from `into_foreign` and is no longer in
            // the table.
            drop(unsafe { Arc::<T>::from_foreign(ptr) });
        }
        // SAFETY: The xarray is empty and not used any more.
        unsafe { b::xa_destroy(self.xa()) };
    }
}
