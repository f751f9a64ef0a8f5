//! The connected queue pair (RC or UC): requester, completer and
//! responder.
//!
//! An RC QP acknowledges, retransmits and fails loudly. A UC QP
//! ([`QpConfig::transport`] is [`Transport::Uc`]) carries only SEND and RDMA
//! WRITE, sends no ACKs or NAKs and keeps no timers: its requester completes
//! a request once its last packet is sent, and its responder drops a
//! message that lost a packet, or that it cannot execute, and picks up again
//! at the next message's first packet.
//!
//! A [`Qp`] is driven entirely by its caller: [`Qp::post_send`],
//! [`Qp::post_recv`], [`Qp::on_packet`], [`Qp::on_timer`] and
//! [`Qp::poll_tx`]. It never allocates, never recurses and does a bounded
//! amount of work per call. Its queues live in storage the caller provides
//! ([`Storage`], [`Buffers`]), sized at run time: send WQEs in flight,
//! receive WQEs taken ahead, and responder resources (queued responses and
//! remembered atomic results). [`Arrays`] provides them as arrays.

mod completer;
mod emit;
mod requester;
mod responder;
mod ring;

pub use requester::SendWqe;
use requester::{Requester, Tx};
use responder::Responder;
pub use responder::{AtomicResult, Response};
pub use ring::Slots;

use crate::proto::env::Env;
use crate::proto::packet::{Packet, MAX_PAYLOAD};
use crate::proto::verbs::{RecvWr, SendWr, WcStatus};
use crate::proto::Transport;

/// Static parameters of a connected QP (from INIT→RTR→RTS modify_qp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpConfig {
    /// Transport service: [`Transport::Rc`] or [`Transport::Uc`].
    pub transport: Transport,
    /// Local QP number (24 bits).
    pub qpn: u32,
    /// Remote QP number (24 bits).
    pub dest_qpn: u32,
    /// Partition key.
    pub pkey: u16,
    /// Path MTU in bytes: 256, 512, 1024, 2048 or 4096.
    pub mtu: u32,
    /// Most PSNs one SEND or WRITE request packet, or READ response
    /// packet, may stand for: 1 on a network. Between two QPs of one host,
    /// whose packets never leave memory, a packet may be a *local
    /// segment*: the payload of several
    /// packets of `mtu` bytes (at most [`MAX_PAYLOAD`] bytes in all) under
    /// the headers of the first, taking one PSN for each `mtu` bytes as
    /// the packets it stands for would. Both ends must agree on it: a
    /// responder with 1 takes a segment for a malformed request, a
    /// requester with 1 a segmented READ response for a bad response.
    pub segment_pkts: u32,
    /// First PSN the requester sends.
    pub sq_psn: u32,
    /// First PSN the responder expects.
    pub rq_psn: u32,
    /// Transport retries after a timeout or sequence NAK (0..=7).
    pub retry_cnt: u8,
    /// RNR retries (0..=6; 7 means retry forever).
    pub rnr_retry: u8,
    /// RNR timer code this responder advertises in RNR NAKs.
    pub min_rnr_timer: u8,
    /// Local ACK timeout in microseconds.
    pub timeout_us: u64,
    /// Maximum outstanding READ/atomic requests (initiator depth).
    pub max_rd_atomic: u8,
    /// Maximum unacknowledged packets in flight: the congestion window's
    /// ceiling (see [`crate::proto::cwnd`]).
    pub max_inflight_pkts: u32,
    /// Remote operations the responder executes (the QP's access flags);
    /// others are answered with an Invalid Request NAK.
    pub remote: RemoteAccess,
}

