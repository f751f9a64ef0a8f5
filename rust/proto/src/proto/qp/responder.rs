//! The responder: checks PSNs, detects duplicates, executes SEND, WRITE,
//! READ, atomic, ATOMIC WRITE and FLUSH requests through [`MemoryAccess`],
//! consumes receive WQEs, and queues ACKs, NAKs, READ responses and atomic
//! ACKs.
//!
//! On UC it answers nothing: a message that lost a packet, broke the
//! opcode sequence or cannot be executed for the requester's fault (no
//! receive WQE, a bad key, a bad length) is dropped to its end, and the
//! next FIRST or ONLY packet starts afresh whatever its PSN. A partly
//! received SEND leaves its receive WQE for the next message.
//!
//! [`MemoryAccess`]: crate::proto::env::MemoryAccess

use super::emit::{emit, Body, EmitFail};
use super::requester::npkts;
use super::ring::{Ring, Slots};
use super::{Counters, QpConfig, QpError, QpState, Storage};
use crate::proto::env::{Access, AtomicOp, Env, PayloadRef, Placement};
use crate::proto::headers::{AethRepr, BthRepr, FethRepr};
use crate::proto::opcode::{mask, rc};
use crate::proto::packet::{Headers, Packet};
use crate::proto::psn::{Credits, Msn, NakCode, Syndrome};
use crate::proto::verbs::{RecvWr, WcOpcode, WcStatus, WorkCompletion};
use crate::proto::{Psn, Transport};

/// A response waiting to be transmitted: an element of the responder's
/// response queue ([`Storage::Resp`]).
#[derive(Debug, Clone, Copy)]
pub enum Response {
    /// ACK, RNR NAK or NAK.
    Ack {
        /// PSN acknowledged.
        psn: Psn,
        /// ACK, RNR NAK or NAK code.
        syndrome: Syndrome,
        /// MSN at the time.
        msn: Msn,
    },
    /// Result of an atomic (fresh or replayed from history).
    AtomicAck {
        /// PSN of the atomic request.
        psn: Psn,
        /// The word's value before the operation.
        orig: u64,
        /// MSN at the time.
        msn: Msn,
    },
    /// The answer to an ATOMIC WRITE or a FLUSH: an RDMA READ RESPONSE
    /// ONLY with an ACK and no payload.
    EmptyReadResponse {
        /// PSN of the request.
        psn: Psn,
        /// MSN at the time.
        msn: Msn,
    },
    /// READ response stream.
    Read {
        /// The next packet's PSN.
        psn: Psn,
        /// Address of the next byte.
        va: u64,
        /// Key of the region read.
        rkey: u32,
        /// Bytes still to send.
        remaining: u32,
        /// The next packet is the first of the response.
        first: bool,
        /// MSN at the time.
        msn: Msn,
    },
}

/// An atomic the responder executed, remembered to answer a duplicate of
/// its request: an element of [`Storage::Atomic`].
pub type AtomicResult = (Psn, u64);

/// The multi-packet message currently being received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InMsg {
    None,
    Send {
        off: u32,
    },
    Write {
        va: u64,
        rkey: u32,
        off: u32,
        len: u32,
    },
}

/// Responder state of a QP (receive side).
pub(crate) struct Responder<S: Storage> {
    rq: Ring<RecvWr, S::Recv>,
    /// Error status for the receive WQE at the head when flushing.
    rq_error: Option<WcStatus>,
    epsn: Psn,
    msn: Msn,
    cur: InMsg,
    /// A sequence-error NAK was sent and the expected PSN has not arrived.
    nak_sent: bool,
    /// UC: the current message is being dropped, up to the next packet
    /// that starts one.
    dropping: bool,
    resp_q: Ring<Response, S::Resp>,
    /// Recently executed atomics, for replaying duplicates.
    atomics: Ring<AtomicResult, S::Atomic>,
    /// The fatal NAK this responder sent, if any.
    failed: Option<NakCode>,
}

