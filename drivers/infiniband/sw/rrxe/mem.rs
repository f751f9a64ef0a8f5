// SPDX-License-Identifier: GPL-2.0

//! Memory the datapath reaches by key: the registered regions of a device,
//! checked for protection domain, access rights and bounds on every use.
//!
//! Regions are looked up in a [`Table`] by key index and used only inside
//! a QP's run, which holds the RCU read lock. Deregistration removes the
//! region from the table and, if the datapath ever reached it, waits for an
//! RCU grace period: every run that could still hold a reference has ended,
//! so the last reference is the verb's, and the pages are unpinned in
//! process context. A packet that carries a user page as a fragment
//! ([`PdMemory::user_pages`]) holds a page reference of its own, which
//! outlives the unpinning.
//!
//! A connected QP keeps the regions it used last in a [`KeyCache`], so a
//! run that names the same key again skips the table's lock and reference
//! count: an entry is a plain pointer, trusted only while the device's
//! generation of regions ([`Regions::remove`] and [`Regions::rereg`] move
//! it on) is the one it was filled in, and only inside a run's RCU read
//! section, which a removal waits out before it drops the region.
//!
//! On-demand paging regions ([`Memory::Odp`]) differ: their pages are
//! faulted in, and reached under a mutex, so only a run that may sleep
//! touches them (a QP's work item, see [`crate::exec`]); it leaves the RCU
//! read section for that access and holds the region by its reference
//! count instead, and deregistration takes the pages from the region under
//! the region's own mutex, so they are never used after it.

use crate::{
    proto::{Access, AtomicOp, LocalOp, MemError, MemoryAccess, MwBind, Placement},
    rdma::{bindings as b, umem::Umem, umem_odp::UmemOdp},
    shared_bytes::SharedBytes,
    sync::table::Table,
};
use core::{
    cell::Cell,
    ops::Deref,
    ptr::NonNull,
    sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering},
};
use kernel::{
    new_mutex, new_spinlock_irq,
    prelude::*,
    sync::{Arc, Mutex, SpinLockIrq},
};

/// What a region's addresses name.
pub(crate) enum Memory {
    /// Pinned user pages.
    User(Umem),
    /// User pages paged in on demand (`IB_ACCESS_ON_DEMAND`).
    Odp(Arc<OdpMemory>),
    /// All of kernel memory by virtual address: the DMA region of a kernel
    /// PD (`get_dma_mr`), whose local key in-kernel callers put in their
    /// SGEs with the addresses `ib_dma_map_*` gave them (rrxe uses virtual
    /// DMA: `ib_uses_virt_dma`). Local access only.
    KernelDma,
    /// A fast-registration region of an in-kernel caller (`alloc_mr`):
    /// pages it maps with `map_mr_sg` and makes valid with a REG_MR work
    /// request, under a key and access flags of that request, until a
    /// LOCAL_INV or a SEND with invalidate.
    Fast(Arc<SpinLockIrq<FastMap>>),
    /// A memory window: remote access to part of a user region of the same
    /// PD, as a bind work request opened it, under the window's own key.
    Window(Arc<SpinLockIrq<Window>>),
}

/// The memory of an on-demand paging region.
#[pin_data]
pub(crate) struct OdpMemory {
    /// The pages; `None` once the region is deregistered.
    #[pin]
    umem: Mutex<Option<UmemOdp>>,
    /// Length of the region in bytes.
    len: u64,
}

impl OdpMemory {
    /// Wraps a registered ODP umem.
    pub(crate) fn new(umem: UmemOdp) -> Result<Arc<Self>> {
        let len = umem.len() as u64;
        Arc::pin_init(
            pin_init!(Self {
                umem <- new_mutex!(Some(umem)),
                len,
            }),
            GFP_KERNEL,
        )
    }

    /// Runs `f` on the umem, if the region is still registered. Sleeps.
    fn with<R>(&self, f: impl FnOnce(&UmemOdp) -> Result<R, MemError>) -> Result<R, MemError> {
        match &*self.umem.lock() {
            Some(u) => f(u),
            None => Err(MemError::BadKey),
        }
    }

    /// Faults in `[off, off + len)` as `advise_mr` asks (`fault`: fault
    /// pages in, writable if `write`; otherwise take only present ones).
    pub(crate) fn prefetch(&self, off: u64, len: u64, write: bool, fault: bool) -> Result {
        let off = usize::try_from(off).map_err(|_| EINVAL)?;
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        match &*self.umem.lock() {
            Some(u) => {
                if write && !u.writable() {
                    return Err(EPERM);
                }
                drop(u.map_and_lock(off, len, write, fault)?);
                Ok(())
            }
            None => Err(EINVAL),
        }
    }
}

/// The state of a memory window.
pub(crate) struct Window {
    /// Type 2 (bound by a QP's work request, for that QP only, and
    /// invalidated by key) rather than type 1.
    type2: bool,
    /// The window's current key (index and variant).
    key: u32,
    /// What it opens, while bound.
    bound: Option<Binding>,
}

