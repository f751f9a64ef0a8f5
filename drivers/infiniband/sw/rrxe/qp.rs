// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: the send and receive rings librxe writes work requests into,
//! the attributes that `modify_qp` moves through the IB state machine, and,
//! for a connected RC QP, the protocol core's RC engine that the datapath
//! worker drives.
//!
//! The QP's state lives in a [`QpCore`] shared (by `Arc`) between the verb
//! object and the worker. `destroy_qp` empties it under its lock, so once the
//! verb returns the worker can no longer reach the rings, CQs or SRQ.

use crate::{
    cq::complete_or_report,
    datapath::Datapath,
    index::Index,
    params as p,
    path::Path,
    proto::{
        opcode::mask, Access, CompletionSink, Counters, Env, MemoryAccess, NakCode, Packet,
        QpConfig, QpState, RemoteAccess, SendWr, TxSink, WcOpcode, WcStatus, WorkCompletion,
    },
    queue::{KernelSide, Queue, Side},
    rdma::{
        bindings as b,
        driver::{CqRef, SrqRef},
        qp::{modify_is_ok, QpAttr, QpEvents, QpInit},
        udata::Udata,
        wr::{RecvWr as KRecvWr, SendWr as KSendWr},
    },
    staging::Staging,
    stats::Counter,
    uapi::{RECV_WQE_HDR, SEND_WQE_HDR, SGE_SIZE},
    ud::{self, Ud, UdQp},
    wqe, RrxeDev,
};
use core::{
    cell::Cell,
    sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering},
};
use kernel::{
    new_mutex, new_spinlock_irq,
    prelude::*,
    sync::{Arc, Mutex, SpinLockIrq},
};

/// The RC engine of the protocol core: 8 send WQEs in flight, 2 receive
/// WQEs taken ahead from the receive queue, 10 responder resources. The
/// engine is built by value (the core has no allocator), so it is kept small
/// enough to pass through a kernel stack.
type RcEngine = crate::proto::ArrayQp<8, 2, 10>;
/// Initiator depth the engine supports (its responder resources minus two).
const MAX_RD_ATOMIC: u8 = 8;
/// Room for the largest packet: IPv6 + UDP + headers + 4096 bytes + ICRC.
const SCRATCH: usize = 48 + 64 + 4096 + 4;
/// Packets one service call sends at most before letting others run.
const TX_BUDGET: usize = 256;

/// Attributes a QP keeps between `modify_qp` calls, as `query_qp` reports them.
struct Attrs(b::ib_qp_attr);

// SAFETY: The pointers inside `ib_qp_attr` (GID attributes, xmit slave) are
// cleared before storing and never dereferenced; the rest is plain data.
unsafe impl Send for Attrs {}

/// A connected RC QP's engine and where its packets go.
struct Conn {
    rc: KBox<RcEngine>,
    path: Path,
    scratch: KVec<u8>,
    /// Inline data and long SGE lists of the requests in the engine.
    staging: Staging,
    /// The engine's counters as last added to the device's.
    counted: Counters,
}

/// Everything of a QP that exists until `destroy_qp`.
struct Live {
    attrs: Attrs,
    sq: Queue,
    /// `None` when receives come from an SRQ.
    rq: Option<Queue>,
    srq: Option<SrqRef<RrxeDev>>,
    send_cq: CqRef<RrxeDev>,
    recv_cq: CqRef<RrxeDev>,
    /// Source GID of the address vector (`IB_QP_AV`).
    sgid: [u8; 16],
    /// RC QPs from RTR on.
    conn: Option<Conn>,
    /// UD and GSI QPs from RTR on.
    ud: Option<Ud>,
    /// Where the QP's asynchronous events go.
    events: QpEvents,
}

/// The part of a QP the datapath worker shares.
#[pin_data]
pub(crate) struct QpCore {
    qpn: u32,
    qp_type: u32,
    sq_sig_all: bool,
    /// Protection domain, for comparison with memory regions' only.
    pd: usize,
    /// User space rang the send doorbell.
    doorbell: AtomicBool,
    /// When the engine's next timer expires (µs), `u64::MAX` for never.
    deadline: AtomicU64,
    /// The engine has requests in flight (see `doorbell`).
    busy: AtomicBool,
    /// Address of the `struct ib_qp`, for completions of kernel CQs.
    ibqp: usize,
    /// The QP belongs to an in-kernel caller.
    kernel: bool,
    /// The QP state (`enum ib_qp_state`), mirrored for lock-free checks.
    state: AtomicU32,
    /// Most SGEs per send and receive request.
    max_sge: (u32, u32),
    #[pin]
    live: Mutex<Option<Live>>,
    /// Kernel QPs: the producer sides of the send and receive rings, used by
    /// `post_send`/`post_recv` in any context.
    #[pin]
    ksq: SpinLockIrq<Option<KernelSide>>,
    #[pin]
    krq: SpinLockIrq<Option<KernelSide>>,
}

