// SPDX-License-Identifier: GPL-2.0

//! Index allocation for object numbers and keys (QPN, SRQN, AH number, MR index).
//!
//! Indices are handed out cyclically from `[min, max]` so a just-freed number
//! is not reused at once (a late packet for an old QP must not hit a new one).
//! The bitmap grows on demand, allocating outside the lock.

use core::pin::Pin;
use kernel::{
    id_pool::IdPool,
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

struct State {
    pool: IdPool,
    next: usize,
}

/// A cyclic allocator of indices in `[min, max]`.
pub(crate) struct Indices {
    state: Pin<KBox<Mutex<State>>>,
    min: usize,
    max: usize,
}

impl Indices {
    /// Creates an allocator for `[min, max]`.
    pub(crate) fn new(min: u32, max: u32) -> Result<Self> {
        let state = State {
            pool: IdPool::new(),
            next: min as usize,
        };
        Ok(Self {
            state: KBox::pin_init(new_mutex!(state), GFP_KERNEL)?,
            min: min as usize,
            max: max as usize,
        })
    }

    /// Allocates an index; `EINVAL` when all are in use (as upstream rxe).
    pub(crate) fn alloc(&self) -> Result<u32> {
        loop {
            let grow = {
                let mut s = self.state.lock();
                let start = s.next;
                // Search [start, max], then [min, start).
                for from in [start, self.min] {
                    if let Some(id) = s.pool.find_unused_id(from) {
                        let id = id.as_usize();
                        if id <= self.max && (from == start || id < start) {
                            let id = s
                                .pool
                                .find_unused_id(id)
                                .map(|u| u.acquire())
                                .ok_or(EINVAL)?;
                            s.next = if id >= self.max {
                                self.min
                            } else {
                                id.saturating_add(1)
                            };
                            return u32::try_from(id).map_err(|_| EINVAL);
                        }
                    }
                }
                if s.pool.capacity() > self.max {
                    return Err(EINVAL);
                }
                s.pool.grow_request().ok_or(EINVAL)?
            };
            let resizer = grow.realloc(GFP_KERNEL)?;
            self.state.lock().pool.grow(resizer);
        }
    }

    /// Returns `id` to the pool.
    pub(crate) fn free(&self, id: u32) {
        self.state.lock().pool.release_id(id as usize);
    }
}

/// An allocated index, returned to its pool when dropped.
pub(crate) struct Index {
    id: u32,
    pool: Arc<Indices>,
}

impl Index {
    /// Allocates from `pool`.
    pub(crate) fn new(pool: &Arc<Indices>) -> Result<Self> {
        Ok(Self {
            id: pool.alloc()?,
            pool: pool.clone(),
        })
    }

    /// The number.
    pub(crate) fn get(&self) -> u32 {
        self.id
    }
}

impl Drop for Index {
    fn drop(&mut self) {
        self.pool.free(self.id);
    }
}