/// A bound window: bytes `[addr, addr + len)` of the region `mr_key` names.
#[derive(Clone, Copy)]
struct Binding {
    mr_key: u32,
    addr: u64,
    len: u64,
    /// `IB_ACCESS_REMOTE_*` flags granted.
    access: u32,
    /// The QP a type 2 window is bound to.
    qpn: Option<u32>,
}

impl Window {
    /// An unbound window with key `key`.
    pub(crate) fn new(key: u32, type2: bool) -> Result<Arc<SpinLockIrq<Self>>> {
        let w = Self {
            type2,
            key,
            bound: None,
        };
        Arc::pin_init(new_spinlock_irq!(w), GFP_KERNEL)
    }

    /// The binding that grants a peer `access` to `[va, va + len)` through
    /// `key`, on QP `qpn`.
    fn grant(
        &self,
        key: u32,
        va: u64,
        len: u64,
        access: Access,
        qpn: u32,
    ) -> Result<Binding, MemError> {
        let b = self
            .bound
            .filter(|_| key == self.key)
            .ok_or(MemError::BadKey)?;
        let remote = matches!(
            access,
            Access::RemoteRead | Access::RemoteWrite | Access::RemoteAtomic
        );
        if !remote || !flags_allow(b.access, access) || b.qpn.is_some_and(|q| q != qpn) {
            return Err(MemError::AccessDenied);
        }
        let off = va.checked_sub(b.addr).ok_or(MemError::OutOfRange)?;
        if off.checked_add(len).is_none_or(|end| end > b.len) {
            return Err(MemError::OutOfRange);
        }
        Ok(b)
    }

    /// A bind work request of QP `qpn`, with the binding it asks for (`None`
    /// to unbind a type 1 window) already checked against its region.
    fn bind(&mut self, req: &MwBind, binding: Option<Binding>, qpn: u32) -> Result<(), MemError> {
        if req.mw_key != self.key || index(req.new_key) != index(self.key) {
            return Err(MemError::BadKey);
        }
        let binding = if self.type2 {
            // A type 2 window is bound once, until invalidated, to the QP
            // that bound it.
            if self.bound.is_some() {
                return Err(MemError::AccessDenied);
            }
            let mut b = binding.ok_or(MemError::OutOfRange)?;
            b.qpn = Some(qpn);
            Some(b)
        } else {
            binding
        };
        self.bound = binding;
        self.key = req.new_key;
        Ok(())
    }

    /// LOCAL_INV or SEND with invalidate of `key`: type 2 windows only.
    fn invalidate(&mut self, key: u32) -> Result<(), MemError> {
        if !self.type2 || key != self.key || self.bound.is_none() {
            return Err(MemError::BadKey);
        }
        self.bound = None;
        Ok(())
    }
}

/// The mapping of a fast-registration region: the live one the datapath
/// uses and the one its owner prepares for the next registration.
pub(crate) struct FastMap {
    /// Registered and not invalidated since.
    valid: bool,
    /// The full key of the registration.
    key: u32,
    /// `IB_ACCESS_*` flags of the registration.
    access: u32,
    live: Pages,
    staged: Pages,
}

/// Kernel pages of a mapping (`ib_sg_to_pages`'s page addresses: virtual
/// addresses, as rrxe does virtual DMA) and the range they hold.
struct Pages {
    /// Page addresses, the first one aligned down to the page size; the
    /// vector never grows past the capacity it was made with.
    addrs: KVec<u64>,
    /// Address of the first byte (`ib_mr.iova`).
    iova: u64,
    /// Bytes mapped.
    len: u64,
    /// log2 of the page size.
    shift: u32,
}

impl Pages {
    fn new(max: usize) -> Result<Self> {
        Ok(Self {
            addrs: KVec::with_capacity(max, GFP_KERNEL)?,
            iova: 0,
            len: 0,
            shift: 12,
        })
    }

    /// Calls `f` with the kernel address and length of each piece of the
    /// bytes `[off, off + len)` of the mapping, in order.
    fn for_each(
        &self,
        off: u64,
        len: usize,
        mut f: impl FnMut(usize, usize, usize) -> Result<(), MemError>,
    ) -> Result<(), MemError> {
        let size = 1u64.checked_shl(self.shift).ok_or(MemError::OutOfRange)?;
        let mask = size.wrapping_sub(1);
        // Offset from the start of the first page.
        let mut rel = (self.iova & mask)
            .checked_add(off)
            .ok_or(MemError::OutOfRange)?;
        let mut done = 0usize;
        while done < len {
            let index = rel
                .checked_shr(self.shift)
                .and_then(|i| usize::try_from(i).ok())
                .ok_or(MemError::OutOfRange)?;
            let page = *self.addrs.get(index).ok_or(MemError::OutOfRange)?;
            let in_page = rel & mask;
            let room = usize::try_from(size.wrapping_sub(in_page)).unwrap_or(usize::MAX);
            let n = room.min(len.wrapping_sub(done));
            let at = page.checked_add(in_page).ok_or(MemError::OutOfRange)?;
            f(
                usize::try_from(at).map_err(|_| MemError::OutOfRange)?,
                done,
                n,
            )?;
            done = done.checked_add(n).ok_or(MemError::OutOfRange)?;
            rel = rel.checked_add(n as u64).ok_or(MemError::OutOfRange)?;
        }
        Ok(())
    }
}

