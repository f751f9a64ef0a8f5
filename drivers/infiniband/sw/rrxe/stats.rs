// SPDX-License-Identifier: GPL-2.0

//! The port counters of an rrxe device (`rdma statistic show link DEV/1`,
//! `/sys/class/infiniband/DEV/ports/1/hw_counters/`).
//!
//! The first seventeen are upstream rxe's, with its names, so tools written
//! for rxe read rrxe the same way; the next three count received packets
//! that were dropped before they reached a QP, and the last three are about
//! sending (zero copy, a full transmit queue, the congestion window).

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
    /// Packets sent with their payload taken from user pages by reference
    /// instead of copied (to a QP of the same device).
    ZeroCopyPkts,
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
    CounterDesc::new(c"zero_copy_pkts"),
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

    /// Adds what a QP's protocol engine counted since `last`, and makes
    /// `last` the engine's current counts.
    pub(crate) fn absorb(&self, now: &Counters, last: &mut Counters) {
        let pairs = [
            (Counter::DupReq, now.duplicates, last.duplicates),
            (Counter::OutOfSeqReq, now.seq_errors, last.seq_errors),
            (
                Counter::RcvdRnrErr,
                now.rnr_naks_received,
                last.rnr_naks_received,
            ),
            (Counter::SendRnrErr, now.rnr_naks_sent, last.rnr_naks_sent),
            (
                Counter::RcvdSeqErr,
                now.seq_naks_received,
                last.seq_naks_received,
            ),
            (
                Counter::AckDeferred,
                now.responses_received,
                last.responses_received,
            ),
            (
                Counter::RetryExceeded,
                now.retry_exceeded,
                last.retry_exceeded,
            ),
            (
                Counter::RnrRetryExceeded,
                now.rnr_retry_exceeded,
                last.rnr_retry_exceeded,
            ),
            (Counter::CompleterRetry, now.retries, last.retries),
            (Counter::CwndCuts, now.window_cuts, last.window_cuts),
            (Counter::RdmaSends, now.sends_sent, last.sends_sent),
            (Counter::RdmaRecvs, now.sends_received, last.sends_received),
            (Counter::RcvdHdrErr, now.rx_dropped, last.rx_dropped),
        ];
        for (c, n, l) in pairs {
            let d = n.wrapping_sub(l);
            if d != 0 {
                self.add(c, d);
            }
        }
        *last = *now;
    }

    /// Copies the current values into `out` (as many as fit).
    pub(crate) fn read(&self, out: &mut [u64]) {
        for (o, v) in out.iter_mut().zip(self.0.iter()) {
            *o = v.load(Ordering::Relaxed);
        }
    }
}
