// SPDX-License-Identifier: GPL-2.0

//! The operations a driver provides to ib_core (`struct ib_device_ops`).
//!
//! A driver implements [`Driver`]; [`OpsTable`] builds the C ops table from it,
//! filling only the callbacks the driver implements (`#[vtable]`), declaring
//! the object sizes ib_core allocates, and translating every raw pointer into
//! the safe types of this crate before the driver sees it.
//!
//! Object lifetimes follow ib_core's rules: an object's data is initialised by
//! its create callback and dropped by its destroy callback; ib_core refuses to
//! destroy an object that another still uses (a PD with MRs, a CQ with QPs).

use super::{
    attr::{DeviceAttr, PortAttr, PortImmutable},
    bindings as b,
    device::Device,
    mmap::UserBuf,
    object::Object,
    qp::{AhAttr, QpAttr, QpInit, SrqInit},
    stats::{self, CounterDesc},
    udata::Udata,
    wr::{RecvWr, SendWr},
};
use core::marker::PhantomData;
use kernel::{error::from_result, prelude::*};

/// A user context (`struct ib_ucontext`) with driver data `T::Ucontext`.
pub type Ucontext<T> = Object<b::ib_ucontext, <T as Driver>::Ucontext>;
/// A protection domain (`struct ib_pd`) with driver data `T::Pd`.
pub type Pd<T> = Object<b::ib_pd, <T as Driver>::Pd>;
/// A completion queue (`struct ib_cq`) with driver data `T::Cq`.
pub type Cq<T> = Object<b::ib_cq, <T as Driver>::Cq>;
/// A queue pair (`struct ib_qp`) with driver data `T::Qp`.
pub type Qp<T> = Object<b::ib_qp, <T as Driver>::Qp>;
/// A shared receive queue (`struct ib_srq`) with driver data `T::Srq`.
pub type Srq<T> = Object<b::ib_srq, <T as Driver>::Srq>;
/// An address handle (`struct ib_ah`) with driver data `T::Ah`.
pub type Ah<T> = Object<b::ib_ah, <T as Driver>::Ah>;
/// A memory region (`struct ib_mr`) with driver data `T::Mr`.
pub type Mr<T> = Object<b::ib_mr, <T as Driver>::Mr>;
/// A memory window (`struct ib_mw`) with driver data `T::Mw`.
pub type Mw<T> = Object<b::ib_mw, <T as Driver>::Mw>;

impl<D> Object<b::ib_pd, D> {
    /// The device the protection domain belongs to.
    ///
    /// A module holds one driver, so a PD with data `T::Pd` is one of `T`'s.
    pub fn device<T: Driver<Pd = D>>(&self) -> &Device<T> {
        // SAFETY: ib_core sets `device` before calling the driver and the
        // device outlives its objects.
        unsafe { Device::from_raw((*self.as_raw()).device) }
    }
}

impl<D> Object<b::ib_cq, D> {
    /// Signals a completion event to whoever armed the CQ (a completion
    /// channel in user space, or a kernel consumer).
    pub fn completion_event(&self) {
        let cq = self.as_raw();
        // SAFETY: ib_core sets `comp_handler` and `cq_context` when it creates
        // the CQ and they stay valid while the CQ exists.
        unsafe {
            if let Some(handler) = (*cq).comp_handler {
                handler(cq, (*cq).cq_context);
            }
        }
    }
}

/// Delivers an asynchronous event to the handler ib_core installed for an object.
///
/// # Safety
///
/// `handler`/`context` must be the object's `event_handler` and its context,
/// valid while the object lives; `event` must describe that object.
unsafe fn dispatch(
    handler: Option<unsafe extern "C" fn(*mut b::ib_event, *mut kernel::ffi::c_void)>,
    context: *mut kernel::ffi::c_void,
    event: &mut b::ib_event,
) {
    if let Some(handler) = handler {
        // SAFETY: Guaranteed by the caller.
        unsafe { handler(event, context) };
    }
}

impl<D> Object<b::ib_cq, D> {
    /// Raises `IB_EVENT_CQ_ERR`: the CQ overran and completions were lost.
    pub fn error_event(&self) {
        let cq = self.as_raw();
        // SAFETY: The CQ is alive (`&self`); ib_core set its device, handler
        // and context when creating it.
        unsafe {
            let mut ev = b::ib_event {
                device: (*cq).device,
                event: b::ib_event_type_IB_EVENT_CQ_ERR,
                ..Default::default()
            };
            ev.element.cq = cq;
            dispatch((*cq).event_handler, (*cq).cq_context, &mut ev);
        }
    }
}

impl<D> Object<b::ib_srq, D> {
    /// Raises `IB_EVENT_SRQ_LIMIT_REACHED`.
    pub fn limit_event(&self) {
        let srq = self.as_raw();
        // SAFETY: The SRQ is alive (`&self`); ib_core set its device, handler
        // and context when creating it.
        unsafe {
            let mut ev = b::ib_event {
                device: (*srq).device,
                event: b::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED,
                ..Default::default()
            };
            ev.element.srq = srq;
            dispatch((*srq).event_handler, (*srq).srq_context, &mut ev);
        }
    }
}

/// Raises an asynchronous event (`enum ib_event_type`) on the QP at `qp`.
///
/// # Safety
///
/// `qp` must point to a live `struct ib_qp` whose device, handler and
/// context ib_core has set.
pub(crate) unsafe fn qp_event(qp: *mut b::ib_qp, event: b::ib_event_type) {
    // SAFETY: Guaranteed by the caller.
    unsafe {
        let mut ev = b::ib_event {
            device: (*qp).device,
            event,
            ..Default::default()
        };
        ev.element.qp = qp;
        dispatch((*qp).event_handler, (*qp).qp_context, &mut ev);
    }
}

impl<D> Object<b::ib_qp, D> {
    /// Raises an asynchronous QP event (`enum ib_event_type`), e.g.
    /// `IB_EVENT_QP_FATAL` or `IB_EVENT_COMM_EST`.
    pub fn event(&self, event: b::ib_event_type) {
        // SAFETY: The QP is alive (`&self`); ib_core set its device, handler
        // and context when creating it.
        unsafe { qp_event(self.as_raw(), event) };
    }
}

/// A completion queue that a queue pair completes into.
///
/// # Invariants
///
/// Points to a live `Cq<T>`: ib_core holds a use count on a QP's CQs from
/// before `create_qp` until after `destroy_qp` returns. A `CqRef` is only
/// handed to the driver's `create_qp`, is not `Clone`, and must be dropped
/// before that QP's `destroy_qp` returns (at the latest with the QP's data).
pub struct CqRef<T: Driver>(core::ptr::NonNull<Cq<T>>);

// SAFETY: `Cq<T>`'s driver data is `Send + Sync`; ib_core synchronises the core part.
unsafe impl<T: Driver> Send for CqRef<T> {}
// SAFETY: See `Send` above.
unsafe impl<T: Driver> Sync for CqRef<T> {}

