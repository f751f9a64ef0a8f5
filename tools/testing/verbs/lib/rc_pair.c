// SPDX-License-Identifier: GPL-2.0
/*
 * RC connections: to a QP at any GID, and two RC QPs of the device connected
 * to each other (see DP_* in vt.h).
 */
#define _GNU_SOURCE

#include "vt.h"

/*
 * RESET->INIT->RTR->RTS of an RC QP towards QP peer_qpn at GID `dgid` (from the
 * port's GID e->gid_index), with qp_access_flags `access`.
 */
int rc_connect_remote(struct env *e, struct ibv_qp *qp, const union ibv_gid *dgid,
		      uint32_t peer_qpn, uint32_t sq_psn, uint32_t rq_psn, int rnr_retry,
		      int retry_cnt, int access)
{
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = PORT;
	a.qp_access_flags = access;
	OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			 IBV_QP_ACCESS_FLAGS));
	/* path_mtu 1024, AV to dgid (hop_limit 64), max_dest_rd_atomic 4 */
	mask = rtr_attr(e, qp, IBV_QPT_RC, &a);
	a.ah_attr.grh.dgid = *dgid;
	a.dest_qp_num = peer_qpn;
	a.rq_psn = rq_psn;
	OK(ibv_modify_qp(qp, &a, mask));
	/* timeout 14, max_rd_atomic 4 */
	mask = rts_attr(IBV_QPT_RC, &a);
	a.sq_psn = sq_psn;
	a.rnr_retry = rnr_retry;
	a.retry_cnt = retry_cnt;
	OK(ibv_modify_qp(qp, &a, mask));
	QSTATE(qp, IBV_QPS_RTS);
	return 0;
}

/*
 * RESET->INIT->RTR->RTS of an RC QP towards peer_qpn on the port's own GID,
 * with qp_access_flags `access`.
 */
int rc_connect_access(struct env *e, struct ibv_qp *qp, uint32_t peer_qpn, uint32_t sq_psn,
		      uint32_t rq_psn, int rnr_retry, int retry_cnt, int access)
{
	return rc_connect_remote(e, qp, &e->gid, peer_qpn, sq_psn, rq_psn, rnr_retry, retry_cnt,
				 access);
}

/* rc_connect_access with every remote access right (DP_ACCESS). */
int rc_connect(struct env *e, struct ibv_qp *qp, uint32_t peer_qpn, uint32_t sq_psn,
	       uint32_t rq_psn, int rnr_retry, int retry_cnt)
{
	return rc_connect_access(e, qp, peer_qpn, sq_psn, rq_psn, rnr_retry, retry_cnt,
				 DP_ACCESS);
}

/* The SGE and inline limits of `cap`, if not NULL (max_recv_sge only without an SRQ). */
static void dp_caps(struct ibv_qp_init_attr *ia, const struct ibv_qp_cap *cap)
{
	if (!cap)
		return;
	ia->cap.max_send_sge = cap->max_send_sge;
	if (!ia->srq)
		ia->cap.max_recv_sge = cap->max_recv_sge;
	ia->cap.max_inline_data = cap->max_inline_data;
}

/*
 * Two RC QPs on `pd` connected to each other, each with its own CQ, buffer and
 * MR; B takes its receives from o->srq if not NULL. o->rnr_retry and
 * o->retry_cnt apply to both; B's CQ is created with o->cqe_b entries, A's
 * with 4 * DP_BURST. The QPs have 2 * DP_BURST WRs per queue and
 * qp_init_attr's SGE and inline limits, or those of o->cap if not NULL (B's
 * max_recv_sge stays 0 on an SRQ). A's qp_access_flags are DP_ACCESS, B's
 * o->access_b.
 */