/// Remote operations a QP allows its peer (`IB_ACCESS_REMOTE_*` and `_FLUSH_*` of the QP's
/// access flags); the memory region's own flags are checked as well.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RemoteAccess {
    /// RDMA READ.
    pub read: bool,
    /// RDMA WRITE.
    pub write: bool,
    /// Atomic operations.
    pub atomic: bool,
    /// FLUSH for global visibility (`IB_ACCESS_FLUSH_GLOBAL`).
    pub flush_global: bool,
    /// FLUSH for persistence (`IB_ACCESS_FLUSH_PERSISTENT`).
    pub flush_persistent: bool,
}

impl RemoteAccess {
    /// Every remote operation allowed.
    pub const ALL: Self = RemoteAccess {
        read: true,
        write: true,
        atomic: true,
        flush_global: true,
        flush_persistent: true,
    };
}

impl QpConfig {
    /// The most payload one packet carries: `mtu`, or on a QP that takes
    /// local segments `segment_pkts` times that.
    pub(crate) fn segment_bytes(&self) -> u32 {
        self.mtu.saturating_mul(self.segment_pkts.max(1))
    }

    /// A configuration with common defaults for the given QP numbers.
    pub const fn new(qpn: u32, dest_qpn: u32) -> Self {
        QpConfig {
            transport: Transport::Rc,
            qpn,
            dest_qpn,
            pkey: 0xffff,
            mtu: 1024,
            segment_pkts: 1,
            sq_psn: 0,
            rq_psn: 0,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 1,
            timeout_us: 4_000,
            max_rd_atomic: 4,
            max_inflight_pkts: 64,
            remote: RemoteAccess::ALL,
        }
    }
}

/// Why a configuration or work request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QpError {
    /// MTU is not a power of two in 256..=4096, or
    /// [`QpConfig::segment_pkts`] is 0 or makes a segment longer than
    /// [`MAX_PAYLOAD`].
    BadMtu,
    /// A queue has zero capacity, or `RD < max_rd_atomic + 2`.
    BadCapacity,
    /// The queue is full.
    QueueFull,
    /// Invalid work request (e.g. atomic with an SGE that is not 8 bytes,
    /// or a READ on a UC QP).
    InvalidWr,
    /// The transport is neither RC nor UC.
    BadTransport,
}

/// Life-cycle state (only the connected states matter here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QpState {
    /// Ready to send (and receive).
    Rts,
    /// Error: everything is flushed.
    Error,
}

/// Event counters, all monotonically increasing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// Packets sent.
    pub tx_packets: u64,
    /// Packets accepted by the QP.
    pub rx_packets: u64,
    /// Packets dropped: wrong QPN, transport or state.
    pub rx_dropped: u64,
    /// Requests with a PSN after the expected one.
    pub seq_errors: u64,
    /// Duplicate requests seen by the responder.
    pub duplicates: u64,
    /// RNR NAKs sent by the responder.
    pub rnr_naks_sent: u64,
    /// Fatal NAKs sent by the responder.
    pub naks_sent: u64,
    /// Requests dropped because the response queue was full.
    pub resp_queue_full: u64,
    /// Retransmission rounds started by the requester.
    pub retries: u64,
    /// ACK timeouts.
    pub timeouts: u64,
    /// Times a loss made the requester's congestion window smaller (a loss
    /// with the window at its floor is not counted).
    pub window_cuts: u64,
    /// RNR NAKs received.
    pub rnr_naks_received: u64,
    /// Stale or unexpected responses ignored by the completer.
    pub stale_responses: u64,
    /// PSN sequence error NAKs received.
    pub seq_naks_received: u64,
    /// Response packets (ACKs, NAKs, READ responses, atomic ACKs) handed
    /// to the completer.
    pub responses_received: u64,
    /// Send requests failed because the transport retries ran out.
    pub retry_exceeded: u64,
    /// Send requests failed because the RNR retries ran out.
    pub rnr_retry_exceeded: u64,
    /// SEND requests (any flavour) completed successfully.
    pub sends_sent: u64,
    /// Receive requests completed successfully (SEND, WRITE with immediate).
    pub sends_received: u64,
    /// UC request packets dropped without a word to the requester: the
    /// rest of a message that lost a packet, or of one the responder could
    /// not execute (no receive WQE, a bad key, too long).
    pub uc_dropped: u64,
    /// UC messages dropped because no receive WQE was posted for them
    /// (counted once per message, also in [`Counters::uc_dropped`]). RC
    /// answers such a request with an RNR NAK instead
    /// ([`Counters::rnr_naks_sent`]).
    pub out_of_buffer: u64,
    /// Moves whenever any counter but the packet counts
    /// ([`Counters::tx_packets`], [`Counters::rx_packets`],
    /// [`Counters::responses_received`]) does: a reader that kept its last
    /// value knows, while it has not moved, that none of those did either,
    /// and need not look at them one by one.
    pub changes: u64,
}

