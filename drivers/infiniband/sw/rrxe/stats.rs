// SPDX-License-Identifier: GPL-2.0

//! The port counters of an rrxe device (`rdma statistic show link DEV/1`,
//! `/sys/class/infiniband/DEV/ports/1/hw_counters/`).
//!
//! The first seventeen are upstream rxe's, with its names, so tools written
//! for rxe read rrxe the same way; the next four count received packets
//! that were dropped before a QP took them, and the last four are about
//! sending (zero copy, local segments, a full transmit queue, the
//! congestion window).

use crate::{proto::Counters, rdma::stats::CounterDesc};
use core::sync::atomic::{AtomicU64, Ordering};

/// One counter of [`NAMES`].
#[derive(Clone, Copy)]
#[repr(usize)]
pub(crate) enum Counter {
    /// Packets handed to the network.
    SentPkts,
    /// Packets accepted by a QP.
    RcvdPkts,
    /// Duplicate requests the responder saw.
    DupReq,
    /// Requests with a PSN after the expected one.
    OutOfSeqReq,
    /// RNR NAKs received.
    RcvdRnrErr,
    /// RNR NAKs sent.
    SendRnrErr,
    /// PSN sequence error NAKs received.
    RcvdSeqErr,
    /// Responses (ACKs, NAKs, READ responses) handed to a requester's
    /// completer, as rxe counts them under this name.
    AckDeferred,
    /// Send requests that failed with transport retries exhausted.
    RetryExceeded,
    /// Send requests that failed with RNR retries exhausted.
    RnrRetryExceeded,
    /// Retransmissions started by the requester (timeouts, sequence NAKs).
    CompleterRetry,
    /// Packets the network refused to send (lost).
    SendErr,
    /// Times the port went down.
    LinkDowned,
    /// SEND requests sent (messages).
    RdmaSends,
    /// SEND requests received (messages).
    RdmaRecvs,
    /// Bytes handed to the network (RoCE v2 packets, from BTH to ICRC).
    SentBytes,
    /// Bytes received (RoCE v2 packets, from BTH to ICRC).
    RcvdBytes,
    /// Received packets whose ICRC did not verify.
    RcvdIcrcErr,
    /// Received packets with malformed headers, or headers not valid for
    /// their QP (transport, opcode sequence, P_Key, Q_Key, lengths).
    RcvdHdrErr,
    /// Received packets for a QP that does not exist or cannot receive.
    RcvdNoQp,
    /// Received packets dropped because their QP had
    /// [`crate::exec::RX_BACKLOG_MAX`] packets waiting for its run already.
    RcvdBacklogFull,
    /// Received messages dropped because their QP had no receive request
    /// posted for them: a UD datagram, or a UC message (an RC request is
    /// answered with an RNR NAK instead, `send_rnr_err`). The name is the
    /// one mlx5 gives this counter.
    OutOfBuffer,
    /// Packets sent with their payload taken from user pages by reference
    /// instead of copied (to a QP of the same device).
    ZeroCopyPkts,
    /// Local segments sent: packets to a QP of the same device that stood
    /// for more than one packet of the path MTU (and count as that many in
    /// `sent_pkts`, `rcvd_pkts` and `zero_copy_pkts`).
    LocalSegments,
    /// Packets the net device's transmit queue refused because it was full:
    /// a connected QP pauses and sends them again, a datagram is lost.
    SendQueueFull,
    /// Times a loss made an RC requester's congestion window smaller.
    CwndCuts,
}

/// Number of counters.
pub(crate) const NUM: usize = Counter::CwndCuts as usize + 1;

/// Their names, indexed by [`Counter`].
pub(crate) static NAMES: [CounterDesc; NUM] = [
    CounterDesc::new(c"sent_pkts"),
    CounterDesc::new(c"rcvd_pkts"),
    CounterDesc::new(c"duplicate_request"),
    CounterDesc::new(c"out_of_seq_request"),
    CounterDesc::new(c"rcvd_rnr_err"),
    CounterDesc::new(c"send_rnr_err"),
    CounterDesc::new(c"rcvd_seq_err"),
    CounterDesc::new(c"ack_deferred"),
    CounterDesc::new(c"retry_exceeded_err"),
    CounterDesc::new(c"retry_rnr_exceeded_err"),
    CounterDesc::new(c"completer_retry_err"),
    CounterDesc::new(c"send_err"),
    CounterDesc::new(c"link_downed"),
    CounterDesc::new(c"rdma_sends"),
    CounterDesc::new(c"rdma_recvs"),
    CounterDesc::new(c"sent_bytes"),
    CounterDesc::new(c"rcvd_bytes"),
    CounterDesc::new(c"rcvd_icrc_err"),
    CounterDesc::new(c"rcvd_hdr_err"),
    CounterDesc::new(c"rcvd_no_qp"),
    CounterDesc::new(c"rcvd_backlog_full"),
    CounterDesc::new(c"out_of_buffer"),
    CounterDesc::new(c"zero_copy_pkts"),
    CounterDesc::new(c"local_segments"),
    CounterDesc::new(c"send_queue_full"),
    CounterDesc::new(c"cwnd_cuts"),
];

/// The counters of one device.
pub(crate) struct Stats([AtomicU64; NUM]);

impl Stats {
    /// All zero.
    pub(crate) const fn new() -> Self {
        Self([const { AtomicU64::new(0) }; NUM])
    }

    /// Adds `n` to `c` (wrapping, as hardware counters do).
    pub(crate) fn add(&self, c: Counter, n: u64) {
        if let Some(v) = self.0.get(c as usize) {
            v.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Adds one to `c`.
    pub(crate) fn inc(&self, c: Counter) {
        self.add(c, 1);
    }

    /// Adds what a QP's protocol engine counted since `last` to the
    /// device's counters, and records the engine's current counts in `last`
    /// (those of the fields the device counts; `last` is only for this).
    ///
    /// It runs after every run of a QP, so it touches only the counters
    /// that moved: no copy of the whole set, no table built per call. The
    /// count of responses moves with every response; the others (errors,
    /// retries, SENDs) are looked at only when the engine's
    /// [`Counters::changes`] says one of them moved, which a doorbell, a
    /// READ or a WRITE served leaves alone.
    pub(crate) fn absorb(&self, now: &Counters, last: &mut Counters) {
        macro_rules! fold {
            ($($c:ident: $f:ident),* $(,)?) => {$(
                let d = now.$f.wrapping_sub(last.$f);
                if d != 0 {
                    self.add(Counter::$c, d);
                    last.$f = now.$f;
                }
            )*};
        }
        fold!(AckDeferred: responses_received);
        if now.changes == last.changes {
            return;
        }
        last.changes = now.changes;
        fold!(
            DupReq: duplicates,
            OutOfSeqReq: seq_errors,
            RcvdRnrErr: rnr_naks_received,
            SendRnrErr: rnr_naks_sent,
            RcvdSeqErr: seq_naks_received,
            RetryExceeded: retry_exceeded,
            RnrRetryExceeded: rnr_retry_exceeded,
            CompleterRetry: retries,
            CwndCuts: window_cuts,
            RdmaSends: sends_sent,
            RdmaRecvs: sends_received,
            RcvdHdrErr: rx_dropped,
            OutOfBuffer: out_of_buffer,
        );
    }

    /// Copies the current values into `out` (as many as fit).
    pub(crate) fn read(&self, out: &mut [u64]) {
        for (o, v) in out.iter_mut().zip(self.0.iter()) {
            *o = v.load(Ordering::Relaxed);
        }
    }
}