/// Driver data of a queue pair.
#[pin_data]
pub(crate) struct Qp {
    /// Owns the QP number (ib_qp.qp_num) until the QP is destroyed; the GSI
    /// QP is number 1 and owns no index.
    _num: Option<Index>,
    cap: b::ib_qp_cap,
    core: Arc<QpCore>,
    dp: Arc<Datapath>,
}

const STATE: u32 = b::ib_qp_attr_mask_IB_QP_STATE;

fn mask_has(mask: u32, bit: u32) -> bool {
    mask & bit != 0
}

/// Completions of one QP into its CQs.
struct Completions<'a> {
    send_cq: &'a CqRef<RrxeDev>,
    recv_cq: &'a CqRef<RrxeDev>,
    qpn: u32,
    src_qp: u32,
    ibqp: usize,
    /// A completion did not fit: the QP must stop (see `run_engine`).
    overflow: &'a Cell<bool>,
}

impl CompletionSink for Completions<'_> {
    fn send_completion(&mut self, wc: &WorkCompletion) {
        if !complete_or_report(
            self.send_cq,
            &wqe::completion(wc, self.qpn, self.src_qp),
            self.ibqp,
            false,
        ) {
            self.overflow.set(true);
        }
    }

    fn recv_completion(&mut self, wc: &WorkCompletion) {
        if !complete_or_report(
            self.recv_cq,
            &wqe::completion(wc, self.qpn, self.src_qp),
            self.ibqp,
            false,
        ) {
            self.overflow.set(true);
        }
    }
}

/// Packets of one QP out to the network.
struct Tx<'a> {
    path: &'a Path,
    dp: &'a Datapath,
    scratch: &'a mut KVec<u8>,
    len: usize,
}

impl TxSink for Tx<'_> {
    fn buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        let h = self.path.header_len();
        self.len = len;
        self.scratch.get_mut(h..h.checked_add(len)?)
    }

    fn commit(&mut self) {
        let total = self.path.header_len().saturating_add(self.len);
        let Some(pkt) = self.scratch.get_mut(..total) else {
            return;
        };
        // A packet that cannot be built or sent is lost, as on a wire: the
        // protocol retransmits it.
        let _ = self.path.send(self.dp, pkt);
    }
}

/// A flushed completion for `wr_id`.
fn flushed(wr_id: u64, qpn: u32) -> b::ib_uverbs_wc {
    b::ib_uverbs_wc {
        wr_id,
        status: b::ib_wc_status_IB_WC_WR_FLUSH_ERR,
        qp_num: qpn,
        ..Default::default()
    }
}

/// Completes every work request still in the rings with `IB_WC_WR_FLUSH_ERR`,
/// receives into the receive CQ and sends into the send CQ, in order.
fn flush_rings(live: &mut Live, qpn: u32, ibqp: usize) {
    if let Some(rq) = &mut live.rq {
        while let Some(wr_id) = rq.pop_wr_id() {
            complete_or_report(&live.recv_cq, &flushed(wr_id, qpn), ibqp, false);
        }
    }
    while let Some(wr_id) = live.sq.pop_wr_id() {
        complete_or_report(&live.send_cq, &flushed(wr_id, qpn), ibqp, false);
    }
}

/// The remote operations the QP's access flags (`IB_ACCESS_REMOTE_*`) allow.
fn remote_access(flags: i32) -> RemoteAccess {
    let has = |bit: u32| u32::try_from(flags).is_ok_and(|f| f & bit != 0);
    RemoteAccess {
        read: has(b::ib_access_flags_IB_ACCESS_REMOTE_READ),
        write: has(b::ib_access_flags_IB_ACCESS_REMOTE_WRITE),
        atomic: has(b::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC),
    }
}

/// Checks a send request's local buffer (key, protection domain, access,
/// bounds) and length before it enters the engine; the error is the
/// completion status the request then gets.
fn validate_send(mem: &mut dyn MemoryAccess, wr: &SendWr) -> Result<(), WcStatus> {
    if wr.sge.length > p::MAX_MSG_SIZE {
        return Err(WcStatus::LocLenErr);
    }
    if wr.op.is_atomic() && wr.sge.length != 8 {
        return Err(WcStatus::LocLenErr);
    }
    let access = if wr.op.is_read_or_atomic() {
        Access::LocalWrite
    } else {
        Access::LocalRead
    };
    mem.check(wr.sge.lkey, wr.sge.addr, wr.sge.length, access)
        .map_err(|_| WcStatus::LocProtErr)
}

/// ACK timeout in µs for the IB `timeout` code (4.096 µs × 2^code; 0 means
/// infinite, served as a very long timeout).
fn timeout_us(code: u8) -> u64 {
    if code == 0 {
        return 1 << 40;
    }
    (4096u64 << code.min(31)) / 1000
}

