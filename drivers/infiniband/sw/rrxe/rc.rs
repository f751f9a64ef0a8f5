// SPDX-License-Identifier: GPL-2.0

//! A connected QP, RC or UC: the protocol core's connected engine, fed from
//! the QP's rings and received packets, its packets sent along its [`Path`]
//! and its completions put into the QP's CQs. The engine's configuration
//! says which transport it speaks; this file does the same for both.
//!
//! The engine's queues are sized by the QP: as many send requests in
//! flight as the send queue holds (up to [`MAX_WINDOW`]), and as many
//! READ/atomic responder resources as the device advertises.

use crate::{
    cq::{complete_or_report, complete_or_report_received, Arrival},
    exec::{now_us, Live, Outcome, QpCore},
    mem::KeyCache,
    net::skb::SkBuff,
    params as p,
    proto::{
        opcode::mask, Access, AtomicResult, Buffers, Clock, CompletionSink, Counters, Env,
        MemoryAccess, NakCode, PayloadRef, QpConfig, QpState, RecvWr, RemoteAccess, Response,
        SendWqe, SendWr, Slots, Stall, Storage, Transport, TxSink, WcOpcode, WcStatus,
        WorkCompletion,
    },
    rdma::{bindings as b, driver::CqRef},
    recv::with_packet,
    staging::Staging,
    stats::Counter,
    wqe,
    xmit::{Packet, Path},
    RrxeDev,
};
use core::cell::Cell;
use kernel::{prelude::*, sync::Arc};

/// Most send requests one engine holds in flight; a deeper send queue
/// keeps the rest in the ring until the window has room.
pub(crate) const MAX_WINDOW: u32 = 16384;
/// Receive WQEs the engine takes ahead of the packets that consume them.
const RECV_AHEAD: usize = 2;
/// Response queue: the responder depth plus an ACK behind a READ response
/// plus one to NAK.
const RESPONSES: usize = p::MAX_QP_RD_ATOM as usize + 2;
/// Packets received that one run takes at most.
const RX_BUDGET: usize = 64;
/// Packets one run sends at most.
const TX_BUDGET: usize = 64;

/// Queue storage the kernel allocates.
pub(crate) struct HeapSlots<T>(KVVec<Option<T>>);

impl<T> Slots<T> for HeapSlots<T> {
    fn slots(&self) -> &[Option<T>] {
        &self.0
    }
    fn slots_mut(&mut self) -> &mut [Option<T>] {
        &mut self.0
    }
}

fn slots<T: Clone>(n: usize) -> Result<HeapSlots<T>> {
    let mut v = KVVec::with_capacity(n, GFP_KERNEL)?;
    for _ in 0..n {
        v.push(None, GFP_KERNEL)?;
    }
    Ok(HeapSlots(v))
}

/// The engine's queues on the heap.
pub(crate) struct Heap;

impl Storage for Heap {
    type Send = HeapSlots<SendWqe>;
    type Recv = HeapSlots<RecvWr>;
    type Resp = HeapSlots<Response>;
    type Atomic = HeapSlots<AtomicResult>;
}

/// The connected (RC or UC) engine of the protocol core, queues on the heap.
type RcEngine = crate::proto::Qp<Heap>;

/// A connected QP's engine and where its packets go.
pub(crate) struct Conn {
    rc: KBox<RcEngine>,
    path: Path,
    dest_qpn: u32,
    /// Inline data and long SGE lists of the requests in the engine.
    staging: Staging,
    /// The regions the QP used last.
    keys: KeyCache,
    /// A packet received and handled, kept to carry the next one sent
    /// (see [`Packet::reusing`]).
    spare: Option<SkBuff>,
    /// The engine's counters as last added to the device's.
    counted: Counters,
    /// Pauses for a full transmit queue.
    stall: Stall,
}

