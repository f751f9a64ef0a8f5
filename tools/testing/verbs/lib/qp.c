// SPDX-License-Identifier: GPL-2.0
/*
 * QP creation attributes and state transitions.
 */
#define _GNU_SOURCE

#include <unistd.h>

#include "vt.h"

void qp_init_attr(struct ibv_cq *cq, enum ibv_qp_type t, struct ibv_srq *srq,
		  struct ibv_qp_init_attr *ia)
{
	memset(ia, 0, sizeof(*ia));
	ia->send_cq = cq;
	ia->recv_cq = cq;
	ia->srq = srq;
	ia->qp_type = t;
	ia->cap.max_send_wr = 16;
	ia->cap.max_recv_wr = srq ? 0 : 16;
	ia->cap.max_send_sge = 2;
	ia->cap.max_recv_sge = srq ? 0 : 2;
	ia->cap.max_inline_data = 64;
}

struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type t,
		       struct ibv_srq *srq, struct ibv_qp_init_attr *ia)
{
	qp_init_attr(cq, t, srq, ia);
	return ibv_create_qp(pd, ia);
}

const char *qps(int s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return s >= 0 && s < (int)(sizeof(n) / sizeof(n[0])) ? n[s] : "?";
}

int to_init(struct ibv_qp *qp, enum ibv_qp_type t)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = PORT;
	if (t == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
		if (t == IBV_QPT_RC)
			a.qp_access_flags |= IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &a, mask);
}

int to_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = s;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

/* INIT->RTR attributes (the IB spec's required set for the type); returns the mask. */
int rtr_attr(struct env *e, struct ibv_qp *qp, enum ibv_qp_type t,
	     struct ibv_qp_attr *a)
{
	int mask = IBV_QP_STATE;

	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	if (t == IBV_QPT_UD)
		return mask;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = qp->qp_num;
	a->rq_psn = 0x1234;
	self_ah_attr(e, &a->ah_attr);
	mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (t == IBV_QPT_RC) {
		a->max_dest_rd_atomic = 4;
		a->min_rnr_timer = 12;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	return mask;
}

/* RTR->RTS attributes; returns the mask. */
int rts_attr(enum ibv_qp_type t, struct ibv_qp_attr *a)
{
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->sq_psn = 0x4321;
	if (t == IBV_QPT_RC) {
		a->timeout = 14;
		a->retry_cnt = 7;
		a->rnr_retry = 7;
		a->max_rd_atomic = 4;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return mask;
}

/*
 * query_qp reports state `want` within ms milliseconds (a responder may
 * change its QP's state just after the requester has seen the completion).
 */
int qstate_within(struct ibv_qp *qp, enum ibv_qp_state want, int ms)
{
	struct ibv_qp_init_attr qi;
	struct ibv_qp_attr qa;
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		OK(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi));
		if (qa.qp_state == want)
			break;
		CHECK(ms_since(&t0) < ms, "qp 0x%x state %s after %d ms, expected %s", qp->qp_num,
		      qps(qa.qp_state), ms, qps(want));
		usleep(1000);
	}
	CHECK(qp->state == want, "qp->state %s, expected %s", qps(qp->state), qps(want));
	return 0;
}
