// SPDX-License-Identifier: GPL-2.0

//! Memory regions: pinned user memory with local and remote keys.
//!
//! The pages live in the device's region table ([`crate::mem::Regions`]),
//! where the datapath finds them by key; the verb object owns the entry and
//! removes it when the region is deregistered.

use crate::{
    datapath::Datapath,
    index::Index,
    mem::{Memory, Region},
};
use kernel::{prelude::*, sync::Arc};

/// Driver data of a memory region.
/// (ib_core keeps the IOVA, length and access flags in `struct ib_mr`.)
pub(crate) struct Mr {
    _index: Index,
    key: u32,
    dp: Arc<Datapath>,
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
        dp.regions.insert(Region::new(key, pd, iova, access, mem))?;
        Ok(Self {
            _index: index,
            key,
            dp: dp.clone(),
        })
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