impl Counters {
    /// Adds one to the counter `field` picks (and to
    /// [`Counters::changes`]).
    pub(crate) fn count(&mut self, field: fn(&mut Self) -> &mut u64) {
        let f = field(self);
        *f = f.wrapping_add(1);
        self.changes = self.changes.wrapping_add(1);
    }
}

/// Where a QP's queues live: the storage types of its four queues.
pub trait Storage {
    /// Send WQEs in flight (posted and not completed).
    type Send: Slots<SendWqe>;
    /// Receive WQEs taken ahead of the packets that consume them.
    type Recv: Slots<RecvWr>;
    /// Queued responses (ACKs, READ responses, atomic ACKs): at least the
    /// responder depth plus two.
    type Resp: Slots<Response>;
    /// Executed atomics remembered for duplicates.
    type Atomic: Slots<AtomicResult>;
}

/// The storage of one QP's queues.
pub struct Buffers<S: Storage> {
    /// Send WQEs.
    pub send: S::Send,
    /// Receive WQEs.
    pub recv: S::Recv,
    /// Responses.
    pub resp: S::Resp,
    /// Atomic results.
    pub atomic: S::Atomic,
}

/// Queues in arrays of fixed sizes: `SQ` send WQEs, `RQ` receive WQEs,
/// `RD` responses and atomic results.
#[derive(Debug)]
pub struct Arrays<const SQ: usize, const RQ: usize, const RD: usize>;

impl<const SQ: usize, const RQ: usize, const RD: usize> Storage for Arrays<SQ, RQ, RD> {
    type Send = [Option<SendWqe>; SQ];
    type Recv = [Option<RecvWr>; RQ];
    type Resp = [Option<Response>; RD];
    type Atomic = [Option<AtomicResult>; RD];
}

impl<const SQ: usize, const RQ: usize, const RD: usize> Buffers<Arrays<SQ, RQ, RD>> {
    /// Empty arrays.
    pub fn arrays() -> Self {
        Buffers {
            send: [None; SQ],
            recv: [None; RQ],
            resp: [None; RD],
            atomic: [None; RD],
        }
    }
}

/// A QP whose queues are arrays.
pub type ArrayQp<const SQ: usize, const RQ: usize, const RD: usize> = Qp<Arrays<SQ, RQ, RD>>;

/// A connected queue pair (RC or UC).
pub struct Qp<S: Storage> {
    cfg: QpConfig,
    state: QpState,
    req: Requester<S>,
    resp: Responder<S>,
    counters: Counters,
}