/// Takes the next receive WQE from the QP's own ring or its SRQ.
pub(crate) fn take_recv(
    rq: &mut Option<Queue>,
    srq: &Option<SrqRef<RrxeDev>>,
    buf: &mut [u8],
) -> bool {
    if let Some(rq) = rq {
        if rq.peek(buf) {
            rq.advance();
            return true;
        }
        return false;
    }
    let Some(srq) = srq else { return false };
    let (got, limit) = srq.data().take(buf);
    if limit {
        srq.limit_event();
    }
    got
}

impl QpCore {
    /// The engine part of [`QpCore::service`]: returns the next deadline,
    /// whether the engine failed and whether work is left, or `None` if the
    /// QP is not connected.
    fn run_engine(
        &self,
        live: &mut Live,
        dp: &Datapath,
        now: u64,
        pkt: Option<&Packet<'_>>,
    ) -> Option<(u64, bool, bool)> {
        let Live {
            attrs,
            sq,
            rq,
            srq,
            send_cq,
            recv_cq,
            conn,
            ..
        } = live;
        let Conn {
            rc,
            path,
            scratch,
            staging,
            counted,
        } = conn.as_mut()?;
        let overflow = Cell::new(false);
        let mut tx = Tx {
            path,
            dp,
            scratch,
            len: 0,
        };
        let mut comps = Completions {
            send_cq,
            recv_cq,
            qpn: self.qpn,
            src_qp: rc.config().dest_qpn,
            ibqp: self.ibqp,
            overflow: &overflow,
        };
        // The engine's environment, lent anew after each change to `staging`.
        macro_rules! env {
            ($mem:ident) => {
                Env {
                    now_us: now,
                    mem: &mut $mem,
                    tx: &mut tx,
                    cq: &mut comps,
                }
            };
        }
        let op_err = |wr_id, opcode| WorkCompletion {
            wr_id,
            status: WcStatus::LocQpOpErr,
            opcode,
            byte_len: 0,
            imm: None,
            invalidated_rkey: None,
            qpn: self.qpn,
        };
        if let Some(pkt) = pkt {
            if pkt.info.has(mask::RWR) && rc.recv_queued() == 0 {
                let mut buf = [0u8; wqe::RECV_WQE_READ_ALL];
                let max_sge = srq.as_ref().map_or(self.max_sge.1, |s| s.data().max_sge());
                if take_recv(rq, srq, &mut buf) {
                    let wr = match wqe::recv_wr(&buf, max_sge) {
                        Ok((wr, None)) => Ok(wr),
                        Ok((mut wr, Some(list))) => match staging.stage_recv(list) {
                            Some(sge) => {
                                wr.sge = sge;
                                Ok(wr)
                            }
                            None => Err(wr.wr_id),
                        },
                        Err(wr_id) => Err(wr_id),
                    };
                    let mut mem = staging.memory(dp.regions.for_pd(self.pd));
                    let mut env = env!(mem);
                    match wr {
                        Ok(wr) => {
                            let _ = rc.post_recv(&mut env, wr);
                        }
                        Err(wr_id) => env.cq.recv_completion(&op_err(wr_id, WcOpcode::Recv)),
                    }
                }
            }
            let mut mem = staging.memory(dp.regions.for_pd(self.pd));
            let mut env = env!(mem);
            rc.on_packet(&mut env, pkt);
            if overflow.get() {
                // A completion was lost: stop before anything (an ACK of the
                // request it belonged to, say) tells the peer otherwise.
                rc.abort(&mut env);
            }
        }
        if attrs.0.qp_state == b::ib_qp_state_IB_QPS_RTS && rc.state() == QpState::Rts {
            let mut buf = [0u8; wqe::SEND_WQE_READ];
            while rc.send_room() > 0 && sq.peek(&mut buf) {
                sq.advance();
                // Every request is checked before it enters the engine: a bad
                // one completes at once with its error (after those before
                // it) instead of failing half way through its packets.
                let checked = match wqe::send_wr(&buf, self.sq_sig_all, self.max_sge.0) {
                    Ok((mut wr, extra)) => match staging.stage_send(wr.sge, extra) {
                        Some(sge) => {
                            wr.sge = sge;
                            let mut mem = staging.memory(dp.regions.for_pd(self.pd));
                            validate_send(&mut mem, &wr)
                                .map(|()| wr)
                                .map_err(|st| (wr, st))
                        }
                        None => Err((wr, WcStatus::LocQpOpErr)),
                    },
                    Err(bad) => Err((bad.placeholder(), WcStatus::LocQpOpErr)),
                };
                let mut mem = staging.memory(dp.regions.for_pd(self.pd));
                let mut env = env!(mem);
                let failed = match checked {
                    Ok(wr) => rc
                        .post_send(&mut env, wr)
                        .err()
                        .map(|_| (wr, WcStatus::LocQpOpErr)),
                    Err(bad) => Some(bad),
                };
                if let Some((wr, status)) = failed {
                    rc.post_send_failed(&mut env, wr, status);
                    break;
                }
            }
        }
        let mut mem = staging.memory(dp.regions.for_pd(self.pd));
        let mut env = env!(mem);
        if rc.next_deadline().is_some_and(|d| d <= now) {
            rc.on_timer(&mut env);
        }
        let sent = rc.poll_tx(&mut env, TX_BUDGET);
        self.busy.store(!rc.is_idle(), Ordering::Relaxed);
        dp.stats.absorb(rc.counters(), counted);
        Some((
            rc.next_deadline().unwrap_or(u64::MAX),
            rc.state() == QpState::Error,
            sent >= TX_BUDGET,
        ))
    }

