// SPDX-License-Identifier: GPL-2.0
/*
 * One RC connection over the wire: a PD, a CQ and an RC QP on each end,
 * connected through the QPN, PSN and GID the ends swap on the control
 * channel (HELLO). A fresh link per case: a remote access error moves both
 * QPs to ERR.
 */
#define _GNU_SOURCE

#include "mwp.h"

/* First PSNs: the accessor's requests cross the 24-bit PSN wrap. */
#define PSN_OWNER	0x000100
#define PSN_ACCESSOR	0xfffffe

int link_up(struct env *e, int fd, int owner, struct link *l)
{
	struct ibv_qp_init_attr ia;
	struct msg m = { .type = MSG_HELLO }, peer;

	memset(l, 0, sizeof(*l));
	NEW(l->pd, ibv_alloc_pd(e->ctx));
	NEW(l->cq, ibv_create_cq(e->ctx, 64, NULL, NULL, 0));
	NEW(l->qp, make_qp(l->pd, l->cq, IBV_QPT_RC, NULL, &ia));
	m.arg = (uint32_t)vt_driver();
	m.qpn = l->qp->qp_num;
	m.psn = owner ? PSN_OWNER : PSN_ACCESSOR;
	m.gid = e->gid;
	if (ctrl_send(fd, &m) || ctrl_recv(fd, &peer, MSG_HELLO))
		return -1;
	l->peer_driver = (int)peer.arg;
	/* The owner's QP must allow remote WRITE and READ: windows need both rights. */
	if (rc_connect_remote(e, l->qp, &peer.gid, peer.qpn, m.psn, peer.psn, 7, 7, DP_ACCESS)) {
		prefix_reason("connecting the RC QP");
		return -1;
	}
	vlog("RC QP 0x%x (%s) <-> QP 0x%x at %s (%s)", l->qp->qp_num,
	     vt_driver_name(vt_driver()), peer.qpn, gid_str(&peer.gid),
	     vt_driver_name(l->peer_driver));
	return 0;
}

int link_post(struct link *l, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	OK(ibv_post_send(l->qp, wr, &bad));
	return 0;
}

/*
 * After a remote access error: the QP reaches ERR, and every async event
 * (IBV_EVENT_QP_ACCESS_ERR on the responder) is read and acknowledged, since
 * destroying the QP waits for that.
 */
int link_errored(struct env *e, struct link *l, const char *what)
{
	int n;

	if (qstate_within(l->qp, IBV_QPS_ERR, DP_WAIT_MS)) {
		prefix_reason(what);
		return -1;
	}
	n = count_events(e, IBV_EVENT_QP_ACCESS_ERR, l->qp, 300);
	if (n < 0)
		return -1;
	vlog("%s: QP 0x%x in ERR, %d IBV_EVENT_QP_ACCESS_ERR", what, l->qp->qp_num, n);
	return 0;
}
