//! The completer: processes ACKs, NAKs, READ responses and atomic ACKs,
//! completes send WQEs in order and decides on retransmission.

use super::requester::{npkts, Requester, SendWqe};
use super::{Counters, QpConfig, Storage};
use crate::proto::env::{Access, Env};
use crate::proto::opcode::rc;
use crate::proto::packet::Packet;
use crate::proto::psn::{rnr_timer_us, NakCode, Syndrome};
use crate::proto::verbs::{WcStatus, WrOp};
use crate::proto::Psn;

/// What kind of response a packet is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ack,
    Rnr(u8),
    Nak(NakCode),
    ReadResp,
    AtomicAck(u64),
}

fn kind(pkt: &Packet<'_>) -> Option<Kind> {
    let op = pkt.hdr.bth.opcode;
    if (rc::RDMA_READ_RESPONSE_FIRST..=rc::RDMA_READ_RESPONSE_ONLY).contains(&op) {
        return Some(Kind::ReadResp);
    }
    if op == rc::ATOMIC_ACKNOWLEDGE {
        return pkt.hdr.atomic_ack.map(Kind::AtomicAck);
    }
    match pkt.hdr.aeth?.syndrome {
        Syndrome::Ack(_) => Some(Kind::Ack),
        Syndrome::RnrNak(t) => Some(Kind::Rnr(t)),
        Syndrome::Nak(c) => Some(Kind::Nak(c)),
    }
}

/// Work-completion status for a fatal NAK code.
pub(crate) fn nak_status(code: NakCode) -> WcStatus {
    match code {
        NakCode::PsnSeqError => WcStatus::RetryExcErr,
        NakCode::InvalidRequest => WcStatus::RemInvReqErr,
        NakCode::RemoteAccessError => WcStatus::RemAccessErr,
        NakCode::RemoteOpError => WcStatus::RemOpErr,
        NakCode::InvalidRdRequest => WcStatus::RemInvRdReqErr,
    }
}

impl<S: Storage> Requester<S> {
    /// Handle a response packet. Returns true if the QP must enter the
    /// error state.
    pub(crate) fn on_response(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        ctr: &mut Counters,
        pkt: &Packet<'_>,
    ) -> bool {
        let psn = pkt.hdr.bth.psn;
        let stale = |ctr: &mut Counters| {
            ctr.count(|c| &mut c.stale_responses);
            false
        };
        let Some(kind) = kind(pkt) else {
            return stale(ctr);
        };
        // Current: sent and not yet acknowledged. After a rewind that is
        // more than the packets sent since, so an ACK for packets the
        // responder already holds still counts.
        if !self.in_flight(psn) {
            return stale(ctr);
        }
        let mut progressed = false;
        // Everything before `psn` was received by the responder: complete
        // SEND/WRITE WQEs that end before it (or at it, for an ACK).
        while let Some(w) = self.q.front().copied() {
            if !w.started || w.wr.op.is_read_or_atomic() {
                break;
            }
            let last = w.last_psn();
            if last.before(psn) || (last == psn && kind == Kind::Ack) {
                self.complete_front(env, cfg, ctr, WcStatus::Success);
                progressed = true;
                continue;
            }
            if w.contains(psn) && psn.after(self.comp_psn) {
                // Partial progress inside a multi-packet message.
                self.comp_psn = if kind == Kind::Ack { psn.next() } else { psn };
                progressed = true;
            }
            break;
        }
        if progressed {
            self.progress(env, cfg);
        }
        let Some(w) = self.q.front().copied() else {
            return false;
        };
        // A response at or beyond an unanswered READ/atomic means its
        // responses were lost: retransmit from the first missing PSN.
        let missing_rd = w.wr.op.is_read_or_atomic() && !psn.before(w.first_psn);
        match kind {
            Kind::ReadResp if w.wr.op == WrOp::Read && w.contains(psn) => {
                self.read_response(env, cfg, ctr, &w, pkt)
            }
            Kind::ReadResp if w.wr.op.has_empty_response() && w.first_psn == psn => {
                self.empty_read_response(env, cfg, ctr, pkt)
            }
            Kind::AtomicAck(orig) if w.wr.op.is_atomic() && w.first_psn == psn => {
                self.atomic_ack(env, cfg, ctr, &w, orig)
            }
            Kind::Nak(code) if code != NakCode::PsnSeqError && w.contains(psn) => {
                self.error = Some((0, nak_status(code)));
                true
            }
            Kind::Rnr(t) if !missing_rd || w.first_psn == psn => self.rnr(env, cfg, ctr, psn, t),
            Kind::Nak(NakCode::PsnSeqError) if !missing_rd || w.first_psn == psn => {
                ctr.count(|c| &mut c.seq_naks_received);
                self.retry_from(cfg, ctr, psn)
            }
            _ if missing_rd => {
                let from = self.comp_psn;
                self.retry_from(cfg, ctr, from)
            }
            _ if progressed => false,
            _ => stale(ctr),
        }
    }