/// Does the incoming packet need a response slot that is not available?
fn no_room<B: Slots<Response>>(q: &Ring<Response, B>) -> bool {
    // Keep one slot for an ACK/NAK behind every READ/atomic response.
    q.free() < 2
}

impl<S: Storage> Responder<S> {
    pub(crate) fn new(cfg: &QpConfig, recv: S::Recv, resp: S::Resp, atomic: S::Atomic) -> Self {
        Responder {
            rq: Ring::new(recv),
            rq_error: None,
            epsn: Psn::new(cfg.rq_psn),
            msn: Msn::new(0),
            cur: InMsg::None,
            nak_sent: false,
            dropping: false,
            resp_q: Ring::new(resp),
            atomics: Ring::new(atomic),
            failed: None,
        }
    }

    pub(crate) fn post(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        state: QpState,
        wr: RecvWr,
    ) -> Result<(), QpError> {
        if state == QpState::Error {
            env.cq
                .recv_completion(&recv_wc(cfg, &wr, WcStatus::WrFlushErr));
            return Ok(());
        }
        self.rq.push(wr).map_err(|_| QpError::QueueFull)
    }

    /// Responses the queue holds at most.
    pub(crate) fn capacity(&self) -> usize {
        self.resp_q.capacity()
    }

    /// Receive WQEs posted and not yet consumed.
    pub(crate) fn queued(&self) -> usize {
        self.rq.len()
    }

    pub(crate) fn is_idle(&self) -> bool {
        self.resp_q.is_empty()
    }

    /// Flush all receive WQEs. Queued responses (e.g. the NAK that caused
    /// the error) are still transmitted.
    pub(crate) fn flush(&mut self, env: &mut Env<'_>, cfg: &QpConfig) {
        while let Some(wr) = self.rq.pop() {
            let status = self.rq_error.take().unwrap_or(WcStatus::WrFlushErr);
            env.cq.recv_completion(&recv_wc(cfg, &wr, status));
        }
        self.cur = InMsg::None;
        self.dropping = false;
    }

    /// Drops every queued ACK, NAK and response.
    pub(crate) fn discard_responses(&mut self) {
        while self.resp_q.pop().is_some() {}
    }

    fn queue_ack(&mut self, psn: Psn, syndrome: Syndrome) {
        let ack = Response::Ack {
            psn,
            syndrome,
            msn: self.msn,
        };
        if let Syndrome::Ack(_) = syndrome {
            if let Some(
                last @ Response::Ack {
                    syndrome: Syndrome::Ack(_),
                    ..
                },
            ) = self.resp_q.back_mut()
            {
                // Coalesce: a newer ACK covers an older one.
                *last = ack;
                return;
            }
        }
        let _ = self.resp_q.push(ack);
    }

    fn fatal(&mut self, ctr: &mut Counters, psn: Psn, code: NakCode) -> bool {
        ctr.count(|c| &mut c.naks_sent);
        self.queue_ack(psn, Syndrome::Nak(code));
        self.failed = Some(code);
        true
    }

    /// A request the requester got wrong: RC fails the QP with a NAK of
    /// `code`; UC drops what is left of the message and goes on.
    fn reject(&mut self, cfg: &QpConfig, ctr: &mut Counters, psn: Psn, code: NakCode) -> bool {
        if cfg.transport == Transport::Uc {
            self.drop_message(ctr);
            return false;
        }
        self.fatal(ctr, psn, code)
    }

    /// UC: drop this packet and the rest of its message. A receive WQE the
    /// message had started to fill stays for the next one.
    fn drop_message(&mut self, ctr: &mut Counters) {
        ctr.count(|c| &mut c.uc_dropped);
        self.dropping = true;
        self.cur = InMsg::None;
    }

    /// The receive WQE at the head cannot take the data (a local key or
    /// bounds error): it completes with `status` and the QP fails, after a
    /// NAK on RC; UC tells the requester nothing.
    fn local_error(
        &mut self,
        cfg: &QpConfig,
        ctr: &mut Counters,
        psn: Psn,
        status: WcStatus,
    ) -> bool {
        self.rq_error = Some(status);
        if cfg.transport == Transport::Uc {
            return true;
        }
        self.fatal(ctr, psn, NakCode::RemoteOpError)
    }

