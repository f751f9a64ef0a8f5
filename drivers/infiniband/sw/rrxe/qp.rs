// SPDX-License-Identifier: GPL-2.0

//! Queue pairs as the verbs see them: creation with the send and receive
//! rings librxe writes work requests into, the attributes that `modify_qp`
//! moves through the IB state machine, the send doorbell and in-kernel
//! posts, and destruction.
//!
//! What runs the QP lives in its [`QpCore`] ([`crate::exec`]); a verb that
//! changes the QP's state waits its turn there ([`QpCore::with_live`]), so
//! it never races a run; the runs other contexts asked for meanwhile follow.

use crate::{
    ah::AhInfo,
    cq::complete_or_report,
    datapath::Datapath,
    exec::{Attrs, Live, QpCore, QpInfo},
    index::Index,
    params as p,
    proto::{QpConfig, RemoteAccess, Transport},
    queue::{Queue, Side},
    rc::{Conn, ConnCaps},
    rdma::{
        bindings as b,
        driver::{CqRef, SrqRef},
        qp::{modify_is_ok, QpAttr, QpEvents, QpInit},
        udata::Udata,
        wr::{RecvWr as KRecvWr, SendWr as KSendWr},
    },
    stats::Counter,
    uapi::{RECV_WQE_HDR, SEND_WQE_HDR, SGE_SIZE},
    ud::Ud,
    wqe,
    xmit::Path,
    RrxeDev,
};
use core::sync::atomic::Ordering;
use kernel::{prelude::*, sync::Arc};

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

/// A flushed completion for `wr_id`.
fn flushed(wr_id: u64, qpn: u32) -> b::ib_uverbs_wc {
    b::ib_uverbs_wc {
        wr_id,
        status: b::ib_wc_status_IB_WC_WR_FLUSH_ERR,
        qp_num: qpn,
        ..Default::default()
    }
}

/// Completes every work request still in the send ring with
/// `IB_WC_WR_FLUSH_ERR`, in order.
pub(crate) fn flush_sq(core: &QpCore, sq: &mut Queue, send_cq: &CqRef<RrxeDev>) {
    while let Some(wr_id) = sq.pop_wr_id() {
        let wc = flushed(wr_id, core.info.qpn);
        complete_or_report(send_cq, &wc, core.info.ibqp, false);
    }
}

/// Completes every work request still in the rings with `IB_WC_WR_FLUSH_ERR`,
/// receives into the receive CQ and sends into the send CQ, in order.
fn flush_rings(
    core: &QpCore,
    sq: &mut Queue,
    rq: &mut Option<Queue>,
    send_cq: &CqRef<RrxeDev>,
    recv_cq: &CqRef<RrxeDev>,
) {
    if let Some(rq) = rq {
        while let Some(wr_id) = rq.pop_wr_id() {
            let wc = flushed(wr_id, core.info.qpn);
            complete_or_report(recv_cq, &wc, core.info.ibqp, false);
        }
    }
    flush_sq(core, sq, send_cq);
}

/// Moves the QP to the error state (the engine failed) and flushes what is
/// left in its rings.
pub(crate) fn enter_error(
    core: &QpCore,
    attrs: &mut Attrs,
    sq: &mut Queue,
    rq: &mut Option<Queue>,
    send_cq: &CqRef<RrxeDev>,
    recv_cq: &CqRef<RrxeDev>,
) {
    attrs.0.qp_state = b::ib_qp_state_IB_QPS_ERR;
    attrs.0.cur_qp_state = b::ib_qp_state_IB_QPS_ERR;
    core.state
        .store(b::ib_qp_state_IB_QPS_ERR, Ordering::Release);
    flush_rings(core, sq, rq, send_cq, recv_cq);
}

/// Tells the consumer of a QP on an SRQ that it has entered the error state
/// and takes no more receive requests from the SRQ
/// (`IB_EVENT_QP_LAST_WQE_REACHED`, IB spec C10-96), so the SRQ's remaining
/// requests can go to other QPs and the QP can be destroyed safely.
pub(crate) fn last_wqe_reached(srq: &Option<SrqRef<RrxeDev>>, events: &QpEvents) {
    if srq.is_some() {
        events.raise(b::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED);
    }
}

