// SPDX-License-Identifier: GPL-2.0

//! A workqueue the module owns (`alloc_workqueue`/`destroy_workqueue`).
//!
//! C header: [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h).
//!
//! The kernel crate enqueues work on the system's workqueues, which a module
//! cannot flush: a work item still queued when the module goes would run
//! code that is gone. Work queued on an [`OwnedQueue`] has all run when the
//! queue is dropped.

use crate::bindings as b;
use core::{ops::Deref, ptr::NonNull};
use kernel::{prelude::*, workqueue::Queue};

/// A workqueue allocated by the module.
///
/// # Invariants
///
/// `raw` comes from `alloc_workqueue` and is destroyed only in `drop`.
pub struct OwnedQueue {
    raw: NonNull<b::workqueue_struct>,
}

// SAFETY: A workqueue may be used from any thread.
unsafe impl Send for OwnedQueue {}
// SAFETY: As above.
unsafe impl Sync for OwnedQueue {}

impl OwnedQueue {
    /// A high-priority, unbound workqueue called `name` (work items run
    /// soon, on any CPU, and may sleep).
    pub fn new(name: &'static CStr) -> Result<Self> {
        Self::alloc(name, false)
    }

    /// A high-priority per-CPU workqueue called `name`: a work item runs
    /// soon, and may sleep, on the CPU that enqueued it ([`Queue::enqueue`]).
    pub fn new_per_cpu(name: &'static CStr) -> Result<Self> {
        Self::alloc(name, true)
    }

    fn alloc(name: &'static CStr, per_cpu: bool) -> Result<Self> {
        // SAFETY: `name` is a static C string; the shim returns a new
        // workqueue or NULL.
        let raw = unsafe { b::rrxe_alloc_workqueue(name.as_char_ptr(), per_cpu) };
        // INVARIANT: from `alloc_workqueue`.
        Ok(Self {
            raw: NonNull::new(raw).ok_or(ENOMEM)?,
        })
    }
}

impl Deref for OwnedQueue {
    type Target = Queue;

    fn deref(&self) -> &Queue {
        // SAFETY: By the invariant the workqueue lives as long as `self`;
        // `Queue` wraps the same C structure as our bindings name it.
        unsafe { Queue::from_raw(self.raw.as_ptr().cast()) }
    }
}

impl Drop for OwnedQueue {
    fn drop(&mut self) {
        // SAFETY: By the invariant the queue is live and destroyed only
        // here; `destroy_workqueue` runs every queued item first.
        unsafe { b::destroy_workqueue(self.raw.as_ptr()) };
    }
}
