// SPDX-License-Identifier: GPL-2.0

//! The UD datapath (UD QPs and the GSI QP that carries MADs): one packet per
//! message, no connection state, no acknowledgements. Each send WQE becomes a
//! SEND ONLY packet with a DETH; each received datagram takes a receive WQE
//! and is written after a 40-byte GRH area holding the packet's IP header,
//! where ib_core and libibverbs look for the sender's address.

use crate::{
    cq::{complete_or_report, complete_or_report_received, Arrival},
    datapath::Datapath,
    device::RrxeDev,
    exec::{now_us, Live, Outcome, QpCore, QpInfo},
    mem::KeyCache,
    net::skb::SkBuff,
    proto::{
        headers::{BthRepr, DethRepr},
        icrc::IpHeader,
        opcode::{mask, ud as ud_op},
        Access, Headers, MemoryAccess, Packet, Payload, Psn, Stall,
    },
    qp::take_recv,
    queue::Queue,
    rdma::{
        bindings as b,
        driver::{CqRef, SrqRef},
    },
    recv::with_packet,
    stats::Counter,
    wqe,
    wqe::SgeList,
    xmit::{self, Path},
};
use core::sync::atomic::Ordering;
use kernel::{prelude::*, sync::Arc};

/// Bytes of the GRH area in front of a received datagram.
const GRH_LEN: usize = 40;
/// Datagrams received that one run takes at most.
const RX_BUDGET: usize = 64;
/// Datagrams one run sends at most.
const TX_BUDGET: usize = 64;

/// Per-QP state of a UD or GSI QP from RTR on.
pub(crate) struct Ud {
    psn: u32,
    /// Pauses for a full transmit queue.
    stall: Stall,
}

impl Ud {
    /// Fresh state.
    pub(crate) fn new() -> Self {
        Self {
            psn: 0,
            stall: Stall::default(),
        }
    }
}

/// One run of a UD or GSI QP: the datagrams that arrived, then (in RTS)
/// the requests posted.
pub(crate) fn serve(core: &Arc<QpCore>, live: &mut Live, depth: u8) -> Outcome {
    let Live {
        attrs,
        sq,
        rq,
        srq,
        send_cq,
        recv_cq,
        ud,
        events,
        ..
    } = live;
    let Some(ud) = ud.as_mut() else {
        while core.next_packet().is_some() {
            core.dp.drop_packet(Counter::RcvdNoQp);
        }
        return Outcome::IDLE;
    };
    let qp = UdQp {
        info: &core.info,
        qkey: attrs.0.qkey,
        max_recv_sge: srq
            .as_ref()
            .map_or(core.info.max_sge.1, |s| s.data().max_sge()),
        send_cq,
        recv_cq,
    };
    let dp = &core.dp;
    // (Looked up anew in each run: a UD QP's keys vary with its peers.)
    let keys = KeyCache::new();
    let mut mem = core.memory(&keys);
    let mut received = 0usize;
    while received < RX_BUDGET {
        let Some(skb) = core.next_packet() else { break };
        received = received.saturating_add(1);
        match receive_skb(&qp, rq, srq, &mut mem, &skb) {
            Rx::Delivered => {}
            Rx::Dropped => dp.drop_packet(Counter::RcvdHdrErr),
            Rx::NoBuffer => dp.drop_packet(Counter::OutOfBuffer),
            Rx::Failed => {
                // A receive completed in error: the QP fails (its send
                // queue too), as for any completion error on receive.
                crate::qp::enter_error(core, attrs, sq, rq, send_cq, recv_cq);
                crate::qp::last_wqe_reached(srq, events);
                return Outcome::IDLE;
            }
        }
    }
    let mut sent = 0usize;
    let mut retry_at = None;
    match attrs.0.qp_state {
        b::ib_qp_state_IB_QPS_RTS => {
            let run = send_all(&qp, ud, sq, dp, &mut mem, depth);
            sent = run.taken;
            // A datagram the queue refused waits at the head of the send
            // queue for the next run, which the timer brings after a pause.
            retry_at = ud.stall.end_try(now_us, run.taken > 0, run.refused);
            if run.failed {
                // A send completed in error: the send queue stops (SQE) and
                // the requests after it are flushed; receives go on.
                attrs.0.qp_state = b::ib_qp_state_IB_QPS_SQE;
                attrs.0.cur_qp_state = b::ib_qp_state_IB_QPS_SQE;
                core.state
                    .store(b::ib_qp_state_IB_QPS_SQE, Ordering::Release);
                crate::qp::flush_sq(core, sq, send_cq);
            }
        }
        b::ib_qp_state_IB_QPS_SQE => crate::qp::flush_sq(core, sq, send_cq),
        _ => {}
    }
    Outcome {
        deadline: retry_at.unwrap_or(u64::MAX),
        more: sent >= TX_BUDGET || received >= RX_BUDGET && core.packets_waiting(),
    }
}