/// A run of a QP in the error state: requests posted since are flushed,
/// packets dropped.
pub(crate) fn serve_error(core: &QpCore, live: &mut Live) {
    while core.next_packet().is_some() {
        core.dp.drop_packet(Counter::RcvdNoQp);
    }
    let Live {
        sq,
        rq,
        send_cq,
        recv_cq,
        ..
    } = live;
    flush_rings(core, sq, rq, send_cq, recv_cq);
}

/// The remote operations the QP's access flags (`IB_ACCESS_REMOTE_*`,
/// `IB_ACCESS_FLUSH_*`) allow.
fn remote_access(flags: i32) -> RemoteAccess {
    let has = |bit: u32| u32::try_from(flags).is_ok_and(|f| f & bit != 0);
    RemoteAccess {
        read: has(b::ib_access_flags_IB_ACCESS_REMOTE_READ),
        write: has(b::ib_access_flags_IB_ACCESS_REMOTE_WRITE),
        atomic: has(b::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC),
        flush_global: has(b::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL),
        flush_persistent: has(b::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT),
    }
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
    buf: &mut wqe::RecvCopy,
) -> bool {
    if let Some(rq) = rq {
        if wqe::peek_recv(rq, buf) {
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
        let qpn = match &num {
            Some(n) => n.get(),
            None if gsi => 1,
            None => return Err(EINVAL),
        };
        if gsi && dp.has_qp(qpn) {
            return Err(EBUSY);
        }
        let sq_sig_all = init.sq_sig_all();
        let ibqp = init.qp_addr();
        let events = init.event_target();
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
        cap.max_send_sge = u32::try_from(payload / SGE_SIZE).map_err(|_| EINVAL)?;
        cap.max_inline_data = u32::try_from(payload).map_err(|_| EINVAL)?;
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
        let live = Live::new(Attrs(attrs), sq, rq, srq, send_cq, recv_cq, events);
        let info = QpInfo {
            qpn,
            qp_type,
            sq_sig_all,
            pd,
            ibqp,
            kernel,
            max_sge: (cap.max_send_sge, cap.max_recv_sge),
        };
        let core = QpCore::new(info, dp.clone(), live, ksq, krq)?;
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
        let qp_type = self.core.info.qp_type;
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
                | ib_access_flags_IB_ACCESS_REMOTE_ATOMIC
                | ib_access_flags_IB_ACCESS_FLUSH_GLOBAL
                | ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT) as i32;
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
            sgid = Some((
                attr.source_gid().ok_or(EINVAL)?,
                attr.source_ifindex().unwrap_or(0),
            ));
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
        QpCore::with_live(&self.core, |st| {
            let st = Option::as_mut(st).ok_or(EINVAL)?;
            self.apply(st, attr, mask, sgid)
        })
    }

    /// Applies validated attributes (the QP is ours: no run meanwhile).
    fn apply(
        &self,
        st: &mut Live,
        attr: &QpAttr<'_>,
        mask: u32,
        sgid: Option<([u8; 16], i32)>,
    ) -> Result {
        use b::*;
        let qp_type = self.core.info.qp_type;
        let has = |bit| mask_has(mask, bit);
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
        if let Some((sgid, ifindex)) = sgid {
            st.sgid = sgid;
            st.sgid_ifindex = ifindex;
        }
        if has(ib_qp_attr_mask_IB_QP_AV) {
            // SAFETY: RoCE address vectors use the `roce` member of the union.
            st.dmac = unsafe { attr.ah_attr.__bindgen_anon_1.roce.dmac };
        }
        if has(ib_qp_attr_mask_IB_QP_ACCESS_FLAGS) {
            if let Some(conn) = &mut st.conn {
                conn.set_remote_access(remote_access(attr.qp_access_flags));
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
        let connected = self.core.is_connected();
        match next {
            b::ib_qp_state_IB_QPS_RESET => {
                st.conn = None;
                st.ud = None;
                st.sq.clear();
                if let Some(rq) = &st.rq {
                    rq.clear();
                }
            }
            b::ib_qp_state_IB_QPS_RTR if connected && cur == b::ib_qp_state_IB_QPS_INIT => {
                st.conn = Some(self.connect(st)?);
            }
            b::ib_qp_state_IB_QPS_RTR if self.core.is_ud() && st.ud.is_none() => {
                st.ud = Some(Ud::new());
            }
            b::ib_qp_state_IB_QPS_RTS if cur == b::ib_qp_state_IB_QPS_RTR => {
                let a = &st.attrs.0;
                if let Some(conn) = &mut st.conn {
                    conn.start_requester(
                        a.sq_psn,
                        a.retry_cnt,
                        a.rnr_retry,
                        timeout_us(a.timeout),
                        a.max_rd_atomic.clamp(1, p::MAX_QP_RD_ATOM as u8),
                    )?;
                }
            }
            b::ib_qp_state_IB_QPS_ERR => {
                // Work requests the engine holds are older than the rings'.
                if let Some(conn) = &mut st.conn {
                    let _rcu = kernel::sync::rcu::read_lock();
                    conn.abort(&self.core, &st.send_cq, &st.recv_cq);
                }
                flush_rings(&self.core, &mut st.sq, &mut st.rq, &st.send_cq, &st.recv_cq);
                if cur != b::ib_qp_state_IB_QPS_ERR {
                    last_wqe_reached(&st.srq, &st.events);
                }
            }
            _ => {}
        }
        st.attrs.0.qp_state = next;
        st.attrs.0.cur_qp_state = next;
        self.core.state.store(next, Ordering::Release);
        Ok(())
    }

    /// Builds the RC or UC engine at the move to RTR, from the attributes
    /// so far. (A UC QP's retry, timeout and RD attributes are never set;
    /// the UC engine does not use them.)
    fn connect(&self, st: &Live) -> Result<Conn> {
        let a = &st.attrs.0;
        let mtu = 128u32
            << a.path_mtu
                .clamp(b::ib_mtu_IB_MTU_256, b::ib_mtu_IB_MTU_4096);
        let qpn = self.core.info.qpn;
        let dest = a.dest_qp_num & 0x00ff_ffff;
        let grh = &a.ah_attr.grh;
        let sport = crate::rdma::attr::roce_udp_sport(grh.flow_label, qpn, dest);
        let to = AhInfo {
            sgid: st.sgid,
            // SAFETY: `raw` is the plain-bytes view of the GID union.
            dgid: unsafe { grh.dgid.raw },
            flow_label: grh.flow_label,
            hop_limit: grh.hop_limit,
            tclass: grh.traffic_class,
            dmac: st.dmac,
            ifindex: st.sgid_ifindex,
        };
        let path = Path::new(&self.dp, &to, sport, true)?;
        let segment_pkts = path.segments(mtu);
        let transport = if self.core.info.qp_type == b::ib_qp_type_IB_QPT_UC {
            Transport::Uc
        } else {
            Transport::Rc
        };
        let cfg = QpConfig {
            transport,
            qpn,
            dest_qpn: dest,
            pkey: p::DEFAULT_PKEY,
            mtu,
            segment_pkts,
            sq_psn: a.sq_psn,
            rq_psn: a.rq_psn,
            retry_cnt: a.retry_cnt.min(7),
            rnr_retry: a.rnr_retry.min(7),
            min_rnr_timer: a.min_rnr_timer & 0x1f,
            timeout_us: timeout_us(a.timeout),
            max_rd_atomic: a.max_rd_atomic.clamp(1, p::MAX_QP_RD_ATOM as u8),
            max_inflight_pkts: 256,
            remote: remote_access(a.qp_access_flags),
        };
        let caps = ConnCaps {
            window: self.cap.max_send_wr,
            max_inline: self.cap.max_inline_data,
            max_send_sge: self.cap.max_send_sge,
            max_recv_sge: st
                .srq
                .as_ref()
                .map_or(self.cap.max_recv_sge, |s| s.data().max_sge()),
        };
        Conn::new(cfg, path, caps)
    }

    /// Send work requests wait in the ring (user space wrote them, or
    /// `post_send` did): the QP runs. Before RTS that is an error; in the
    /// error state the run flushes them. A user QP runs in the calling
    /// task (the doorbell system call); a kernel QP from its work item, as
    /// in-kernel callers may post in any context.
    pub(crate) fn doorbell(&self) -> Result {
        match self.core.state.load(Ordering::Acquire) {
            b::ib_qp_state_IB_QPS_RTS
            | b::ib_qp_state_IB_QPS_SQD
            | b::ib_qp_state_IB_QPS_SQE
            | b::ib_qp_state_IB_QPS_ERR => {}
            _ => return Err(EINVAL),
        }
        if self.core.info.kernel {
            QpCore::kick_later(&self.core);
        } else {
            QpCore::kick(&self.core, 0);
        }
        Ok(())
    }

    /// Queues a send request of an in-kernel caller (`ib_post_send`).
    pub(crate) fn post_send(&self, wr: &KSendWr<'_, RrxeDev>) -> Result {
        let state = self.core.state.load(Ordering::Acquire);
        if state < b::ib_qp_state_IB_QPS_RTS {
            return Err(EINVAL);
        }
        // As rxe, a READ or an atomic on a UC QP fails at the post (user
        // space's fail in the engine, with IB_WC_LOC_QP_OP_ERR).
        if self.core.info.qp_type == b::ib_qp_type_IB_QPT_UC
            && !matches!(
                wr.opcode(),
                b::ib_wr_opcode_IB_WR_SEND
                    | b::ib_wr_opcode_IB_WR_SEND_WITH_IMM
                    | b::ib_wr_opcode_IB_WR_SEND_WITH_INV
                    | b::ib_wr_opcode_IB_WR_RDMA_WRITE
                    | b::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM
                    | b::ib_wr_opcode_IB_WR_REG_MR
                    | b::ib_wr_opcode_IB_WR_LOCAL_INV
            )
        {
            return Err(EINVAL);
        }
        let mut wqe = [0u8; wqe::SEND_WQE_READ];
        wqe::kernel_send(
            &mut wqe,
            wr,
            self.core.info.max_sge.0 as usize,
            self.cap.max_inline_data as usize,
        )?;
        let mut ksq = self.core.ksq.lock();
        Option::as_mut(&mut *ksq).ok_or(EINVAL)?.push(&wqe)
    }

    /// Queues a receive request of an in-kernel caller (`ib_post_recv`).
    pub(crate) fn post_recv(&self, wr: &KRecvWr<'_>) -> Result {
        if self.core.state.load(Ordering::Acquire) == b::ib_qp_state_IB_QPS_RESET {
            return Err(EINVAL);
        }
        let mut wqe = [0u8; wqe::RECV_WQE_READ_ALL];
        wqe::kernel_recv(&mut wqe, wr, self.core.info.max_sge.1 as usize)?;
        Option::as_mut(&mut *self.core.krq.lock())
            .ok_or(EINVAL)?
            .push(&wqe)?;
        if self.core.state.load(Ordering::Acquire) == b::ib_qp_state_IB_QPS_ERR {
            QpCore::kick_later(&self.core);
        }
        Ok(())
    }

    /// Attaches this (UD) QP to multicast group `mgid`.
    pub(crate) fn attach_mcast(&self, mgid: [u8; 16]) -> Result {
        self.dp
            .mcast
            .attach(self.dp.netdev(), mgid, self.core.info.qpn)
    }

    /// Detaches this QP from multicast group `mgid`.
    pub(crate) fn detach_mcast(&self, mgid: [u8; 16]) -> Result {
        self.dp
            .mcast
            .detach(self.dp.netdev(), mgid, self.core.info.qpn)
    }

    /// Detaches the QP from the datapath and drops everything it holds, so
    /// nothing can reach its rings, CQs or SRQ once `destroy_qp` returns.
    pub(crate) fn destroy(&self) {
        self.dp
            .mcast
            .detach_all(self.dp.netdev(), self.core.info.qpn);
        drop(self.dp.remove_qp(self.core.info.qpn));
        *self.core.ksq.lock() = None;
        *self.core.krq.lock() = None;
        drop(self.core.shut_down());
    }

    /// Reports the attributes (`query_qp`).
    pub(crate) fn query(&self, attr: &mut b::ib_qp_attr, init: &mut b::ib_qp_init_attr) {
        let found = QpCore::with_live(&self.core, |st| Option::as_ref(st).map(|live| live.attrs.0));
        if let Some(a) = found {
            *attr = a;
        }
        attr.cap = self.cap;
        init.cap = self.cap;
        init.qp_type = self.core.info.qp_type;
        init.port_num = 1;
        init.sq_sig_type = if self.core.info.sq_sig_all {
            b::ib_sig_type_IB_SIGNAL_ALL_WR
        } else {
            b::ib_sig_type_IB_SIGNAL_REQ_WR
        };
    }
}