impl FastMap {
    /// An invalid region of up to `max_pages` pages, with key `key`.
    pub(crate) fn new(key: u32, max_pages: usize) -> Result<Arc<SpinLockIrq<Self>>> {
        let map = Self {
            valid: false,
            key,
            access: 0,
            live: Pages::new(max_pages)?,
            staged: Pages::new(max_pages)?,
        };
        Arc::pin_init(new_spinlock_irq!(map), GFP_KERNEL)
    }

    /// Forgets the staged pages (`map_mr_sg` starts).
    pub(crate) fn stage_begin(&mut self) {
        self.staged.addrs.clear();
    }

    /// Stages one more page; `ENOMEM` when the region holds no more.
    pub(crate) fn stage_page(&mut self, addr: u64) -> Result {
        self.staged
            .addrs
            .push_within_capacity(addr)
            .map_err(|_| ENOMEM)
    }

    /// Records the range the staged pages hold (`map_mr_sg` ends).
    pub(crate) fn stage_end(&mut self, iova: u64, len: u64, page_size: u32) -> Result {
        if !page_size.is_power_of_two() || iova.checked_add(len).is_none() {
            return Err(EINVAL);
        }
        self.staged.iova = iova;
        self.staged.len = len;
        self.staged.shift = page_size.trailing_zeros();
        Ok(())
    }

    /// REG_MR: the staged pages become the live mapping under `key`, if the
    /// region is invalid and `key` has the region's index.
    fn register(&mut self, key: u32, access: u32) -> Result<(), MemError> {
        if self.valid || index(key) != index(self.key) {
            return Err(MemError::BadKey);
        }
        core::mem::swap(&mut self.live, &mut self.staged);
        self.key = key;
        self.access = access;
        self.valid = true;
        Ok(())
    }

    /// LOCAL_INV or SEND with invalidate of `key`.
    fn invalidate(&mut self, key: u32) -> Result<(), MemError> {
        if key != self.key {
            return Err(MemError::BadKey);
        }
        self.valid = false;
        Ok(())
    }

    /// The offset of `[va, va + len)` in the live mapping, after every check.
    fn offset(&self, key: u32, va: u64, len: u64, access: Access) -> Result<u64, MemError> {
        if !self.valid || key != self.key {
            return Err(MemError::BadKey);
        }
        if !flags_allow(self.access, access) {
            return Err(MemError::AccessDenied);
        }
        let off = va.checked_sub(self.live.iova).ok_or(MemError::OutOfRange)?;
        if off.checked_add(len).is_none_or(|end| end > self.live.len) {
            return Err(MemError::OutOfRange);
        }
        Ok(off)
    }
}

/// A registered region as the datapath sees it.
///
/// Its protection domain and access flags change with `rereg_mr`
/// ([`Regions::rereg`]): both are written and read only under the table's
/// lock, so every lookup sees the pair of one registration, never one half
/// of each.
pub(crate) struct Region {
    /// Full key (index and variant); a stale key does not match.
    pub(crate) key: u32,
    /// Protection domain, for comparison only.
    pd: AtomicUsize,
    /// Address of byte 0 as peers and work requests name it.
    pub(crate) iova: u64,
    /// `IB_ACCESS_*` flags.
    access: AtomicU32,
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
            pd: AtomicUsize::new(pd),
            iova,
            access: AtomicU32::new(access),
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
    /// How many ODP regions exist (user QPs then run in process context).
    odp: AtomicU32,
    /// Moves on at every removal and change of rights: a [`KeyCache`]
    /// entry of an older generation is not trusted.
    generation: AtomicU64,
}

fn index(key: u32) -> u32 {
    key >> 8
}