    /// The NAK with which the responder failed the QP, if it did.
    pub(crate) fn failure(&self) -> Option<NakCode> {
        self.failed
    }

    /// Handle a request packet. Returns true if the QP must enter the
    /// error state.
    pub(crate) fn on_request(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        state: QpState,
        ctr: &mut Counters,
        pkt: &Packet<'_>,
    ) -> bool {
        if state == QpState::Error {
            ctr.count(|c| &mut c.rx_dropped);
            return false;
        }
        let psn = pkt.hdr.bth.psn;
        if cfg.transport == Transport::Uc {
            return self.on_uc_request(env, cfg, ctr, pkt);
        }
        let d = psn.diff(self.epsn);
        if d > 0 {
            ctr.count(|c| &mut c.seq_errors);
            if !self.nak_sent {
                self.nak_sent = true;
                self.queue_ack(self.epsn, Syndrome::Nak(NakCode::PsnSeqError));
            }
            return false;
        }
        if d < 0 {
            ctr.count(|c| &mut c.duplicates);
            self.duplicate(env, cfg, pkt);
            return false;
        }
        let info = pkt.info;
        // Opcode sequence: a message in progress must be continued by the
        // same operation; otherwise a new message must start.
        let seq_ok = match self.cur {
            InMsg::None => info.is_first(),
            InMsg::Send { .. } => info.has(mask::SEND) && !info.is_first(),
            InMsg::Write { .. } => info.has(mask::WRITE) && !info.is_first(),
        };
        let (plen, len_ok) = payload_len(pkt, cfg);
        if !seq_ok || !len_ok {
            return self.fatal(ctr, psn, NakCode::InvalidRequest);
        }
        // Operations the QP does not enable are invalid requests (as if the
        // opcode were not supported), checked before any resource is used.
        let enabled = (!info.has(mask::READ) || cfg.remote.read)
            && (!info.has(mask::WRITE) || cfg.remote.write)
            && (!info.has(mask::ATOMIC_WRITE) || cfg.remote.write)
            && (!info.has(mask::ATOMIC) || cfg.remote.atomic)
            && (!info.has(mask::FLUSH) || flush_enabled(cfg, pkt));
        if !enabled {
            return self.fatal(ctr, psn, NakCode::InvalidRequest);
        }
        if info.has(mask::RWR) && self.rq.is_empty() {
            ctr.count(|c| &mut c.rnr_naks_sent);
            self.nak_sent = false;
            self.queue_ack(psn, Syndrome::RnrNak(cfg.min_rnr_timer));
            return false;
        }
        if (info.has(mask::READ)
            || info.has(mask::ATOMIC)
            || info.has(mask::ATOMIC_WRITE)
            || info.has(mask::FLUSH))
            && no_room(&self.resp_q)
        {
            ctr.count(|c| &mut c.resp_queue_full);
            return false;
        }
        self.nak_sent = false;
        if info.has(mask::SEND) {
            self.send(env, cfg, ctr, pkt, plen)
        } else if info.has(mask::WRITE) {
            self.write(env, cfg, ctr, pkt, plen)
        } else if info.has(mask::READ) {
            self.read(env, cfg, ctr, pkt)
        } else if info.has(mask::ATOMIC) {
            self.atomic(env, ctr, pkt)
        } else if info.has(mask::ATOMIC_WRITE) {
            self.atomic_write(env, ctr, pkt)
        } else if info.has(mask::FLUSH) {
            self.rdma_flush(env, ctr, pkt)
        } else {
            self.fatal(ctr, psn, NakCode::InvalidRequest)
        }
    }

