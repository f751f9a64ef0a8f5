// SPDX-License-Identifier: GPL-2.0

//! Memory the datapath reaches by key: the registered regions of a device,
//! checked for protection domain, access rights and bounds on every use.
//!
//! Regions are looked up in a [`Table`] by key index and used only inside
//! a QP's run, which holds the RCU read lock. Deregistration removes the
//! region from the table and, if the datapath ever reached it, waits for an
//! RCU grace period: every run that could still hold a reference has ended,
//! so the last reference is the verb's, and the pages are unpinned in
//! process context.

use crate::{
    proto::{Access, AtomicOp, MemError, MemoryAccess},
    rdma::{bindings as b, umem::Umem},
    sync::table::Table,
};
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{prelude::*, sync::Arc};

/// What a region's addresses name.
pub(crate) enum Memory {
    /// Pinned user pages.
    User(Umem),
    /// All of kernel memory by virtual address: the DMA region of a kernel
    /// PD (`get_dma_mr`), whose local key in-kernel callers put in their
    /// SGEs with the addresses `ib_dma_map_*` gave them (rrxe uses virtual
    /// DMA: `ib_uses_virt_dma`). Local access only.
    KernelDma,
}

/// A registered region as the datapath sees it.
pub(crate) struct Region {
    /// Full key (index and variant); a stale key does not match.
    pub(crate) key: u32,
    /// Protection domain, for comparison only.
    pub(crate) pd: usize,
    /// Address of byte 0 as peers and work requests name it.
    pub(crate) iova: u64,
    /// `IB_ACCESS_*` flags.
    pub(crate) access: u32,
    /// The memory.
    pub(crate) mem: Memory,
    /// The datapath has looked the region up (deregistration then waits).
    used: AtomicBool,
}

impl Region {
    /// A region not yet used by the datapath.
    pub(crate) fn new(key: u32, pd: usize, iova: u64, access: u32, mem: Memory) -> Self {
        Self {
            key,
            pd,
            iova,
            access,
            mem,
            used: AtomicBool::new(false),
        }
    }
}

/// The regions of a device by key index.
#[pin_data]
pub(crate) struct Regions {
    #[pin]
    table: Table<Region>,
}

fn index(key: u32) -> u32 {
    key >> 8
}

impl Regions {
    /// An empty table.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self { table <- Table::new() })
    }

    /// Adds a region.
    pub(crate) fn insert(&self, r: Region) -> Result {
        self.table.insert(index(r.key), Arc::new(r, GFP_KERNEL)?)
    }

    /// Removes the region with `key` and drops it once no QP run can still
    /// use it (its pages are unpinned then). Process context only.
    pub(crate) fn remove(&self, key: u32) {
        let Some(r) = self.table.remove(index(key)) else {
            return;
        };
        // (The table's lock orders the mark before this load.)
        if r.used.load(Ordering::Relaxed) {
            // Runs that looked the region up hold the RCU read lock until
            // they let go of it.
            kernel::sync::rcu::synchronize_rcu();
        }
        drop(r);
    }

    /// Memory as one QP (of protection domain `pd`) may use it.
    pub(crate) fn for_pd(&self, pd: usize) -> PdMemory<'_> {
        PdMemory { regions: self, pd }
    }
}

/// The view of one protection domain: keys of other PDs do not resolve.
pub(crate) struct PdMemory<'a> {
    regions: &'a Regions,
    pd: usize,
}

fn allowed(r: &Region, access: Access) -> bool {
    if matches!(r.mem, Memory::KernelDma) {
        return matches!(access, Access::LocalRead | Access::LocalWrite);
    }
    let need = match access {
        Access::LocalRead => return true,
        Access::LocalWrite => b::ib_access_flags_IB_ACCESS_LOCAL_WRITE,
        Access::RemoteRead => b::ib_access_flags_IB_ACCESS_REMOTE_READ,
        Access::RemoteWrite => b::ib_access_flags_IB_ACCESS_REMOTE_WRITE,
        Access::RemoteAtomic => b::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC,
    };
    r.access & need != 0
}

impl PdMemory<'_> {
    /// Runs `f` on the region named by `key` and the offset of `[va, va + len)`
    /// in it, after every check.
    fn with<R>(
        &self,
        key: u32,
        va: u64,
        len: u64,
        access: Access,
        f: impl FnOnce(&Region, usize) -> Result<R, MemError>,
    ) -> Result<R, MemError> {
        // Marked under the table's lock: `Regions::remove` either sees the
        // mark, or the region was gone before this lookup.
        let r = self
            .regions
            .table
            .get_and(index(key), |r| r.used.store(true, Ordering::Relaxed))
            .filter(|r| r.key == key && r.pd == self.pd)
            .ok_or(MemError::BadKey)?;
        if !allowed(&r, access) {
            return Err(MemError::AccessDenied);
        }
        let off = va.checked_sub(r.iova).ok_or(MemError::OutOfRange)?;
        let end = off.checked_add(len).ok_or(MemError::OutOfRange)?;
        let size = match &r.mem {
            Memory::User(umem) => umem.len() as u64,
            Memory::KernelDma => u64::MAX,
        };
        if end > size {
            return Err(MemError::OutOfRange);
        }
        f(&r, usize::try_from(off).map_err(|_| MemError::OutOfRange)?)
    }
}

impl MemoryAccess for PdMemory<'_> {
    fn check(&mut self, key: u32, va: u64, len: u32, access: Access) -> Result<(), MemError> {
        if len == 0 {
            return Ok(());
        }
        self.with(key, va, len.into(), access, |_, _| Ok(()))
    }

    fn read(&mut self, key: u32, va: u64, buf: &mut [u8], access: Access) -> Result<(), MemError> {
        if buf.is_empty() {
            return Ok(());
        }
        self.with(key, va, buf.len() as u64, access, |r, off| match &r.mem {
            Memory::User(umem) => umem.read(off, buf).map_err(|_| MemError::OutOfRange),
            Memory::KernelDma => {
                // SAFETY: A DMA key is only usable by in-kernel callers of
                // this PD (user space cannot get one), and the verbs contract
                // makes them name memory they own and keep until completion.
                unsafe {
                    core::ptr::copy_nonoverlapping(off as *const u8, buf.as_mut_ptr(), buf.len())
                };
                Ok(())
            }
        })
    }

    fn write(&mut self, key: u32, va: u64, data: &[u8], access: Access) -> Result<(), MemError> {
        if data.is_empty() {
            return Ok(());
        }
        self.with(key, va, data.len() as u64, access, |r, off| match &r.mem {
            Memory::User(umem) => umem.write(off, data).map_err(|_| MemError::OutOfRange),
            Memory::KernelDma => {
                // SAFETY: As in `read`.
                unsafe {
                    core::ptr::copy_nonoverlapping(data.as_ptr(), off as *mut u8, data.len())
                };
                Ok(())
            }
        })
    }

    fn atomic(&mut self, rkey: u32, va: u64, op: AtomicOp) -> Result<u64, MemError> {
        if va % 8 != 0 {
            return Err(MemError::Misaligned);
        }
        self.with(rkey, va, 8, op.access(), |r, off| match &r.mem {
            Memory::User(umem) => umem
                .atomic_u64(off, |old| op.apply(old))
                .map_err(|_| MemError::Misaligned),
            Memory::KernelDma => Err(MemError::AccessDenied),
        })
    }
}