/// Delivers a received datagram (data at its BTH, IP header in front).
fn receive_skb(
    qp: &UdQp<'_>,
    rq: &mut Option<Queue>,
    srq: &Option<SrqRef<RrxeDev>>,
    mem: &mut dyn MemoryAccess,
    skb: &SkBuff,
) -> Rx {
    let hdrs = skb.network_header();
    let ip = hdrs.get(..hdrs.len().saturating_sub(8)).unwrap_or(&[]);
    with_packet(skb, |pkt| receive(qp, rq, srq, mem, pkt, ip, skb.vlan_id())).unwrap_or(Rx::Dropped)
}

/// What a UD QP needs from its owner for one call.
pub(crate) struct UdQp<'a> {
    /// The QP's fixed attributes.
    pub(crate) info: &'a QpInfo,
    /// The QP's Q_Key.
    pub(crate) qkey: u32,
    /// Most SGEs a receive request may have (the QP's, or its SRQ's).
    pub(crate) max_recv_sge: u32,
    /// Completion queues.
    pub(crate) send_cq: &'a CqRef<RrxeDev>,
    /// Completion queues.
    pub(crate) recv_cq: &'a CqRef<RrxeDev>,
}

fn completion(qp: &UdQp<'_>, wr_id: u64, status: u32, opcode: u32) -> b::ib_uverbs_wc {
    b::ib_uverbs_wc {
        wr_id,
        status,
        opcode,
        qp_num: qp.info.qpn,
        port_num: 1,
        ..Default::default()
    }
}

/// What one [`send_all`] did.
struct SendRun {
    /// WQEs taken off the send queue.
    taken: usize,
    /// One completed in error: the send queue stops.
    failed: bool,
    /// The transmit queue refused a datagram, which waits at the head of
    /// the send queue.
    refused: bool,
}

/// Sends the WQEs waiting in `sq`, at most [`TX_BUDGET`], until one
/// completes in error or the transmit queue refuses one.
fn send_all(
    qp: &UdQp<'_>,
    ud: &mut Ud,
    sq: &mut Queue,
    dp: &Datapath,
    mem: &mut dyn MemoryAccess,
    depth: u8,
) -> SendRun {
    let mut buf = wqe::SendCopy::new();
    let mut run = SendRun {
        taken: 0,
        failed: false,
        refused: false,
    };
    while run.taken < TX_BUDGET && wqe::peek_send(sq, &mut buf) {
        let (wr_id, result) = match wqe::ud_send(
            buf.bytes(),
            qp.info.sq_sig_all,
            qp.info.kernel,
            qp.info.max_sge.0,
        ) {
            Ok(w) => (
                w.wr_id,
                send_one(qp, ud, dp, mem, &w, depth).map(|went| (went, w.signaled)),
            ),
            Err(bad) => (bad.wr_id, Err(b::ib_wc_status_IB_WC_LOC_QP_OP_ERR)),
        };
        if matches!(result, Ok((false, _))) && ud.stall.may_pause(now_us) {
            // Left in the ring: the next run builds it again.
            run.refused = true;
            break;
        }
        sq.advance();
        run.taken = run.taken.saturating_add(1);
        let status = match result {
            Ok((_, false)) => continue,
            Ok((_, true)) => b::ib_wc_status_IB_WC_SUCCESS,
            Err(status) => status,
        };
        // UD has nothing to stop when a completion is lost: the event says it.
        let _ = complete_or_report(
            qp.send_cq,
            &completion(qp, wr_id, status, b::ib_wc_opcode_IB_WC_SEND),
            qp.info.ibqp,
            false,
        );
        if status != b::ib_wc_status_IB_WC_SUCCESS {
            run.failed = true;
            break;
        }
    }
    run
}

