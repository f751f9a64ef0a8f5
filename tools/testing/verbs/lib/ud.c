// SPDX-License-Identifier: GPL-2.0
/*
 * Two UD QPs of the device, A sending to B through an address handle to the
 * port's own RoCE v2 GID (the device loops the packets back).
 */
#define _GNU_SOURCE

#include "vt.h"

/*
 * A and B on `pd`, each with its own CQ of 4 * DP_BURST entries and 2 *
 * DP_BURST WRs per queue, in RTS with Q_Key UD_QKEY; qp_init_attr's SGE and
 * inline limits, or those of `cap` if not NULL.
 */
int ud_pair(struct env *e, struct ibv_pd *pd, const struct ibv_qp_cap *cap, struct ud_pair *p)
{
	struct ibv_qp_init_attr ia;
	struct ibv_ah_attr aa;
	struct ibv_qp_attr a;
	struct ibv_qp **qp;
	int i, mask;

	memset(p, 0, sizeof(*p));
	NEW(p->cq_a, ibv_create_cq(e->ctx, 4 * DP_BURST, NULL, NULL, 0));
	NEW(p->cq_b, ibv_create_cq(e->ctx, 4 * DP_BURST, NULL, NULL, 0));
	for (i = 0; i < 2; i++) {
		qp = i ? &p->b : &p->a;
		qp_init_attr(i ? p->cq_b : p->cq_a, IBV_QPT_UD, NULL, &ia);
		ia.cap.max_send_wr = ia.cap.max_recv_wr = 2 * DP_BURST;
		if (cap) {
			ia.cap.max_send_sge = cap->max_send_sge;
			ia.cap.max_recv_sge = cap->max_recv_sge;
			ia.cap.max_inline_data = cap->max_inline_data;
		}
		NEW(*qp, ibv_create_qp(pd, &ia));
		OK(to_init(*qp, IBV_QPT_UD));
		mask = rtr_attr(e, *qp, IBV_QPT_UD, &a);
		OK(ibv_modify_qp(*qp, &a, mask));
		mask = rts_attr(IBV_QPT_UD, &a);
		OK(ibv_modify_qp(*qp, &a, mask));
		QSTATE(*qp, IBV_QPS_RTS);
	}
	self_ah_attr(e, &aa);
	NEW(p->ah, ibv_create_ah(pd, &aa));
	vlog("UD QP A 0x%x -> QP B 0x%x, GID[%d] %s", p->a->qp_num, p->b->qp_num, e->gid_index,
	     gid_str(&e->gid));
	return 0;
}

/* Address a send WR of A to B with Q_Key qkey. */
void ud_dest(struct ibv_send_wr *wr, const struct ud_pair *p, uint32_t qkey)
{
	wr->wr.ud.ah = p->ah;
	wr->wr.ud.remote_qpn = p->b->qp_num;
	wr->wr.ud.remote_qkey = qkey;
}