    /// Whether the worker should serve this QP now.
    pub(crate) fn wants_service(&self, now: u64) -> bool {
        self.doorbell.load(Ordering::Acquire) || self.deadline.load(Ordering::Relaxed) <= now
    }

    /// When the engine's next timer expires (µs), `u64::MAX` for never.
    pub(crate) fn deadline(&self) -> u64 {
        self.deadline.load(Ordering::Relaxed)
    }

    /// Runs the engine: hands it `pkt` if any, feeds it the send queue, fires
    /// its timers and sends what it has to send.
    pub(crate) fn service(&self, dp: &Datapath, now: u64, rx: Option<(&Packet<'_>, &[u8])>) {
        self.doorbell.store(false, Ordering::Release);
        let mut guard = self.live.lock();
        let Some(live) = Option::as_mut(&mut *guard) else {
            if rx.is_some() {
                dp.drop_packet(Counter::RcvdNoQp);
            }
            return;
        };
        if live.attrs.0.qp_state == b::ib_qp_state_IB_QPS_ERR {
            if rx.is_some() {
                dp.drop_packet(Counter::RcvdNoQp);
            }
            // Requests posted after the QP failed (kernel callers post and
            // ring without a lock; user space's are flushed by the doorbell).
            flush_rings(live, self.qpn, self.ibqp);
            return;
        }
        if rx.is_some() && live.conn.is_none() && live.ud.is_none() {
            // Not connected yet (RESET, INIT): nothing can take the packet.
            dp.drop_packet(Counter::RcvdNoQp);
            return;
        }
        if self.qp_type == b::ib_qp_type_IB_QPT_UD || self.qp_type == b::ib_qp_type_IB_QPT_GSI {
            return self.serve_ud(live, dp, rx);
        }
        let pkt = rx.map(|(p, _)| p);
        let Some((deadline, failed, more)) = self.run_engine(live, dp, now, pkt) else {
            return;
        };
        self.deadline.store(deadline, Ordering::Relaxed);
        // (The QP was not in ERR: that returned above.)
        if failed {
            live.attrs.0.qp_state = b::ib_qp_state_IB_QPS_ERR;
            live.attrs.0.cur_qp_state = b::ib_qp_state_IB_QPS_ERR;
            self.state
                .store(b::ib_qp_state_IB_QPS_ERR, Ordering::Release);
            flush_rings(live, self.qpn, self.ibqp);
            // An error the responder found has no completion of its own to
            // report it (IB spec C9-222.1 and friends): an event does.
            let event = match live.conn.as_ref().and_then(|c| c.rc.responder_failure()) {
                Some(NakCode::RemoteAccessError) => Some(b::ib_event_type_IB_EVENT_QP_ACCESS_ERR),
                Some(NakCode::InvalidRequest) => Some(b::ib_event_type_IB_EVENT_QP_REQ_ERR),
                Some(NakCode::RemoteOpError) => Some(b::ib_event_type_IB_EVENT_QP_FATAL),
                _ => None,
            };
            if let Some(event) = event {
                live.events.raise(event);
            }
        }
        if more {
            // Budget used up with work left: come back.
            self.doorbell.store(true, Ordering::Release);
            crate::packet_io::kick();
        }
    }
}

impl QpCore {
    /// The UD/GSI part of [`QpCore::service`].
    fn serve_ud(&self, live: &mut Live, dp: &Datapath, rx: Option<(&Packet<'_>, &[u8])>) {
        let Live {
            attrs,
            sq,
            rq,
            srq,
            send_cq,
            recv_cq,
            ud,
            ..
        } = live;
        let Some(ud) = ud.as_mut() else { return };
        let qp = UdQp {
            qpn: self.qpn,
            ibqp: self.ibqp,
            qkey: attrs.0.qkey,
            sig_all: self.sq_sig_all,
            kernel: self.kernel,
            max_send_sge: self.max_sge.0,
            max_recv_sge: srq.as_ref().map_or(self.max_sge.1, |s| s.data().max_sge()),
            send_cq,
            recv_cq,
        };
        let mut mem = dp.regions.for_pd(self.pd);
        if let Some((pkt, ip)) = rx {
            if !ud::receive(&qp, rq, srq, &mut mem, pkt, ip) {
                dp.drop_packet(Counter::RcvdHdrErr);
            }
        }
        if attrs.0.qp_state == b::ib_qp_state_IB_QPS_RTS {
            ud::send_all(&qp, ud, sq, dp, &mut mem);
        }
    }
}

impl Qp {
    /// Creates a QP with its rings mapped into the caller.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        num: Option<Index>,
        pd: usize,
        dp: &Arc<Datapath>,
        init: &mut QpInit<'_>,
        send_cq: CqRef<RrxeDev>,
        recv_cq: CqRef<RrxeDev>,
        srq: Option<SrqRef<RrxeDev>>,
        udata: &mut Udata,
    ) -> Result<impl PinInit<Self, Error>> {
        if init.create_flags() != 0 {
            return Err(EOPNOTSUPP);
        }
        let qp_type = init.qp_type();
        let kernel = !udata.is_user();
        let gsi = qp_type == b::ib_qp_type_IB_QPT_GSI;
        let types = [
            b::ib_qp_type_IB_QPT_RC,
            b::ib_qp_type_IB_QPT_UC,
            b::ib_qp_type_IB_QPT_UD,
        ];
        // Only ib_core's MAD layer creates the GSI QP, in the kernel.
        if !(types.contains(&qp_type) || (gsi && kernel)) {
            return Err(EOPNOTSUPP);
        }
        // librxe sends no driver request; anything else is not ours.
        if udata.inlen() != 0 {
            return Err(EINVAL);
        }
        // A kernel QP's receives come from its own ring (no kernel SRQs).
        if kernel && srq.is_some() {
            return Err(EOPNOTSUPP);
        }
        let qpn = match &num {
            Some(n) => n.get(),
            None if gsi => 1,
            None => return Err(EINVAL),
        };
        if gsi && dp.has_qp(qpn) {
            return Err(EBUSY);
        }
        let sq_sig_all = init.sq_sig_all();
        let cap = init.cap();
        if cap.max_send_wr > p::MAX_QP_WR
            || cap.max_send_sge > p::MAX_SGE
            || cap.max_inline_data > p::MAX_INLINE_DATA
            || (srq.is_none() && (cap.max_recv_wr > p::MAX_QP_WR || cap.max_recv_sge > p::MAX_SGE))
        {
            return Err(EINVAL);
        }

        // A send slot holds the WQE header and either the SGEs or inline data.
        // (Both were checked against the device's limits above.)
        let payload = (cap.max_send_sge as usize)
            .saturating_mul(SGE_SIZE)
            .max(cap.max_inline_data as usize);
        let ring = |n, elem| {
            if kernel {
                Queue::new_kernel(Side::Consume, n, elem)
            } else {
                Queue::new(udata, Side::Consume, n, elem)
            }
        };
        let sq = ring(cap.max_send_wr, SEND_WQE_HDR.saturating_add(payload))?;
        cap.max_send_wr = sq.capacity();
        cap.max_send_sge = (payload / SGE_SIZE) as u32;
        cap.max_inline_data = payload as u32;
        let rq = if srq.is_some() {
            None
        } else {
            let rq = ring(
                cap.max_recv_wr,
                RECV_WQE_HDR.saturating_add((cap.max_recv_sge as usize).saturating_mul(SGE_SIZE)),
            )?;
            cap.max_recv_wr = rq.capacity();
            Some(rq)
        };
        if !kernel {
            let resp = b::rxe_create_qp_resp {
                rq_mi: rq.as_ref().map(Queue::mminfo).unwrap_or_default(),
                sq_mi: sq.mminfo(),
            };
            udata.write(&resp)?;
        }
        let ksq = kernel.then(|| sq.kernel_side());
        let krq = if kernel {
            rq.as_ref().map(Queue::kernel_side)
        } else {
            None
        };

        let mut attrs = b::ib_qp_attr {
            qp_state: b::ib_qp_state_IB_QPS_RESET,
            cur_qp_state: b::ib_qp_state_IB_QPS_RESET,
            path_mtu: b::ib_mtu_IB_MTU_256,
            port_num: 1,
            ..Default::default()
        };
        attrs.cap = *cap;
        let cap = *cap;
        let live = Live {
            attrs: Attrs(attrs),
            sq,
            rq,
            srq,
            send_cq,
            recv_cq,
            sgid: [0; 16],
            conn: None,
            ud: None,
            events: init.event_target(),
        };
        let core = Arc::pin_init(
            pin_init!(QpCore {
                qpn,
                qp_type,
                sq_sig_all,
                pd,
                doorbell: AtomicBool::new(false),
                deadline: AtomicU64::new(u64::MAX),
                busy: AtomicBool::new(false),
                ibqp: init.qp_addr(),
                kernel,
                state: AtomicU32::new(b::ib_qp_state_IB_QPS_RESET),
                max_sge: (cap.max_send_sge, cap.max_recv_sge),
                live <- new_mutex!(Some(live)),
                ksq <- new_spinlock_irq!(ksq),
                krq <- new_spinlock_irq!(krq),
            }),
            GFP_KERNEL,
        )?;
        dp.add_qp(qpn, core.clone())?;
        let dp = dp.clone();
        Ok(try_pin_init!(Self {
            _num: num,
            cap,
            core,
            dp
        }))
    }

