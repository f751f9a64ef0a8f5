// SPDX-License-Identifier: GPL-2.0

//! Pinned user memory (`struct ib_umem`).
//!
//! C header: [`include/rdma/ib_umem.h`](srctree/include/rdma/ib_umem.h).

use super::{bindings as b, device::Device, driver::Driver};
use core::ptr::NonNull;
use kernel::{error::from_err_ptr, prelude::*};

/// User pages pinned for the lifetime of the object.
///
/// # Invariants
///
/// `raw` is a umem returned by `ib_umem_get_va` and not yet released.
pub struct Umem {
    raw: NonNull<b::ib_umem>,
}

// SAFETY: A umem is only released once, by `drop`; its pages are pinned.
unsafe impl Send for Umem {}
// SAFETY: Shared access only reads the umem's immutable description.
unsafe impl Sync for Umem {}

impl Umem {
    /// Pins `[addr, addr + len)` of the calling process with IB `access` flags.
    pub fn get<T: Driver>(dev: &Device<T>, addr: u64, len: u64, access: u32) -> Result<Self> {
        let addr = usize::try_from(addr).map_err(|_| EINVAL)?;
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        // SAFETY: `dev` is a live device; ib_core validates the range against
        // the caller's address space and returns an error pointer on failure.
        let raw = from_err_ptr(unsafe { b::rrxe_umem_get(dev.as_raw(), addr as c_ulong, len, access as c_int) })?;
        // INVARIANT: `raw` is a valid umem now owned by `Self`.
        Ok(Self {
            raw: NonNull::new(raw).ok_or(ENOMEM)?,
        })
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: By the invariant `raw` is valid and released only here.
        unsafe { b::ib_umem_release(self.raw.as_ptr()) };
    }
}