    /// A UC request: checked for sequence (PSN and opcode) and executed,
    /// or dropped with the rest of its message. Returns true if the QP must
    /// enter the error state (a local error only).
    fn on_uc_request(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        ctr: &mut Counters,
        pkt: &Packet<'_>,
    ) -> bool {
        let psn = pkt.hdr.bth.psn;
        let info = pkt.info;
        if info.is_first() {
            // A new message, whatever came before: one cut short (by a
            // lost LAST or by an error) is given up, and the PSN gap, if
            // any, closes here.
            self.dropping = false;
            self.cur = InMsg::None;
            self.epsn = psn;
        } else if self.dropping || psn != self.epsn || self.cur == InMsg::None {
            self.drop_message(ctr);
            return false;
        }
        let continues = match self.cur {
            InMsg::None => true,
            InMsg::Send { .. } => info.has(mask::SEND),
            InMsg::Write { .. } => info.has(mask::WRITE),
        };
        let (plen, len_ok) = payload_len(pkt, cfg);
        // Out of sequence, malformed, not allowed, or (there being no RNR
        // NAK on UC) nowhere to put it: dropped.
        let no_wqe = info.has(mask::RWR) && self.rq.is_empty();
        let refused =
            !continues || !len_ok || (info.has(mask::WRITE) && !cfg.remote.write) || no_wqe;
        if refused {
            if no_wqe {
                ctr.count(|c| &mut c.out_of_buffer);
            }
            self.drop_message(ctr);
            false
        } else if info.has(mask::SEND) {
            self.send(env, cfg, ctr, pkt, plen)
        } else if info.has(mask::WRITE) {
            self.write(env, cfg, ctr, pkt, plen)
        } else {
            self.drop_message(ctr);
            false
        }
    }

    /// Answers the SEND or WRITE packet `pkt` just taken (`epsn` is past
    /// it) with an ACK if it asks for one.
    fn ack_if_needed(&mut self, cfg: &QpConfig, pkt: &Packet<'_>) {
        if cfg.transport != Transport::Rc {
            return;
        }
        // The requester asks for the ACKs it needs (the IB spec lets a
        // responder coalesce the others): an ACK covers every earlier PSN,
        // here the last one the packet (or local segment) stands for.
        if pkt.hdr.bth.ack_req {
            self.queue_ack(self.epsn.sub(1), Syndrome::Ack(Credits::UNLIMITED));
        }
    }

    fn send(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        ctr: &mut Counters,
        pkt: &Packet<'_>,
        plen: u32,
    ) -> bool {
        let psn = pkt.hdr.bth.psn;
        let Some(wqe) = self.rq.front().copied() else {
            // A message in progress always holds a receive WQE.
            return self.reject(cfg, ctr, psn, NakCode::InvalidRequest);
        };
        let off = match self.cur {
            InMsg::Send { off } => off,
            _ => 0,
        };
        let end = off.saturating_add(plen);
        if end > wqe.sge.length {
            if cfg.transport == Transport::Uc {
                // The requester's fault: the WQE waits for a message that
                // fits.
                self.drop_message(ctr);
                return false;
            }
            self.rq_error = Some(WcStatus::LocLenErr);
            return self.fatal(ctr, psn, NakCode::InvalidRequest);
        }
        // The whole receive buffer is checked before its first byte is
        // written, so a bad one is never written in part.
        if off == 0
            && env
                .mem
                .check(
                    wqe.sge.lkey,
                    wqe.sge.addr,
                    wqe.sge.length,
                    Access::LocalWrite,
                )
                .is_err()
        {
            return self.local_error(cfg, ctr, psn, WcStatus::LocProtErr);
        }
        let va = wqe.sge.addr.wrapping_add(u64::from(off));
        if plen > 0
            && env
                .mem
                .write_payload(wqe.sge.lkey, va, &pkt.payload, Access::LocalWrite)
                .is_err()
        {
            return self.local_error(cfg, ctr, psn, WcStatus::LocProtErr);
        }
        self.epsn = psn.add(npkts(plen, cfg.mtu));
        if pkt.info.is_last() {
            if let Some(rkey) = pkt.hdr.ieth {
                let _ = env.mem.invalidate(rkey);
            }
            let mut wc = recv_wc(cfg, &wqe, WcStatus::Success);
            wc.byte_len = end;
            wc.imm = pkt.hdr.imm;
            wc.invalidated_rkey = pkt.hdr.ieth;
            let _ = self.rq.pop();
            env.cq.recv_completion(&wc);
            ctr.count(|c| &mut c.sends_received);
            self.msn = self.msn.next();
            self.cur = InMsg::None;
        } else {
            self.cur = InMsg::Send { off: end };
        }
        self.ack_if_needed(cfg, pkt);
        false
    }