    /// Validates `attr`/`mask` and applies them (`modify_qp`).
    pub(crate) fn modify(&self, attr: &QpAttr<'_>, mask: u32) -> Result {
        if mask & !b::ib_qp_attr_mask_IB_QP_ATTR_STANDARD_BITS != 0 {
            return Err(EOPNOTSUPP);
        }
        use b::*;
        let qp_type = self.core.qp_type;
        let has = |bit| mask_has(mask, bit);
        if has(ib_qp_attr_mask_IB_QP_PORT) && attr.port_num != 1 {
            return Err(EINVAL);
        }
        if has(ib_qp_attr_mask_IB_QP_CAP)
            && (attr.cap.max_send_wr > self.cap.max_send_wr
                || attr.cap.max_recv_wr > self.cap.max_recv_wr
                || attr.cap.max_send_sge > self.cap.max_send_sge
                || attr.cap.max_recv_sge > self.cap.max_recv_sge
                || attr.cap.max_inline_data > self.cap.max_inline_data)
        {
            return Err(EINVAL);
        }
        if has(ib_qp_attr_mask_IB_QP_ACCESS_FLAGS) {
            let ok = (ib_access_flags_IB_ACCESS_LOCAL_WRITE
                | ib_access_flags_IB_ACCESS_REMOTE_WRITE
                | ib_access_flags_IB_ACCESS_REMOTE_READ
                | ib_access_flags_IB_ACCESS_REMOTE_ATOMIC) as i32;
            if qp_type == ib_qp_type_IB_QPT_UD || attr.qp_access_flags & !ok != 0 {
                return Err(EINVAL);
            }
        }
        let mut sgid = None;
        if has(ib_qp_attr_mask_IB_QP_AV) {
            let ah = &attr.ah_attr;
            if ah.type_ != rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE
                || u32::from(ah.ah_flags) & ib_ah_flags_IB_AH_GRH == 0
                || i32::from(ah.grh.sgid_index) >= p::GID_TABLE_LEN
            {
                return Err(EINVAL);
            }
            sgid = Some(attr.source_gid().ok_or(EINVAL)?);
        }
        if has(ib_qp_attr_mask_IB_QP_PATH_MTU) && attr.path_mtu > ib_mtu_IB_MTU_4096 {
            return Err(EINVAL);
        }
        if has(ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC)
            && u32::from(attr.max_rd_atomic) > p::MAX_QP_RD_ATOM
        {
            return Err(EINVAL);
        }
        if has(ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC)
            && u32::from(attr.max_dest_rd_atomic) > p::MAX_QP_RD_ATOM
        {
            return Err(EINVAL);
        }
        if has(ib_qp_attr_mask_IB_QP_TIMEOUT) && attr.timeout > 31 {
            return Err(EINVAL);
        }

        let mut guard = self.core.live.lock();
        let st = Option::as_mut(&mut *guard).ok_or(EINVAL)?;
        let cur_attrs = &mut st.attrs.0;
        let cur = if has(ib_qp_attr_mask_IB_QP_CUR_STATE) {
            attr.cur_qp_state
        } else {
            cur_attrs.qp_state
        };
        let next = if has(STATE) { attr.qp_state } else { cur };
        if !modify_is_ok(cur, next, qp_type, mask) {
            return Err(EINVAL);
        }

        macro_rules! copy {
            ($bit:ident => $($field:ident),+) => {
                if has($bit) {
                    $(cur_attrs.$field = attr.$field;)+
                }
            };
        }
        copy!(ib_qp_attr_mask_IB_QP_EN_SQD_ASYNC_NOTIFY => en_sqd_async_notify);
        copy!(ib_qp_attr_mask_IB_QP_ACCESS_FLAGS => qp_access_flags);
        copy!(ib_qp_attr_mask_IB_QP_PKEY_INDEX => pkey_index);
        copy!(ib_qp_attr_mask_IB_QP_PORT => port_num);
        copy!(ib_qp_attr_mask_IB_QP_QKEY => qkey);
        copy!(ib_qp_attr_mask_IB_QP_PATH_MTU => path_mtu);
        copy!(ib_qp_attr_mask_IB_QP_TIMEOUT => timeout);
        copy!(ib_qp_attr_mask_IB_QP_RETRY_CNT => retry_cnt);
        copy!(ib_qp_attr_mask_IB_QP_RNR_RETRY => rnr_retry);
        copy!(ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER => min_rnr_timer);
        copy!(ib_qp_attr_mask_IB_QP_PATH_MIG_STATE => path_mig_state);
        copy!(ib_qp_attr_mask_IB_QP_DEST_QPN => dest_qp_num);
        if has(ib_qp_attr_mask_IB_QP_AV) {
            cur_attrs.ah_attr = attr.ah_attr;
            // Kept for query only: never hold ib_core's GID attribute pointer.
            cur_attrs.ah_attr.grh.sgid_attr = core::ptr::null();
        }
        if let Some(sgid) = sgid {
            st.sgid = sgid;
        }
        if has(ib_qp_attr_mask_IB_QP_ACCESS_FLAGS) {
            if let Some(conn) = &mut st.conn {
                conn.rc
                    .set_remote_access(remote_access(attr.qp_access_flags));
            }
        }
        // Responder and initiator depths round up to a power of two.
        if has(ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC) {
            cur_attrs.max_rd_atomic = attr.max_rd_atomic.max(1).next_power_of_two();
        }
        if has(ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC) {
            cur_attrs.max_dest_rd_atomic = attr.max_dest_rd_atomic.max(1).next_power_of_two();
        }
        if has(ib_qp_attr_mask_IB_QP_RQ_PSN) {
            cur_attrs.rq_psn = attr.rq_psn & 0x00ff_ffff;
        }
        if has(ib_qp_attr_mask_IB_QP_SQ_PSN) {
            cur_attrs.sq_psn = attr.sq_psn & 0x00ff_ffff;
        }
        if has(STATE) {
            self.enter(st, cur, next)?;
        }
        Ok(())
    }

