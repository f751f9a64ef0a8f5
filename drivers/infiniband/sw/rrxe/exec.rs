// SPDX-License-Identifier: GPL-2.0

//! How a QP runs: every QP is served on its own, by whichever context
//! kicks it first, never by a global worker.
//!
//! A QP is kicked when user space rings its send doorbell (process
//! context), when a packet for it arrives (the UDP receive softirq, or
//! another QP of the device delivering locally), when its timer fires
//! (which only queues its work item) and from its work item (budget left
//! over, kernel posts). The kicking context runs the QP at once if no other
//! context is running it; otherwise it leaves a request and the running
//! context serves the QP once more before it lets go ([`Serial`]). A run is
//! bounded (packets received, packets sent), and so is the number of runs
//! one context serves in a row; what is left goes to the QP's work item, so
//! one busy QP, or two local QPs that keep kicking each other, cannot hold a
//! CPU.
//!
//! A QP has two work items. One runs on the module's per-CPU workqueue
//! ([`QUEUE`]): a run left for later follows on the CPU that left it. The
//! other runs on an unbound workqueue of its own ([`STREAMS`]), for a QP that
//! another QP of the device streams full-size packets to, and such a run
//! nests no other QP's run: what it sends to the sending end (ACKs) kicks
//! that QP's work item. So the two ends of a transfer run in two workers,
//! side by side, where one context used to run both in turn. Both items only
//! kick the QP, so whichever runs it, the runs stay serialized.
//!
//! A run holds the RCU read lock: memory regions are only deregistered
//! after a grace period (see [`crate::mem`]). It never sleeps, but for one
//! case: while on-demand paging regions exist on the device, user QPs run
//! only from their work items, in process context, where a run may fault
//! pages of such a region in (leaving the RCU read section for that access
//! alone). A kick from any other context hands the QP to its work item.
//!
//! Timers have the resolution of the IB spec's (a high-resolution timer,
//! armed only while requests are outstanding, at the engine's next deadline
//! in microseconds). The timer is armed lazily: a later deadline leaves an
//! earlier expiry in place, and an expiry that comes too early finds the
//! engine with nothing to do and re-arms it.

use crate::{
    datapath::Datapath,
    device::RrxeDev,
    mem::{KeyCache, PdMemory},
    net::skb::{SkBuff, SkbQueue},
    queue::{KernelSide, Queue},
    rc::Conn,
    rdma::{
        bindings as b,
        driver::{CqRef, SrqRef},
        qp::QpEvents,
    },
    stats::Counter,
    sync::serial::Serial,
    ud::Ud,
};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use kernel::{
    impl_has_hr_timer, impl_has_work, new_spinlock_irq, new_work,
    prelude::*,
    sync::{Arc, ArcBorrow, SpinLockIrq},
    time::{
        hrtimer::{
            ArcHrTimerHandle, HrTimer, HrTimerCallback, HrTimerCallbackContext, HrTimerPointer,
            HrTimerRestart, RelativeSoftMode,
        },
        Delta, Monotonic,
    },
    workqueue::{Work, WorkItem},
};

/// A QP run nested in another's (by local delivery) runs inline only this
/// deep; deeper ones are left to the work item.
const MAX_INLINE_DEPTH: u8 = 1;

/// The depth that makes a kick go to the QP's stream work item whatever
/// the caller's (see [`crate::xmit::Path::send`]).
pub(crate) const DEFER: u8 = u8::MAX;

/// A context that runs a QP serves this many runs in a row at most; runs
/// asked for after that go to the QP's work item. Two QPs of one device
/// that keep feeding each other (each run delivers packets that ask the
/// other for a run) would otherwise hold the CPU, and the RCU read lock, for
/// as long as their traffic lasts.
const MAX_RUNS: u32 = 4;

/// Packets a QP keeps waiting for its run at most (its backlog), counted as
/// the packets of the path MTU they stand for: a local segment
/// ([`crate::xmit::Path::segments`]) counts as the PSNs it carries, so the
/// bound holds as much data as it did before segments. Without a
/// bound, a run held up (by an ODP page fault on slow storage, say) would
/// let a peer, or a local process sending datagrams, fill memory with
/// packets for it. At the bound a packet from the network is dropped, as a
/// NIC drops what its receive buffer cannot hold (RC recovers; UD may lose
/// it); a connected QP of the same device is refused it instead, and sends
/// it again after a pause, as for a full transmit queue (see
/// [`crate::xmit::Path::send`]). Both count as `rcvd_backlog_full`. The
/// runs of a QP that is not held take up to 64 packets each, and leave far
/// fewer waiting: the heaviest local stream tried (16 READs of 4 MiB in
/// flight) peaked at 3,840.
pub(crate) const RX_BACKLOG_MAX: usize = 4096;