    fn write(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        ctr: &mut Counters,
        pkt: &Packet<'_>,
        plen: u32,
    ) -> bool {
        let psn = pkt.hdr.bth.psn;
        let (va, rkey, off, len) = match (self.cur, pkt.hdr.reth) {
            (InMsg::Write { va, rkey, off, len }, _) => (va, rkey, off, len),
            (InMsg::None, Some(r)) => {
                if env
                    .mem
                    .check(r.rkey, r.va, r.len, Access::RemoteWrite)
                    .is_err()
                {
                    return self.reject(cfg, ctr, psn, NakCode::RemoteAccessError);
                }
                (r.va, r.rkey, 0, r.len)
            }
            _ => return self.reject(cfg, ctr, psn, NakCode::InvalidRequest),
        };
        let end = off.saturating_add(plen);
        if end > len || (pkt.info.is_last() && end != len) {
            return self.reject(cfg, ctr, psn, NakCode::InvalidRequest);
        }
        let dst = va.wrapping_add(u64::from(off));
        if plen > 0
            && env
                .mem
                .write_payload(rkey, dst, &pkt.payload, Access::RemoteWrite)
                .is_err()
        {
            return self.reject(cfg, ctr, psn, NakCode::RemoteAccessError);
        }
        self.epsn = psn.add(npkts(plen, cfg.mtu));
        if pkt.info.is_last() {
            let wqe = pkt.hdr.imm.and_then(|imm| Some((imm, self.rq.pop()?)));
            if let Some((imm, wqe)) = wqe {
                let mut wc = recv_wc(cfg, &wqe, WcStatus::Success);
                wc.opcode = WcOpcode::RecvRdmaWithImm;
                wc.byte_len = len;
                wc.imm = Some(imm);
                env.cq.recv_completion(&wc);
                ctr.count(|c| &mut c.sends_received);
            }
            self.msn = self.msn.next();
            self.cur = InMsg::None;
        } else {
            self.cur = InMsg::Write {
                va,
                rkey,
                off: end,
                len,
            };
        }
        self.ack_if_needed(cfg, pkt);
        false
    }

    fn read(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        ctr: &mut Counters,
        pkt: &Packet<'_>,
    ) -> bool {
        let psn = pkt.hdr.bth.psn;
        let Some(r) = pkt.hdr.reth else {
            return self.fatal(ctr, psn, NakCode::InvalidRequest);
        };
        if env
            .mem
            .check(r.rkey, r.va, r.len, Access::RemoteRead)
            .is_err()
        {
            return self.fatal(ctr, psn, NakCode::RemoteAccessError);
        }
        self.msn = self.msn.next();
        self.epsn = psn.add(npkts(r.len, cfg.mtu));
        let _ = self.resp_q.push(Response::Read {
            psn,
            va: r.va,
            rkey: r.rkey,
            remaining: r.len,
            first: true,
            msn: self.msn,
        });
        false
    }