    /// Moves the QP's datapath along a state transition already validated.
    fn enter(&self, st: &mut Live, cur: u32, next: u32) -> Result {
        let is_rc = self.core.qp_type == b::ib_qp_type_IB_QPT_RC;
        let is_ud = self.core.qp_type == b::ib_qp_type_IB_QPT_UD
            || self.core.qp_type == b::ib_qp_type_IB_QPT_GSI;
        match next {
            b::ib_qp_state_IB_QPS_RESET => {
                st.conn = None;
                st.ud = None;
                st.sq.clear();
                if let Some(rq) = &st.rq {
                    rq.clear();
                }
            }
            b::ib_qp_state_IB_QPS_RTR if is_rc && cur == b::ib_qp_state_IB_QPS_INIT => {
                st.conn = Some(self.connect(st)?);
            }
            b::ib_qp_state_IB_QPS_RTR if is_ud && st.ud.is_none() => {
                st.ud = Some(Ud::new()?);
            }
            b::ib_qp_state_IB_QPS_RTS if cur == b::ib_qp_state_IB_QPS_RTR => {
                let a = &st.attrs.0;
                if let Some(conn) = &mut st.conn {
                    conn.rc
                        .start_requester(
                            a.sq_psn,
                            a.retry_cnt,
                            a.rnr_retry,
                            timeout_us(a.timeout),
                            a.max_rd_atomic.clamp(1, MAX_RD_ATOMIC),
                        )
                        .map_err(|_| EINVAL)?;
                }
            }
            b::ib_qp_state_IB_QPS_ERR => {
                if let Some(Conn {
                    rc,
                    path,
                    scratch,
                    staging,
                    ..
                }) = &mut st.conn
                {
                    // Work requests the engine holds are older than the rings'.
                    let mut mem = staging.memory(self.dp.regions.for_pd(self.core.pd));
                    let mut tx = Tx {
                        path,
                        dp: &self.dp,
                        scratch,
                        len: 0,
                    };
                    let overflow = Cell::new(false);
                    let mut comps = Completions {
                        send_cq: &st.send_cq,
                        recv_cq: &st.recv_cq,
                        qpn: self.core.qpn,
                        src_qp: rc.config().dest_qpn,
                        ibqp: self.core.ibqp,
                        overflow: &overflow,
                    };
                    let mut env = Env {
                        now_us: crate::datapath::now_us(),
                        mem: &mut mem,
                        tx: &mut tx,
                        cq: &mut comps,
                    };
                    rc.abort(&mut env);
                }
                flush_rings(st, self.core.qpn, self.core.ibqp);
            }
            _ => {}
        }
        st.attrs.0.qp_state = next;
        st.attrs.0.cur_qp_state = next;
        self.core.state.store(next, Ordering::Release);
        Ok(())
    }