/// The module's per-CPU workqueue for QP runs left for later (a budget
/// spent, the timer, a verb, a run that must be able to sleep): such a run
/// follows on the CPU that left it, where the QP's state is warm.
pub(crate) static QUEUE: crate::sync::global::Global<crate::sync::workqueue::OwnedQueue> =
    crate::sync::global::Global::new();

/// The module's unbound workqueue for the runs of a QP that another QP of
/// the device sends a stream of full-size packets ([`DEFER`]), and for what
/// those runs leave. Its workers are not [`QUEUE`]'s, so the worker that
/// runs the sender does not take the receiver's runs in between its own,
/// and the scheduler gives the two their own CPUs. With one unbound queue
/// for both, and the sender run nested in the receiver's run by each ACK,
/// one worker ran both ends of an `ib_write_bw` while the guest's other CPU
/// only polled completions (`Documentation/benchmarks.rst`).
pub(crate) static STREAMS: crate::sync::global::Global<crate::sync::workqueue::OwnedQueue> =
    crate::sync::global::Global::new();

/// The work item of a QP's runs on [`QUEUE`].
const WORK: u64 = 0;

/// The work item of a QP's runs on [`STREAMS`].
const STREAM_WORK: u64 = 1;

/// Who runs a QP.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Runner {
    /// The context that kicked it (a system call, a softirq, another QP's
    /// run).
    Caller,
    /// Its work item on [`QUEUE`].
    Work,
    /// Its work item on [`STREAMS`].
    Stream,
}

/// Monotonic time in microseconds.
pub(crate) fn now_us() -> u64 {
    // SAFETY: `ktime_get` has no preconditions.
    let ns = unsafe { kernel::bindings::ktime_get() };
    u64::try_from(ns).unwrap_or(0) / 1000
}

/// Attributes a QP keeps between `modify_qp` calls, as `query_qp` reports them.
pub(crate) struct Attrs(pub(crate) b::ib_qp_attr);

// SAFETY: The pointers inside `ib_qp_attr` (GID attributes, xmit slave) are
// cleared before storing and never dereferenced; the rest is plain data.
unsafe impl Send for Attrs {}

/// Everything of a QP that exists until `destroy_qp`, reached only by the
/// context that runs the QP (or a verb that waited its turn).
pub(crate) struct Live {
    /// Attributes set by `modify_qp`.
    pub(crate) attrs: Attrs,
    /// Send queue.
    pub(crate) sq: Queue,
    /// Receive queue; `None` when receives come from an SRQ.
    pub(crate) rq: Option<Queue>,
    /// The SRQ, if any.
    pub(crate) srq: Option<SrqRef<RrxeDev>>,
    /// Completion queues.
    pub(crate) send_cq: CqRef<RrxeDev>,
    /// Completion queues.
    pub(crate) recv_cq: CqRef<RrxeDev>,
    /// Source GID of the address vector (`IB_QP_AV`).
    pub(crate) sgid: [u8; 16],
    /// Interface of that GID (0: the device's own).
    pub(crate) sgid_ifindex: i32,
    /// Destination MAC of the address vector (ib_core resolved it).
    pub(crate) dmac: [u8; 6],
    /// RC and UC QPs from RTR on.
    pub(crate) conn: Option<Conn>,
    /// UD and GSI QPs from RTR on.
    pub(crate) ud: Option<Ud>,
    /// Where the QP's asynchronous events go.
    pub(crate) events: QpEvents,
    /// The armed timer, cancelled when dropped.
    timer: Option<ArcHrTimerHandle<QpCore>>,
}

impl Live {
    /// A QP's state before its first `modify_qp`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        attrs: Attrs,
        sq: Queue,
        rq: Option<Queue>,
        srq: Option<SrqRef<RrxeDev>>,
        send_cq: CqRef<RrxeDev>,
        recv_cq: CqRef<RrxeDev>,
        events: QpEvents,
    ) -> Self {
        Self {
            attrs,
            sq,
            rq,
            srq,
            send_cq,
            recv_cq,
            sgid: [0; 16],
            sgid_ifindex: 0,
            dmac: [0; 6],
            conn: None,
            ud: None,
            events,
            timer: None,
        }
    }

    /// The QP state (`enum ib_qp_state`).
    pub(crate) fn state(&self) -> u32 {
        self.attrs.0.qp_state
    }
}

