// SPDX-License-Identifier: GPL-2.0

//! Data that one context at a time works on, where the others leave a
//! request instead of waiting.
//!
//! A soft-RoCE queue pair is kicked from many contexts: a doorbell system
//! call, the UDP receive softirq, a timer, a work item, a packet another QP
//! delivers locally. Each wants the QP's engine to run once more, but it
//! does not matter which of them runs it, only that it runs after the kick.
//! [`Serial`] gives exactly that without ever spinning or sleeping on the
//! fast path: [`Serial::enter_or_ask`] either becomes the owner, or finds an
//! owner at work and asks it to run once more; [`Owner::leave`] tells the
//! owner whether it was asked. How many runs an owner serves before it hands
//! the rest to someone else is the user's policy. Verbs that
//! must change the data at a given point (a state transition, destroying the
//! QP) wait for the owner with [`Serial::enter_wait`].
//!
//! Nothing here is a lock that lockdep sees: an owner never waits for
//! anything, so a kick from any context, on any CPU, cannot deadlock.

use core::{
    cell::UnsafeCell,
    ops::{Deref, DerefMut},
    sync::atomic::{AtomicU32, Ordering},
};

/// Someone owns the data.
const BUSY: u32 = 1;
/// Someone asked the owner to run once more.
const AGAIN: u32 = 2;

/// Data worked on by one context at a time.
///
/// # Invariants
///
/// `data` is only accessed through an [`Owner`], and at most one `Owner`
/// exists at a time: one is made only by setting [`BUSY`] in `state` when
/// it was clear, and [`BUSY`] is cleared only when that `Owner` goes.
pub struct Serial<T> {
    state: AtomicU32,
    data: UnsafeCell<T>,
}

// SAFETY: The data is only reached through the single `Owner` (invariant),
// from whichever thread holds it; `T: Send` lets it move between them.
unsafe impl<T: Send> Send for Serial<T> {}
// SAFETY: As above: shared references only reach the atomic state.
unsafe impl<T: Send> Sync for Serial<T> {}

impl<T> Serial<T> {
    /// Wraps `data`; no one owns it.
    pub const fn new(data: T) -> Self {
        Self {
            state: AtomicU32::new(0),
            data: UnsafeCell::new(data),
        }
    }

    /// Becomes the owner, or, if another context is, asks it to run once
    /// more and returns `None`.
    pub fn enter_or_ask(&self) -> Option<Owner<'_, T>> {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            let (want, owner) = if s & BUSY == 0 {
                // A request left when the last owner had just gone is
                // served by this run.
                (BUSY, true)
            } else if s & AGAIN != 0 {
                return None;
            } else {
                (s | AGAIN, false)
            };
            match self
                .state
                .compare_exchange_weak(s, want, Ordering::Acquire, Ordering::Relaxed)
            {
                // INVARIANT: `BUSY` was clear and this call set it.
                Ok(_) if owner => return Some(Owner { serial: self }),
                Ok(_) => return None,
                Err(now) => s = now,
            }
        }
    }

    /// Becomes the owner, waiting for the current one (which never sleeps
    /// nor waits) to let go. Only for process context, which may be
    /// rescheduled meanwhile.
    pub fn enter_wait(&self) -> Owner<'_, T> {
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if s & BUSY == 0
                && self
                    .state
                    .compare_exchange_weak(s, BUSY, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                // INVARIANT: `BUSY` was clear and this call set it. A
                // request left meanwhile is now this owner's to serve.
                return Owner { serial: self };
            }
            core::hint::spin_loop();
            // SAFETY: Process context (the caller's promise).
            unsafe { crate::bindings::rrxe_cond_resched() };
        }
    }

    /// Waits to become the owner (as [`Serial::enter_wait`]), runs `f` and
    /// lets go. Also returns whether other contexts asked for a run
    /// meanwhile: that run is then the caller's to arrange. It is not served
    /// here, so a verb is never held in a loop of runs other contexts keep
    /// asking for.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> (R, bool) {
        let mut owner = self.enter_wait();
        let r = f(&mut owner);
        match owner.leave() {
            Ok(()) => (r, false),
            Err(again) => {
                drop(again);
                (r, true)
            }
        }
    }
}

/// Exclusive access to the data of a [`Serial`].
///
/// Dropping an owner lets go of the data and keeps a pending request for
/// the next context that enters; [`Owner::leave`] serves requests instead.
pub struct Owner<'a, T> {
    serial: &'a Serial<T>,
}

impl<'a, T> Owner<'a, T> {
    /// Lets go, unless another context asked for another run meanwhile: then
    /// stays the owner (the request is now served by this owner) and
    /// returns itself.
    pub fn leave(self) -> Result<(), Self> {
        let serial = self.serial;
        core::mem::forget(self);
        let mut s = serial.state.load(Ordering::Relaxed);
        loop {
            let want = if s & AGAIN != 0 { BUSY } else { 0 };
            match serial
                .state
                .compare_exchange_weak(s, want, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) if want == 0 => return Ok(()),
                // INVARIANT: `BUSY` stays set: this is still the only owner.
                Ok(_) => return Err(Owner { serial }),
                Err(now) => s = now,
            }
        }
    }

    /// Whether another context has asked for another run.
    pub fn asked(&self) -> bool {
        self.serial.state.load(Ordering::Relaxed) & AGAIN != 0
    }
}

impl<T> Deref for Owner<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: By the type invariant this is the only owner, and only an
        // owner reaches the data.
        unsafe { &*self.serial.data.get() }
    }
}

impl<T> DerefMut for Owner<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: As in `deref`; `&mut self` makes this the only reference.
        unsafe { &mut *self.serial.data.get() }
    }
}

impl<T> Drop for Owner<'_, T> {
    fn drop(&mut self) {
        // Keep `AGAIN`: the next context to enter serves it.
        self.serial.state.fetch_and(!BUSY, Ordering::Release);
    }
}