    fn atomic(&mut self, env: &mut Env<'_>, ctr: &mut Counters, pkt: &Packet<'_>) -> bool {
        let psn = pkt.hdr.bth.psn;
        let Some(a) = pkt.hdr.atomic else {
            return self.fatal(ctr, psn, NakCode::InvalidRequest);
        };
        if a.va & 7 != 0 {
            return self.fatal(ctr, psn, NakCode::InvalidRequest);
        }
        let op = if pkt.hdr.bth.opcode == rc::COMPARE_SWAP {
            AtomicOp::CmpSwap {
                compare: a.compare,
                swap: a.swap_add,
            }
        } else {
            AtomicOp::FetchAdd { add: a.swap_add }
        };
        let Ok(orig) = env.mem.atomic(a.rkey, a.va, op) else {
            return self.fatal(ctr, psn, NakCode::RemoteAccessError);
        };
        self.msn = self.msn.next();
        self.epsn = psn.next();
        self.atomics.push_overwrite((psn, orig));
        let _ = self.resp_q.push(Response::AtomicAck {
            psn,
            orig,
            msn: self.msn,
        });
        false
    }

    /// An RDMA ATOMIC WRITE: exactly 8 bytes, to an aligned word of memory
    /// the requester may write, stored as one 64-bit word; remembered, so a
    /// duplicate is answered without storing again.
    fn atomic_write(&mut self, env: &mut Env<'_>, ctr: &mut Counters, pkt: &Packet<'_>) -> bool {
        let psn = pkt.hdr.bth.psn;
        let Some(r) = pkt.hdr.reth else {
            return self.fatal(ctr, psn, NakCode::InvalidRequest);
        };
        let mut value = [0u8; 8];
        if r.len != 8 || !pkt.payload.copy_to(&mut value) {
            return self.fatal(ctr, psn, NakCode::InvalidRequest);
        }
        if r.va & 7 != 0 {
            return self.fatal(ctr, psn, NakCode::InvalidRequest);
        }
        let op = AtomicOp::Store {
            value: u64::from_ne_bytes(value),
        };
        if env.mem.atomic(r.rkey, r.va, op).is_err() {
            return self.fatal(ctr, psn, NakCode::RemoteAccessError);
        }
        self.answer_empty(psn)
    }

    /// Done with an ATOMIC WRITE or a FLUSH at `psn`: remember it (a
    /// duplicate is answered, not executed again) and queue its empty READ
    /// response. Returns false (the QP goes on).
    fn answer_empty(&mut self, psn: Psn) -> bool {
        self.msn = self.msn.next();
        self.epsn = psn.next();
        self.atomics.push_overwrite((psn, 0));
        let _ = self
            .resp_q
            .push(Response::EmptyReadResponse { psn, msn: self.msn });
        false
    }

    /// An RDMA FLUSH: the region the R_Key names must grant the FLUSH
    /// access of the placement asked for and, unless the whole region is
    /// flushed, hold the RETH's range (as rxe checks them); memory then
    /// makes the data reach that placement. No payload; remembered like an
    /// ATOMIC WRITE, so a duplicate is answered without flushing again.
    fn rdma_flush(&mut self, env: &mut Env<'_>, ctr: &mut Counters, pkt: &Packet<'_>) -> bool {
        let psn = pkt.hdr.bth.psn;
        let (Some(f), Some(r)) = (pkt.hdr.feth, pkt.hdr.reth) else {
            return self.fatal(ctr, psn, NakCode::InvalidRequest);
        };
        // rxe skips the range check for IB_FLUSH_MR only; the reserved
        // levels are checked as ranges.
        let range = (f.selectivity != FethRepr::REGION).then_some((r.va, r.len));
        let placement = Placement::from_bits(f.placement);
        if env.mem.flush(r.rkey, range, placement).is_err() {
            return self.fatal(ctr, psn, NakCode::RemoteAccessError);
        }
        self.answer_empty(psn)
    }