    /// Builds the RC engine at the move to RTR, from the attributes so far.
    fn connect(&self, st: &Live) -> Result<Conn> {
        let a = &st.attrs.0;
        let mtu = 128u32
            << a.path_mtu
                .clamp(b::ib_mtu_IB_MTU_256, b::ib_mtu_IB_MTU_4096);
        let qpn = self.core.qpn;
        let dest = a.dest_qp_num & 0x00ff_ffff;
        let grh = &a.ah_attr.grh;
        // RoCE v2 source port: entropy from the QP numbers, in 0xC000..=0xFFFF.
        let sport = 0xc000 | ((qpn ^ dest ^ (qpn >> 14)) & 0x3fff) as u16;
        // SAFETY: `raw` is the plain-bytes view of the GID union.
        let dgid = unsafe { grh.dgid.raw };
        let path = Path::new(
            st.sgid,
            dgid,
            grh.hop_limit,
            grh.traffic_class,
            grh.flow_label,
            sport,
        )?;
        let cfg = QpConfig {
            qpn,
            dest_qpn: dest,
            pkey: p::DEFAULT_PKEY,
            mtu,
            sq_psn: a.sq_psn,
            rq_psn: a.rq_psn,
            retry_cnt: a.retry_cnt.min(7),
            rnr_retry: a.rnr_retry.min(7),
            min_rnr_timer: a.min_rnr_timer & 0x1f,
            timeout_us: timeout_us(a.timeout),
            max_rd_atomic: a.max_rd_atomic.clamp(1, MAX_RD_ATOMIC),
            max_inflight_pkts: 256,
            remote: remote_access(a.qp_access_flags),
        };
        let rc = KBox::new(
            RcEngine::new(cfg, crate::proto::Buffers::arrays()).map_err(|_| EINVAL)?,
            GFP_KERNEL,
        )?;
        let mut scratch = KVec::with_capacity(SCRATCH, GFP_KERNEL)?;
        scratch.resize(SCRATCH, 0, GFP_KERNEL)?;
        Ok(Conn {
            rc,
            path,
            scratch,
            staging: Staging::new()?,
            counted: Counters::default(),
        })
    }

