// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: the send and receive rings librxe writes work requests into,
//! and the attributes that `modify_qp` moves through the IB state machine.

use crate::{
    cq,
    device::RrxeDev,
    index::Index,
    params as p,
    queue::{Queue, Side},
    rdma::{
        bindings as b,
        driver::CqRef,
        qp::{modify_is_ok, QpAttr, QpInit},
        udata::Udata,
    },
    uapi::{RECV_WQE_HDR, SEND_WQE_HDR, SGE_SIZE},
};
use kernel::{new_mutex, prelude::*, sync::Mutex};

/// Attributes a QP keeps between `modify_qp` calls, as `query_qp` reports them.
struct Attrs(b::ib_qp_attr);

// SAFETY: The pointers inside `ib_qp_attr` (GID attributes, xmit slave) are
// cleared before storing and never dereferenced; the rest is plain data.
unsafe impl Send for Attrs {}

/// The mutable part of a QP.
struct State {
    attrs: Attrs,
    sq: Queue,
    /// `None` when receives come from an SRQ.
    rq: Option<Queue>,
}

/// Driver data of a queue pair.
#[pin_data]
pub(crate) struct Qp {
    /// Owns the QP number (ib_qp.qp_num) until the QP is destroyed.
    num: Index,
    qp_type: u32,
    sq_sig_all: bool,
    cap: b::ib_qp_cap,
    send_cq: CqRef<RrxeDev>,
    recv_cq: CqRef<RrxeDev>,
    #[pin]
    state: Mutex<State>,
}

const STATE: u32 = b::ib_qp_attr_mask_IB_QP_STATE;

fn mask_has(mask: u32, bit: u32) -> bool {
    mask & bit != 0
}

impl Qp {
    /// Creates a QP with its rings mapped into the caller.
    pub(crate) fn new(
        num: Index,
        init: &mut QpInit<'_>,
        send_cq: CqRef<RrxeDev>,
        recv_cq: CqRef<RrxeDev>,
        udata: &mut Udata,
    ) -> Result<impl PinInit<Self, Error>> {
        if init.create_flags() != 0 {
            return Err(EOPNOTSUPP);
        }
        let qp_type = init.qp_type();
        if ![b::ib_qp_type_IB_QPT_RC, b::ib_qp_type_IB_QPT_UC, b::ib_qp_type_IB_QPT_UD].contains(&qp_type) {
            return Err(EOPNOTSUPP);
        }
        // librxe sends no driver request; anything else is not ours.
        if !udata.is_user() || udata.inlen() != 0 {
            return Err(EINVAL);
        }
        let has_srq = init.has_srq();
        let sq_sig_all = init.sq_sig_all();
        let cap = init.cap();
        if cap.max_send_wr > p::MAX_QP_WR
            || cap.max_send_sge > p::MAX_SGE
            || cap.max_inline_data > p::MAX_INLINE_DATA
            || (!has_srq && (cap.max_recv_wr > p::MAX_QP_WR || cap.max_recv_sge > p::MAX_SGE))
        {
            return Err(EINVAL);
        }

        // A send slot holds the WQE header and either the SGEs or inline data.
        let payload = (cap.max_send_sge as usize * SGE_SIZE).max(cap.max_inline_data as usize);
        let sq = Queue::new(udata, Side::Consume, cap.max_send_wr, SEND_WQE_HDR + payload)?;
        cap.max_send_wr = sq.capacity();
        cap.max_send_sge = (payload / SGE_SIZE) as u32;
        cap.max_inline_data = payload as u32;
        let rq = if has_srq {
            None
        } else {
            let rq = Queue::new(udata, Side::Consume, cap.max_recv_wr, RECV_WQE_HDR + cap.max_recv_sge as usize * SGE_SIZE)?;
            cap.max_recv_wr = rq.capacity();
            Some(rq)
        };
        let resp = b::rxe_create_qp_resp {
            rq_mi: rq.as_ref().map(Queue::mminfo).unwrap_or_default(),
            sq_mi: sq.mminfo(),
        };
        udata.write(&resp)?;

        let mut attrs = b::ib_qp_attr {
            qp_state: b::ib_qp_state_IB_QPS_RESET,
            cur_qp_state: b::ib_qp_state_IB_QPS_RESET,
            path_mtu: b::ib_mtu_IB_MTU_256,
            port_num: 1,
            ..Default::default()
        };
        attrs.cap = *cap;
        let cap = *cap;
        Ok(try_pin_init!(Self {
            num,
            qp_type,
            sq_sig_all,
            cap,
            send_cq,
            recv_cq,
            state <- new_mutex!(State { attrs: Attrs(attrs), sq, rq }),
        }))
    }