impl<T: Driver> core::ops::Deref for CqRef<T> {
    type Target = Cq<T>;
    fn deref(&self) -> &Cq<T> {
        // SAFETY: By the invariant the CQ is alive.
        unsafe { self.0.as_ref() }
    }
}

impl<T: Driver> CqRef<T> {
    /// # Safety
    ///
    /// `cq` must be a live CQ of driver `T` that stays alive as the invariant requires.
    pub(crate) unsafe fn new(cq: *mut b::ib_cq) -> Option<Self> {
        core::ptr::NonNull::new(cq.cast::<Cq<T>>()).map(Self)
    }
}

/// The shared receive queue a queue pair takes its receives from.
///
/// # Invariants
///
/// Points to a live `Srq<T>`: ib_core holds a use count on a QP's SRQ from
/// before `create_qp` until after `destroy_qp` returns, and refuses to
/// destroy an SRQ in use. An `SrqRef` is only handed to the driver's
/// `create_qp`, is not `Clone`, and must be dropped before that QP's
/// `destroy_qp` returns.
pub struct SrqRef<T: Driver>(core::ptr::NonNull<Srq<T>>);

// SAFETY: `Srq<T>`'s driver data is `Send + Sync`; ib_core synchronises the core part.
unsafe impl<T: Driver> Send for SrqRef<T> {}
// SAFETY: See `Send` above.
unsafe impl<T: Driver> Sync for SrqRef<T> {}

impl<T: Driver> core::ops::Deref for SrqRef<T> {
    type Target = Srq<T>;
    fn deref(&self) -> &Srq<T> {
        // SAFETY: By the invariant the SRQ is alive.
        unsafe { self.0.as_ref() }
    }
}

impl<T: Driver> SrqRef<T> {
    /// # Safety
    ///
    /// `srq` must be NULL or a live SRQ of driver `T` that stays alive as the
    /// invariant requires.
    pub(crate) unsafe fn new(srq: *mut b::ib_srq) -> Option<Self> {
        core::ptr::NonNull::new(srq.cast::<Srq<T>>()).map(Self)
    }
}

/// What a driver's `reg_user_mr` hands back.
pub struct NewMr<M> {
    /// Driver data of the region.
    pub data: M,
    /// Local key.
    pub lkey: u32,
    /// Remote key.
    pub rkey: u32,
}

/// What `ibv_rereg_mr` asks of a user memory region (the arguments of
/// `ib_device_ops.rereg_user_mr` but the region, PD and udata), as ib_core
/// passes them after its own checks.
pub struct ReregMr {
    /// Which changes are asked (`enum ib_mr_rereg_flags`), never none.
    pub flags: u32,
    /// New user address of the memory (`IB_MR_REREG_TRANS`).
    pub start: u64,
    /// New length in bytes (`IB_MR_REREG_TRANS`).
    pub length: u64,
    /// New address of byte 0 as peers name it (`IB_MR_REREG_TRANS`).
    pub iova: u64,
    /// New `IB_ACCESS_*` flags (`IB_MR_REREG_ACCESS`), already checked by
    /// `ib_check_mr_access` against the device's capabilities.
    pub access: u32,
}