impl<S: Storage> core::fmt::Debug for Qp<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Qp")
            .field("cfg", &self.cfg)
            .field("state", &self.state)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl<S: Storage> Qp<S> {
    /// Create a QP in RTS with the given configuration, its queues in
    /// `bufs`.
    pub fn new(cfg: QpConfig, bufs: Buffers<S>) -> Result<Self, QpError> {
        if !cfg.mtu.is_power_of_two() || !(256..=4096).contains(&cfg.mtu) {
            return Err(QpError::BadMtu);
        }
        let segment = cfg.segment_pkts.checked_mul(cfg.mtu);
        if cfg.segment_pkts == 0 || segment.is_none_or(|b| b as usize > MAX_PAYLOAD) {
            return Err(QpError::BadMtu);
        }
        if !matches!(cfg.transport, Transport::Rc | Transport::Uc) {
            return Err(QpError::BadTransport);
        }
        let rd_needed = usize::from(cfg.max_rd_atomic).saturating_add(2);
        let sq = bufs.send.slots().len();
        if sq == 0
            || bufs.recv.slots().is_empty()
            || bufs.resp.slots().len() < rd_needed
            || bufs.atomic.slots().is_empty()
            || sq > u32::MAX as usize
        {
            return Err(QpError::BadCapacity);
        }
        Ok(Qp {
            cfg,
            state: QpState::Rts,
            req: Requester::new(&cfg, bufs.send),
            resp: Responder::new(&cfg, bufs.recv, bufs.resp, bufs.atomic),
            counters: Counters::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &QpConfig {
        &self.cfg
    }

    /// Current state.
    pub fn state(&self) -> QpState {
        self.state
    }

    /// The fatal NAK with which the responder moved the QP to the error
    /// state (a class of error the consumer learns of by an asynchronous
    /// event rather than a completion), if that is how the QP failed.
    pub fn responder_failure(&self) -> Option<crate::proto::NakCode> {
        self.resp.failure()
    }

    /// Event counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Queue a send work request. In the error state it is completed at
    /// once with `WR_FLUSH_ERR`. A UC QP refuses what UC cannot carry
    /// (READ, atomics, SEND with invalidate) with [`QpError::InvalidWr`].
    pub fn post_send(&mut self, env: &mut Env<'_>, wr: SendWr) -> Result<(), QpError> {
        self.req.post(env, &self.cfg, self.state, wr)
    }

    /// Fail the QP because of `wr`, a send work request the caller found
    /// invalid before posting it (a bad local key, too long a message):
    /// the requests before it are flushed, `wr` completes with `status`
    /// (or flushed, if the QP had already failed), and everything after it
    /// is flushed.
    pub fn post_send_failed(&mut self, env: &mut Env<'_>, wr: SendWr, status: WcStatus) {
        let status = if self.state == QpState::Error {
            WcStatus::WrFlushErr
        } else {
            status
        };
        let queued = self.req.post_failed(wr, status);
        self.enter_error(env);
        if !queued {
            // No room to queue it behind the others: it still completes
            // after them.
            env.cq
                .send_completion(&requester::wc(&self.cfg, &wr, status));
        }
    }

    /// Queue a receive work request. In the error state it is completed at
    /// once with `WR_FLUSH_ERR`.
    pub fn post_recv(&mut self, env: &mut Env<'_>, wr: RecvWr) -> Result<(), QpError> {
        self.resp.post(env, &self.cfg, self.state, wr)
    }

    /// Change the remote operations the responder executes (`modify_qp`
    /// with new access flags).
    pub fn set_remote_access(&mut self, remote: RemoteAccess) {
        self.cfg.remote = remote;
    }

    /// Receive work requests queued in the QP and not yet consumed.
    pub fn recv_queued(&self) -> usize {
        self.resp.queued()
    }

    /// The largest READ/atomic depth (initiator or responder) the QP's
    /// response queue allows: its capacity minus two (one ACK behind a
    /// READ response, one more to NAK).
    pub fn max_rd_atomic(&self) -> usize {
        self.resp.capacity().saturating_sub(2)
    }

    /// How many more send work requests [`Qp::post_send`] accepts now.
    pub fn send_room(&self) -> usize {
        self.req.free()
    }

    /// Set the requester's parameters, which become known only at the move
    /// to RTS (after the QP may already have been receiving in RTR): the
    /// first PSN, retry counts, ACK timeout and initiator depth. Only
    /// allowed while nothing has been posted to the send side.
    pub fn start_requester(
        &mut self,
        sq_psn: u32,
        retry_cnt: u8,
        rnr_retry: u8,
        timeout_us: u64,
        max_rd_atomic: u8,
    ) -> Result<(), QpError> {
        if !self.req.is_idle() {
            return Err(QpError::InvalidWr);
        }
        if usize::from(max_rd_atomic) > self.max_rd_atomic() {
            return Err(QpError::BadCapacity);
        }
        self.cfg.sq_psn = sq_psn;
        self.cfg.retry_cnt = retry_cnt;
        self.cfg.rnr_retry = rnr_retry;
        self.cfg.timeout_us = timeout_us;
        self.cfg.max_rd_atomic = max_rd_atomic;
        self.req.restart(&self.cfg);
        Ok(())
    }

    /// Handle a received packet addressed to this QP whose ICRC has already
    /// been verified.
    pub fn on_packet(&mut self, env: &mut Env<'_>, pkt: &Packet<'_>) {
        if pkt.hdr.bth.dest_qpn != self.cfg.qpn || pkt.info.transport() != self.cfg.transport {
            self.counters.count(|c| &mut c.rx_dropped);
            return;
        }
        self.counters.rx_packets = self.counters.rx_packets.wrapping_add(1);
        let fatal = if pkt.info.is_response() {
            self.counters.responses_received = self.counters.responses_received.wrapping_add(1);
            self.req
                .on_response(env, &self.cfg, &mut self.counters, pkt)
        } else {
            self.resp
                .on_request(env, &self.cfg, self.state, &mut self.counters, pkt)
        };
        if fatal {
            self.enter_error(env);
        }
    }

    /// Fire expired timers (ACK timeout, RNR wait).
    pub fn on_timer(&mut self, env: &mut Env<'_>) {
        if self.req.on_timer(env, &self.cfg, &mut self.counters) {
            self.enter_error(env);
        }
    }

    /// Earliest time at which [`Qp::on_timer`] has work to do.
    pub fn next_deadline(&self) -> Option<u64> {
        self.req.next_deadline()
    }

    /// Transmit up to `budget` packets: queued responses first, then
    /// requests. Returns the number of packets sent.
    pub fn poll_tx(&mut self, env: &mut Env<'_>, budget: usize) -> usize {
        let mut sent = 0usize;
        // Local operations send nothing but take a turn of the budget.
        let mut turns = 0usize;
        while turns < budget {
            turns = turns.saturating_add(1);
            let more = if self.resp.poll_tx(env, &self.cfg) {
                true
            } else if self.state != QpState::Rts {
                false
            } else {
                match self.req.poll_tx(env, &self.cfg, &mut self.counters) {
                    Tx::Sent => true,
                    Tx::Ran => continue,
                    Tx::Idle => false,
                    Tx::Fatal => {
                        self.enter_error(env);
                        true
                    }
                }
            };
            if !more {
                break;
            }
            sent = sent.saturating_add(1);
        }
        self.counters.tx_packets = self
            .counters
            .tx_packets
            .wrapping_add(u64::try_from(sent).unwrap_or(0));
        sent
    }

    /// True if nothing is queued for transmission or awaiting a response.
    pub fn is_idle(&self) -> bool {
        self.req.is_idle() && self.resp.is_idle()
    }

    /// Move to the error state for a local reason (the consumer asked, or a
    /// completion could not be delivered): like [`Qp::enter_error`], and
    /// nothing queued is sent any more, not even ACKs of requests already
    /// executed, so the requester does not take them as delivered.
    pub fn abort(&mut self, env: &mut Env<'_>) {
        self.resp.discard_responses();
        self.enter_error(env);
    }

    /// Move to the error state, flushing both work queues.
    pub fn enter_error(&mut self, env: &mut Env<'_>) {
        self.state = QpState::Error;
        self.req.flush(env, &self.cfg);
        self.resp.flush(env, &self.cfg);
    }
}
