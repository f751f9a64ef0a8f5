// SPDX-License-Identifier: GPL-2.0

//! Memory regions (pinned user memory, kernel memory, fast registrations)
//! and memory windows, with their keys.
//!
//! The pages live in the device's region table ([`crate::mem::Regions`]),
//! where the datapath finds them by key; the verb object owns the entry and
//! removes it when the region is deregistered.

use crate::{
    datapath::Datapath,
    index::Index,
    mem::{FastMap, Memory, Region, Window},
};
use kernel::{
    prelude::*,
    sync::{Arc, SpinLockIrq},
};

/// Driver data of a memory region or window.
/// (ib_core keeps the IOVA, length and access flags in `struct ib_mr`.)
pub(crate) struct Mr {
    _index: Index,
    key: u32,
    dp: Arc<Datapath>,
    /// The mapping of a fast-registration region (`alloc_mr`).
    fast: Option<Arc<SpinLockIrq<FastMap>>>,
}

impl Mr {
    /// Registers `mem` as seen at `iova` with `access` flags in protection
    /// domain `pd`, under a key made of the index and an 8-bit variant (so a
    /// stale key of a freed region with the same index does not match).
    pub(crate) fn new(
        index: Index,
        variant: u8,
        pd: usize,
        iova: u64,
        access: u32,
        mem: Memory,
        dp: &Arc<Datapath>,
    ) -> Result<Self> {
        let key = (index.get() << 8) | u32::from(variant);
        let fast = match &mem {
            Memory::Fast(map) => Some(map.clone()),
            _ => None,
        };
        dp.regions.insert(Region::new(key, pd, iova, access, mem))?;
        Ok(Self {
            _index: index,
            key,
            dp: dp.clone(),
            fast,
        })
    }

    /// Allocates a fast-registration region of PD `pd` that maps up to
    /// `max_pages` pages; it is invalid until a REG_MR work request.
    pub(crate) fn new_fast(
        index: Index,
        variant: u8,
        pd: usize,
        max_pages: usize,
        dp: &Arc<Datapath>,
    ) -> Result<Self> {
        let key = (index.get() << 8) | u32::from(variant);
        let map = FastMap::new(key, max_pages)?;
        Self::new(index, variant, pd, 0, 0, Memory::Fast(map), dp)
    }

    /// Allocates a memory window of PD `pd` (type 2 if `type2`), unbound;
    /// it shares the regions' key space.
    pub(crate) fn new_window(
        index: Index,
        variant: u8,
        pd: usize,
        type2: bool,
        dp: &Arc<Datapath>,
    ) -> Result<Self> {
        let key = (index.get() << 8) | u32::from(variant);
        let window = Window::new(key, type2)?;
        Self::new(index, variant, pd, 0, 0, Memory::Window(window), dp)
    }

    /// The mapping of a fast-registration region.
    pub(crate) fn fast(&self) -> Result<&SpinLockIrq<FastMap>> {
        self.fast.as_deref().ok_or(EINVAL)
    }

    /// `rereg_mr` of a user region (`flags`: `enum ib_mr_rereg_flags`):
    /// moves it to PD `pd` and/or gives it `access` flags, which must lie
    /// in `supported`; see [`crate::mem::Regions::rereg`].
    pub(crate) fn rereg(
        &self,
        flags: u32,
        pd: Option<usize>,
        access: Option<u32>,
        supported: u32,
    ) -> Result {
        self.dp
            .regions
            .rereg(self.key, flags, pd, access, supported)
    }

    /// The local and remote key.
    pub(crate) fn key(&self) -> u32 {
        self.key
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // Waits until no QP run can use the region; unpins its pages.
        self.dp.regions.remove(self.key);
    }
}