    /// Send work requests wait in the ring (user space wrote them, or
    /// `post_send` did): the worker takes them. Before RTS that is an error;
    /// in the error state they are flushed. Lock-free for kernel QPs, whose
    /// callers may be in atomic context.
    pub(crate) fn doorbell(&self) -> Result {
        match self.core.state.load(Ordering::Acquire) {
            b::ib_qp_state_IB_QPS_RTS | b::ib_qp_state_IB_QPS_SQD => {}
            b::ib_qp_state_IB_QPS_ERR if !self.core.kernel => {
                let mut guard = self.core.live.lock();
                let st = Option::as_mut(&mut *guard).ok_or(EINVAL)?;
                flush_rings(st, self.core.qpn, self.core.ibqp);
                return Ok(());
            }
            // The worker flushes a kernel QP's requests when it serves it.
            b::ib_qp_state_IB_QPS_ERR => {}
            _ => return Err(EINVAL),
        }
        // An idle user QP is served right away, in the calling task: that
        // saves the worker's wake-up on the latency path. A busy one is left
        // to the worker, which takes its ACKs and sends in one pass (serving
        // streams here too contends for the QP with the worker: measured,
        // ib_write_bw 64 KiB fell to a sixth). Kernel QPs' callers may be
        // in atomic context: always the worker.
        if self.core.kernel || self.core.busy.load(Ordering::Relaxed) {
            self.core.doorbell.store(true, Ordering::Release);
            crate::packet_io::kick();
        } else {
            crate::datapath::serve_now(&self.dp, &self.core);
        }
        Ok(())
    }

    /// Queues a send request of an in-kernel caller (`ib_post_send`).
    pub(crate) fn post_send(&self, wr: &KSendWr<'_, RrxeDev>) -> Result {
        let state = self.core.state.load(Ordering::Acquire);
        if state < b::ib_qp_state_IB_QPS_RTS {
            return Err(EINVAL);
        }
        let mut wqe = [0u8; wqe::SEND_WQE_READ];
        wqe::kernel_send(&mut wqe, wr, self.core.max_sge.0 as usize)?;
        let mut ksq = self.core.ksq.lock();
        Option::as_mut(&mut *ksq).ok_or(EINVAL)?.push(&wqe)
    }

    /// Queues a receive request of an in-kernel caller (`ib_post_recv`).
    pub(crate) fn post_recv(&self, wr: &KRecvWr<'_>) -> Result {
        if self.core.state.load(Ordering::Acquire) == b::ib_qp_state_IB_QPS_RESET {
            return Err(EINVAL);
        }
        let mut wqe = [0u8; wqe::RECV_WQE_READ_ALL];
        wqe::kernel_recv(&mut wqe, wr, self.core.max_sge.1 as usize)?;
        Option::as_mut(&mut *self.core.krq.lock())
            .ok_or(EINVAL)?
            .push(&wqe)?;
        if self.core.state.load(Ordering::Acquire) == b::ib_qp_state_IB_QPS_ERR {
            self.core.doorbell.store(true, Ordering::Release);
            crate::packet_io::kick();
        }
        Ok(())
    }

    /// Detaches the QP from the datapath and drops everything it holds, so
    /// the worker cannot reach it once `destroy_qp` returns.
    pub(crate) fn destroy(&self) {
        self.dp.remove_qp(self.core.qpn);
        *self.core.ksq.lock() = None;
        *self.core.krq.lock() = None;
        let live = self.core.live.lock().take();
        drop(live);
    }

    /// Reports the attributes (`query_qp`).
    pub(crate) fn query(&self, attr: &mut b::ib_qp_attr, init: &mut b::ib_qp_init_attr) {
        if let Some(st) = self.core.live.lock().as_ref() {
            *attr = st.attrs.0;
        }
        attr.cap = self.cap;
        init.cap = self.cap;
        init.qp_type = self.core.qp_type;
        init.port_num = 1;
        init.sq_sig_type = if self.core.sq_sig_all {
            b::ib_sig_type_IB_SIGNAL_ALL_WR
        } else {
            b::ib_sig_type_IB_SIGNAL_REQ_WR
        };
    }
}