    /// A request with a PSN before the expected one: replay READ data,
    /// replay atomic results from history, re-ACK everything else.
    fn duplicate(&mut self, env: &mut Env<'_>, cfg: &QpConfig, pkt: &Packet<'_>) {
        let psn = pkt.hdr.bth.psn;
        if pkt.info.has(mask::READ) {
            let Some(r) = pkt.hdr.reth else { return };
            let end = psn.add(npkts(r.len, cfg.mtu));
            let in_range = end.since(psn) <= self.epsn.since(psn);
            if !in_range
                || env
                    .mem
                    .check(r.rkey, r.va, r.len, Access::RemoteRead)
                    .is_err()
            {
                return;
            }
            let replay = Response::Read {
                psn,
                va: r.va,
                rkey: r.rkey,
                remaining: r.len,
                first: true,
                msn: self.msn,
            };
            // A READ still queued (its first answer or an earlier replay:
            // the one ending at the same PSN) restarts from the duplicate's
            // PSN, as rxe resets its resource, instead of being queued once
            // more: a requester that keeps retrying on a slow link must not
            // pile up copies of the same stream ahead of what it waits for.
            for i in 0..self.resp_q.len() {
                if let Some(slot) = self.resp_q.get_mut(i) {
                    if let Response::Read {
                        psn: p, remaining, ..
                    } = *slot
                    {
                        if p.add(npkts(remaining, cfg.mtu)) == end {
                            *slot = replay;
                            return;
                        }
                    }
                }
            }
            if !no_room(&self.resp_q) {
                let _ = self.resp_q.push(replay);
            }
            return;
        }
        if no_room(&self.resp_q) {
            return;
        }
        if pkt.info.has(mask::ATOMIC_WRITE) || pkt.info.has(mask::FLUSH) {
            // Answered again, not executed again.
            if self.atomics.iter().any(|(p, _)| *p == psn) {
                let _ = self
                    .resp_q
                    .push(Response::EmptyReadResponse { psn, msn: self.msn });
            }
        } else if pkt.info.has(mask::ATOMIC) {
            if let Some(&(_, orig)) = self.atomics.iter().find(|(p, _)| *p == psn) {
                let _ = self.resp_q.push(Response::AtomicAck {
                    psn,
                    orig,
                    msn: self.msn,
                });
            }
        } else {
            self.queue_ack(self.epsn.sub(1), Syndrome::Ack(Credits::UNLIMITED));
        }
    }

    /// Transmit at most one queued response. Returns true if one was sent.
    pub(crate) fn poll_tx(&mut self, env: &mut Env<'_>, cfg: &QpConfig) -> bool {
        let Some(r) = self.resp_q.front().copied() else {
            return false;
        };
        let bth = |opcode, psn| BthRepr {
            opcode,
            pkey: cfg.pkey,
            dest_qpn: cfg.dest_qpn,
            psn,
            ..BthRepr::default()
        };
        let ok_aeth = |msn| AethRepr {
            syndrome: Syndrome::Ack(Credits::UNLIMITED),
            msn,
        };
        match r {
            Response::Ack { psn, syndrome, msn } => {
                let mut h = Headers::new(bth(rc::ACKNOWLEDGE, psn));
                h.aeth = Some(AethRepr { syndrome, msn });
                if transmit(env, &h, None, 1) != Sent::Yes {
                    return false;
                }
                let _ = self.resp_q.pop();
            }
            Response::AtomicAck { psn, orig, msn } => {
                let mut h = Headers::new(bth(rc::ATOMIC_ACKNOWLEDGE, psn));
                h.aeth = Some(ok_aeth(msn));
                h.atomic_ack = Some(orig);
                if transmit(env, &h, None, 1) != Sent::Yes {
                    return false;
                }
                let _ = self.resp_q.pop();
            }
            Response::EmptyReadResponse { psn, msn } => {
                let mut h = Headers::new(bth(rc::RDMA_READ_RESPONSE_ONLY, psn));
                h.aeth = Some(ok_aeth(msn));
                if transmit(env, &h, None, 1) != Sent::Yes {
                    return false;
                }
                let _ = self.resp_q.pop();
            }
            Response::Read {
                psn,
                va,
                rkey,
                remaining,
                first,
                msn,
            } => {
                // A QP that takes local segments answers in segments too:
                // whole MTUs up to `segment_pkts` of them, one PSN each.
                let most = cfg.segment_bytes();
                let plen = remaining.min(most);
                let last = remaining <= most;
                let span = npkts(plen, cfg.mtu);
                let opcode = match (first, last) {
                    (true, true) => rc::RDMA_READ_RESPONSE_ONLY,
                    (true, false) => rc::RDMA_READ_RESPONSE_FIRST,
                    (false, false) => rc::RDMA_READ_RESPONSE_MIDDLE,
                    (false, true) => rc::RDMA_READ_RESPONSE_LAST,
                };
                let mut h = Headers::new(bth(opcode, psn));
                if first || last {
                    h.aeth = Some(ok_aeth(msn));
                }
                match transmit(env, &h, Some((rkey, va, plen)), span) {
                    Sent::Yes => {}
                    Sent::Busy => return false,
                    Sent::Dropped => {
                        // The region vanished under a queued READ: drop the
                        // response; the requester times out and retries.
                        let _ = self.resp_q.pop();
                        return true;
                    }
                }
                if last {
                    let _ = self.resp_q.pop();
                } else if let Some(Response::Read {
                    psn: p,
                    va: v,
                    remaining: rem,
                    first: f,
                    ..
                }) = self.resp_q.front_mut()
                {
                    *p = psn.add(span);
                    *v = va.wrapping_add(u64::from(plen));
                    *rem = remaining.saturating_sub(plen);
                    *f = false;
                }
            }
        }
        true
    }
}