/// What a run found left to do.
pub(crate) struct Outcome {
    /// When the engine's next timer expires (µs), `u64::MAX` for never.
    pub(crate) deadline: u64,
    /// A budget ran out with work left: run again soon.
    pub(crate) more: bool,
}

impl Outcome {
    /// Nothing pending.
    pub(crate) const IDLE: Self = Self {
        deadline: u64::MAX,
        more: false,
    };
}

/// The part of a QP shared by its verb object, its table entry, its timer
/// and its work item.
#[pin_data]
pub(crate) struct QpCore {
    /// What never changes.
    pub(crate) info: QpInfo,
    /// The device's datapath.
    pub(crate) dp: Arc<Datapath>,
    /// The QP state (`enum ib_qp_state`), mirrored for lock-free checks.
    pub(crate) state: AtomicU32,
    /// The timer expired: the next run fires the engine's timers.
    timer_due: AtomicBool,
    /// The deadline (µs) the timer is armed for, `u64::MAX` for none.
    armed_at: AtomicU64,
    /// The current run is a work item's, which may sleep.
    in_work: AtomicBool,
    /// Packets received for the QP, not yet taken by a run; each holds the
    /// PSNs it stands for in its control buffer word.
    #[pin]
    rx: SkbQueue,
    /// The PSNs the packets in `rx` stand for (added before a packet goes
    /// in, taken off after it comes out, so never less than that sum).
    rx_psns: AtomicUsize,
    #[pin]
    timer: HrTimer<QpCore>,
    #[pin]
    work: Work<QpCore, WORK>,
    #[pin]
    stream_work: Work<QpCore, STREAM_WORK>,
    /// Kernel QPs: the producer sides of the send and receive rings, used by
    /// `post_send`/`post_recv` in any context.
    #[pin]
    pub(crate) ksq: SpinLockIrq<Option<KernelSide>>,
    #[pin]
    pub(crate) krq: SpinLockIrq<Option<KernelSide>>,
    /// The rest, for the context that runs the QP.
    pub(crate) exec: Serial<Option<Live>>,
}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for QpCore {
        mode: RelativeSoftMode<Monotonic>,
        field: self.timer
    }
}

impl_has_work! {
    impl HasWork<Self, WORK> for QpCore { self.work }
    impl HasWork<Self, STREAM_WORK> for QpCore { self.stream_work }
}

/// The attributes of a QP that never change.
pub(crate) struct QpInfo {
    /// QP number.
    pub(crate) qpn: u32,
    /// `enum ib_qp_type`.
    pub(crate) qp_type: u32,
    /// Every send is signaled.
    pub(crate) sq_sig_all: bool,
    /// Protection domain (for comparison only).
    pub(crate) pd: usize,
    /// Address of the `struct ib_qp`.
    pub(crate) ibqp: usize,
    /// An in-kernel caller's QP.
    pub(crate) kernel: bool,
    /// Most SGEs per send and receive request.
    pub(crate) max_sge: (u32, u32),
}

impl QpCore {
    /// Memory by key as this QP may use it (its PD's regions and windows),
    /// with the regions it used last in `keys`: only in the QP's run (see
    /// [`Regions::for_qp`](crate::mem::Regions::for_qp)).
    pub(crate) fn memory<'a>(&'a self, keys: &'a KeyCache) -> PdMemory<'a> {
        let may_sleep = self.in_work.load(Ordering::Relaxed);
        self.dp
            .regions
            .for_qp(self.info.pd, self.info.qpn, may_sleep, keys)
    }