/// What [`Conn::new`] needs besides the engine's configuration.
pub(crate) struct ConnCaps {
    /// Send requests in flight.
    pub(crate) window: u32,
    /// Inline bytes, send SGEs and receive SGEs per request.
    pub(crate) max_inline: u32,
    /// Most SGEs per send request.
    pub(crate) max_send_sge: u32,
    /// Most SGEs per receive request.
    pub(crate) max_recv_sge: u32,
}

impl Conn {
    /// The engine for `cfg`, sending along `path`.
    pub(crate) fn new(cfg: QpConfig, path: Path, caps: ConnCaps) -> Result<Self> {
        let window = caps.window.clamp(1, MAX_WINDOW) as usize;
        let bufs = Buffers::<Heap> {
            send: slots(window)?,
            recv: slots(RECV_AHEAD)?,
            resp: slots(RESPONSES)?,
            atomic: slots(RESPONSES)?,
        };
        let dest_qpn = cfg.dest_qpn;
        let rc = KBox::new(RcEngine::new(cfg, bufs).map_err(|_| EINVAL)?, GFP_KERNEL)?;
        let staging = Staging::new(
            window,
            caps.max_inline as usize,
            caps.max_send_sge as usize,
            caps.max_recv_sge as usize,
        )?;
        Ok(Self {
            rc,
            path,
            dest_qpn,
            staging,
            keys: KeyCache::new(),
            spare: None,
            counted: Counters::default(),
            stall: Stall::default(),
        })
    }

    /// Set the requester's parameters at the move to RTS.
    pub(crate) fn start_requester(
        &mut self,
        sq_psn: u32,
        retry: u8,
        rnr: u8,
        timeout_us: u64,
        depth: u8,
    ) -> Result {
        self.rc
            .start_requester(sq_psn, retry, rnr, timeout_us, depth)
            .map_err(|_| EINVAL)
    }

    /// Change the remote operations the responder executes.
    pub(crate) fn set_remote_access(&mut self, remote: RemoteAccess) {
        self.rc.set_remote_access(remote);
    }

    /// Fails the QP for a local reason (the consumer asked): flushes the
    /// engine's requests, sends nothing more.
    pub(crate) fn abort(
        &mut self,
        core: &QpCore,
        send_cq: &CqRef<RrxeDev>,
        recv_cq: &CqRef<RrxeDev>,
    ) {
        let Conn {
            rc,
            path,
            dest_qpn,
            staging,
            keys,
            spare,
            ..
        } = self;
        let overflow = Cell::new(false);
        let mut comps = Completions::new(core, send_cq, recv_cq, *dest_qpn, path, &overflow);
        let spare = Cell::from_mut(spare);
        let mut tx = Tx::new(core, path, keys, spare, *dest_qpn, 0, false);
        let mut mem = staging.memory(core.memory(keys));
        let mut env = Env {
            clock: &Clock::new(now_us),
            mem: &mut mem,
            tx: &mut tx,
            cq: &mut comps,
        };
        rc.abort(&mut env);
    }
}

/// Completions of one QP into its CQs.
struct Completions<'a> {
    send_cq: &'a CqRef<RrxeDev>,
    recv_cq: &'a CqRef<RrxeDev>,
    qpn: u32,
    src_qp: u32,
    ibqp: usize,
    /// How the QP's messages arrive (from its peer only).
    arrival: Arrival,
    /// A completion did not fit: the QP must stop (see `serve`).
    overflow: &'a Cell<bool>,
}

impl<'a> Completions<'a> {
    /// The completions of `core`, connected over `path` to QP `dest_qpn`;
    /// one that does not fit sets `overflow`.
    fn new(
        core: &QpCore,
        send_cq: &'a CqRef<RrxeDev>,
        recv_cq: &'a CqRef<RrxeDev>,
        dest_qpn: u32,
        path: &Path,
        overflow: &'a Cell<bool>,
    ) -> Self {
        Self {
            send_cq,
            recv_cq,
            qpn: core.info.qpn,
            src_qp: dest_qpn,
            ibqp: core.info.ibqp,
            arrival: Arrival {
                ipv6: path.is_ipv6(),
                vlan: None,
            },
            overflow,
        }
    }
}

