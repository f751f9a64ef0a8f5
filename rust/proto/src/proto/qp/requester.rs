//! The requester: turns send work requests into request packets, assigns
//! PSNs, segments by MTU, enforces fences and the READ/atomic limit, and
//! runs the ACK and RNR timers. On UC it only sends: a request completes
//! when its last packet has gone out.

use super::emit::{emit, Body, EmitFail};
use super::ring::Ring;
use super::{Counters, QpConfig, QpError, QpState, Storage};
use crate::proto::env::{Access, Env, PayloadRef};
use crate::proto::headers::{AtomicEthRepr, BthRepr, FethRepr, RethRepr};
use crate::proto::opcode::rc;
use crate::proto::packet::Headers;
use crate::proto::verbs::{LocalOp, SendWr, WcStatus, WorkCompletion, WrOp};
use crate::proto::{Cwnd, Psn, Transport};

/// Largest number of packets one message may span (keeps PSN windows far
/// below 2^23).
pub(crate) const MAX_MSG_PKTS: u32 = 1 << 20;

/// Number of packets (PSNs) a message of `len` bytes occupies.
pub(crate) fn npkts(len: u32, mtu: u32) -> u32 {
    len.saturating_sub(1)
        .checked_div(mtu)
        .unwrap_or(0)
        .saturating_add(1)
}

/// Packets between explicit ACK requests.
const ACK_EVERY: u32 = 16;

/// A send WQE and its transmission bookkeeping: an element of the
/// requester's queue ([`Storage::Send`]).
#[derive(Debug, Clone, Copy)]
pub struct SendWqe {
    pub(crate) wr: SendWr,
    /// PSN of the first packet; valid once `started`.
    pub(crate) first_psn: Psn,
    /// PSNs consumed (request packets, or response packets for READ).
    pub(crate) npkts: u32,
    /// A PSN range has been assigned.
    pub(crate) started: bool,
}

impl SendWqe {
    pub(crate) fn last_psn(&self) -> Psn {
        self.first_psn.add(self.npkts.saturating_sub(1))
    }
    /// True if `psn` lies within this WQE's PSN range.
    pub(crate) fn contains(&self, psn: Psn) -> bool {
        self.started && psn.since(self.first_psn) < self.npkts
    }
}

/// Outcome of one transmission attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tx {
    /// A packet was sent.
    Sent,
    /// A local operation ran (no packet).
    Ran,
    /// Nothing to send now.
    Idle,
    /// A local error: the QP must enter the error state.
    Fatal,
}

/// Requester and completer state of a QP (send side).
pub(crate) struct Requester<S: Storage> {
    pub(super) q: Ring<SendWqe, S::Send>,
    /// Started READ and atomic WQEs not completed yet (every WQE before the
    /// first unstarted one is started, so this is the number of READs and
    /// atomics ahead of it).
    pub(super) rd_started: usize,
    /// Index (from the head of `q`) of the WQE to transmit next.
    pub(super) send_rel: usize,
    /// Byte offset within that WQE.
    pub(super) send_off: u32,
    /// PSN of the next packet to transmit.
    pub(super) next_psn: Psn,
    /// One past the highest PSN ever transmitted: `next_psn` unless a
    /// rewind moved it back. Responses up to here are current.
    pub(super) sent_psn: Psn,
    /// Oldest PSN not yet acknowledged.
    pub(super) comp_psn: Psn,
    pub(super) retry_left: u8,
    pub(super) rnr_left: u8,
    pub(super) retry_deadline: Option<u64>,
    pub(super) rnr_deadline: Option<u64>,
    /// PSN of the last retransmission that has not yet made progress;
    /// suppresses repeated rewinds triggered by the same loss.
    pub(super) last_rewind: Option<Psn>,
    /// The first packet of a retransmission, to be sent twice (see
    /// [`Requester::retry_from`]).
    pub(super) send_twice: Option<Psn>,
    /// Error status to report for the WQE at this index when flushing.
    pub(super) error: Option<(usize, WcStatus)>,
    /// Packets allowed in flight (RC), at most `cfg.max_inflight_pkts`.
    pub(super) cwnd: Cwnd,
    /// The newest packet sent asked for no ACK (the end of an unsignaled
    /// burst that nothing waits for): the next ACK timeout is a probe for
    /// its ACK, not a loss (see [`Requester::on_timer`]).
    pub(super) tail_unasked: bool,
}

