// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_verbs: MRs with filler pages around them, at any IOVA, for the
 * "bounds" and "protection" cases.
 */
#define _GNU_SOURCE

#include "edge.h"

/*
 * An MR of len bytes (at most PG) at IOVA iova (VA_IOVA: the buffer's own
 * address) over the second of three tracked pages of ROOM.
 */
int edge_mr(struct ibv_pd *pd, uint64_t iova, size_t len, int access, struct edge_mr *t)
{
	memset(t, 0, sizeof(*t));
	CHECK(len <= PG, "edge_mr of %zu bytes", len);
	t->map = page_buf(3 * PG);
	CHECK(t->map, "mmap failed");
	memset(t->map, ROOM, 3 * PG);
	t->buf = t->map + PG;
	t->len = len;
	t->iova = iova == VA_IOVA ? (uintptr_t)t->buf : iova;
	NEW(t->mr, ibv_reg_mr_iova(pd, t->buf, len, t->iova, access));
	vlog("MR of %zu bytes at IOVA 0x%016" PRIx64 " (last byte 0x%016" PRIx64 "): lkey 0x%x "
	     "rkey 0x%x", len, t->iova, t->iova + len - 1, t->mr->lkey, t->mr->rkey);
	return 0;
}

/* The IOVA of byte off of t's MR (modulo 2^64, as the wire carries it). */
uint64_t io(const struct edge_mr *t, int64_t off)
{
	return t->iova + (uint64_t)off;
}

/* Nothing was written around t's MR: the page before it and the rest after it. */
int outside_untouched(const struct edge_mr *t, const char *what)
{
	char w[128];

	snprintf(w, sizeof(w), "%s, the page before the MR", what);
	if (untouched(t->map, PG, ROOM, w))
		return -1;
	snprintf(w, sizeof(w), "%s, after the MR's end", what);
	return untouched(t->buf + t->len, 2 * PG - t->len, ROOM, w);
}

struct ibv_sge *sge64(struct ibv_sge *sge, uint64_t addr, uint32_t len, uint32_t lkey)
{
	sge->addr = addr;
	sge->length = len;
	sge->lkey = lkey;
	return sge;
}

/*
 * Read and acknowledge the asynchronous events that come within QUIET_MS (a
 * responder that refused a request may raise one on its QP); they are
 * logged, not required.
 */
int drain_events(struct env *e, struct ibv_qp *qp, const char *what)
{
	int n = count_events(e, IBV_EVENT_QP_ACCESS_ERR, qp, QUIET_MS);

	if (n < 0)
		return -1;
	vlog("%s: %d IBV_EVENT_QP_ACCESS_ERR on QP 0x%x", what, n, qp->qp_num);
	return 0;
}
