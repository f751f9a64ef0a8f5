// SPDX-License-Identifier: GPL-2.0

//! Driver-specific data that user space passes with a verb (`struct ib_udata`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//!
//! Every copy is checked against the lengths user space declared: a request
//! shorter than the driver's structure is `EINVAL`, a longer one is accepted only
//! if the extra bytes are zero (`EOPNOTSUPP` otherwise), a response buffer
//! shorter than the driver's answer is `EINVAL`, and a fault is `EFAULT`.

use super::bindings as b;
use kernel::prelude::*;

/// Plain-old-data structures that may be copied to and from user space.
///
/// # Safety
///
/// Implementors must be `repr(C)` with no padding and no pointers or
/// references, valid for any bit pattern (the `rdma_user_rxe.h` structures).
pub unsafe trait UserPod: Copy + Default {
    /// The value's bytes, as user space sees them.
    fn as_bytes(&self) -> &[u8] {
        // SAFETY: `Self` has no padding (trait requirement), so all of its
        // `size_of` bytes are initialised.
        unsafe {
            core::slice::from_raw_parts(
                core::ptr::from_ref(self).cast::<u8>(),
                core::mem::size_of::<Self>(),
            )
        }
    }
}

/// The udata of one verb call.
///
/// # Invariants
///
/// `raw` is NULL (a kernel caller) or points to a `struct ib_udata` that is
/// valid for the duration of the verb call, whose `inbuf`/`outbuf` are user
/// pointers of `inlen`/`outlen` bytes.
pub struct Udata {
    raw: *mut b::ib_udata,
}

impl Udata {
    /// Wraps the udata passed to a verb.
    ///
    /// # Safety
    ///
    /// `raw` must be NULL or valid for the lifetime of the returned object.
    pub(crate) unsafe fn from_raw(raw: *mut b::ib_udata) -> Self {
        // INVARIANT: Guaranteed by the caller.
        Self { raw }
    }

    /// The raw udata, `None` for a kernel caller.
    pub(crate) fn as_raw(&self) -> Option<*mut b::ib_udata> {
        (!self.raw.is_null()).then_some(self.raw)
    }

    /// Returns whether the verb came from user space.
    pub fn is_user(&self) -> bool {
        !self.raw.is_null()
    }

    /// Length of the request user space passed.
    pub fn inlen(&self) -> usize {
        // SAFETY: By the invariant `raw` is NULL or valid.
        unsafe { self.raw.as_ref() }.map_or(0, |u| u.inlen)
    }

    /// Length of the response buffer user space passed.
    pub fn outlen(&self) -> usize {
        // SAFETY: By the invariant `raw` is NULL or valid.
        unsafe { self.raw.as_ref() }.map_or(0, |u| u.outlen)
    }

    /// Reads the driver request `R`.
    pub fn read<R: UserPod>(&self) -> Result<R> {
        // SAFETY: By the invariant `raw` is NULL or valid.
        let u = unsafe { self.raw.as_ref() }.ok_or(EINVAL)?;
        let size = core::mem::size_of::<R>();
        if u.inlen < size {
            return Err(EINVAL);
        }
        if u.inlen > size {
            // SAFETY: `inbuf` is a user pointer of `inlen` bytes; the range
            // starts `size` bytes in and is `inlen - size` long.
            let tail = unsafe { u.inbuf.cast::<u8>().add(size) };
            let tail_len = u.inlen.saturating_sub(size);
            // SAFETY: `tail` is a user pointer valid for `inlen - size` bytes.
            if !unsafe { b::rrxe_user_buffer_is_zero(tail.cast(), tail_len) } {
                return Err(EOPNOTSUPP);
            }
        }
        let mut val = R::default();
        // SAFETY: `val` is `size` writable bytes; `inbuf` has at least `size`
        // bytes; `R: UserPod` is valid for any bytes copied in.
        let left = unsafe {
            b::rrxe_copy_from_user(
                core::ptr::addr_of_mut!(val).cast(),
                u.inbuf,
                size as kernel::ffi::c_ulong,
            )
        };
        if left != 0 {
            return Err(EFAULT);
        }
        Ok(val)
    }

    /// Writes `val` to the user address `addr` that the driver request named.
    pub fn write_to_user<R: UserPod>(&self, addr: u64, val: &R) -> Result {
        if !self.is_user() {
            return Err(EINVAL);
        }
        let to = usize::try_from(addr).map_err(|_| EFAULT)? as *mut c_void;
        // SAFETY: `copy_to_user` checks that the range is user memory and
        // reports faults; `val` is plain data of the given size.
        let left = unsafe {
            b::rrxe_copy_to_user(
                to,
                core::ptr::from_ref(val).cast(),
                core::mem::size_of::<R>() as kernel::ffi::c_ulong,
            )
        };
        if left != 0 {
            return Err(EFAULT);
        }
        Ok(())
    }

    /// Writes the driver response `resp`; a kernel caller has no response.
    pub fn write<R: UserPod>(&mut self, resp: &R) -> Result {
        // SAFETY: By the invariant `raw` is NULL or valid.
        let Some(u) = (unsafe { self.raw.as_ref() }) else {
            return Ok(());
        };
        let size = core::mem::size_of::<R>();
        if u.outlen < size {
            return Err(EINVAL);
        }
        // SAFETY: `outbuf` is a user pointer of at least `size` bytes and `resp`
        // is `size` readable bytes of plain data.
        let left = unsafe {
            b::rrxe_copy_to_user(
                u.outbuf,
                core::ptr::from_ref(resp).cast(),
                size as kernel::ffi::c_ulong,
            )
        };
        if left != 0 {
            return Err(EFAULT);
        }
        Ok(())
    }
}
