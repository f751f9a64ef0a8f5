// SPDX-License-Identifier: GPL-2.0
/*
 * Scatter/gather elements and work requests.
 */
#define _GNU_SOURCE

#include "vt.h"

struct ibv_sge *set_sge(struct ibv_sge *sge, void *addr, uint32_t len, uint32_t lkey)
{
	sge->addr = (uintptr_t)addr;
	sge->length = len;
	sge->lkey = lkey;
	return sge;
}

/* A signaled single-SGE send WR; the caller sets the remote, immediate or atomic fields. */
void send_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, enum ibv_wr_opcode op,
	     uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = set_sge(sge, addr, len, lkey);
	wr->num_sge = 1;
	wr->opcode = op;
	wr->send_flags = IBV_SEND_SIGNALED;
}

/* A single-SGE receive WR. */
void recv_wr(struct ibv_recv_wr *wr, struct ibv_sge *sge, uint64_t wr_id, void *addr,
	     uint32_t len, uint32_t lkey)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = set_sge(sge, addr, len, lkey);
	wr->num_sge = 1;
}

/* Post one receive of len bytes at addr (B's MR) to B's RQ. */
int post_recv_b(struct rc_pair *p, uint64_t wr_id, void *addr, uint32_t len)
{
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge;

	recv_wr(&wr, &sge, wr_id, addr, len, p->mr_b->lkey);
	OK(ibv_post_recv(p->b, &wr, &bad));
	return 0;
}

/* Post one WR to A's SQ. */
int post_a(struct rc_pair *p, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	OK(ibv_post_send(p->a, wr, &bad));
	return 0;
}

/* A signaled send WR over n SGEs. */
void send_wr_sges(struct ibv_send_wr *wr, struct ibv_sge *sge, int n,
		  enum ibv_wr_opcode op, uint64_t wr_id)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = n;
	wr->opcode = op;
	wr->send_flags = IBV_SEND_SIGNALED;
}

/* Post one receive over n SGEs to qp's RQ. */
int post_recv_sges(struct ibv_qp *qp, struct ibv_sge *sge, int n, uint64_t wr_id)
{
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sge;
	wr.num_sge = n;
	OK(ibv_post_recv(qp, &wr, &bad));
	return 0;
}