impl<S: Storage> Requester<S> {
    pub(crate) fn new(cfg: &QpConfig, send: S::Send) -> Self {
        let psn = Psn::new(cfg.sq_psn);
        Requester {
            q: Ring::new(send),
            rd_started: 0,
            send_rel: 0,
            send_off: 0,
            next_psn: psn,
            sent_psn: psn,
            comp_psn: psn,
            retry_left: cfg.retry_cnt,
            rnr_left: cfg.rnr_retry,
            retry_deadline: None,
            rnr_deadline: None,
            last_rewind: None,
            send_twice: None,
            error: None,
            cwnd: Cwnd::new(cfg.max_inflight_pkts, psn),
            tail_unasked: false,
        }
    }

    /// Start over with `cfg` (at the move to RTS), keeping the storage.
    pub(crate) fn restart(&mut self, cfg: &QpConfig) {
        let psn = Psn::new(cfg.sq_psn);
        self.q.clear();
        self.rd_started = 0;
        self.send_rel = 0;
        self.send_off = 0;
        self.next_psn = psn;
        self.sent_psn = psn;
        self.comp_psn = psn;
        self.retry_left = cfg.retry_cnt;
        self.rnr_left = cfg.rnr_retry;
        self.retry_deadline = None;
        self.rnr_deadline = None;
        self.last_rewind = None;
        self.send_twice = None;
        self.error = None;
        self.cwnd = Cwnd::new(cfg.max_inflight_pkts, psn);
        self.tail_unasked = false;
    }

    pub(crate) fn post(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        state: QpState,
        wr: SendWr,
    ) -> Result<(), QpError> {
        let bad_atomic =
            (wr.op.is_atomic() || matches!(wr.op, WrOp::AtomicWrite { .. })) && wr.sge.length != 8;
        // A FLUSH's length is the remote one: any 32-bit value, in one packet.
        let flush = matches!(wr.op, WrOp::Flush { .. });
        if !wr.op.carried_by(cfg.transport)
            || bad_atomic
            || (!flush
                && (wr.sge.length > (1 << 31) || npkts(wr.sge.length, cfg.mtu) > MAX_MSG_PKTS))
        {
            return Err(QpError::InvalidWr);
        }
        if state == QpState::Error {
            env.cq.send_completion(&wc(cfg, &wr, WcStatus::WrFlushErr));
            return Ok(());
        }
        // A local operation occupies no PSN; a FLUSH one.
        let npkts = match wr.op {
            WrOp::Local(_) => 0,
            WrOp::Flush { .. } => 1,
            _ => npkts(wr.sge.length, cfg.mtu),
        };
        self.q
            .push(SendWqe {
                wr,
                first_psn: Psn::new(0),
                npkts,
                started: false,
            })
            .map_err(|_| QpError::QueueFull)
    }

    /// Queue `wr`, found invalid before it started, to complete with
    /// `status` after every request before it when the QP is flushed.
    /// Returns false if the queue is full.
    pub(crate) fn post_failed(&mut self, wr: SendWr, status: WcStatus) -> bool {
        let idx = self.q.len();
        let w = SendWqe {
            wr,
            first_psn: Psn::new(0),
            npkts: 0,
            started: false,
        };
        if self.q.push(w).is_err() {
            return false;
        }
        if self.error.is_none() {
            self.error = Some((idx, status));
        }
        true
    }

    pub(crate) fn is_idle(&self) -> bool {
        self.q.is_empty()
    }

    /// Send WQEs that can still be posted.
    pub(crate) fn free(&self) -> usize {
        self.q.free()
    }