impl Regions {
    /// An empty table.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            table <- Table::new(),
            odp: AtomicU32::new(0),
            generation: AtomicU64::new(0),
        })
    }

    /// Adds a region.
    pub(crate) fn insert(&self, r: Region) -> Result {
        let odp = matches!(r.mem, Memory::Odp(_));
        let r = Arc::new(r, GFP_KERNEL)?;
        if odp {
            self.odp.fetch_add(1, Ordering::SeqCst);
            // Runs that began before the count rose (they may be running
            // where sleeping is not allowed) end before the region can be
            // found: every run that can reach it sees the count.
            kernel::sync::rcu::synchronize_rcu();
        }
        let ret = self.table.insert(index(r.key), r);
        if odp && ret.is_err() {
            self.odp.fetch_sub(1, Ordering::SeqCst);
        }
        ret
    }

    /// Whether ODP regions exist: runs of user QPs must then be able to
    /// sleep.
    pub(crate) fn has_odp(&self) -> bool {
        self.odp.load(Ordering::SeqCst) != 0
    }

    /// Removes the region with `key` and drops it once no QP run can still
    /// use it (its pages are unpinned then). Process context only.
    pub(crate) fn remove(&self, key: u32) {
        let Some(r) = self.table.remove(index(key)) else {
            return;
        };
        // Before the grace period: a run that sees the old generation began
        // before it, and the wait below outlasts the run.
        self.generation.fetch_add(1, Ordering::SeqCst);
        // (The table's lock orders the mark, which every cached region has,
        // before this load.)
        if r.used.load(Ordering::Relaxed) {
            // Runs that looked the region up hold the RCU read lock until
            // they let go of it.
            kernel::sync::rcu::synchronize_rcu();
        }
        if let Memory::Odp(o) = &r.mem {
            // A run that holds the region outside the RCU read section
            // finishes its access first; later ones find no pages.
            let umem = o.umem.lock().take();
            drop(umem);
            self.odp.fetch_sub(1, Ordering::SeqCst);
        }
        drop(r);
    }

    /// The ODP memory of the region `key` of PD `pd` that grants local
    /// writes, as `advise_mr` takes it.
    pub(crate) fn odp(&self, pd: usize, key: u32) -> Result<(u64, Arc<OdpMemory>)> {
        let (r, rights, _) = self.get(key, false).ok_or(EINVAL)?;
        if rights.pd != pd
            || r.key != key
            || rights.access & b::ib_access_flags_IB_ACCESS_LOCAL_WRITE == 0
        {
            return Err(EINVAL);
        }
        match &r.mem {
            Memory::Odp(o) => Ok((r.iova, o.clone())),
            _ => Err(EINVAL),
        }
    }

    /// The region with `key`'s index, its rights and the generation of
    /// regions, read together under the table's lock; `mark`: as a use by
    /// the datapath, which `Regions::remove` either sees, or the region was
    /// gone before. (A removal moves the generation on after the region
    /// left the table, so a generation read here is older than the
    /// region's removal.)
    fn get(&self, key: u32, mark: bool) -> Option<(Arc<Region>, Rights, u64)> {
        let mut rights = Rights { pd: 0, access: 0 };
        let mut generation = 0;
        let r = self.table.get_and(index(key), |r| {
            if mark {
                r.used.store(true, Ordering::Relaxed);
            }
            rights = Rights {
                pd: r.pd.load(Ordering::Relaxed),
                access: r.access.load(Ordering::Relaxed),
            };
            generation = self.generation.load(Ordering::Relaxed);
        })?;
        Some((r, rights, generation))
    }

    /// `rereg_mr` (`flags`: `enum ib_mr_rereg_flags`) of the user region
    /// `key`: moves it to protection domain `pd` and/or gives it access
    /// flags `access`, both at once for every lookup (see [`Region`]).
    /// Refused as rxe refuses it: `ib_umem_check_rereg`'s answer first
    /// (rights to write need pages pinned writable), then `EOPNOTSUPP` for
    /// flags outside `supported`.
    pub(crate) fn rereg(
        &self,
        key: u32,
        flags: u32,
        pd: Option<usize>,
        access: Option<u32>,
        supported: u32,
    ) -> Result {
        let r = self.table.get(index(key)).ok_or(EINVAL)?;
        if r.key != key {
            return Err(EINVAL);
        }
        match &r.mem {
            Memory::User(umem) => umem.check_rereg(flags, access.unwrap_or(0))?,
            Memory::Odp(o) => match &*o.umem.lock() {
                Some(u) => u.check_rereg(flags, access.unwrap_or(0))?,
                None => return Err(EINVAL),
            },
            // Not user regions: rereg_mr never names them.
            _ => return Err(EINVAL),
        }
        if access.is_some_and(|a| a & !supported != 0) {
            return Err(EOPNOTSUPP);
        }
        // (The verb's region holds the index, and ib_core does not let it be
        // deregistered during the call: the entry is still this region.)
        self.table.get_and(index(key), |r| {
            if r.key != key {
                return;
            }
            if let Some(pd) = pd {
                r.pd.store(pd, Ordering::Relaxed);
            }
            if let Some(access) = access {
                r.access.store(access, Ordering::Relaxed);
            }
        });
        // Cached rights are of the registration before.
        self.generation.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// Memory as QP `qpn` of protection domain `pd` may use it, from a run
    /// that may sleep (`may_sleep`: see [`PdMemory::odp`]) or not, with the
    /// QP's `keys`.
    ///
    /// Only inside a QP's run, or elsewhere under the RCU read lock: the
    /// regions `keys` names are only alive for as long as that lasts.
    pub(crate) fn for_qp<'a>(
        &'a self,
        pd: usize,
        qpn: u32,
        may_sleep: bool,
        keys: &'a KeyCache,
    ) -> PdMemory<'a> {
        PdMemory {
            regions: self,
            pd,
            qpn,
            may_sleep,
            keys,
        }
    }
}

/// A region's protection domain and access flags as one lookup saw them.
#[derive(Clone, Copy)]
struct Rights {
    pd: usize,
    access: u32,
}

/// Slots of a [`KeyCache`]: a local key and a remote one, as a requester
/// and a responder of one connection use them.
const KEY_SLOTS: usize = 2;

/// A region as a [`KeyCache`] remembers it.
#[derive(Clone, Copy)]
struct KeyEntry {
    /// The key looked up (its index found the region).
    key: u32,
    /// The generation of regions at the lookup.
    generation: u64,
    /// The rights the lookup read.
    rights: Rights,
    region: RegionPtr,
}