/// Builds and sends the packet of one WQE; returns `false` if the transmit
/// queue refused it or no memory could hold it (the datagram was not sent),
/// and the error is a completion status. Every SGE is checked before the
/// packet is built. A message longer than the port's MTU is not sent and
/// not reported as an error (IB spec C10-93.1.1, as rxe does).
fn send_one(
    qp: &UdQp<'_>,
    ud: &mut Ud,
    dp: &Datapath,
    mem: &mut dyn MemoryAccess,
    w: &wqe::UdSend<'_>,
    depth: u8,
) -> Result<bool, u32> {
    let op_err = b::ib_wc_status_IB_WC_LOC_QP_OP_ERR;
    let prot_err = b::ib_wc_status_IB_WC_LOC_PROT_ERR;
    let len_err = b::ib_wc_status_IB_WC_LOC_LEN_ERR;
    let info = match w.av {
        Some(info) => info,
        None => dp.ah(w.ah_num).ok_or(op_err)?,
    };
    let len = match w.inline {
        Some(d) => d.len(),
        None => {
            let mut total = 0usize;
            for s in w.sges.iter() {
                mem.check(s.lkey, s.addr, s.length, Access::LocalRead)
                    .map_err(|_| prot_err)?;
                total = total.checked_add(s.length as usize).ok_or(len_err)?;
            }
            total
        }
    };
    if len > port_mtu(dp) {
        return Ok(true);
    }
    let sport = crate::rdma::attr::roce_udp_sport(info.flow_label, qp.info.qpn, w.remote_qpn);
    let path = Path::new(dp, &info, sport, false).map_err(|_| op_err)?;
    let qkey = if w.remote_qkey & 0x8000_0000 != 0 {
        qp.qkey
    } else {
        w.remote_qkey
    };
    let mut hdr = Headers::new(BthRepr {
        opcode: if w.imm.is_some() {
            ud_op::SEND_ONLY_WITH_IMMEDIATE
        } else {
            ud_op::SEND_ONLY
        },
        solicited: w.solicited,
        pkey: crate::params::DEFAULT_PKEY,
        dest_qpn: w.remote_qpn,
        psn: Psn::new(ud.psn),
        ..Default::default()
    });
    hdr.deth = Some(DethRepr {
        qkey,
        src_qpn: qp.info.qpn,
    });
    hdr.imm = w.imm;
    let roce_len = hdr.packet_len(len).map_err(|_| len_err)?;
    let Some(mut pkt) = xmit::Packet::new(roce_len) else {
        return Ok(false);
    };
    let roce = pkt.bytes();
    let off = hdr.emit(roce, len).map_err(|_| len_err)?;
    let mut payload = roce.get_mut(off..).ok_or(len_err)?;
    match w.inline {
        Some(d) => payload
            .get_mut(..d.len())
            .ok_or(len_err)?
            .copy_from_slice(d),
        None => {
            for s in w.sges.iter() {
                let (dst, rest) = payload
                    .split_at_mut_checked(s.length as usize)
                    .ok_or(len_err)?;
                mem.read(s.lkey, s.addr, dst, Access::LocalRead)
                    .map_err(|_| prot_err)?;
                payload = rest;
            }
        }
    }
    // A full backlog at a QP of this device drops the datagram.
    if !path.send(dp, pkt, 1, w.remote_qpn, depth, false) {
        return Ok(false);
    }
    ud.psn = ud.psn.wrapping_add(1) & 0x00ff_ffff;
    Ok(true)
}

/// The port's MTU in bytes (the IB MTU its net device's MTU allows), which
/// bounds a UD message.
fn port_mtu(dp: &Datapath) -> usize {
    let mtu = dp
        .netdev()
        .mtu()
        .checked_sub(crate::params::MAX_HDR_LEN)
        .and_then(crate::rdma::attr::ib_mtu_for)
        .unwrap_or(b::ib_mtu_IB_MTU_256);
    // `enum ib_mtu` 1..=5 is 256 << (n - 1) bytes.
    256usize << mtu.saturating_sub(1).min(4)
}

/// What became of a received datagram.
#[derive(PartialEq, Eq)]
enum Rx {
    /// Written into a receive request, completed.
    Delivered,
    /// Not for this QP (wrong Q_Key, opcode): dropped.
    Dropped,
    /// No receive request posted: dropped, as UD allows.
    NoBuffer,
    /// Its receive request completed with an error: the QP fails.
    Failed,
}