    pub(crate) fn next_deadline(&self) -> Option<u64> {
        match (self.retry_deadline, self.rnr_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn outstanding(&self) -> bool {
        self.comp_psn != self.sent_psn
    }

    /// Is `psn` one of the packets sent and not yet acknowledged (the
    /// window in which responses are current)?
    pub(super) fn in_flight(&self, psn: Psn) -> bool {
        !psn.before(self.comp_psn) && psn.before(self.sent_psn)
    }

    /// Restart transmission at `psn`, which must lie in a started WQE or
    /// equal `sent_psn` (everything started has been acknowledged).
    pub(super) fn rewind(&mut self, cfg: &QpConfig, psn: Psn) {
        let mut i = 0;
        while let Some(w) = self.q.get(i) {
            if !w.started {
                break;
            }
            if w.contains(psn) {
                self.send_rel = i;
                self.send_off = if w.wr.op.is_atomic() {
                    0
                } else {
                    psn.since(w.first_psn).saturating_mul(cfg.mtu)
                };
                self.next_psn = psn;
                self.retry_deadline = None;
                return;
            }
            i = i.saturating_add(1);
        }
        if psn == self.sent_psn {
            // Every started WQE is behind `psn`: resume with the first
            // unstarted one.
            self.send_rel = i;
            self.send_off = 0;
            self.next_psn = psn;
            self.retry_deadline = None;
        }
    }

    /// Start a retransmission from `psn` unless one from there is already
    /// under way. Returns true if the retry budget is exhausted (fatal).
    ///
    /// The retransmission sends its first packet twice. A retry is only
    /// needed after a loss, and each one spends the retry budget unless the
    /// answer to that first packet gets back: with one copy, a link that
    /// loses a fraction p of the packets each way wastes a retry with
    /// probability about 2p (20% at 10% loss, where the seven retries of
    /// `retry_cnt` 7 ran out once in about 260,000 simulated atomics); with
    /// two copies, about (2p)^2. The responder treats the second copy as
    /// any duplicate: an ACK, or a replay from its READ/atomic history,
    /// never a second execution.
    pub(super) fn retry_from(&mut self, cfg: &QpConfig, ctr: &mut Counters, psn: Psn) -> bool {
        if self.last_rewind == Some(psn) {
            return false;
        }
        if self.retry_left == 0 {
            ctr.count(|c| &mut c.retry_exceeded);
            self.error = Some((0, WcStatus::RetryExcErr));
            return true;
        }
        self.retry_left = self.retry_left.saturating_sub(1);
        ctr.count(|c| &mut c.retries);
        // A timeout's drop to the floor (`on_timer`) follows this cut: one
        // loss, one count.
        if self.cwnd.lost() {
            ctr.count(|c| &mut c.window_cuts);
        }
        self.rewind(cfg, psn);
        self.last_rewind = Some(psn);
        self.send_twice = Some(psn);
        false
    }

    pub(crate) fn on_timer(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        ctr: &mut Counters,
    ) -> bool {
        let now = env.clock.now_us();
        if self.rnr_deadline.is_some_and(|d| now >= d) {
            self.rnr_deadline = None;
        }
        if self.retry_deadline.is_some_and(|d| now >= d) {
            self.retry_deadline = None;
            if self.outstanding() {
                if self.tail_unasked {
                    // The newest request asked for no ACK, and none came
                    // for the ones before it either: send what is
                    // unacknowledged again, its newest packet asking this
                    // time. The responder answers a duplicate with an ACK,
                    // and a first copy (the original was lost) by its
                    // AckReq. No retry is spent and the window stays:
                    // nothing needs to have been lost. If this gets no
                    // answer either, the next timeout is a loss.
                    self.tail_unasked = false;
                    let psn = self.comp_psn;
                    self.rewind(cfg, psn);
                    self.last_rewind = Some(psn);
                    return false;
                }
                ctr.count(|c| &mut c.timeouts);
                // A timeout always retransmits, even if a rewind to the
                // same PSN happened before.
                self.last_rewind = None;
                let psn = self.comp_psn;
                let fatal = self.retry_from(cfg, ctr, psn);
                self.cwnd.timed_out();
                return fatal;
            }
        }
        false
    }

    /// Note forward progress: reset retry budgets and the ACK timer. If
    /// the responder acknowledged packets a rewind had queued for
    /// retransmission, transmission resumes after them instead of sending
    /// them again.
    pub(super) fn progress(&mut self, env: &Env<'_>, cfg: &QpConfig) {
        if self.next_psn.before(self.comp_psn) {
            self.rewind(cfg, self.comp_psn);
        }
        self.cwnd.acknowledged(self.comp_psn);
        self.retry_left = cfg.retry_cnt;
        self.rnr_left = cfg.rnr_retry;
        self.last_rewind = None;
        self.retry_deadline = if self.outstanding() {
            Some(env.clock.now_us().saturating_add(cfg.timeout_us))
        } else {
            None
        };
    }

    /// Pop the oldest WQE and report it; on success, also the local
    /// operations behind it that have run (they wait only for their turn).
    pub(super) fn complete_front(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        ctr: &mut Counters,
        status: WcStatus,
    ) {
        self.pop_front(env, cfg, ctr, status);
        if status != WcStatus::Success {
            return;
        }
        while self
            .q
            .front()
            .is_some_and(|w| w.started && w.wr.op.is_local())
        {
            self.pop_front(env, cfg, ctr, WcStatus::Success);
        }
    }

    fn pop_front(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        ctr: &mut Counters,
        status: WcStatus,
    ) {
        let Some(w) = self.q.pop() else { return };
        if w.started && w.wr.op.is_read_or_atomic() {
            self.rd_started = self.rd_started.saturating_sub(1);
        }
        if status == WcStatus::Success
            && matches!(
                w.wr.op,
                WrOp::Send | WrOp::SendWithImm(_) | WrOp::SendWithInv(_)
            )
        {
            ctr.count(|c| &mut c.sends_sent);
        }
        self.send_rel = self.send_rel.saturating_sub(1);
        self.error = self.error.and_then(|(i, s)| Some((i.checked_sub(1)?, s)));
        if w.started {
            let end = w.first_psn.add(w.npkts);
            if end.after(self.comp_psn) {
                self.comp_psn = end;
            }
        }
        if status != WcStatus::Success || w.wr.signaled {
            env.cq.send_completion(&wc(cfg, &w.wr, status));
        }
    }

    /// Complete every WQE: the failed one with its error, the rest flushed.
    pub(crate) fn flush(&mut self, env: &mut Env<'_>, cfg: &QpConfig) {
        let mut i = 0usize;
        while let Some(w) = self.q.pop() {
            let status = match self.error {
                Some((j, s)) if j == i => s,
                _ => WcStatus::WrFlushErr,
            };
            env.cq.send_completion(&wc(cfg, &w.wr, status));
            i = i.saturating_add(1);
        }
        self.error = None;
        self.rd_started = 0;
        self.send_rel = 0;
        self.send_off = 0;
        self.next_psn = self.sent_psn;
        self.comp_psn = self.sent_psn;
        self.cwnd.restart_at(self.sent_psn);
        self.retry_deadline = None;
        self.rnr_deadline = None;
        self.tail_unasked = false;
    }

    /// May the WQE at `send_rel` be started now?
    fn may_start(&self, cfg: &QpConfig, w: &SendWqe) -> bool {
        let rd = self.rd_started;
        if w.wr.fence && rd > 0 {
            return false;
        }
        if w.wr.op.is_read_or_atomic() && rd >= usize::from(cfg.max_rd_atomic) {
            return false;
        }
        true
    }

    /// Transmit at most one request packet.
    pub(crate) fn poll_tx(&mut self, env: &mut Env<'_>, cfg: &QpConfig, ctr: &mut Counters) -> Tx {
        if self.rnr_deadline.is_some() {
            return Tx::Idle;
        }
        let Some(mut w) = self.q.get(self.send_rel).copied() else {
            return Tx::Idle;
        };
        // UC waits for no ACK: nothing is in flight but the message being
        // sent.
        let reliable = cfg.transport == Transport::Rc;
        if reliable && self.next_psn.since(self.comp_psn) >= self.cwnd.size() {
            return Tx::Idle;
        }
        if let WrOp::Local(op) = w.wr.op {
            return self.run_local(env, cfg, ctr, w, op);
        }
        if !w.started {
            if !self.may_start(cfg, &w) {
                return Tx::Idle;
            }
            w.first_psn = self.next_psn;
            w.started = true;
            if w.wr.op.is_read_or_atomic() {
                self.rd_started = self.rd_started.saturating_add(1);
            }
            if let Some(slot) = self.q.get_mut(self.send_rel) {
                *slot = w;
            }
        }
        let pkt_idx = self.send_off.checked_div(cfg.mtu).unwrap_or(0);
        let psn = w.first_psn.add(pkt_idx);
        let span = self.segment_span(cfg, &w, pkt_idx, psn);
        // Built here and filled in place: returned, the headers would be
        // copied once more per packet.
        let mut hdr = Headers::new(BthRepr {
            pkey: cfg.pkey,
            dest_qpn: cfg.dest_qpn,
            psn,
            ..BthRepr::default()
        });
        let (payload_len, last) = request_headers(cfg, &w, self.send_off, pkt_idx, span, &mut hdr);
        // The end of a SEND or WRITE asks for an ACK only when something
        // waits for it: a completion, a local operation queued behind it
        // (it runs once everything before it has completed), or, as the
        // newest request of a full queue, the posts that wait for room.
        // One ACK acknowledges every earlier PSN, so a stream of
        // unsignaled messages gets one ACK per ACK_EVERY packets or
        // signaled message, not one per message, even when each comes on a
        // doorbell of its own. The newest request sent again after a
        // timeout asks too: the timer waits for that ACK. READs and
        // atomics are answered anyway.
        if last && !w.wr.signaled && !w.wr.op.is_read_or_atomic() {
            let waits = match self.q.get(self.send_rel.saturating_add(1)) {
                Some(next) => next.wr.op.is_local(),
                None => self.q.free() == 0 || self.sent_psn.after(psn),
            };
            if !waits {
                hdr.bth.ack_req = false;
            }
        }
        // Ask for an ACK every ACK_EVERY packets (of one long message or of
        // many short ones) and when the window is about to close, so the
        // window slides and the ACK timer sees progress instead of waiting
        // for the end of a burst.
        let inflight = self.next_psn.since(self.comp_psn).saturating_add(span);
        let ack_due = (psn.value() % ACK_EVERY).saturating_add(span) >= ACK_EVERY;
        if reliable && (ack_due || inflight >= self.cwnd.size()) {
            hdr.bth.ack_req = true;
        }
        let body = if payload_len == 0 {
            Body::Empty
        } else if let WrOp::AtomicWrite { value } = &w.wr.op {
            // The value travels in the request itself.
            Body::Bytes(value)
        } else {
            Body::Memory(PayloadRef {
                key: w.wr.sge.lkey,
                va: w.wr.sge.addr.wrapping_add(u64::from(self.send_off)),
                len: payload_len,
                access: Access::LocalRead,
            })
        };
        match emit(env, &hdr, body, span) {
            Ok(()) => {}
            Err(EmitFail::Busy) => return Tx::Idle,
            Err(EmitFail::Build) => return self.local_error(WcStatus::LocQpOpErr),
            Err(EmitFail::Memory) => return self.local_error(WcStatus::LocProtErr),
        }
        if reliable && self.send_twice.take() == Some(psn) {
            // The first packet of a retransmission: stay on it, so the
            // next call sends it again.
            return Tx::Sent;
        }
        if last {
            self.send_rel = self.send_rel.saturating_add(1);
            self.send_off = 0;
            self.next_psn = w.first_psn.add(w.npkts);
        } else {
            self.send_off = self.send_off.saturating_add(cfg.mtu.saturating_mul(span));
            self.next_psn = psn.add(span);
        }
        if self.next_psn.after(self.sent_psn) {
            self.sent_psn = self.next_psn;
        }
        if reliable && self.next_psn == self.sent_psn {
            self.tail_unasked = !hdr.bth.ack_req;
        }
        if !reliable {
            // Unreliable: sent is done. Every request before this one
            // completed when it was sent, so this one is the oldest.
            if last {
                self.complete_front(env, cfg, ctr, WcStatus::Success);
            }
        } else if self.retry_deadline.is_none() {
            self.retry_deadline = Some(env.clock.now_us().saturating_add(cfg.timeout_us));
        }
        Tx::Sent
    }

    /// Run the local operation at `send_rel` (once: a rewind passes over
    /// it). A registration runs when reached and completes with the request
    /// before it; an invalidation waits until every request before it has
    /// completed, since a retransmission of one of them may still read
    /// through the key. A failure fails the QP with
    /// [`LocalOp::error_status`] for it, as rxe does.
    fn run_local(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        ctr: &mut Counters,
        mut w: SendWqe,
        op: LocalOp,
    ) -> Tx {
        if !w.started {
            let waits = matches!(op, LocalOp::Invalidate { .. }) && self.send_rel != 0;
            if waits || !self.may_start(cfg, &w) {
                return Tx::Idle;
            }
            if env.mem.local(op).is_err() {
                return self.local_error(op.error_status());
            }
            w.first_psn = self.next_psn;
            w.started = true;
            if let Some(slot) = self.q.get_mut(self.send_rel) {
                *slot = w;
            }
        }
        if self.send_rel == 0 {
            self.complete_front(env, cfg, ctr, WcStatus::Success);
        } else {
            self.send_rel = self.send_rel.saturating_add(1);
        }
        Tx::Ran
    }

    /// How many PSNs the request packet at `psn`, packet `pkt_idx` of `w`,
    /// stands for: 1, or on a QP that sends local segments
    /// ([`QpConfig::segment_pkts`]) as many of the SEND's or WRITE's
    /// packets as are left, the segment holds and the window has room for.
    /// Only a packet never sent before is a segment: a retransmission goes
    /// one PSN at a time, so whatever the responder already took, the
    /// packets sent again never reach across its expected PSN.
    fn segment_span(&self, cfg: &QpConfig, w: &SendWqe, pkt_idx: u32, psn: Psn) -> u32 {
        if cfg.segment_pkts <= 1 || !w.wr.op.is_send_or_write() || psn.before(self.sent_psn) {
            return 1;
        }
        let left = w.npkts.saturating_sub(pkt_idx);
        let room = if cfg.transport == Transport::Rc {
            self.cwnd
                .size()
                .saturating_sub(self.next_psn.since(self.comp_psn))
        } else {
            u32::MAX
        };
        cfg.segment_pkts.min(left).min(room).max(1)
    }

    fn local_error(&mut self, status: WcStatus) -> Tx {
        self.error = Some((self.send_rel, status));
        Tx::Fatal
    }
}

/// Build a completion for `wr`.
pub(crate) fn wc(cfg: &QpConfig, wr: &SendWr, status: WcStatus) -> WorkCompletion {
    WorkCompletion {
        wr_id: wr.wr_id,
        status,
        opcode: wr.op.wc_opcode(),
        byte_len: wr.sge.length,
        imm: None,
        invalidated_rkey: None,
        qpn: cfg.qpn,
    }
}

/// Fills in `h`, which holds the BTH's P_Key, destination QP and PSN, as
/// the headers of packet `pkt_idx` of `w` (starting at byte `off`) standing
/// for `span` PSNs (more than 1 only for a local segment of a SEND or
/// WRITE); returns the payload length, and whether it is the WQE's last
/// request packet.
fn request_headers(
    cfg: &QpConfig,
    w: &SendWqe,
    off: u32,
    pkt_idx: u32,
    span: u32,
    h: &mut Headers,
) -> (u32, bool) {
    let wr = &w.wr;
    let len = wr.sge.length;
    let remote_va = wr.remote_addr.wrapping_add(u64::from(off));
    let atomic = |swap_add, compare| AtomicEthRepr {
        va: wr.remote_addr,
        rkey: wr.rkey,
        swap_add,
        compare,
    };
    let (opcode, payload, last) = match wr.op {
        WrOp::Read => {
            h.reth = Some(RethRepr {
                va: remote_va,
                rkey: wr.rkey,
                len: len.saturating_sub(off),
            });
            (rc::RDMA_READ_REQUEST, 0, true)
        }
        WrOp::CmpSwap { compare, swap } => {
            h.atomic = Some(atomic(swap, compare));
            (rc::COMPARE_SWAP, 0, true)
        }
        WrOp::FetchAdd { add } => {
            h.atomic = Some(atomic(add, 0));
            (rc::FETCH_ADD, 0, true)
        }
        WrOp::AtomicWrite { .. } => {
            h.reth = Some(RethRepr {
                va: wr.remote_addr,
                rkey: wr.rkey,
                len: 8,
            });
            (rc::ATOMIC_WRITE, 8, true)
        }
        WrOp::Flush {
            placement,
            selectivity,
        } => {
            h.feth = Some(FethRepr {
                placement,
                selectivity,
            });
            h.reth = Some(RethRepr {
                va: wr.remote_addr,
                rkey: wr.rkey,
                len,
            });
            (rc::FLUSH, 0, true)
        }
        op => {
            let first = pkt_idx == 0;
            let last = pkt_idx.saturating_add(span) >= w.npkts;
            let payload = len.saturating_sub(off).min(cfg.mtu.saturating_mul(span));
            let is_write = matches!(op, WrOp::Write | WrOp::WriteWithImm(_));
            if is_write && first {
                h.reth = Some(RethRepr {
                    va: wr.remote_addr,
                    rkey: wr.rkey,
                    len,
                });
            }
            // Position within the message: 0 first, 1 middle, 2 last, 3 only.
            let pos = match (first, last) {
                (true, false) => 0,
                (false, false) => 1,
                (false, true) => 2,
                (true, true) => 3,
            };
            let base = if is_write {
                [
                    rc::RDMA_WRITE_FIRST,
                    rc::RDMA_WRITE_MIDDLE,
                    rc::RDMA_WRITE_LAST,
                    rc::RDMA_WRITE_ONLY,
                ]
            } else {
                [
                    rc::SEND_FIRST,
                    rc::SEND_MIDDLE,
                    rc::SEND_LAST,
                    rc::SEND_ONLY,
                ]
            };
            let mut opcode = base.get(pos).copied().unwrap_or(rc::SEND_ONLY);
            if last {
                match op {
                    WrOp::SendWithImm(imm) | WrOp::WriteWithImm(imm) => {
                        // The *_WITH_IMMEDIATE opcodes follow LAST/ONLY.
                        opcode = opcode.wrapping_add(1);
                        h.imm = Some(imm);
                    }
                    WrOp::SendWithInv(rkey) => {
                        opcode = if first {
                            rc::SEND_ONLY_WITH_INVALIDATE
                        } else {
                            rc::SEND_LAST_WITH_INVALIDATE
                        };
                        h.ieth = Some(rkey);
                    }
                    _ => {}
                }
                h.bth.solicited = wr.solicited;
            }
            (opcode, payload, last)
        }
    };
    // `post` let only SEND and WRITE onto a UC QP, whose opcodes UC has.
    h.bth.opcode = cfg.transport.request_opcode(opcode).unwrap_or(opcode);
    h.bth.ack_req = last && cfg.transport == Transport::Rc;
    (payload, last)
}