/// A pointer to a region in its device's table.
#[derive(Clone, Copy)]
struct RegionPtr(NonNull<Region>);

// SAFETY: A `RegionPtr` is only dereferenced under the rules of
// `KeyCache`, on whichever CPU the QP runs; `Region` is `Sync`.
unsafe impl Send for RegionPtr {}

/// The regions a QP looked up last, by key.
///
/// # Invariants
///
/// Each entry's region was in its device's table, marked as used by the
/// datapath, when the table's lock gave the entry's generation. So while
/// the device's generation is still that one, the region has not been
/// removed before the current RCU read section began, and
/// [`Regions::remove`] waits for the section to end before it drops it.
/// Regions with on-demand paging are never entered (their users leave the
/// RCU read section).
pub(crate) struct KeyCache {
    slots: [Cell<Option<KeyEntry>>; KEY_SLOTS],
    /// The slot the next new key takes.
    next: Cell<usize>,
}

impl KeyCache {
    /// An empty cache.
    pub(crate) const fn new() -> Self {
        Self {
            slots: [const { Cell::new(None) }; KEY_SLOTS],
            next: Cell::new(0),
        }
    }

    fn find(&self, key: u32) -> Option<KeyEntry> {
        self.slots
            .iter()
            .filter_map(Cell::get)
            .find(|e| e.key == key)
    }

    fn enter(&self, e: KeyEntry) {
        let slot = match self
            .slots
            .iter()
            .position(|s| s.get().is_some_and(|o| o.key == e.key))
        {
            Some(slot) => slot,
            None => {
                let slot = self.next.get() % KEY_SLOTS;
                self.next.set(slot.wrapping_add(1));
                slot
            }
        };
        if let Some(s) = self.slots.get(slot) {
            s.set(Some(e));
        }
    }
}

/// A region a lookup found: borrowed from a [`KeyCache`] for the run's
/// RCU read section, or held by a reference.
enum Held<'a> {
    Cached(&'a Region),
    Owned(Arc<Region>),
}

impl Deref for Held<'_> {
    type Target = Region;

    fn deref(&self) -> &Region {
        match self {
            Held::Cached(r) => r,
            Held::Owned(r) => r,
        }
    }
}

/// The view of one QP: keys of other PDs do not resolve, and type 2
/// windows bound to other QPs grant nothing.
pub(crate) struct PdMemory<'a> {
    regions: &'a Regions,
    pd: usize,
    qpn: u32,
    /// The run is a QP's work item holding one RCU read lock and nothing
    /// else that forbids sleeping.
    may_sleep: bool,
    /// The QP's regions looked up last.
    keys: &'a KeyCache,
}

/// Do `IB_ACCESS_*` flags grant `access`?
fn flags_allow(flags: u32, access: Access) -> bool {
    let need = match access {
        Access::LocalRead => return true,
        Access::LocalWrite => b::ib_access_flags_IB_ACCESS_LOCAL_WRITE,
        Access::RemoteRead => b::ib_access_flags_IB_ACCESS_REMOTE_READ,
        Access::RemoteWrite => b::ib_access_flags_IB_ACCESS_REMOTE_WRITE,
        Access::RemoteAtomic => b::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC,
        // Every placement asked for (none: nothing to grant, as in rxe).
        Access::Flush(p) => {
            let bit = |on: bool, flag: u32| if on { flag } else { 0 };
            let need = bit(p.global, b::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL)
                | bit(p.persistent, b::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT);
            return flags & need == need;
        }
    };
    flags & need != 0
}