    /// A QP in the RESET state.
    pub(crate) fn new(
        info: QpInfo,
        dp: Arc<Datapath>,
        live: Live,
        ksq: Option<KernelSide>,
        krq: Option<KernelSide>,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(QpCore {
                info,
                dp,
                state: AtomicU32::new(b::ib_qp_state_IB_QPS_RESET),
                timer_due: AtomicBool::new(false),
                armed_at: AtomicU64::new(u64::MAX),
                in_work: AtomicBool::new(false),
                rx <- SkbQueue::new(),
                rx_psns: AtomicUsize::new(0),
                timer <- HrTimer::new(),
                work <- new_work!("rrxe::QpCore::work"),
                stream_work <- new_work!("rrxe::QpCore::stream_work"),
                ksq <- new_spinlock_irq!(ksq),
                krq <- new_spinlock_irq!(krq),
                exec: Serial::new(Some(live)),
            }),
            GFP_KERNEL,
        )
    }

    /// Whether the QP is a UD or GSI QP.
    pub(crate) fn is_ud(&self) -> bool {
        self.info.qp_type == b::ib_qp_type_IB_QPT_UD
            || self.info.qp_type == b::ib_qp_type_IB_QPT_GSI
    }

    /// Whether the QP is connected (RC or UC): [`crate::rc`] runs it.
    pub(crate) fn is_connected(&self) -> bool {
        self.info.qp_type == b::ib_qp_type_IB_QPT_RC || self.info.qp_type == b::ib_qp_type_IB_QPT_UC
    }

    /// The next received packet, if any.
    pub(crate) fn next_packet(&self) -> Option<SkBuff> {
        let skb = self.rx.pop()?;
        self.rx_psns
            .fetch_sub(skb.cb_word() as usize, Ordering::Relaxed);
        Some(skb)
    }

    /// Whether received packets wait.
    pub(crate) fn packets_waiting(&self) -> bool {
        !self.rx.is_empty()
    }

    /// Takes the timer's expiry, if it fired since the last run (read
    /// first: most runs find it clear, and need no atomic exchange).
    pub(crate) fn timer_fired(&self) -> bool {
        self.timer_due.load(Ordering::Acquire) && self.timer_due.swap(false, Ordering::AcqRel)
    }

    /// Queues a received packet (data at its BTH), which stands for `psns`
    /// packets of the path MTU, and runs the QP. If packets standing for
    /// [`RX_BACKLOG_MAX`] wait already, the packet is dropped, and `false`
    /// returned if the sender `may_wait` (then it sends the packet again
    /// later); a run is under way or due then anyway.
    pub(crate) fn receive(
        this: &Arc<Self>,
        mut skb: SkBuff,
        psns: u32,
        depth: u8,
        may_wait: bool,
    ) -> bool {
        // Only the pushers race this snapshot, so the bound holds to within
        // a packet per CPU delivering at once.
        if this.rx_psns.load(Ordering::Relaxed) >= RX_BACKLOG_MAX {
            this.dp.drop_packet(Counter::RcvdBacklogFull);
            return !may_wait;
        }
        let psns = psns.max(1);
        skb.set_cb_word(psns);
        this.rx_psns.fetch_add(psns as usize, Ordering::Relaxed);
        this.rx.push(skb);
        Self::kick(this, depth);
        true
    }

    /// Runs the QP now, in the calling context, unless another context is
    /// running it (which then runs it once more) or this would nest runs
    /// too deep (then its work item runs it).
    pub(crate) fn kick(this: &Arc<Self>, depth: u8) {
        Self::kick_from(this, depth, Runner::Caller)
    }

    /// Whether runs must be able to sleep: a user QP while ODP regions
    /// exist (they may fault pages in).
    fn needs_process_context(&self) -> bool {
        !self.info.kernel && self.dp.regions.has_odp()
    }

    /// [`QpCore::kick`], by `runner`.
    fn kick_from(this: &Arc<Self>, depth: u8, runner: Runner) {
        let _rcu = kernel::sync::rcu::read_lock();
        if runner == Runner::Caller && this.needs_process_context() {
            return Self::kick_later(this);
        }
        let Some(mut owner) = this.exec.enter_or_ask() else {
            return;
        };
        if depth > MAX_INLINE_DEPTH {
            drop(owner);
            return if depth == DEFER {
                Self::kick_stream(this)
            } else {
                Self::kick_later(this)
            };
        }
        for _ in 0..MAX_RUNS {
            // Only the owner reads the mark, in its run.
            this.in_work
                .store(runner != Runner::Caller, Ordering::Relaxed);
            Self::serve(this, &mut owner, depth, runner);
            this.in_work.store(false, Ordering::Relaxed);
            match owner.leave() {
                Ok(()) => return,
                Err(again) => owner = again,
            }
        }
        // Still asked: a work item serves that run, after the workqueue has
        // let others have the CPU.
        drop(owner);
        Self::kick_again(this, runner);
    }

    /// Runs the QP soon: from its stream work item if `runner` is that,
    /// from its work item on [`QUEUE`] otherwise.
    fn kick_again(this: &Arc<Self>, runner: Runner) {
        match runner {
            Runner::Stream => Self::kick_stream(this),
            Runner::Caller | Runner::Work => Self::kick_later(this),
        }
    }

    /// Runs the QP soon, from its stream work item (see [`STREAMS`]).
    fn kick_stream(this: &Arc<Self>) {
        if let Some(q) = STREAMS.get() {
            // Already queued: that run will do.
            let _ = q.enqueue::<_, STREAM_WORK>(this.clone());
        }
    }

    /// Runs the QP soon, from its work item on [`QUEUE`] (in process
    /// context, on this CPU).
    pub(crate) fn kick_later(this: &Arc<Self>) {
        if let Some(q) = QUEUE.get() {
            // Already queued: that run will do.
            let _ = q.enqueue::<_, WORK>(this.clone());
        }
    }

    /// One run of the QP, by `runner`: everything that arrived and
    /// everything posted, within budgets; then the timer. What is left goes
    /// to the stream work item if that runs it, to the other one otherwise.
    fn serve(this: &Arc<Self>, live: &mut Option<Live>, depth: u8, runner: Runner) {
        let Some(live) = live else {
            // Destroyed: nothing takes packets any more.
            while this.next_packet().is_some() {
                this.dp.drop_packet(Counter::RcvdNoQp);
            }
            return;
        };
        let out = if live.state() == b::ib_qp_state_IB_QPS_ERR {
            crate::qp::serve_error(this, live);
            Outcome::IDLE
        } else if this.is_ud() {
            crate::ud::serve(this, live, depth)
        } else {
            crate::rc::serve(this, live, depth)
        };
        if out.more {
            Self::kick_again(this, runner);
        }
        Self::arm(this, live, out.deadline);
    }

    /// Arms the timer for `deadline` (µs) unless it already expires no
    /// later.
    fn arm(this: &Arc<Self>, live: &mut Live, deadline: u64) {
        if deadline == u64::MAX || this.armed_at.load(Ordering::Acquire) <= deadline {
            return;
        }
        // Cancels the earlier setting (never from the timer's own callback,
        // which does not run the QP).
        live.timer = None;
        let us = deadline.saturating_sub(now_us());
        let delta = Delta::from_micros(i64::try_from(us).unwrap_or(i64::MAX));
        this.armed_at.store(deadline, Ordering::Release);
        live.timer = Some(this.clone().start(delta));
    }

    /// Runs `f` on the QP's run state once no context runs the QP (a verb
    /// that must not race a run: `modify_qp`, `query_qp`); the runs other
    /// contexts asked for meanwhile follow, as any kick's do.
    pub(crate) fn with_live<R>(this: &Arc<Self>, f: impl FnOnce(&mut Option<Live>) -> R) -> R {
        let (r, asked) = this.exec.with(f);
        if asked {
            Self::kick(this, 0);
        }
        r
    }

    /// Stops the timer and forgets the QP's run state (destroy).
    pub(crate) fn shut_down(&self) -> Option<Live> {
        let mut owner = self.exec.enter_wait();
        let live = owner.take();
        drop(owner);
        // Dropping `live` cancels the timer and releases the rings.
        while self.next_packet().is_some() {}
        live
    }
}

impl WorkItem<WORK> for QpCore {
    type Pointer = Arc<QpCore>;

    fn run(this: Arc<QpCore>) {
        QpCore::kick_from(&this, 0, Runner::Work);
    }
}

impl WorkItem<STREAM_WORK> for QpCore {
    type Pointer = Arc<QpCore>;

    fn run(this: Arc<QpCore>) {
        // As deep as inline runs go: the packets it sends another QP of the
        // device (ACKs to the sender of the stream) kick that QP's work
        // item rather than run it here, so the sending end runs apart.
        QpCore::kick_from(&this, MAX_INLINE_DEPTH, Runner::Stream);
    }
}

impl HrTimerCallback for QpCore {
    type Pointer<'a> = Arc<QpCore>;

    fn run(
        this: ArcBorrow<'_, QpCore>,
        _ctx: HrTimerCallbackContext<'_, QpCore>,
    ) -> HrTimerRestart {
        this.armed_at.store(u64::MAX, Ordering::Release);
        this.timer_due.store(true, Ordering::Release);
        QpCore::kick_later(&this.into());
        HrTimerRestart::NoRestart
    }
}