/// Does the QP allow the placement a FLUSH asks for
/// (`IB_ACCESS_FLUSH_GLOBAL`, `IB_ACCESS_FLUSH_PERSISTENT`)?
fn flush_enabled(cfg: &QpConfig, pkt: &Packet<'_>) -> bool {
    let p = Placement::from_bits(pkt.hdr.feth.map_or(0, |f| f.placement));
    (!p.global || cfg.remote.flush_global) && (!p.persistent || cfg.remote.flush_persistent)
}

/// A request's payload length, and whether it is right for its place in
/// the message: a full `mtu` before the last packet, at most `mtu` in it;
/// on a QP that takes local segments ([`QpConfig::segment_pkts`]) up to
/// that many times as much, whole MTUs before the last. The packet then
/// stands for one PSN per MTU begun (`npkts`).
fn payload_len(pkt: &Packet<'_>, cfg: &QpConfig) -> (u32, bool) {
    let plen = u32::try_from(pkt.payload.len()).unwrap_or(u32::MAX);
    let most = cfg.segment_bytes();
    let ok = if pkt.info.is_last() {
        plen <= most
    } else {
        plen != 0 && plen <= most && plen.is_multiple_of(cfg.mtu)
    };
    (plen, ok)
}

/// Result of [`transmit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Yes,
    /// No transmit buffer; try again later.
    Busy,
    /// The packet cannot be built (memory error); give up on it.
    Dropped,
}

/// Emit `h` with an optional payload read from remote memory
/// (`rkey`, `va`, `len`), a packet that stands for `psns` PSNs (more than 1
/// for a local segment of READ response data).
fn transmit(env: &mut Env<'_>, h: &Headers, payload: Option<(u32, u64, u32)>, psns: u32) -> Sent {
    let body = payload.map_or(Body::Empty, |(key, va, len)| {
        Body::Memory(PayloadRef {
            key,
            va,
            len,
            access: Access::RemoteRead,
        })
    });
    match emit(env, h, body, psns) {
        Ok(()) => Sent::Yes,
        Err(EmitFail::Busy) => Sent::Busy,
        Err(EmitFail::Build | EmitFail::Memory) => Sent::Dropped,
    }
}

fn recv_wc(cfg: &QpConfig, wr: &RecvWr, status: WcStatus) -> WorkCompletion {
    WorkCompletion {
        wr_id: wr.wr_id,
        status,
        opcode: WcOpcode::Recv,
        byte_len: 0,
        imm: None,
        invalidated_rkey: None,
        qpn: cfg.qpn,
    }
}