int rc_pair_opts(struct env *e, struct ibv_pd *pd, const struct rc_opts *o, struct rc_pair *p)
{
	struct ibv_qp_init_attr ia;

	memset(p, 0, sizeof(*p));
	NEW(p->cq_a, ibv_create_cq(e->ctx, 4 * DP_BURST, NULL, NULL, 0));
	NEW(p->cq_b, ibv_create_cq(e->ctx, o->cqe_b, NULL, NULL, 0));
	p->buf_a = page_buf(DP_BUF);
	p->buf_b = page_buf(DP_BUF);
	CHECK(p->buf_a && p->buf_b, "mmap failed");
	NEW(p->mr_a, ibv_reg_mr(pd, p->buf_a, DP_BUF, DP_ACCESS));
	NEW(p->mr_b, ibv_reg_mr(pd, p->buf_b, DP_BUF, DP_ACCESS));
	qp_init_attr(p->cq_a, IBV_QPT_RC, NULL, &ia);
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 2 * DP_BURST;
	dp_caps(&ia, o->cap);
	if (o->send_ops_a) {
		struct ibv_qp_init_attr_ex iax;

		memset(&iax, 0, sizeof(iax));
		iax.qp_type = ia.qp_type;
		iax.send_cq = ia.send_cq;
		iax.recv_cq = ia.recv_cq;
		iax.cap = ia.cap;
		iax.sq_sig_all = ia.sq_sig_all;
		iax.pd = pd;
		iax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		iax.send_ops_flags = o->send_ops_a;
		NEW(p->a, ibv_create_qp_ex(e->ctx, &iax));
	} else {
		NEW(p->a, ibv_create_qp(pd, &ia));
	}
	qp_init_attr(p->cq_b, IBV_QPT_RC, o->srq, &ia);
	ia.cap.max_send_wr = 2 * DP_BURST;
	if (!o->srq)
		ia.cap.max_recv_wr = 2 * DP_BURST;
	dp_caps(&ia, o->cap);
	NEW(p->b, ibv_create_qp(pd, &ia));
	if (rc_connect(e, p->a, p->b->qp_num, PSN_A, PSN_B, o->rnr_retry, o->retry_cnt)) {
		prefix_reason("connecting QP A");
		return -1;
	}
	if (rc_connect_access(e, p->b, p->a->qp_num, PSN_B, PSN_A, o->rnr_retry, o->retry_cnt,
			      o->access_b)) {
		prefix_reason("connecting QP B");
		return -1;
	}
	vlog("RC QP A 0x%x <-> QP B 0x%x%s, GID[%d] %s, rnr_retry %d, retry_cnt %d",
	     p->a->qp_num, p->b->qp_num, o->srq ? " (B on an SRQ)" : "", e->gid_index,
	     gid_str(&e->gid), o->rnr_retry, o->retry_cnt);
	return 0;
}

/* rc_pair_opts with every remote access right on B. */
int rc_pair_ex(struct env *e, struct ibv_pd *pd, struct ibv_srq *srq, int rnr_retry,
	       int retry_cnt, int cqe_b, const struct ibv_qp_cap *cap, struct rc_pair *p)
{
	const struct rc_opts o = {
		.srq = srq, .rnr_retry = rnr_retry, .retry_cnt = retry_cnt, .cqe_b = cqe_b,
		.cap = cap, .access_b = DP_ACCESS,
	};

	return rc_pair_opts(e, pd, &o, p);
}

/* rc_pair_ex with retry_cnt 7, B's CQ as large as A's and the default caps. */
int rc_pair(struct env *e, struct ibv_pd *pd, struct ibv_srq *srq, int rnr_retry,
	    struct rc_pair *p)
{
	return rc_pair_ex(e, pd, srq, rnr_retry, 7, 4 * DP_BURST, NULL, p);
}

/* Destroy the QPs, MRs, CQs and buffers of a pair now (each verb must succeed). */
int rc_pair_release(struct rc_pair *p)
{
	OK(release(p->a));
	OK(release(p->b));
	OK(release(p->mr_a));
	OK(release(p->mr_b));
	OK(release(p->cq_a));
	OK(release(p->cq_b));
	OK(release(p->buf_a));
	OK(release(p->buf_b));
	memset(p, 0, sizeof(*p));
	return 0;
}