/// Delivers one received datagram (`ip` is its IP header).
fn receive(
    qp: &UdQp<'_>,
    rq: &mut Option<Queue>,
    srq: &Option<SrqRef<RrxeDev>>,
    mem: &mut dyn MemoryAccess,
    pkt: &Packet<'_>,
    ip: &[u8],
    vlan: Option<u16>,
) -> Rx {
    let Some(deth) = pkt.hdr.deth else {
        return Rx::Dropped;
    };
    if !pkt.info.has(mask::RWR) || deth.qkey != qp.qkey {
        return Rx::Dropped;
    }
    let mut buf = wqe::RecvCopy::new();
    // UD has no flow control: without a receive WQE the datagram is dropped.
    if !take_recv(rq, srq, &mut buf) {
        return Rx::NoBuffer;
    }
    let (wr_id, sges) = wqe::recv_sges(buf.bytes(), qp.max_recv_sge);
    let mut grh = [0u8; GRH_LEN];
    // The GRH area holds an IPv6 header as is, or an IPv4 one in its last
    // 20 bytes (where libibverbs looks for it).
    if let Some(h) = ip.get(..GRH_LEN) {
        grh.copy_from_slice(h);
    } else if let Some(h) = ip.get(..20) {
        grh[20..].copy_from_slice(h);
    }
    let total = GRH_LEN.saturating_add(pkt.payload.len());
    let status = match sges.map(|sges| scatter(mem, sges, &grh, pkt.payload)) {
        None => b::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
        Some(Ok(room)) if room >= total => b::ib_wc_status_IB_WC_SUCCESS,
        Some(Ok(_)) => b::ib_wc_status_IB_WC_LOC_LEN_ERR,
        Some(Err(status)) => status,
    };
    let mut wc = completion(qp, wr_id, status, b::ib_wc_opcode_IB_WC_RECV);
    if status == b::ib_wc_status_IB_WC_SUCCESS {
        wc.byte_len = u32::try_from(total).unwrap_or(u32::MAX);
        wc.src_qp = deth.src_qpn;
        wc.wc_flags = b::ib_wc_flags_IB_WC_GRH;
        if let Some(imm) = pkt.hdr.imm {
            wc.ex.imm_data = wqe::imm_field(imm);
            wc.wc_flags |= b::ib_wc_flags_IB_WC_WITH_IMM;
        }
    }
    let arrival = Arrival {
        ipv6: matches!(IpHeader::of(ip), Some(IpHeader::V6(_))),
        vlan,
    };
    let _ = complete_or_report_received(
        qp.recv_cq,
        &wc,
        qp.info.ibqp,
        pkt.hdr.bth.solicited,
        Some(arrival),
    );
    if status == b::ib_wc_status_IB_WC_SUCCESS {
        Rx::Delivered
    } else {
        Rx::Failed
    }
}

/// Writes the GRH area `grh` and then `payload` over the receive SGEs.
/// Every SGE is checked (key, protection domain, access, bounds) before a
/// byte is written, so a bad list leaves memory untouched. Returns the room
/// the list offers (when it is less than the datagram, nothing is written),
/// or the completion status of a protection error.
fn scatter(
    mem: &mut dyn MemoryAccess,
    sges: SgeList<'_>,
    grh: &[u8],
    payload: Payload<'_>,
) -> Result<usize, u32> {
    let prot_err = b::ib_wc_status_IB_WC_LOC_PROT_ERR;
    let total = grh.len().saturating_add(payload.len());
    let mut room = 0usize;
    for s in sges.iter() {
        // Only the part of the SGE the datagram reaches must be valid.
        let need = u32::try_from(total.saturating_sub(room))
            .unwrap_or(u32::MAX)
            .min(s.length);
        mem.check(s.lkey, s.addr, need, Access::LocalWrite)
            .map_err(|_| prot_err)?;
        room = room.saturating_add(s.length as usize);
    }
    if room < total {
        return Ok(room);
    }
    // A datagram is never sent by reference, so all of it is readable.
    let bytes = payload.bytes().ok_or(prot_err)?;
    let mut src = Iterator::chain(grh.iter().copied(), bytes);
    let mut chunk = [0u8; 256];
    let mut left = total;
    for s in sges.iter() {
        let mut done = 0usize;
        let len = (s.length as usize).min(left);
        while done < len {
            let n = chunk.len().min(len.saturating_sub(done));
            let mut got = 0usize;
            for (d, v) in chunk.iter_mut().take(n).zip(&mut src) {
                *d = v;
                got = got.saturating_add(1);
            }
            let va = u64::try_from(done)
                .ok()
                .and_then(|d| s.addr.checked_add(d))
                .ok_or(prot_err)?;
            let data = chunk.get(..got).ok_or(prot_err)?;
            mem.write(s.lkey, va, data, Access::LocalWrite)
                .map_err(|_| prot_err)?;
            done = done.saturating_add(got);
            if got < n {
                break;
            }
        }
        left = left.saturating_sub(len);
        if left == 0 {
            break;
        }
    }
    Ok(room)
}