/// Where checked bytes of a region lie.
enum Target<'a> {
    /// Pinned user pages, at an offset into the region.
    User(&'a Umem, usize),
    /// A kernel virtual address.
    Kernel(usize),
    /// A fast-registration mapping, at an offset into it.
    Fast(&'a Pages, u64),
    /// On-demand paged user memory, at an offset into the region.
    Odp(&'a OdpMemory, usize),
}

impl PdMemory<'_> {
    /// The region with `key`'s index, if it belongs to this PD.
    fn lookup(&self, key: u32) -> Result<Held<'_>, MemError> {
        self.lookup_rights(key).map(|(r, _)| r)
    }

    /// As [`Self::lookup`], with the access flags the region had then:
    /// from the QP's [`KeyCache`] while no region left the table or changed
    /// its rights since the cache saw it, from the table otherwise.
    fn lookup_rights(&self, key: u32) -> Result<(Held<'_>, u32), MemError> {
        if let Some(e) = self.keys.find(key) {
            if e.generation == self.regions.generation.load(Ordering::Relaxed) {
                if e.rights.pd != self.pd {
                    return Err(MemError::BadKey);
                }
                // SAFETY: The generation is the entry's, so the region is
                // alive for this RCU read section (the invariant of
                // `KeyCache`), in which `PdMemory` is used (see
                // `Regions::for_qp`); the borrow ends with `self`'s.
                let r = unsafe { e.region.0.as_ref() };
                return Ok((Held::Cached(r), e.rights.access));
            }
        }
        let (r, rights, generation) = self.regions.get(key, true).ok_or(MemError::BadKey)?;
        if rights.pd != self.pd {
            return Err(MemError::BadKey);
        }
        if !matches!(r.mem, Memory::Odp(_)) {
            // INVARIANT: `get` marked the region and read `generation`
            // under the table's lock, the region in the table.
            self.keys.enter(KeyEntry {
                key,
                generation,
                rights,
                region: RegionPtr(NonNull::from(&*r)),
            });
        }
        Ok((Held::Owned(r), rights.access))
    }

    /// Runs `f` on where `[va, va + len)` of the region named by `key`
    /// lies, after every check.
    fn with<R>(
        &self,
        key: u32,
        va: u64,
        len: u64,
        access: Access,
        f: impl FnOnce(Target<'_>) -> Result<R, MemError>,
    ) -> Result<R, MemError> {
        let (r, flags) = self.lookup_rights(key)?;
        if let Memory::Fast(map) = &r.mem {
            // The datapath's copy runs under the lock, so a registration
            // or invalidation happens before or after it, not during.
            let map = map.lock();
            let off = map.offset(key, va, len, access)?;
            return f(Target::Fast(&map.live, off));
        }
        if let Memory::Window(w) = &r.mem {
            // The window's rights and range, then its region's memory (whose
            // own remote rights do not matter: the bind checked them).
            let grant = w.lock().grant(key, va, len, access, self.qpn)?;
            let mr = self.lookup(grant.mr_key)?;
            if mr.key != grant.mr_key {
                return Err(MemError::BadKey);
            }
            return Self::within(&mr, va, len, f);
        }
        if r.key != key {
            return Err(MemError::BadKey);
        }
        let allowed = match r.mem {
            Memory::KernelDma => matches!(access, Access::LocalRead | Access::LocalWrite),
            _ => flags_allow(flags, access),
        };
        if !allowed {
            return Err(MemError::AccessDenied);
        }
        Self::within(&r, va, len, f)
    }

    /// Runs `f` on where `[va, va + len)` of region `r` (user or kernel
    /// DMA memory) lies, if it lies in the region.
    fn within<R>(
        r: &Region,
        va: u64,
        len: u64,
        f: impl FnOnce(Target<'_>) -> Result<R, MemError>,
    ) -> Result<R, MemError> {
        let off = va.checked_sub(r.iova).ok_or(MemError::OutOfRange)?;
        let end = off.checked_add(len).ok_or(MemError::OutOfRange)?;
        match &r.mem {
            Memory::User(umem) => {
                if end > umem.len() as u64 {
                    return Err(MemError::OutOfRange);
                }
                let off = usize::try_from(off).map_err(|_| MemError::OutOfRange)?;
                f(Target::User(umem, off))
            }
            Memory::Odp(o) => {
                if end > o.len {
                    return Err(MemError::OutOfRange);
                }
                let off = usize::try_from(off).map_err(|_| MemError::OutOfRange)?;
                f(Target::Odp(o, off))
            }
            Memory::KernelDma => f(Target::Kernel(
                usize::try_from(off).map_err(|_| MemError::OutOfRange)?,
            )),
            // Served by `with`.
            Memory::Fast(_) | Memory::Window(_) => Err(MemError::BadKey),
        }
    }

    /// The bytes the region or window `key` names (`[iova, iova + len)`),
    /// as a FLUSH of the whole region (`IB_FLUSH_MR`) takes them.
    fn extent(&self, key: u32) -> Result<(u64, u64), MemError> {
        let r = self.lookup(key)?;
        match &r.mem {
            Memory::User(umem) => Ok((r.iova, umem.len() as u64)),
            Memory::Odp(o) => Ok((r.iova, o.len)),
            Memory::Fast(map) => {
                let map = map.lock();
                Ok((map.live.iova, map.live.len))
            }
            Memory::Window(w) => {
                let b = w.lock().bound.ok_or(MemError::BadKey)?;
                Ok((b.addr, b.len))
            }
            // No remote access reaches it: `with` refuses it.
            Memory::KernelDma => Ok((0, 0)),
        }
    }

    /// Runs `f` on the pages of ODP memory `o`, which may fault them in:
    /// only from a run that may sleep, which leaves the RCU read section
    /// meanwhile (the caller holds the region by its reference count, and
    /// [`Regions::remove`] takes the pages under the mutex `f` runs under).
    fn odp<R>(
        &self,
        o: &OdpMemory,
        f: impl FnOnce(&UmemOdp) -> Result<R, MemError>,
    ) -> Result<R, MemError> {
        if !self.may_sleep {
            // Not reached: runs of user QPs only start in a context that
            // cannot sleep while no ODP region exists (see `Regions::insert`).
            return Err(MemError::AccessDenied);
        }
        // SAFETY: `may_sleep` promises that the task holds exactly the RCU
        // read lock of its run, and nothing else that forbids sleeping. The
        // run keeps nothing across this call that only the RCU read section
        // keeps alive: the regions it uses are held by reference count, and
        // an ODP region's pages go with `Regions::remove` under the mutex.
        unsafe { kernel::bindings::rcu_read_unlock() };
        let ret = o.with(f);
        // SAFETY: Re-enters the run's RCU read section left above.
        unsafe { kernel::bindings::rcu_read_lock() };
        ret
    }

    /// Invalidates the fast-registration region or type 2 window named by
    /// `key`.
    fn invalidate_key(&self, key: u32) -> Result<(), MemError> {
        match &self.lookup(key)?.mem {
            Memory::Fast(map) => map.lock().invalidate(key),
            Memory::Window(w) => w.lock().invalidate(key),
            _ => Err(MemError::BadKey),
        }
    }

    /// Executes a bind work request of this QP.
    fn bind(&self, req: &MwBind) -> Result<(), MemError> {
        let mw = self.lookup(req.mw_key)?;
        let Memory::Window(w) = &mw.mem else {
            return Err(MemError::BadKey);
        };
        // The region is looked up before the window's lock is taken (the
        // table's lock is not taken under it).
        let binding = if req.len == 0 {
            None
        } else {
            Some(self.binding(req)?)
        };
        let mut window = w.lock();
        window.bind(req, binding, self.qpn)
    }

    /// What a bind of `[addr, addr + len)` of region `mr_key` would grant,
    /// after the checks rxe makes: a user region of this PD that allows
    /// windows, remote rights only (no zero-based windows), remote writes
    /// and atomics only into a locally writable region, and the range
    /// inside the region.
    fn binding(&self, req: &MwBind) -> Result<Binding, MemError> {
        use b::*;
        let (mr, flags) = self.lookup_rights(req.mr_key)?;
        let Memory::User(umem) = &mr.mem else {
            return Err(MemError::AccessDenied);
        };
        let remote = ib_access_flags_IB_ACCESS_REMOTE_READ
            | ib_access_flags_IB_ACCESS_REMOTE_WRITE
            | ib_access_flags_IB_ACCESS_REMOTE_ATOMIC;
        let writes =
            ib_access_flags_IB_ACCESS_REMOTE_WRITE | ib_access_flags_IB_ACCESS_REMOTE_ATOMIC;
        if mr.key != req.mr_key
            || flags & ib_access_flags_IB_ACCESS_MW_BIND == 0
            || req.access & !remote != 0
            || (req.access & writes != 0 && flags & ib_access_flags_IB_ACCESS_LOCAL_WRITE == 0)
        {
            return Err(MemError::AccessDenied);
        }
        let off = req.addr.checked_sub(mr.iova).ok_or(MemError::OutOfRange)?;
        if off
            .checked_add(req.len)
            .is_none_or(|end| end > umem.len() as u64)
        {
            return Err(MemError::OutOfRange);
        }
        Ok(Binding {
            mr_key: req.mr_key,
            addr: req.addr,
            len: req.len,
            access: req.access,
            qpn: None,
        })
    }

    /// Calls `f(receiver, page, offset in page, length)` for every page piece of
    /// `[va, va + len)` of the memory `key` names, after the checks of
    /// [`MemoryAccess::read`], if that memory is pinned user pages (a user
    /// region, or a window onto one): `start` makes the receiver of the
    /// pieces, called only then, and `f` takes each piece, the pages pinned
    /// during the call. `None` if it is other memory, a check fails,
    /// `start` fails or `f` refuses a piece. (Kernel memory, nvme-rdma's
    /// fast-registration regions among it, thus costs a key lookup here and
    /// no allocation.)
    pub(crate) fn user_pages<S>(
        &self,
        key: u32,
        va: u64,
        len: u32,
        access: Access,
        start: impl FnOnce() -> Option<S>,
        mut f: impl FnMut(&mut S, NonNull<b::page>, usize, usize) -> bool,
    ) -> Option<S> {
        self.with(key, va, len.into(), access, |at| match at {
            Target::User(umem, off) => {
                let Some(mut to) = start() else {
                    return Ok(None);
                };
                let taken = umem
                    .for_each_page(off, len as usize, |page, at, n| f(&mut to, page, at, n))
                    .map_err(|_| MemError::OutOfRange)?;
                Ok(taken.then_some(to))
            }
            _ => Ok(None),
        })
        .ok()
        .flatten()
    }

    /// [`MemoryAccess::write`] of bytes that may be a slice or memory
    /// others may write (a fragment of a local packet sent by reference,
    /// perhaps of the very region it is copied into: every copy here is a
    /// `memmove`).
    pub(crate) fn write_from(
        &mut self,
        key: u32,
        va: u64,
        data: SharedBytes<'_>,
        access: Access,
    ) -> Result<(), MemError> {
        if data.is_empty() {
            return Ok(());
        }
        self.with(key, va, data.len() as u64, access, |at| match at {
            Target::User(umem, off) => umem.write(off, data).map_err(|_| MemError::OutOfRange),
            Target::Odp(o, off) => self.odp(o, |u| {
                u.access(off, data.len(), true)
                    .and_then(|m| m.write(off, data))
                    .map_err(|_| MemError::OutOfRange)
            }),
            Target::Kernel(addr) => {
                // SAFETY: As in `read`; `data` is readable for the call and
                // may overlap the target (a READ onto its own source), which
                // `copy`, a `memmove`, allows.
                unsafe { core::ptr::copy(data.as_ptr(), addr as *mut u8, data.len()) };
                Ok(())
            }
            Target::Fast(pages, off) => pages.for_each(off, data.len(), |addr, at, n| {
                let src = data.sub(at, n).ok_or(MemError::OutOfRange)?;
                // SAFETY: As for `Target::Kernel`, of `n` bytes of `data`.
                unsafe { core::ptr::copy(src.as_ptr(), addr as *mut u8, n) };
                Ok(())
            }),
        })
    }
}

impl MemoryAccess for PdMemory<'_> {
    fn check(&mut self, key: u32, va: u64, len: u32, access: Access) -> Result<(), MemError> {
        if len == 0 {
            return Ok(());
        }
        self.with(key, va, len.into(), access, |_| Ok(()))
    }

    fn read(&mut self, key: u32, va: u64, buf: &mut [u8], access: Access) -> Result<(), MemError> {
        if buf.is_empty() {
            return Ok(());
        }
        self.with(key, va, buf.len() as u64, access, |at| match at {
            Target::User(umem, off) => umem.read(off, buf).map_err(|_| MemError::OutOfRange),
            Target::Odp(o, off) => self.odp(o, |u| {
                u.access(off, buf.len(), false)
                    .and_then(|m| m.read(off, buf))
                    .map_err(|_| MemError::OutOfRange)
            }),
            Target::Kernel(addr) => {
                // SAFETY: Kernel addresses are only reachable through keys
                // of in-kernel callers' PDs (user space cannot get one: see
                // `Memory`), and the verbs contract makes those callers name
                // memory they own and keep until the request completes.
                unsafe {
                    core::ptr::copy_nonoverlapping(addr as *const u8, buf.as_mut_ptr(), buf.len())
                };
                Ok(())
            }
            Target::Fast(pages, off) => pages.for_each(off, buf.len(), |addr, at, n| {
                let dst = buf
                    .get_mut(at..at.saturating_add(n))
                    .ok_or(MemError::OutOfRange)?;
                // SAFETY: As for `Target::Kernel`: the pages are the ones
                // the region's in-kernel owner mapped for this registration.
                unsafe { core::ptr::copy_nonoverlapping(addr as *const u8, dst.as_mut_ptr(), n) };
                Ok(())
            }),
        })
    }

    fn write(&mut self, key: u32, va: u64, data: &[u8], access: Access) -> Result<(), MemError> {
        self.write_from(key, va, data.into(), access)
    }

    fn atomic(&mut self, rkey: u32, va: u64, op: AtomicOp) -> Result<u64, MemError> {
        if va % 8 != 0 {
            return Err(MemError::Misaligned);
        }
        self.with(rkey, va, 8, op.access(), |at| match at {
            Target::User(umem, off) => umem
                .atomic_u64(off, |old| op.apply(old))
                .map_err(|_| MemError::Misaligned),
            Target::Odp(o, off) => self.odp(o, |u| {
                let m = u.access(off, 8, true).map_err(|_| MemError::OutOfRange)?;
                m.atomic_u64(off, |old| op.apply(old))
                    .map_err(|_| MemError::Misaligned)
            }),
            // No remote key reaches kernel memory but a fast registration's,
            // and rrxe offers atomics on user memory only.
            Target::Kernel(_) | Target::Fast(..) => Err(MemError::AccessDenied),
        })
    }

    fn flush(
        &mut self,
        rkey: u32,
        range: Option<(u64, u32)>,
        placement: Placement,
    ) -> Result<(), MemError> {
        let (va, len) = match range {
            Some((va, len)) => (va, u64::from(len)),
            None => self.extent(rkey)?,
        };
        // The key, its FLUSH rights and (for a range) the bounds; checked
        // even for zero bytes, as rxe does.
        self.with(rkey, va, len, Access::Flush(placement), |_| Ok(()))?;
        // Persistence needs persistent memory, which rrxe never has: rxe
        // refuses IB_ACCESS_FLUSH_PERSISTENT on other pages, so only a
        // region registered from an in-kernel caller's REG_MR can grant
        // it, and rxe fails a flush of it that is not empty.
        if placement.persistent && len != 0 {
            return Err(MemError::AccessDenied);
        }
        // Global visibility: every write the responder made before (this
        // QP's earlier requests, executed in order on this CPU) is visible
        // to every other CPU and device before the response is sent.
        core::sync::atomic::fence(Ordering::SeqCst);
        Ok(())
    }

    fn invalidate(&mut self, rkey: u32) -> Result<(), MemError> {
        self.invalidate_key(rkey)
    }

    fn local(&mut self, op: LocalOp) -> Result<(), MemError> {
        match op {
            LocalOp::RegMr { key, access } => match &self.lookup(key)?.mem {
                Memory::Fast(map) => map.lock().register(key, access),
                _ => Err(MemError::BadKey),
            },
            LocalOp::Invalidate { key } => self.invalidate_key(key),
            LocalOp::BindMw(req) => self.bind(&req),
        }
    }
}