/// An RDMA driver: its device data type, object types and verbs.
#[vtable]
pub trait Driver: Sized + Send + Sync + 'static {
    /// Driver data of a user context.
    type Ucontext: Send + Sync;
    /// Driver data of a protection domain.
    type Pd: Send + Sync;
    /// Driver data of a completion queue.
    type Cq: Send + Sync;
    /// Driver data of a queue pair.
    type Qp: Send + Sync;
    /// Driver data of a shared receive queue.
    type Srq: Send + Sync;
    /// Driver data of an address handle.
    type Ah: Send + Sync;
    /// Driver data of a memory region.
    type Mr: Send + Sync;
    /// Driver data of a memory window.
    type Mw: Send + Sync;

    /// Driver id user space matches providers by (`enum rdma_driver_id`).
    const DRIVER_ID: u32;
    /// uverbs ABI version of the driver's udata structures.
    const UVERBS_ABI_VERSION: u32;
    /// Extra legacy uverbs commands the driver serves (`IB_USER_VERBS_CMD_*` bits).
    const UVERBS_CMD_MASK: u64 = 0;

    /// Fills the device capabilities.
    fn query_device(dev: &Device<Self>, attr: &mut DeviceAttr<'_>, udata: &Udata) -> Result;
    /// Fills the attributes of `port`.
    fn query_port(dev: &Device<Self>, port: u32, attr: &mut PortAttr<'_>) -> Result;
    /// Fills the immutable data of `port`.
    fn get_port_immutable(dev: &Device<Self>, port: u32, imm: &mut PortImmutable<'_>) -> Result;
    /// Returns the P_Key at `index` of `port`.
    fn query_pkey(dev: &Device<Self>, port: u32, index: u16) -> Result<u16>;
    /// Returns whether `port` is Ethernet (RoCE) rather than InfiniBand.
    fn link_layer_is_ethernet(dev: &Device<Self>, port: u32) -> bool;
    /// Creates the driver data of a user context.
    fn alloc_ucontext(dev: &Device<Self>, udata: &mut Udata) -> Result<Self::Ucontext>;
    /// Creates the driver data of a protection domain.
    fn alloc_pd(dev: &Device<Self>, udata: &mut Udata) -> Result<Self::Pd>;

    /// Creates a completion queue of at least `attr.cqe` entries; sets `*cqe`
    /// to the real capacity.
    fn create_cq(
        dev: &Device<Self>,
        attr: &b::ib_cq_init_attr,
        cqe: &mut u32,
        udata: &mut Udata,
    ) -> Result<impl PinInit<Self::Cq, Error>>;
    /// Checks that a completion queue may go; its data is dropped afterwards.
    fn destroy_cq(cq: &Cq<Self>) -> Result;
    /// Resizes a completion queue to at least `cqe` entries; returns the capacity.
    fn resize_cq(cq: &Cq<Self>, cqe: u32, udata: &mut Udata) -> Result<u32>;
    /// Arms completion notification; returns whether completions were missed.
    fn req_notify_cq(cq: &Cq<Self>, flags: u32) -> Result<bool>;

    /// Creates a queue pair; returns its data and QP number. `send_cq` and
    /// `recv_cq` are the CQs it completes into, `srq` the shared receive
    /// queue it receives from, if any.
    fn create_qp(
        pd: &Pd<Self>,
        init: &mut QpInit<'_>,
        send_cq: CqRef<Self>,
        recv_cq: CqRef<Self>,
        srq: Option<SrqRef<Self>>,
        udata: &mut Udata,
    ) -> Result<(impl PinInit<Self::Qp, Error>, u32)>;
    /// Applies the attributes selected by `mask` (a state transition).
    fn modify_qp(qp: &Qp<Self>, attr: &QpAttr<'_>, mask: u32, udata: &mut Udata) -> Result;
    /// Reports a queue pair's attributes.
    fn query_qp(qp: &Qp<Self>, attr: &mut b::ib_qp_attr, init: &mut b::ib_qp_init_attr) -> Result;
    /// Checks that a queue pair may go; its data is dropped afterwards.
    fn destroy_qp(qp: &Qp<Self>) -> Result;
    /// User space rang the send doorbell: work requests are waiting in the
    /// send queue it shares with the driver. Also called once after the
    /// requests of an in-kernel caller's list were posted.
    fn post_send_doorbell(_qp: &Qp<Self>) -> Result {
        Err(EOPNOTSUPP)
    }
    /// Queues one send work request of an in-kernel caller. May be called in
    /// atomic context (callers hold spinlocks with interrupts disabled).
    fn post_send(_qp: &Qp<Self>, _wr: &SendWr<'_, Self>) -> Result {
        Err(EOPNOTSUPP)
    }
    /// Queues one receive work request of an in-kernel caller. May be called
    /// in atomic context.
    fn post_recv(_qp: &Qp<Self>, _wr: &RecvWr<'_>) -> Result {
        Err(EOPNOTSUPP)
    }
    /// Takes up to `wc.len()` completions of a kernel CQ; returns how many.
    /// May be called in atomic context.
    fn poll_cq(_cq: &Cq<Self>, _wc: &mut [b::ib_wc]) -> Result<usize> {
        Err(EOPNOTSUPP)
    }
    /// Makes the DMA memory region of a kernel PD: its local key names all
    /// of kernel memory by virtual address (ib_core uses it as the PD's
    /// `local_dma_lkey`).
    fn get_dma_mr(_pd: &Pd<Self>, _access: u32) -> Result<NewMr<Self::Mr>> {
        Err(EOPNOTSUPP)
    }

    /// Allocates a fast-registration memory region (`IB_MR_TYPE_MEM_REG`)
    /// of an in-kernel caller that maps up to `max_num_sg` pages. It names
    /// no memory until the caller maps pages into it
    /// ([`Driver::map_mr_page`]) and posts an `IB_WR_REG_MR` request.
    fn alloc_mr(_pd: &Pd<Self>, _mr_type: u32, _max_num_sg: u32) -> Result<NewMr<Self::Mr>> {
        Err(EOPNOTSUPP)
    }
    /// `ib_map_mr_sg` starts on a region made by [`Driver::alloc_mr`]: the
    /// pages of its previous mapping are forgotten.
    fn map_mr_begin(_mr: &Mr<Self>) -> Result {
        Err(EOPNOTSUPP)
    }
    /// The next page of the mapping (an address `ib_dma_map_*` gave the
    /// caller, aligned to the region's page size but for the first one's
    /// offset, which [`Driver::map_mr_end`]'s `iova` carries).
    fn map_mr_page(_mr: &Mr<Self>, _addr: u64) -> Result {
        Err(EOPNOTSUPP)
    }
    /// The mapping is complete: it covers `len` bytes from `iova`, in pages
    /// of `page_size` bytes.
    fn map_mr_end(_mr: &Mr<Self>, _iova: u64, _len: u64, _page_size: u32) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Attaches UD QP `qp` to the multicast group `gid` (ib_core checked
    /// that it is a UD QP and `gid` a multicast address).
    fn attach_mcast(_qp: &Qp<Self>, _gid: [u8; 16]) -> Result {
        Err(EOPNOTSUPP)
    }
    /// Detaches `qp` from the multicast group `gid`.
    fn detach_mcast(_qp: &Qp<Self>, _gid: [u8; 16]) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Allocates a memory window of type `mw_type` (`IB_MW_TYPE_1`/`_2`)
    /// in `pd`; returns its data and its first remote key. It grants
    /// nothing until bound.
    fn alloc_mw(_pd: &Pd<Self>, _mw_type: u32, _udata: &mut Udata) -> Result<(Self::Mw, u32)> {
        Err(EOPNOTSUPP)
    }

    /// Creates a shared receive queue (updates the capacities in `init`).
    fn create_srq(
        pd: &Pd<Self>,
        init: &mut SrqInit<'_>,
        udata: &mut Udata,
    ) -> Result<impl PinInit<Self::Srq, Error>>;
    /// Queues a receive request of an in-kernel caller on an SRQ.
    fn post_srq_recv(_srq: &Srq<Self>, _wr: &RecvWr<'_>) -> Result {
        Err(EOPNOTSUPP)
    }
    /// Modifies the attributes selected by `mask` (`IB_SRQ_MAX_WR`, `IB_SRQ_LIMIT`).
    fn modify_srq(srq: &Srq<Self>, attr: &b::ib_srq_attr, mask: u32, udata: &mut Udata) -> Result;
    /// Reports a shared receive queue's attributes.
    fn query_srq(srq: &Srq<Self>, attr: &mut b::ib_srq_attr) -> Result;

    /// Creates an address handle from `attr` (dmac already resolved by ib_core).
    fn create_ah(pd: &Pd<Self>, attr: &AhAttr<'_>, udata: &mut Udata) -> Result<Self::Ah>;

    /// Registers user memory `[start, start + length)` seen by peers at `iova`.
    fn reg_user_mr(
        pd: &Pd<Self>,
        start: u64,
        length: u64,
        iova: u64,
        access: u32,
        udata: &mut Udata,
    ) -> Result<NewMr<Self::Mr>>;

    /// `ibv_rereg_mr`: changes the user region `mr` in place as `req` asks,
    /// its keys unchanged. `pd` is the PD the region moves to with
    /// `IB_MR_REREG_PD` (ib_core records it in `mr` after success), its own
    /// PD otherwise. A driver that would need a new region for the change
    /// refuses it: this abstraction does not hand ib_core a new one.
    fn rereg_user_mr(_mr: &Mr<Self>, _req: &ReregMr, _pd: &Pd<Self>, _udata: &mut Udata) -> Result {
        Err(EOPNOTSUPP)
    }

    /// `ibv_advise_mr`: acts on `advice` (`enum ib_uverbs_advise_mr_advice`)
    /// for the ranges `sges` name by local key in `pd`; `flags` holds
    /// `IB_UVERBS_ADVISE_MR_FLAG_FLUSH` for a synchronous call.
    fn advise_mr(_pd: &Pd<Self>, _advice: u32, _flags: u32, _sges: &[b::ib_sge]) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Names of each port's hardware counters, in the order
    /// [`Driver::get_hw_stats`] fills them.
    const HW_COUNTERS: &'static [CounterDesc] = &[];
    /// Fills the current values of port `port`'s hardware counters; `out` has
    /// one element per entry of [`Driver::HW_COUNTERS`].
    fn get_hw_stats(_dev: &Device<Self>, _port: u32, _out: &mut [u64]) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Called once the device is registered, before ib_core's clients see it.
    fn enable(_dev: &Device<Self>) -> Result {
        Ok(())
    }
    /// Called once the device is unregistered, right before its data is dropped.
    fn release(_dev: &Device<Self>) {}
}

/// Builds `struct ib_device_ops` for driver `T`.
pub(crate) struct OpsTable<T>(PhantomData<T>);

macro_rules! op {
    ($has:expr, $f:expr) => {
        if $has {
            Some($f)
        } else {
            None
        }
    };
}

impl<T: Driver> OpsTable<T> {
    /// Installs `T`'s operations into a device that is not registered yet.
    pub(crate) fn install(dev: &mut b::ib_device) {
        let ops = b::ib_device_ops {
            driver_id: T::DRIVER_ID,
            uverbs_abi_ver: T::UVERBS_ABI_VERSION,
            query_device: op!(T::HAS_QUERY_DEVICE, Self::query_device),
            query_port: op!(T::HAS_QUERY_PORT, Self::query_port),
            get_port_immutable: op!(T::HAS_GET_PORT_IMMUTABLE, Self::get_port_immutable),
            query_pkey: op!(T::HAS_QUERY_PKEY, Self::query_pkey),
            get_link_layer: op!(T::HAS_LINK_LAYER_IS_ETHERNET, Self::get_link_layer),
            alloc_ucontext: op!(T::HAS_ALLOC_UCONTEXT, Self::alloc_ucontext),
            dealloc_ucontext: op!(T::HAS_ALLOC_UCONTEXT, Self::dealloc_ucontext),
            // Lets ib_core tear down user objects when the device goes away
            // while processes still hold it open (they get
            // IB_EVENT_DEVICE_FATAL and errors): every driver resource is
            // released through the objects' destroy callbacks, and ib_core
            // zaps the user mappings, so there is nothing extra to do.
            disassociate_ucontext: Some(Self::disassociate_ucontext),
            mmap: Some(Self::mmap),
            mmap_free: Some(Self::mmap_free),
            alloc_pd: op!(T::HAS_ALLOC_PD, Self::alloc_pd),
            dealloc_pd: op!(T::HAS_ALLOC_PD, Self::dealloc_pd),
            create_cq: op!(T::HAS_CREATE_CQ, Self::create_cq),
            destroy_cq: op!(T::HAS_CREATE_CQ, Self::destroy_cq),
            resize_user_cq: op!(T::HAS_RESIZE_CQ, Self::resize_cq),
            req_notify_cq: op!(T::HAS_REQ_NOTIFY_CQ, Self::req_notify_cq),
            create_qp: op!(T::HAS_CREATE_QP, Self::create_qp),
            modify_qp: op!(T::HAS_MODIFY_QP, Self::modify_qp),
            query_qp: op!(T::HAS_QUERY_QP, Self::query_qp),
            destroy_qp: op!(T::HAS_CREATE_QP, Self::destroy_qp),
            post_send: op!(
                T::HAS_POST_SEND_DOORBELL || T::HAS_POST_SEND,
                Self::post_send
            ),
            post_recv: op!(T::HAS_POST_RECV, Self::post_recv),
            poll_cq: op!(T::HAS_POLL_CQ, Self::poll_cq),
            get_dma_mr: op!(T::HAS_GET_DMA_MR, Self::get_dma_mr),
            create_srq: op!(T::HAS_CREATE_SRQ, Self::create_srq),
            modify_srq: op!(T::HAS_MODIFY_SRQ, Self::modify_srq),
            query_srq: op!(T::HAS_QUERY_SRQ, Self::query_srq),
            destroy_srq: op!(T::HAS_CREATE_SRQ, Self::destroy_srq),
            post_srq_recv: op!(T::HAS_POST_SRQ_RECV, Self::post_srq_recv),
            create_ah: op!(T::HAS_CREATE_AH, Self::create_ah),
            create_user_ah: op!(T::HAS_CREATE_AH, Self::create_ah),
            destroy_ah: op!(T::HAS_CREATE_AH, Self::destroy_ah),
            reg_user_mr: op!(T::HAS_REG_USER_MR, Self::reg_user_mr),
            alloc_mr: op!(T::HAS_ALLOC_MR, Self::alloc_mr),
            alloc_mw: op!(T::HAS_ALLOC_MW, Self::alloc_mw),
            attach_mcast: op!(T::HAS_ATTACH_MCAST, Self::attach_mcast),
            detach_mcast: op!(T::HAS_ATTACH_MCAST, Self::detach_mcast),
            dealloc_mw: op!(T::HAS_ALLOC_MW, Self::dealloc_mw),
            map_mr_sg: op!(T::HAS_ALLOC_MR, Self::map_mr_sg),
            dereg_mr: op!(T::HAS_REG_USER_MR, Self::dereg_mr),
            rereg_user_mr: op!(T::HAS_REREG_USER_MR, Self::rereg_user_mr),
            advise_mr: op!(T::HAS_ADVISE_MR, Self::advise_mr),
            alloc_hw_port_stats: op!(T::HAS_GET_HW_STATS, Self::alloc_hw_port_stats),
            get_hw_stats: op!(T::HAS_GET_HW_STATS, Self::get_hw_stats),
            enable_driver: Some(Self::enable_driver),
            dealloc_driver: Some(Self::dealloc_driver),
            size_ib_ucontext: Ucontext::<T>::SIZE,
            size_ib_pd: Pd::<T>::SIZE,
            size_ib_cq: Cq::<T>::SIZE,
            size_ib_qp: Qp::<T>::SIZE,
            size_ib_srq: Srq::<T>::SIZE,
            size_ib_ah: Ah::<T>::SIZE,
            size_ib_mw: Mw::<T>::SIZE,
            ..Default::default()
        };
        // SAFETY: `dev` is a valid device; `ib_set_device_ops` copies the
        // non-NULL entries of `ops`.
        unsafe { b::ib_set_device_ops(dev, &ops) };
        dev.uverbs_cmd_mask |= T::UVERBS_CMD_MASK;
    }

    /// # Safety
    ///
    /// `ib` must be a registered (or registering) device of driver `T`.
    unsafe fn dev<'a>(ib: *mut b::ib_device) -> &'a Device<T> {
        // SAFETY: ib_core only calls a device's ops while the device is alive.
        unsafe { Device::from_raw(ib) }
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `query_device` callback of a device of driver `T`.
    unsafe extern "C" fn query_device(
        ib: *mut b::ib_device,
        attr: *mut b::ib_device_attr,
        udata: *mut b::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device, a valid attribute buffer
            // and a NULL or valid udata for the duration of the call.
            let (dev, attr, udata) = unsafe { (Self::dev(ib), &mut *attr, Udata::from_raw(udata)) };
            T::query_device(dev, &mut DeviceAttr(attr), &udata)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `query_port` callback of a device of driver `T`.
    unsafe extern "C" fn query_port(
        ib: *mut b::ib_device,
        port: u32,
        attr: *mut b::ib_port_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device and a valid, zeroed buffer.
            let (dev, attr) = unsafe { (Self::dev(ib), &mut *attr) };
            T::query_port(dev, port, &mut PortAttr(attr))?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `get_port_immutable` callback of a device of driver `T`.
    unsafe extern "C" fn get_port_immutable(
        ib: *mut b::ib_device,
        port: u32,
        imm: *mut b::ib_port_immutable,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device and a valid buffer.
            let (dev, imm) = unsafe { (Self::dev(ib), &mut *imm) };
            T::get_port_immutable(dev, port, &mut PortImmutable(imm))?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `query_pkey` callback of a device of driver `T`.
    unsafe extern "C" fn query_pkey(
        ib: *mut b::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a live device.
            let val = T::query_pkey(unsafe { Self::dev(ib) }, port, index)?;
            // SAFETY: ib_core passes a valid output location.
            unsafe { pkey.write(val) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `get_link_layer` callback of a device of driver `T`.
    unsafe extern "C" fn get_link_layer(ib: *mut b::ib_device, port: u32) -> b::rdma_link_layer {
        // SAFETY: ib_core passes a live device.
        if T::link_layer_is_ethernet(unsafe { Self::dev(ib) }, port) {
            b::rdma_link_layer_IB_LINK_LAYER_ETHERNET
        } else {
            b::rdma_link_layer_IB_LINK_LAYER_INFINIBAND
        }
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `alloc_ucontext` callback of a device of driver `T`.
    unsafe extern "C" fn alloc_ucontext(
        ctx: *mut b::ib_ucontext,
        udata: *mut b::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a freshly allocated context of
            // `size_ib_ucontext` bytes whose `device` is set, and a valid udata.
            let (dev, mut udata) = unsafe { (Self::dev((*ctx).device), Udata::from_raw(udata)) };
            let data = T::alloc_ucontext(dev, &mut udata)?;
            // SAFETY: `ctx` was allocated with `Ucontext::<T>::SIZE` bytes.
            unsafe { Ucontext::<T>::init_value(ctx, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `dealloc_ucontext` callback of a device of driver `T`.
    unsafe extern "C" fn dealloc_ucontext(ctx: *mut b::ib_ucontext) {
        // SAFETY: `alloc_ucontext` succeeded for `ctx`, and ib_core destroys it once.
        unsafe { Ucontext::<T>::drop_data(ctx) };
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `disassociate_ucontext` callback of a device of driver `T`.
    unsafe extern "C" fn disassociate_ucontext(_ctx: *mut b::ib_ucontext) {}

    /// # Safety
    ///
    /// Only called by ib_core, as the `mmap` callback of a device of driver `T`.
    unsafe extern "C" fn mmap(ctx: *mut b::ib_ucontext, vma: *mut b::vm_area_struct) -> c_int {
        // SAFETY: Forwarded from ib_core's `mmap` callback.
        from_result(|| unsafe { UserBuf::mmap(ctx, vma) }.map(|()| 0))
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `mmap_free` callback of a device of driver `T`.
    unsafe extern "C" fn mmap_free(entry: *mut b::rdma_user_mmap_entry) {
        // SAFETY: Forwarded from ib_core's `mmap_free` callback.
        unsafe { UserBuf::free(entry) };
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `alloc_pd` callback of a device of driver `T`.
    unsafe extern "C" fn alloc_pd(pd: *mut b::ib_pd, udata: *mut b::ib_udata) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a freshly allocated PD whose `device` is
            // set, and a NULL or valid udata.
            let (dev, mut udata) = unsafe { (Self::dev((*pd).device), Udata::from_raw(udata)) };
            let data = T::alloc_pd(dev, &mut udata)?;
            // SAFETY: `pd` was allocated with `Pd::<T>::SIZE` bytes.
            unsafe { Pd::<T>::init_value(pd, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `dealloc_pd` callback of a device of driver `T`.
    unsafe extern "C" fn dealloc_pd(pd: *mut b::ib_pd, _udata: *mut b::ib_udata) -> c_int {
        // SAFETY: `alloc_pd` succeeded for `pd`; ib_core checked that no
        // object uses the PD any more and destroys it once.
        unsafe { Pd::<T>::drop_data(pd) };
        0
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `create_cq` callback of a device of driver `T`.
    unsafe extern "C" fn create_cq(
        cq: *mut b::ib_cq,
        attr: *const b::ib_cq_init_attr,
        bundle: *mut b::uverbs_attr_bundle,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a freshly allocated CQ whose `device` is
            // set, valid attributes and a NULL or valid attribute bundle.
            let (dev, attr, mut udata) = unsafe {
                (
                    Self::dev((*cq).device),
                    &*attr,
                    Udata::from_raw(b::rrxe_bundle_udata(bundle)),
                )
            };
            let mut cqe = 0;
            let data = T::create_cq(dev, attr, &mut cqe, &mut udata)?;
            // SAFETY: `cq` was allocated with `Cq::<T>::SIZE` bytes.
            unsafe {
                Cq::<T>::init(cq, data)?;
                (*cq).cqe = cqe as c_int;
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `destroy_cq` callback of a device of driver `T`.
    unsafe extern "C" fn destroy_cq(cq: *mut b::ib_cq, _udata: *mut b::ib_udata) -> c_int {
        from_result(|| {
            // SAFETY: `create_cq` succeeded for `cq`.
            T::destroy_cq(unsafe { Cq::<T>::from_raw(cq) })?;
            // SAFETY: The driver agreed; ib_core frees `cq` after this returns.
            unsafe { Cq::<T>::drop_data(cq) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `resize_user_cq` callback of a device of driver `T`.
    unsafe extern "C" fn resize_cq(
        cq: *mut b::ib_cq,
        cqe: c_uint,
        udata: *mut b::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: `create_cq` succeeded for `cq`; `udata` is NULL or valid.
            let (obj, mut udata) = unsafe { (Cq::<T>::from_raw(cq), Udata::from_raw(udata)) };
            let cqe = T::resize_cq(obj, cqe, &mut udata)?;
            // SAFETY: ib_core serialises resize with other users of `cqe`.
            unsafe { (*cq).cqe = cqe as c_int };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `req_notify_cq` callback of a device of driver `T`.
    unsafe extern "C" fn req_notify_cq(cq: *mut b::ib_cq, flags: b::ib_cq_notify_flags) -> c_int {
        from_result(|| {
            // SAFETY: `create_cq` succeeded for `cq`.
            let missed = T::req_notify_cq(unsafe { Cq::<T>::from_raw(cq) }, flags)?;
            Ok(c_int::from(missed))
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `create_qp` callback of a device of driver `T`.
    unsafe extern "C" fn create_qp(
        qp: *mut b::ib_qp,
        init: *mut b::ib_qp_init_attr,
        udata: *mut b::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a freshly allocated QP whose `pd` is set
            // (and holds references on its PD, CQs and SRQ), valid initial
            // attributes and a NULL or valid udata.
            let (pd, send_cq, recv_cq) = unsafe {
                (
                    Pd::<T>::from_raw((*qp).pd),
                    (*init).send_cq,
                    (*init).recv_cq,
                )
            };
            // SAFETY: ib_core holds use counts on the QP's CQs for its lifetime.
            let (send_cq, recv_cq) = unsafe { (CqRef::new(send_cq), CqRef::new(recv_cq)) };
            let (Some(send_cq), Some(recv_cq)) = (send_cq, recv_cq) else {
                return Err(EINVAL);
            };
            // SAFETY: As above, `init` and `udata` are valid for the call.
            let (mut init, mut udata) = unsafe {
                (
                    QpInit::<'_>::new(&mut *init, qp as usize),
                    Udata::from_raw(udata),
                )
            };
            // SAFETY: ib_core holds a use count on the QP's SRQ (if any) for
            // the QP's lifetime and refuses to destroy an SRQ in use.
            let srq = unsafe { SrqRef::new(init.srq()) };
            let (data, qpn) = T::create_qp(pd, &mut init, send_cq, recv_cq, srq, &mut udata)?;
            // SAFETY: `qp` was allocated with `Qp::<T>::SIZE` bytes.
            unsafe {
                Qp::<T>::init(qp, data)?;
                (*qp).qp_num = qpn;
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `modify_qp` callback of a device of driver `T`.
    unsafe extern "C" fn modify_qp(
        qp: *mut b::ib_qp,
        attr: *mut b::ib_qp_attr,
        mask: c_int,
        udata: *mut b::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: `create_qp` succeeded for `qp`; the other arguments are
            // valid for the call.
            let (obj, attr, mut udata) = unsafe {
                (
                    Qp::<T>::from_raw(qp),
                    QpAttr::new(&*attr),
                    Udata::from_raw(udata),
                )
            };
            T::modify_qp(obj, &attr, mask as u32, &mut udata)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `query_qp` callback of a device of driver `T`.
    unsafe extern "C" fn query_qp(
        qp: *mut b::ib_qp,
        attr: *mut b::ib_qp_attr,
        _mask: c_int,
        init: *mut b::ib_qp_init_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: `create_qp` succeeded for `qp`; ib_core passes valid
            // output buffers.
            let (obj, attr, init) = unsafe { (Qp::<T>::from_raw(qp), &mut *attr, &mut *init) };
            T::query_qp(obj, attr, init)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `destroy_qp` callback of a device of driver `T`.
    unsafe extern "C" fn destroy_qp(qp: *mut b::ib_qp, _udata: *mut b::ib_udata) -> c_int {
        from_result(|| {
            // SAFETY: `create_qp` succeeded for `qp`.
            T::destroy_qp(unsafe { Qp::<T>::from_raw(qp) })?;
            // SAFETY: The driver agreed; ib_core frees `qp` after this returns.
            unsafe { Qp::<T>::drop_data(qp) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `post_send` callback of a device of driver `T`.
    unsafe extern "C" fn post_send(
        qp: *mut b::ib_qp,
        wr: *const b::ib_send_wr,
        bad_wr: *mut *const b::ib_send_wr,
    ) -> c_int {
        // SAFETY: `create_qp` succeeded for `qp`.
        let obj = unsafe { Qp::<T>::from_raw(qp) };
        // SAFETY: The QP is alive; its type never changes.
        let qp_type = unsafe { (*qp).qp_type };
        let ud = qp_type == b::ib_qp_type_IB_QPT_UD || qp_type == b::ib_qp_type_IB_QPT_GSI;
        let mut cur = wr;
        let mut posted = false;
        while !cur.is_null() {
            // SAFETY: ib_core passes a valid list for the duration of the call;
            // on UD/GSI QPs its requests are `ib_ud_wr`s naming AHs of `T`.
            let (req, next) = unsafe { (SendWr::<T>::new(&*cur, ud), (*cur).next.cast_const()) };
            if let Err(e) = T::post_send(obj, &req) {
                if !bad_wr.is_null() {
                    // SAFETY: ib_core passes a valid pointer for the failed request.
                    unsafe { *bad_wr = cur };
                }
                if posted {
                    let _ = T::post_send_doorbell(obj);
                }
                return e.to_errno();
            }
            posted = true;
            cur = next;
        }
        // An empty list is uverbs ringing a user QP's doorbell.
        from_result(|| {
            T::post_send_doorbell(obj)?;
            Ok(0)
        })
    }

    /// Posts each request of ib_core's receive list `wr` with `post`; on an
    /// error, points `bad_wr` at the request that failed.
    ///
    /// # Safety
    ///
    /// `wr` and `bad_wr` must be what ib_core passed to a `post_recv` or
    /// `post_srq_recv` callback.
    unsafe fn post_recv_list(
        wr: *const b::ib_recv_wr,
        bad_wr: *mut *const b::ib_recv_wr,
        mut post: impl FnMut(&RecvWr<'_>) -> Result,
    ) -> c_int {
        let mut cur = wr;
        while !cur.is_null() {
            // SAFETY: ib_core passes a valid list for the duration of the call.
            let (req, next) = unsafe { (RecvWr::new(&*cur), (*cur).next.cast_const()) };
            if let Err(e) = post(&req) {
                if !bad_wr.is_null() {
                    // SAFETY: ib_core passes a valid pointer for the failed request.
                    unsafe { *bad_wr = cur };
                }
                return e.to_errno();
            }
            cur = next;
        }
        0
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `post_recv` callback of a device of driver `T`.
    unsafe extern "C" fn post_recv(
        qp: *mut b::ib_qp,
        wr: *const b::ib_recv_wr,
        bad_wr: *mut *const b::ib_recv_wr,
    ) -> c_int {
        // SAFETY: `create_qp` succeeded for `qp`.
        let obj = unsafe { Qp::<T>::from_raw(qp) };
        // SAFETY: The list and `bad_wr` are ib_core's, for this call.
        unsafe { Self::post_recv_list(wr, bad_wr, |req| T::post_recv(obj, req)) }
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `post_srq_recv` callback of a device of driver `T`.
    unsafe extern "C" fn post_srq_recv(
        srq: *mut b::ib_srq,
        wr: *const b::ib_recv_wr,
        bad_wr: *mut *const b::ib_recv_wr,
    ) -> c_int {
        // SAFETY: `create_srq` succeeded for `srq`.
        let obj = unsafe { Srq::<T>::from_raw(srq) };
        // SAFETY: The list and `bad_wr` are ib_core's, for this call.
        unsafe { Self::post_recv_list(wr, bad_wr, |req| T::post_srq_recv(obj, req)) }
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `poll_cq` callback of a device of driver `T`.
    unsafe extern "C" fn poll_cq(cq: *mut b::ib_cq, num: c_int, wc: *mut b::ib_wc) -> c_int {
        from_result(|| {
            let n = usize::try_from(num).map_err(|_| EINVAL)?;
            if n == 0 || wc.is_null() {
                return Ok(0);
            }
            // SAFETY: `create_cq` succeeded for `cq`; ib_core passes room for
            // `num` completions.
            let (obj, out) = unsafe {
                (
                    Cq::<T>::from_raw(cq),
                    core::slice::from_raw_parts_mut(wc, n),
                )
            };
            let got = T::poll_cq(obj, out)?;
            Ok(got.min(n) as c_int)
        })
    }

    /// What an MR callback returns to ib_core: the region `f` made, or its
    /// error as an error pointer.
    fn mr_ptr(f: impl FnOnce() -> Result<*mut b::ib_mr>) -> *mut b::ib_mr {
        f().unwrap_or_else(|e| e.to_ptr())
    }

    /// The `ib_mr` ib_core gets back for a new region: allocated here (ib_core
    /// does not allocate MRs), with the driver's data and keys.
    fn boxed_mr(new: NewMr<T::Mr>) -> Result<*mut b::ib_mr> {
        let mr = Mr::<T>::new_boxed(new.data)?;
        // SAFETY: `mr` is a fresh, zeroed `ib_mr` that ib_core fills in
        // further after the callback returns.
        unsafe {
            (*mr).lkey = new.lkey;
            (*mr).rkey = new.rkey;
        }
        Ok(mr)
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `get_dma_mr` callback of a device of driver `T`.
    unsafe extern "C" fn get_dma_mr(pd: *mut b::ib_pd, access: c_int) -> *mut b::ib_mr {
        Self::mr_ptr(|| {
            // SAFETY: ib_core passes a live PD.
            let pd = unsafe { Pd::<T>::from_raw(pd) };
            Self::boxed_mr(T::get_dma_mr(pd, access as u32)?)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `alloc_mr` callback of a device of driver `T`.
    unsafe extern "C" fn alloc_mr(
        pd: *mut b::ib_pd,
        mr_type: b::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut b::ib_mr {
        Self::mr_ptr(|| {
            // SAFETY: ib_core passes a live PD.
            let pd = unsafe { Pd::<T>::from_raw(pd) };
            Self::boxed_mr(T::alloc_mr(pd, mr_type, max_num_sg)?)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `map_mr_sg` callback of a device of
    /// driver `T`, for a region `alloc_mr` made.
    unsafe extern "C" fn map_mr_sg(
        mr: *mut b::ib_mr,
        sg: *mut b::scatterlist,
        sg_nents: c_int,
        sg_offset: *mut kernel::ffi::c_uint,
    ) -> c_int {
        // SAFETY: `alloc_mr` made `mr` with `new_boxed`; ib_core keeps it
        // alive for the call.
        let obj = unsafe { Mr::<T>::from_raw(mr) };
        if let Err(e) = T::map_mr_begin(obj) {
            return e.to_errno();
        }
        // SAFETY: `sg` is the caller's DMA-mapped list of `sg_nents`
        // entries, `sg_offset` NULL or valid, and `map_mr_page` is called
        // back with this region only during the call.
        let n = unsafe { b::ib_sg_to_pages(mr, sg, sg_nents, sg_offset, Some(Self::map_mr_page)) };
        if n < 0 {
            return n;
        }
        // SAFETY: `ib_sg_to_pages` set `iova` and `length`; `ib_map_mr_sg`
        // set `page_size` before calling us.
        let (iova, len, page_size) = unsafe { ((*mr).iova, (*mr).length, (*mr).page_size) };
        match T::map_mr_end(obj, iova, len, page_size) {
            Ok(()) => n,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Only called by `ib_sg_to_pages` from [`Self::map_mr_sg`].
    unsafe extern "C" fn map_mr_page(mr: *mut b::ib_mr, addr: u64) -> c_int {
        // SAFETY: As in `map_mr_sg`, which is running.
        let obj = unsafe { Mr::<T>::from_raw(mr) };
        match T::map_mr_page(obj, addr) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `create_srq` callback of a device of driver `T`.
    unsafe extern "C" fn create_srq(
        srq: *mut b::ib_srq,
        init: *mut b::ib_srq_init_attr,
        udata: *mut b::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a freshly allocated SRQ whose `pd` is set,
            // valid initial attributes and a NULL or valid udata.
            let (pd, mut init, mut udata) = unsafe {
                (
                    Pd::<T>::from_raw((*srq).pd),
                    SrqInit::<'_>::new(&mut *init),
                    Udata::from_raw(udata),
                )
            };
            let data = T::create_srq(pd, &mut init, &mut udata)?;
            // SAFETY: `srq` was allocated with `Srq::<T>::SIZE` bytes.
            unsafe { Srq::<T>::init(srq, data)? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `modify_srq` callback of a device of driver `T`.
    unsafe extern "C" fn modify_srq(
        srq: *mut b::ib_srq,
        attr: *mut b::ib_srq_attr,
        mask: b::ib_srq_attr_mask,
        udata: *mut b::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: `create_srq` succeeded for `srq`; the other arguments are
            // valid for the call.
            let (obj, attr, mut udata) =
                unsafe { (Srq::<T>::from_raw(srq), &*attr, Udata::from_raw(udata)) };
            T::modify_srq(obj, attr, mask, &mut udata)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `query_srq` callback of a device of driver `T`.
    unsafe extern "C" fn query_srq(srq: *mut b::ib_srq, attr: *mut b::ib_srq_attr) -> c_int {
        from_result(|| {
            // SAFETY: `create_srq` succeeded for `srq`; `attr` is valid.
            let (obj, attr) = unsafe { (Srq::<T>::from_raw(srq), &mut *attr) };
            T::query_srq(obj, attr)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `destroy_srq` callback of a device of driver `T`.
    unsafe extern "C" fn destroy_srq(srq: *mut b::ib_srq, _udata: *mut b::ib_udata) -> c_int {
        // SAFETY: `create_srq` succeeded; ib_core refuses while QPs use the
        // SRQ and frees it after this returns.
        unsafe { Srq::<T>::drop_data(srq) };
        0
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `attach_mcast` callback of a device of driver `T`.
    unsafe extern "C" fn attach_mcast(qp: *mut b::ib_qp, gid: *mut b::ib_gid, _lid: u16) -> c_int {
        from_result(|| {
            // SAFETY: `create_qp` succeeded for `qp`; `gid` is valid for the
            // call, and `raw` is the plain-bytes view of the union.
            let (obj, gid) = unsafe { (Qp::<T>::from_raw(qp), (*gid).raw) };
            T::attach_mcast(obj, gid)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `detach_mcast` callback of a device of driver `T`.
    unsafe extern "C" fn detach_mcast(qp: *mut b::ib_qp, gid: *mut b::ib_gid, _lid: u16) -> c_int {
        from_result(|| {
            // SAFETY: As in `attach_mcast`.
            let (obj, gid) = unsafe { (Qp::<T>::from_raw(qp), (*gid).raw) };
            T::detach_mcast(obj, gid)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `alloc_mw` callback of a device of driver `T`.
    unsafe extern "C" fn alloc_mw(mw: *mut b::ib_mw, udata: *mut b::ib_udata) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a freshly allocated window whose `pd`
            // and `type` are set, and a NULL or valid udata.
            let (pd, mw_type, mut udata) = unsafe {
                (
                    Pd::<T>::from_raw((*mw).pd),
                    (*mw).type_,
                    Udata::from_raw(udata),
                )
            };
            let (data, rkey) = T::alloc_mw(pd, mw_type, &mut udata)?;
            // SAFETY: `mw` was allocated with `Mw::<T>::SIZE` bytes; ib_core
            // reads the key after the callback.
            unsafe {
                Mw::<T>::init_value(mw, data);
                (*mw).rkey = rkey;
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `dealloc_mw` callback of a device of driver `T`.
    unsafe extern "C" fn dealloc_mw(mw: *mut b::ib_mw) -> c_int {
        // SAFETY: `alloc_mw` succeeded; ib_core frees `mw` after this returns.
        unsafe { Mw::<T>::drop_data(mw) };
        0
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `create_ah`/`create_user_ah` callback of a device of driver `T`.
    unsafe extern "C" fn create_ah(
        ah: *mut b::ib_ah,
        init: *mut b::rdma_ah_init_attr,
        udata: *mut b::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: ib_core passes a freshly allocated AH whose `pd` is set,
            // an init attribute whose `ah_attr` is valid, and a NULL or valid udata.
            let (pd, attr, mut udata) = unsafe {
                (
                    Pd::<T>::from_raw((*ah).pd),
                    &*(*init).ah_attr,
                    Udata::from_raw(udata),
                )
            };
            let data = T::create_ah(pd, &AhAttr::new(attr), &mut udata)?;
            // SAFETY: `ah` was allocated with `Ah::<T>::SIZE` bytes.
            unsafe { Ah::<T>::init_value(ah, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `destroy_ah` callback of a device of driver `T`.
    unsafe extern "C" fn destroy_ah(ah: *mut b::ib_ah, _flags: u32) -> c_int {
        // SAFETY: `create_ah` succeeded; ib_core frees `ah` after this returns.
        unsafe { Ah::<T>::drop_data(ah) };
        0
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `reg_user_mr` callback of a device of driver `T`.
    unsafe extern "C" fn reg_user_mr(
        pd: *mut b::ib_pd,
        start: u64,
        length: u64,
        iova: u64,
        access: c_int,
        dmah: *mut b::ib_dmah,
        udata: *mut b::ib_udata,
    ) -> *mut b::ib_mr {
        Self::mr_ptr(|| {
            if !dmah.is_null() {
                return Err(EOPNOTSUPP);
            }
            // SAFETY: ib_core passes a live PD and a NULL or valid udata.
            let (pd, mut udata) = unsafe { (Pd::<T>::from_raw(pd), Udata::from_raw(udata)) };
            Self::boxed_mr(T::reg_user_mr(
                pd,
                start,
                length,
                iova,
                access as u32,
                &mut udata,
            )?)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `rereg_user_mr` callback of a device
    /// of driver `T`.
    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn rereg_user_mr(
        mr: *mut b::ib_mr,
        flags: c_int,
        start: u64,
        length: u64,
        iova: u64,
        access: c_int,
        pd: *mut b::ib_pd,
        udata: *mut b::ib_udata,
    ) -> *mut b::ib_mr {
        // SAFETY: ib_core passes a user region of this device, which
        // `reg_user_mr` made with `new_boxed` and which ib_core keeps (under
        // its write lock) for the call; a live PD of the same device; and a
        // NULL or valid udata.
        let (obj, pd, mut udata) = unsafe {
            (
                Mr::<T>::from_raw(mr),
                Pd::<T>::from_raw(pd),
                Udata::from_raw(udata),
            )
        };
        let req = ReregMr {
            flags: flags as u32,
            start,
            length,
            iova,
            access: access as u32,
        };
        match T::rereg_user_mr(obj, &req, pd, &mut udata) {
            // NULL: the region changed in place, no new one.
            Ok(()) => core::ptr::null_mut(),
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `advise_mr` callback of a device of driver `T`.
    unsafe extern "C" fn advise_mr(
        pd: *mut b::ib_pd,
        advice: b::ib_uverbs_advise_mr_advice,
        flags: u32,
        sg_list: *mut b::ib_sge,
        num_sge: u32,
        _attrs: *mut b::uverbs_attr_bundle,
    ) -> c_int {
        from_result(|| {
            if sg_list.is_null() {
                return Err(EINVAL);
            }
            let n = usize::try_from(num_sge).map_err(|_| EINVAL)?;
            // SAFETY: ib_core passes a live PD and an array of `num_sge`
            // SGEs it copied from user space and keeps for the call.
            let (pd, sges) = unsafe {
                (
                    Pd::<T>::from_raw(pd),
                    core::slice::from_raw_parts(sg_list.cast_const(), n),
                )
            };
            T::advise_mr(pd, advice, flags, sges)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `dereg_mr` callback of a device of driver `T`.
    unsafe extern "C" fn dereg_mr(mr: *mut b::ib_mr, _udata: *mut b::ib_udata) -> c_int {
        // SAFETY: `reg_user_mr`, `get_dma_mr` or `alloc_mr` made `mr` with `new_boxed`;
        // ib_core drops it once.
        unsafe { Mr::<T>::free_boxed(mr) };
        0
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `alloc_hw_port_stats` callback of a device of driver `T`.
    unsafe extern "C" fn alloc_hw_port_stats(
        _ib: *mut b::ib_device,
        _port: u32,
    ) -> *mut b::rdma_hw_stats {
        let Ok(n) = c_int::try_from(T::HW_COUNTERS.len()) else {
            return core::ptr::null_mut();
        };
        // SAFETY: The descriptor table is static, as ib_core requires (it
        // keeps the pointer until the device is freed); it has `n` entries.
        // The result is NULL or a structure ib_core owns and frees.
        unsafe {
            b::rdma_alloc_hw_stats_struct(
                CounterDesc::table_ptr(T::HW_COUNTERS),
                n,
                b::RDMA_HW_STATS_DEFAULT_LIFESPAN as c_ulong,
            )
        }
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `get_hw_stats` callback of a device of driver `T`.
    unsafe extern "C" fn get_hw_stats(
        ib: *mut b::ib_device,
        stats: *mut b::rdma_hw_stats,
        port: u32,
        _index: c_int,
    ) -> c_int {
        from_result(|| {
            if stats.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: ib_core passes a live device and a structure from
            // `alloc_hw_port_stats`, under its lock.
            let (dev, values) = unsafe { (Self::dev(ib), stats::values(stats)) };
            let n = values.len().min(T::HW_COUNTERS.len());
            let out = values.get_mut(..n).ok_or(EINVAL)?;
            T::get_hw_stats(dev, port, out)?;
            // All counters were updated.
            c_int::try_from(n).map_err(|_| EINVAL)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `enable_driver` callback of a device of driver `T`.
    unsafe extern "C" fn enable_driver(ib: *mut b::ib_device) -> c_int {
        from_result(|| {
            // SAFETY: ib_core calls this on a device being registered.
            T::enable(unsafe { Self::dev(ib) })?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only called by ib_core, as the `dealloc_driver` callback of a device of driver `T`.
    unsafe extern "C" fn dealloc_driver(ib: *mut b::ib_device) {
        // SAFETY: ib_core calls this once, after the last reference is gone (or
        // when registration failed); the data was initialised in `register`.
        unsafe {
            T::release(Self::dev(ib));
            Device::<T>::drop_data(ib);
        }
    }
}
