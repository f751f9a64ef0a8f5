// SPDX-License-Identifier: GPL-2.0

//! Memory regions: pinned user memory with local and remote keys.

use crate::{index::Index, rdma::umem::Umem};

/// Driver data of a memory region: its key index and the pinned pages.
/// (ib_core keeps the IOVA, length and access flags in `struct ib_mr`.)
pub(crate) struct Mr {
    index: Index,
    _umem: Umem,
}

impl Mr {
    /// A region over `umem`.
    pub(crate) fn new(index: Index, umem: Umem) -> Self {
        Self { index, _umem: umem }
    }

    /// The key of this region: its index and an 8-bit variant, so a stale
    /// key of a freed region with the same index does not match.
    pub(crate) fn key(&self, variant: u8) -> u32 {
        (self.index.get() << 8) | u32::from(variant)
    }
}