impl CompletionSink for Completions<'_> {
    fn send_completion(&mut self, wc: &WorkCompletion) {
        let wc = wqe::completion(wc, self.qpn, self.src_qp);
        if !complete_or_report(self.send_cq, &wc, self.ibqp, false) {
            self.overflow.set(true);
        }
    }

    fn recv_completion(&mut self, wc: &WorkCompletion) {
        let mut wc = wqe::completion(wc, self.qpn, self.src_qp);
        // Every RoCE v2 packet carries a GRH (its IP header): a receive
        // says so, as rxe and RoCE NICs report it on RC and UC too.
        if wc.status == b::ib_wc_status_IB_WC_SUCCESS {
            wc.wc_flags |= b::ib_wc_flags_IB_WC_GRH;
        }
        if !complete_or_report_received(self.recv_cq, &wc, self.ibqp, false, Some(self.arrival)) {
            self.overflow.set(true);
        }
    }
}

/// Packets of one QP, built in socket buffers and sent along its path.
///
/// When the net device's transmit queue is full (or memory short), the
/// engine is told the link is busy: it keeps the packet and builds it
/// again at its next turn, which `serve` schedules a little later
/// ([`Stall`]), so a full queue costs a pause instead of an ACK timeout
/// and a retransmission of everything in flight.
struct Tx<'a> {
    core: &'a QpCore,
    path: &'a Path,
    /// The QP's regions used last (a READ response sent by reference
    /// looks its key up).
    keys: &'a KeyCache,
    /// A packet to build the next one in.
    spare: &'a Cell<Option<SkBuff>>,
    dest_qpn: u32,
    depth: u8,
    cur: Option<Packet>,
    /// The link may be reported busy (else a refused packet is lost).
    may_refuse: bool,
    /// A packet was refused, or not built for want of memory: this run
    /// sends nothing more.
    refused: bool,
    /// A packet was sent (or lost) in this run.
    sent_any: bool,
}

impl<'a> Tx<'a> {
    fn new(
        core: &'a QpCore,
        path: &'a Path,
        keys: &'a KeyCache,
        spare: &'a Cell<Option<SkBuff>>,
        dest_qpn: u32,
        depth: u8,
        may_refuse: bool,
    ) -> Self {
        Self {
            core,
            path,
            keys,
            spare,
            dest_qpn,
            depth,
            cur: None,
            may_refuse,
            refused: false,
            sent_any: false,
        }
    }
}

impl TxSink for Tx<'_> {
    fn buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        if self.refused {
            return None;
        }
        self.cur = Packet::reusing(self.spare.take(), len);
        if self.cur.is_none() {
            self.refused = true;
        }
        self.cur.as_mut().map(Packet::bytes)
    }

    fn buffer_by_ref(&mut self, len: usize, head: usize, payload: PayloadRef) -> Option<&mut [u8]> {
        if self.refused {
            return None;
        }
        let mem = self.core.memory(self.keys);
        self.cur = self.path.packet_by_ref(&mem, len, head, payload);
        self.cur.as_mut().map(Packet::bytes)
    }

    fn commit(&mut self, psns: u32) -> bool {
        let Some(pkt) = self.cur.take() else {
            return true;
        };
        if self.path.send(
            &self.core.dp,
            pkt,
            psns,
            self.dest_qpn,
            self.depth,
            self.may_refuse,
        ) || !self.may_refuse
        {
            self.sent_any = true;
            return true;
        }
        self.refused = true;
        false
    }
}