    /// Validates `attr`/`mask` and applies them (`modify_qp`).
    pub(crate) fn modify(&self, attr: &QpAttr<'_>, mask: u32) -> Result {
        if mask & !b::ib_qp_attr_mask_IB_QP_ATTR_STANDARD_BITS != 0 {
            return Err(EOPNOTSUPP);
        }
        use b::*;
        let has = |bit| mask_has(mask, bit);
        if has(ib_qp_attr_mask_IB_QP_PORT) && attr.port_num != 1 {
            return Err(EINVAL);
        }
        if has(ib_qp_attr_mask_IB_QP_CAP) && (attr.cap.max_send_wr > self.cap.max_send_wr
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
            if self.qp_type == ib_qp_type_IB_QPT_UD || attr.qp_access_flags & !ok != 0 {
                return Err(EINVAL);
            }
        }
        if has(ib_qp_attr_mask_IB_QP_AV) {
            let ah = &attr.ah_attr;
            if ah.type_ != rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE
                || u32::from(ah.ah_flags) & ib_ah_flags_IB_AH_GRH == 0
                || i32::from(ah.grh.sgid_index) >= p::GID_TABLE_LEN
            {
                return Err(EINVAL);
            }
        }
        if has(ib_qp_attr_mask_IB_QP_PATH_MTU) && attr.path_mtu > ib_mtu_IB_MTU_4096 {
            return Err(EINVAL);
        }
        if has(ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC) && u32::from(attr.max_rd_atomic) > p::MAX_QP_RD_ATOM {
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

        let mut guard = self.state.lock();
        let st = &mut *guard;
        let cur_attrs = &mut st.attrs.0;
        let cur = if has(ib_qp_attr_mask_IB_QP_CUR_STATE) { attr.cur_qp_state } else { cur_attrs.qp_state };
        let next = if has(STATE) { attr.qp_state } else { cur };
        if !modify_is_ok(cur, next, self.qp_type, mask) {
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
            cur_attrs.qp_state = next;
            cur_attrs.cur_qp_state = next;
            if next == ib_qp_state_IB_QPS_RESET {
                st.sq.clear();
                if let Some(rq) = &st.rq {
                    rq.clear();
                }
            }
            if next == ib_qp_state_IB_QPS_ERR {
                self.flush(st);
            }
        }
        Ok(())
    }

    /// Completes every outstanding work request with `IB_WC_WR_FLUSH_ERR`,
    /// receives into the receive CQ and sends into the send CQ, in order.
    fn flush(&self, st: &mut State) {
        let flushed = |wr_id| b::ib_uverbs_wc {
            wr_id,
            status: b::ib_wc_status_IB_WC_WR_FLUSH_ERR,
            qp_num: self.num.get(),
            ..Default::default()
        };
        if let Some(rq) = &mut st.rq {
            while let Some(wr_id) = rq.pop_wr_id() {
                if cq::complete(&self.recv_cq, &flushed(wr_id), false).is_err() {
                    pr_warn!("QP {}: receive CQ full, flush completion lost\n", self.num.get());
                }
            }
        }
        while let Some(wr_id) = st.sq.pop_wr_id() {
            if cq::complete(&self.send_cq, &flushed(wr_id), false).is_err() {
                pr_warn!("QP {}: send CQ full, flush completion lost\n", self.num.get());
            }
        }
    }

    /// Reports the attributes (`query_qp`).
    pub(crate) fn query(&self, attr: &mut b::ib_qp_attr, init: &mut b::ib_qp_init_attr) {
        *attr = self.state.lock().attrs.0;
        attr.cap = self.cap;
        init.cap = self.cap;
        init.qp_type = self.qp_type;
        init.port_num = 1;
        init.sq_sig_type = if self.sq_sig_all {
            b::ib_sig_type_IB_SIGNAL_ALL_WR
        } else {
            b::ib_sig_type_IB_SIGNAL_REQ_WR
        };
    }
}