    fn rnr(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        ctr: &mut Counters,
        psn: Psn,
        timer: u8,
    ) -> bool {
        ctr.count(|c| &mut c.rnr_naks_received);
        if self.rnr_deadline.is_some() {
            return false;
        }
        if self.rnr_left == 0 {
            ctr.count(|c| &mut c.rnr_retry_exceeded);
            self.error = Some((0, WcStatus::RnrRetryExcErr));
            return true;
        }
        if self.rnr_left != 7 {
            self.rnr_left = self.rnr_left.saturating_sub(1);
        }
        // The responder is alive: only the RNR budget governs RNR waits, so
        // lost RNR NAKs do not add up to a transport retry failure.
        self.retry_left = cfg.retry_cnt;
        self.rewind(cfg, psn);
        self.last_rewind = Some(psn);
        self.retry_deadline = None;
        self.rnr_deadline = Some(
            env.clock
                .now_us()
                .saturating_add(u64::from(rnr_timer_us(timer))),
        );
        false
    }

    fn read_response(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        ctr: &mut Counters,
        w: &SendWqe,
        pkt: &Packet<'_>,
    ) -> bool {
        let psn = pkt.hdr.bth.psn;
        if psn != self.comp_psn {
            if psn.after(self.comp_psn) {
                let from = self.comp_psn;
                return self.retry_from(cfg, ctr, from);
            }
            ctr.count(|c| &mut c.stale_responses);
            return false;
        }
        let off = psn.since(w.first_psn).saturating_mul(cfg.mtu);
        let left = w.wr.sge.length.saturating_sub(off);
        // One MTU a packet; on a QP that takes local segments up to
        // `segment_pkts` of them, whole MTUs before the last.
        let most = cfg.segment_bytes();
        let plen = u32::try_from(pkt.payload.len()).unwrap_or(u32::MAX);
        let is_last = matches!(
            pkt.hdr.bth.opcode,
            rc::RDMA_READ_RESPONSE_LAST | rc::RDMA_READ_RESPONSE_ONLY
        );
        let len_ok = if is_last {
            plen == left && left <= most
        } else {
            plen != 0 && plen < left && plen <= most && plen.is_multiple_of(cfg.mtu)
        };
        let op_ok = is_last
            || matches!(
                pkt.hdr.bth.opcode,
                rc::RDMA_READ_RESPONSE_FIRST | rc::RDMA_READ_RESPONSE_MIDDLE
            );
        if !op_ok || !len_ok {
            self.error = Some((0, WcStatus::BadRespErr));
            return true;
        }
        let va = w.wr.sge.addr.wrapping_add(u64::from(off));
        if env
            .mem
            .write_payload(w.wr.sge.lkey, va, &pkt.payload, Access::LocalWrite)
            .is_err()
        {
            self.error = Some((0, WcStatus::LocProtErr));
            return true;
        }
        // The packet stands for one PSN per MTU begun (one at least).
        self.comp_psn = psn.add(npkts(plen, cfg.mtu));
        if is_last {
            self.complete_front(env, cfg, ctr, WcStatus::Success);
        }
        self.progress(env, cfg);
        false
    }

    /// The answer to an ATOMIC WRITE or a FLUSH: an RDMA READ RESPONSE ONLY
    /// with an ACK and no payload (as rxe and the spec have it).
    fn empty_read_response(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        ctr: &mut Counters,
        pkt: &Packet<'_>,
    ) -> bool {
        let psn = pkt.hdr.bth.psn;
        if psn != self.comp_psn {
            let from = self.comp_psn;
            return self.retry_from(cfg, ctr, from);
        }
        if pkt.hdr.bth.opcode != rc::RDMA_READ_RESPONSE_ONLY || !pkt.payload.is_empty() {
            self.error = Some((0, WcStatus::BadRespErr));
            return true;
        }
        self.complete_front(env, cfg, ctr, WcStatus::Success);
        self.progress(env, cfg);
        false
    }

    fn atomic_ack(
        &mut self,
        env: &mut Env<'_>,
        cfg: &QpConfig,
        ctr: &mut Counters,
        w: &SendWqe,
        orig: u64,
    ) -> bool {
        if w.first_psn != self.comp_psn {
            let from = self.comp_psn;
            return self.retry_from(cfg, ctr, from);
        }
        let bytes = orig.to_ne_bytes();
        if env
            .mem
            .write(w.wr.sge.lkey, w.wr.sge.addr, &bytes, Access::LocalWrite)
            .is_err()
        {
            self.error = Some((0, WcStatus::LocProtErr));
            return true;
        }
        self.complete_front(env, cfg, ctr, WcStatus::Success);
        self.progress(env, cfg);
        false
    }
}