/// Checks a send request's local buffer (key, protection domain, access,
/// bounds) and length before it enters the engine; the error is the
/// completion status the request then gets.
fn validate_send(
    mem: &mut dyn MemoryAccess,
    wr: &SendWr,
    transport: Transport,
) -> Result<(), WcStatus> {
    // An operation the transport lacks (a READ on UC) fails as in rxe's
    // requester, whatever its buffer.
    if !wr.op.carried_by(transport) {
        return Err(WcStatus::LocQpOpErr);
    }
    // ATOMIC WRITE carries its 8 bytes in the request, and a FLUSH's
    // length is the remote one (any 32-bit value, as rxe sends it): no
    // local buffer.
    if wr.op.has_empty_response() {
        return Ok(());
    }
    if wr.sge.length > p::MAX_MSG_SIZE {
        return Err(WcStatus::LocLenErr);
    }
    // A local operation has no buffer; its key is checked when it runs.
    if wr.op.is_local() {
        return Ok(());
    }
    // An atomic returns the original 8 bytes into a buffer of at least 8
    // (as rxe accepts; `send_wr` cut it to those 8).
    if wr.op.is_atomic() && wr.sge.length < 8 {
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

/// A completion for a request that never entered the engine.
fn op_err(wr_id: u64, opcode: WcOpcode, qpn: u32) -> WorkCompletion {
    WorkCompletion {
        wr_id,
        status: WcStatus::LocQpOpErr,
        opcode,
        byte_len: 0,
        imm: None,
        invalidated_rkey: None,
        qpn,
    }
}

/// One run of a connected QP: the packets that arrived, the requests
/// posted, the timers, and what the engine has to send.
pub(crate) fn serve(core: &Arc<QpCore>, live: &mut Live, depth: u8) -> Outcome {
    let Live {
        attrs,
        sq,
        rq,
        srq,
        send_cq,
        recv_cq,
        conn,
        events,
        ..
    } = live;
    let Some(Conn {
        rc,
        path,
        dest_qpn,
        staging,
        keys,
        spare,
        counted,
        stall,
    }) = conn.as_mut()
    else {
        // Not connected (RESET, INIT): nothing takes packets yet.
        while core.next_packet().is_some() {
            core.dp.drop_packet(Counter::RcvdNoQp);
        }
        return Outcome::IDLE;
    };
    let dp = &core.dp;
    // Read only if the run sets or checks a deadline.
    let clock = Clock::new(now_us);
    let now = || clock.now_us();
    let overflow = Cell::new(false);
    let may_refuse = stall.may_pause(now);
    let spare = Cell::from_mut(spare);
    let mut tx = Tx::new(core, path, keys, spare, *dest_qpn, depth, may_refuse);
    let mut comps = Completions::new(core, send_cq, recv_cq, *dest_qpn, path, &overflow);
    // The engine's environment, lent anew after each change to `staging`.
    macro_rules! env {
        ($mem:ident) => {
            Env {
                clock: &clock,
                mem: &mut $mem,
                tx: &mut tx,
                cq: &mut comps,
            }
        };
    }
    let max_rsge = srq
        .as_ref()
        .map_or(core.info.max_sge.1, |s| s.data().max_sge());
    let mut received = 0usize;
    while received < RX_BUDGET {
        let Some(skb) = core.next_packet() else { break };
        received = received.saturating_add(1);
        if !path.is_from_peer(&skb) {
            // A connected QP hears only its peer (as rxe's check_addr).
            dp.drop_packet(Counter::RcvdHdrErr);
            continue;
        }
        let handled = with_packet(&skb, |pkt| {
            if pkt.info.has(mask::RWR) && rc.recv_queued() == 0 {
                let mut buf = wqe::RecvCopy::new();
                if crate::qp::take_recv(rq, srq, &mut buf) {
                    let wr = match wqe::recv_wr(buf.bytes(), max_rsge) {
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
                    let mut mem = staging.memory(core.memory(keys));
                    let mut env = env!(mem);
                    match wr {
                        Ok(wr) => {
                            let _ = rc.post_recv(&mut env, wr);
                        }
                        Err(wr_id) => {
                            env.cq
                                .recv_completion(&op_err(wr_id, WcOpcode::Recv, core.info.qpn))
                        }
                    }
                }
            }
            let mut mem = staging.memory(core.memory(keys)).for_packet(&skb);
            let mut env = env!(mem);
            rc.on_packet(&mut env, pkt);
            if overflow.get() {
                // A completion was lost: stop before anything (an ACK of the
                // request it belonged to, say) tells the peer otherwise.
                rc.abort(&mut env);
            }
        });
        if handled.is_none() {
            dp.drop_packet(Counter::RcvdHdrErr);
        }
        if skb.is_reusable() {
            // The next packet this QP sends is built in it (the one kept
            // before is freed).
            drop(spare.replace(Some(skb)));
        }
    }
    // (The WQE buffer is only set up when a request waits.)
    if attrs.0.qp_state == b::ib_qp_state_IB_QPS_RTS && rc.state() == QpState::Rts && sq.count() > 0
    {
        let mut buf = wqe::SendCopy::new();
        while rc.send_room() > 0 && wqe::peek_send(sq, &mut buf) {
            sq.advance();
            // Every request is checked before it enters the engine: a bad
            // one completes at once with its error (after those before
            // it) instead of failing half way through its packets.
            let checked = match wqe::send_wr(
                buf.bytes(),
                core.info.sq_sig_all,
                core.info.max_sge.0,
                core.info.kernel,
            ) {
                Ok((mut wr, extra)) => match staging.stage_send(wr.sge, extra) {
                    Some(sge) => {
                        wr.sge = sge;
                        if wr.op.is_atomic() && wr.sge.length > 8 {
                            wr.sge.length = 8;
                        }
                        let mut mem = staging.memory(core.memory(keys));
                        validate_send(&mut mem, &wr, rc.config().transport)
                            .map(|()| wr)
                            .map_err(|st| (wr, st))
                    }
                    None => Err((wr, WcStatus::LocQpOpErr)),
                },
                Err(bad) => Err((bad.placeholder(), WcStatus::LocQpOpErr)),
            };
            let mut mem = staging.memory(core.memory(keys));
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
    let mut mem = staging.memory(core.memory(keys));
    let mut env = env!(mem);
    let timer = core.timer_fired();
    if timer || rc.next_deadline().is_some_and(|d| d <= now()) {
        rc.on_timer(&mut env);
    }
    let sent = rc.poll_tx(&mut env, TX_BUDGET);
    dp.stats.absorb(rc.counters(), counted);
    // A refused packet waits for the next run, which the timer brings
    // after a pause that grows while nothing at all gets through.
    let retry_at = stall.end_try(now, tx.sent_any, tx.refused);
    if rc.state() == QpState::Error {
        // The engine failed (retries exhausted, a fatal NAK, a lost
        // completion): the QP moves to the error state and what is left in
        // the rings is flushed.
        let failure = rc.responder_failure();
        crate::qp::enter_error(core, attrs, sq, rq, send_cq, recv_cq);
        crate::qp::last_wqe_reached(srq, events);
        // An error the responder found has no completion of its own to
        // report it (IB spec C9-222.1 and friends): an event does.
        let event = match failure {
            Some(NakCode::RemoteAccessError) => Some(b::ib_event_type_IB_EVENT_QP_ACCESS_ERR),
            Some(NakCode::InvalidRequest) => Some(b::ib_event_type_IB_EVENT_QP_REQ_ERR),
            Some(NakCode::RemoteOpError) => Some(b::ib_event_type_IB_EVENT_QP_FATAL),
            _ => None,
        };
        if let Some(event) = event {
            events.raise(event);
        }
        return Outcome::IDLE;
    }
    let deadline = rc.next_deadline().unwrap_or(u64::MAX);
    Outcome {
        deadline: retry_at.map_or(deadline, |r| deadline.min(r)),
        more: sent >= TX_BUDGET || received >= RX_BUDGET && core.packets_waiting(),
    }
}
