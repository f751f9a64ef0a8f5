// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_verbs: the "bounds" cases: MRs at the bottom and the top of the 64-bit
 * address space, SGEs that touch or cross the end of an MR or 2^64,
 * zero-length SGEs, max_sge, UD messages against the MTU, short receive
 * buffers and a wrong Q_Key, RDMA and atomics against the edges of the
 * remote MR. Every case checks the completion status, the QP states
 * afterwards and, byte by byte, the memory a failed operation could have
 * written.
 *
 * Where rxe and the IB spec disagree the case expects the spec's answer, and
 * accepts rxe's on rxe only (check_wc_drv; -D or the device name says which
 * driver it is): each such place says why.
 *
 * Local SGE errors. An SGE whose range leaves its MR is a local protection
 * error (the L_Key check covers the range): IBV_WC_LOC_PROT_ERR for the
 * requester's gather list and for a receive's scatter list. rxe reports the
 * READ's and atomics' scatter errors that way (rxe_comp.c), but copy_data's
 * -EINVAL becomes IB_WC_LOC_QP_OP_ERR in the requester (gather) and
 * RESPST_ERR_MALFORMED_WQE, also IB_WC_LOC_QP_OP_ERR, in the responder
 * (scatter); a failed gather moves the QP to ERR before the completer
 * reports the WQE, so the WQE itself may come back as IBV_WC_WR_FLUSH_ERR
 * (see multi_sge). The responder of a failed scatter NAKs with a remote
 * operational error on RC: the requester gets IBV_WC_REM_OP_ERR (rxe and
 * spec agree).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include "edge.h"

#define SGE_MAX_LIMIT	256	/* the most SGEs sge_max handles */

/* The QPs of pair p are in states sa (A) and sb (B). */
static int states(struct rc_pair *p, enum ibv_qp_state sa, enum ibv_qp_state sb)
{
	QSTATE_W(p->a, sa);
	QSTATE_W(p->b, sb);
	return 0;
}

/* Post wr on qp; the post must succeed. */
static int post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	OK(ibv_post_send(qp, wr, &bad));
	return 0;
}

static int post_recv1(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sge)
{
	return post_recv_sges(qp, sge, 1, wr_id);
}

/* ------------------------------------------------------------------ */
/* mr_iova: MRs at IOVA 0, 2^64 - 8192 and 2^64 - 4096, and past 2^64 */
/* ------------------------------------------------------------------ */

/*
 * rxe does not check that iova + length stays below 2^64 (ib_uverbs_reg_mr
 * checks only that start and hca_va share their page offset, and
 * rxe_reg_user_mr pins start..start+length without looking at the IOVA):
 * the registration succeeds, and mr_check_range then refuses every address
 * past the wrap. rrxe refuses the registration with EINVAL. Both keep the
 * wrapped part unusable; the case expects EINVAL, and on rxe a success.
 */
int t_mr_iova(struct env *e)
{
	static const uint64_t iovas[] = { 0, (uint64_t)0 - 2 * PG, TOP_IOVA };
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct edge_mr t;
	struct rc_pair p;
	uint8_t *buf;
	char what[96];
	size_t i;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (rc_pair(e, pd, NULL, 7, &p))
		return -1;
	for (i = 0; i < sizeof(iovas) / sizeof(iovas[0]); i++) {
		if (edge_mr(pd, iovas[i], PG, DP_ACCESS, &t))
			return -1;
		/* WRITE 16 bytes to the MR's first and last 16 bytes, READ the last back. */
		fill(p.buf_a, 32, 40 + i);
		memset(p.buf_a + 100, ROOM, 32);
		snprintf(what, sizeof(what), "MR at 0x%016" PRIx64 ": WRITE to its first 16 bytes",
			 t.iova);
		send_wr(&wr, &sge, IBV_WR_RDMA_WRITE, 800, p.buf_a, 16, p.mr_a->lkey);
		wr.wr.rdma.remote_addr = io(&t, 0);
		wr.wr.rdma.rkey = t.mr->rkey;
		if (post_a(&p, &wr) ||
		    expect_wc(p.cq_a, what, p.a, 800, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1, NULL) ||
		    same(t.buf, p.buf_a, 16, what))
			return -1;
		snprintf(what, sizeof(what), "MR at 0x%016" PRIx64 ": WRITE to its last 16 bytes",
			 t.iova);
		send_wr(&wr, &sge, IBV_WR_RDMA_WRITE, 801, p.buf_a + 16, 16, p.mr_a->lkey);
		wr.wr.rdma.remote_addr = io(&t, PG - 16);
		wr.wr.rdma.rkey = t.mr->rkey;
		if (post_a(&p, &wr) ||
		    expect_wc(p.cq_a, what, p.a, 801, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1, NULL) ||
		    same(t.buf + PG - 16, p.buf_a + 16, 16, what) ||
		    untouched(t.buf + 16, PG - 32, ROOM, what) || outside_untouched(&t, what))
			return -1;
		snprintf(what, sizeof(what), "MR at 0x%016" PRIx64 ": READ of its last 16 bytes",
			 t.iova);
		send_wr(&wr, &sge, IBV_WR_RDMA_READ, 802, p.buf_a + 100, 16, p.mr_a->lkey);
		wr.wr.rdma.remote_addr = io(&t, PG - 16);
		wr.wr.rdma.rkey = t.mr->rkey;
		if (post_a(&p, &wr) ||
		    expect_wc(p.cq_a, what, p.a, 802, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 16, NULL) ||
		    same(p.buf_a + 100, p.buf_a + 16, 16, what) ||
		    untouched(p.buf_a + 116, 16, ROOM, what))
			return -1;
		vlog("MR at IOVA 0x%016" PRIx64 ": WRITE to both ends and READ, data checked", t.iova);
		OK(release(t.mr));
	}
	if (states(&p, IBV_QPS_RTS, IBV_QPS_RTS) || cq_empty(p.cq_b, "MR edges, B's CQ"))
		return -1;

	/* iova + length past 2^64: the second page would wrap to IOVA 0. */
	buf = page_buf(2 * PG);
	CHECK(buf, "mmap failed");
	errno = 0;
	mr = ibv_reg_mr_iova(pd, buf, 2 * PG, TOP_IOVA, DP_ACCESS);
	if (mr)
		track(K_MR, mr, 0);
	if (vt_driver() == DRV_RXE) {
		CHECK(mr, "rxe: MR of 8192 bytes at IOVA 0x%016" PRIx64 ": %s, expected rxe's "
		      "success", TOP_IOVA, errname(errno));
		vlog("rxe: an MR whose IOVA range passes 2^64 is accepted (rrxe: EINVAL)");
	} else {
		CHECK(!mr, "MR of 8192 bytes at IOVA 0x%016" PRIx64 " (past 2^64): succeeded, "
		      "expected EINVAL", TOP_IOVA);
		CHECK(errno == EINVAL, "MR of 8192 bytes at IOVA 0x%016" PRIx64 ": %s, expected "
		      "EINVAL", TOP_IOVA, errname(errno));
		vlog("an MR whose IOVA range passes 2^64: EINVAL");
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* sge_end: SGEs that end exactly at the end of an MR at the top      */
/* ------------------------------------------------------------------ */

int t_sge_end(struct env *e)
{
	struct ibv_send_wr wr;
	struct ibv_sge s, r;
	struct edge_mr ta, tb;
	struct ibv_pd *pd;
	struct rc_pair p;
	struct ud_pair u;
	uint64_t old;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (rc_pair(e, pd, NULL, 7, &p) || edge_mr(pd, TOP_IOVA, PG, DP_ACCESS, &ta) ||
	    edge_mr(pd, TOP_IOVA, PG, DP_ACCESS, &tb))
		return -1;

	/* SEND from A's last 100 bytes into B's last 100 bytes (last byte 2^64 - 1). */
	fill(ta.buf, PG, 50);
	if (post_recv1(p.b, 810, sge64(&r, io(&tb, PG - 100), 100, tb.mr->lkey)))
		return -1;
	send_wr_sges(&wr, sge64(&s, io(&ta, PG - 100), 100, ta.mr->lkey), 1, IBV_WR_SEND, 811);
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "SEND from the MR's end", p.a, 811, IBV_WC_SUCCESS, IBV_WC_SEND, -1,
		      NULL) ||
	    expect_wc(p.cq_b, "RECV into the MR's end", p.b, 810, IBV_WC_SUCCESS, IBV_WC_RECV, 100,
		      NULL) ||
	    same(tb.buf + PG - 100, ta.buf + PG - 100, 100, "RECV into the MR's end") ||
	    untouched(tb.buf, PG - 100, ROOM, "RECV into the MR's end, before it") ||
	    outside_untouched(&tb, "RECV into the MR's end"))
		return -1;

	/* RDMA WRITE from A's last 200 bytes to B's last 200 bytes. */
	memset(tb.buf, ROOM, PG);
	send_wr_sges(&wr, sge64(&s, io(&ta, PG - 200), 200, ta.mr->lkey), 1, IBV_WR_RDMA_WRITE,
		     812);
	wr.wr.rdma.remote_addr = io(&tb, PG - 200);
	wr.wr.rdma.rkey = tb.mr->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "WRITE from and to the MRs' ends", p.a, 812, IBV_WC_SUCCESS,
		      IBV_WC_RDMA_WRITE, -1, NULL) ||
	    same(tb.buf + PG - 200, ta.buf + PG - 200, 200, "WRITE to the MR's end") ||
	    untouched(tb.buf, PG - 200, ROOM, "WRITE to the MR's end, before it") ||
	    outside_untouched(&tb, "WRITE to the MR's end"))
		return -1;

	/* RDMA READ of B's last 300 bytes into A's last 300 bytes. */
	fill(tb.buf, PG, 51);
	memset(ta.buf, ROOM, PG);
	send_wr_sges(&wr, sge64(&s, io(&ta, PG - 300), 300, ta.mr->lkey), 1, IBV_WR_RDMA_READ,
		     813);
	wr.wr.rdma.remote_addr = io(&tb, PG - 300);
	wr.wr.rdma.rkey = tb.mr->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "READ into the MR's end", p.a, 813, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
		      300, NULL) ||
	    same(ta.buf + PG - 300, tb.buf + PG - 300, 300, "READ into the MR's end") ||
	    untouched(ta.buf, PG - 300, ROOM, "READ into the MR's end, before it") ||
	    outside_untouched(&ta, "READ into the MR's end"))
		return -1;

	/* FETCH_AND_ADD on B's last 8 bytes, the original into A's last 8 bytes. */
	memset(ta.buf, ROOM, PG);
	memcpy(&old, tb.buf + PG - 8, 8);
	send_wr_sges(&wr, sge64(&s, io(&ta, PG - 8), 8, ta.mr->lkey), 1,
		     IBV_WR_ATOMIC_FETCH_AND_ADD, 814);
	wr.wr.atomic.remote_addr = io(&tb, PG - 8);
	wr.wr.atomic.rkey = tb.mr->rkey;
	wr.wr.atomic.compare_add = 5;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "FETCH_AND_ADD at both MRs' ends", p.a, 814, IBV_WC_SUCCESS,
		      IBV_WC_FETCH_ADD, 8, NULL) ||
	    same(ta.buf + PG - 8, (const uint8_t *)&old, 8, "FETCH_AND_ADD, the original") ||
	    untouched(ta.buf, PG - 8, ROOM, "FETCH_AND_ADD, before its buffer") ||
	    outside_untouched(&ta, "FETCH_AND_ADD"))
		return -1;
	old += 5;
	if (same(tb.buf + PG - 8, (const uint8_t *)&old, 8, "FETCH_AND_ADD, the remote word") ||
	    states(&p, IBV_QPS_RTS, IBV_QPS_RTS) || cq_empty(p.cq_b, "B's CQ"))
		return -1;
	vlog("RC: SEND/RECV, WRITE, READ and FETCH_AND_ADD ending at 2^64 - 1: data checked");

	/* UD: a receive of GRH + 100 bytes that ends at 2^64 - 1. */
	if (ud_pair(e, pd, NULL, &u))
		return -1;
	memset(tb.buf, ROOM, PG);
	if (post_recv1(u.b, 815, sge64(&r, io(&tb, PG - GRH_LEN - 100), GRH_LEN + 100,
				      tb.mr->lkey)))
		return -1;
	send_wr_sges(&wr, sge64(&s, io(&ta, PG - 100), 100, ta.mr->lkey), 1, IBV_WR_SEND, 816);
	ud_dest(&wr, &u, UD_QKEY);
	if (post(u.a, &wr) ||
	    expect_wc(u.cq_a, "UD SEND from the MR's end", u.a, 816, IBV_WC_SUCCESS, IBV_WC_SEND,
		      -1, NULL) ||
	    expect_wc(u.cq_b, "UD RECV into the MR's end", u.b, 815, IBV_WC_SUCCESS, IBV_WC_RECV,
		      GRH_LEN + 100, NULL) ||
	    same(tb.buf + PG - 100, ta.buf + PG - 100, 100, "UD RECV into the MR's end") ||
	    untouched(tb.buf, PG - GRH_LEN - 100, ROOM, "UD RECV into the MR's end, before it") ||
	    outside_untouched(&tb, "UD RECV into the MR's end"))
		return -1;
	QSTATE_W(u.a, IBV_QPS_RTS);
	QSTATE_W(u.b, IBV_QPS_RTS);
	vlog("UD: SEND from and RECV (GRH + 100 bytes) into the last bytes below 2^64");
	return 0;
}

/* ------------------------------------------------------------------ */
/* sge_cross_end, sge_cross_2_64: SGEs that leave their MR           */
/* ------------------------------------------------------------------ */

/*
 * The SGE of each failing operation lies in an MR t (IOVA iova, PG bytes) at
 * offset off with length len, past the MR's end (the end of the page, or
 * 2^64); atomics use an 8-byte SGE at offset aoff. Each operation gets a
 * fresh pair: the QPs end in ERR.
 */
struct cross {
	const char *name;
	uint64_t iova;
	int64_t off;
	uint32_t len;
	int64_t aoff;
};

/* A local error of A's gather list: nothing is sent, A goes to ERR, B stays in RTS. */
static int cross_gather(struct env *e, struct ibv_pd *pd, const struct cross *c,
			enum ibv_wr_opcode op)
{
	struct ibv_send_wr wr;
	struct ibv_sge s;
	struct edge_mr t;
	struct rc_pair p;
	char what[128];

	if (rc_pair(e, pd, NULL, 7, &p) || edge_mr(pd, c->iova, PG, DP_ACCESS, &t))
		return -1;
	snprintf(what, sizeof(what), "%s: %s gathered from [0x%016" PRIx64 ", +%u)", c->name,
		 op == IBV_WR_SEND ? "SEND" : "WRITE", io(&t, c->off), c->len);
	fill(t.buf, PG, 60);
	memset(p.buf_b, ROOM, DP_BUF);
	if (op == IBV_WR_SEND && post_recv_b(&p, 820, p.buf_b, DP_BUF))
		return -1;
	send_wr_sges(&wr, sge64(&s, io(&t, c->off), c->len, t.mr->lkey), 1, op, 821);
	wr.wr.rdma.remote_addr = (uintptr_t)p.buf_b;
	wr.wr.rdma.rkey = p.mr_b->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc_drv(p.cq_a, what, p.a, 821, IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_QP_OP_ERR,
			  IBV_WC_WR_FLUSH_ERR) ||
	    cq_quiet(p.cq_b, QUIET_MS, what) ||
	    untouched(p.buf_b, DP_BUF, ROOM, what) || states(&p, IBV_QPS_ERR, IBV_QPS_RTS) ||
	    drain_events(e, p.a, what) || rc_pair_release(&p))
		return -1;
	OK(release(t.mr));
	return 0;
}

/*
 * A receive whose scatter list leaves its MR, filled by a SEND of c->len
 * bytes: B's receive fails (the spec's LOC_PROT_ERR; rxe: LOC_QP_OP_ERR, see
 * the top), A gets a remote operational error, both QPs go to ERR and nothing
 * lands outside the MR.
 */
static int cross_scatter(struct env *e, struct ibv_pd *pd, const struct cross *c)
{
	struct ibv_send_wr wr;
	struct ibv_sge s;
	struct edge_mr t;
	struct rc_pair p;
	char what[128];

	if (rc_pair(e, pd, NULL, 7, &p) || edge_mr(pd, c->iova, PG, DP_ACCESS, &t))
		return -1;
	snprintf(what, sizeof(what), "%s: RECV scattered to [0x%016" PRIx64 ", +%u)", c->name,
		 io(&t, c->off), c->len);
	if (post_recv1(p.b, 830, sge64(&s, io(&t, c->off), c->len, t.mr->lkey)))
		return -1;
	fill(p.buf_a, c->len, 61);
	send_wr(&wr, &s, IBV_WR_SEND, 831, p.buf_a, c->len, p.mr_a->lkey);
	if (post_a(&p, &wr) ||
	    expect_wc_drv(p.cq_b, what, p.b, 830, IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_QP_OP_ERR,
			  IBV_WC_LOC_QP_OP_ERR) ||
	    expect_wc(p.cq_a, what, p.a, 831, IBV_WC_REM_OP_ERR, 0, -1, NULL) ||
	    outside_untouched(&t, what) ||
	    untouched(t.buf, c->off, ROOM, what) || states(&p, IBV_QPS_ERR, IBV_QPS_ERR) ||
	    drain_events(e, p.b, what) || rc_pair_release(&p))
		return -1;
	OK(release(t.mr));
	return 0;
}

/*
 * The scatter list of a READ or the result buffer of an atomic leaves its MR:
 * LOC_PROT_ERR (rxe agrees), A in ERR, B (whose response was fine) in RTS,
 * nothing outside the MR written. The responder has executed an atomic by
 * then, so B's word is not checked.
 */
static int cross_result(struct env *e, struct ibv_pd *pd, const struct cross *c,
			enum ibv_wr_opcode op)
{
	int atomic = op == IBV_WR_ATOMIC_FETCH_AND_ADD;
	int64_t off = atomic ? c->aoff : c->off;
	uint32_t len = atomic ? 8 : c->len;
	struct ibv_send_wr wr;
	struct ibv_sge s;
	struct edge_mr t;
	struct rc_pair p;
	char what[128];

	if (rc_pair(e, pd, NULL, 7, &p) || edge_mr(pd, c->iova, PG, DP_ACCESS, &t))
		return -1;
	snprintf(what, sizeof(what), "%s: %s into [0x%016" PRIx64 ", +%u)", c->name,
		 atomic ? "FETCH_AND_ADD" : "READ", io(&t, off), len);
	fill(p.buf_b, DP_BUF, 62);
	send_wr_sges(&wr, sge64(&s, io(&t, off), len, t.mr->lkey), 1, op, 840);
	if (atomic) {
		wr.wr.atomic.remote_addr = (uintptr_t)p.buf_b;
		wr.wr.atomic.rkey = p.mr_b->rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = (uintptr_t)p.buf_b;
		wr.wr.rdma.rkey = p.mr_b->rkey;
	}
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, what, p.a, 840, IBV_WC_LOC_PROT_ERR, 0, -1, NULL) ||
	    outside_untouched(&t, what) || untouched(t.buf, off, ROOM, what) ||
	    cq_quiet(p.cq_b, QUIET_MS, what) || states(&p, IBV_QPS_ERR, IBV_QPS_RTS) ||
	    drain_events(e, p.a, what) || rc_pair_release(&p))
		return -1;
	OK(release(t.mr));
	return 0;
}

/*
 * UD: A's gather list leaves its MR: A's SEND fails (as on RC) and B gets
 * nothing. A completion error on the send queue of a UD QP moves it to SQE
 * (Send Queue Error), not ERR: its receive queue keeps working. rxe moves it
 * to ERR (rxe_requester calls rxe_qp_error for every QP type); accepted on
 * rxe only.
 */
static int cross_ud_gather(struct env *e, struct ibv_pd *pd, const struct cross *c)
{
	struct ibv_send_wr wr;
	struct ibv_sge s;
	struct edge_mr t, r;
	struct ud_pair u;
	char what[128];

	if (ud_pair(e, pd, NULL, &u) || edge_mr(pd, c->iova, PG, DP_ACCESS, &t) ||
	    edge_mr(pd, VA_IOVA, PG, DP_ACCESS, &r))
		return -1;
	snprintf(what, sizeof(what), "%s: UD SEND gathered from [0x%016" PRIx64 ", +%u)",
		 c->name, io(&t, c->off), c->len);
	fill(t.buf, PG, 63);
	if (post_recv1(u.b, 850, sge64(&s, io(&r, 0), PG, r.mr->lkey)))
		return -1;
	send_wr_sges(&wr, sge64(&s, io(&t, c->off), c->len, t.mr->lkey), 1, IBV_WR_SEND, 851);
	ud_dest(&wr, &u, UD_QKEY);
	if (post(u.a, &wr) ||
	    expect_wc_drv(u.cq_a, what, u.a, 851, IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_QP_OP_ERR,
			  IBV_WC_WR_FLUSH_ERR) ||
	    cq_quiet(u.cq_b, QUIET_MS, what) || untouched(r.buf, PG, ROOM, what))
		return -1;
	QSTATE_DRV(u.a, IBV_QPS_SQE, IBV_QPS_ERR);
	QSTATE_W(u.b, IBV_QPS_RTS);
	return drain_events(e, u.a, what);
}

/*
 * UD: a receive whose scatter list leaves its MR, filled by a SEND of
 * payload bytes: the GRH fits, the payload does not. A's SEND succeeds (UD
 * has no acknowledgement); B's receive fails with the spec's LOC_PROT_ERR
 * (rxe: RESPST_ERR_MALFORMED_WQE, LOC_QP_OP_ERR) and B goes to ERR; nothing
 * lands outside the MR, nor in the MR before the SGE.
 */
static int cross_ud_scatter(struct env *e, struct ibv_pd *pd, uint64_t iova, int64_t off,
			    uint32_t len, uint32_t payload, const char *name)
{
	struct ibv_send_wr wr;
	struct ibv_sge s;
	struct edge_mr t;
	struct ud_pair u;
	struct ibv_mr *mr;
	uint8_t *src;
	char what[128];

	if (ud_pair(e, pd, NULL, &u) || edge_mr(pd, iova, PG, DP_ACCESS, &t))
		return -1;
	snprintf(what, sizeof(what), "%s: UD RECV of %u + %u bytes scattered to [0x%016" PRIx64
		 ", +%u)", name, GRH_LEN, payload, io(&t, off), len);
	src = page_buf(PG);
	CHECK(src, "mmap failed");
	NEW(mr, ibv_reg_mr(pd, src, PG, DP_ACCESS));
	if (post_recv1(u.b, 860, sge64(&s, io(&t, off), len, t.mr->lkey)))
		return -1;
	fill(src, payload, 64);
	send_wr(&wr, &s, IBV_WR_SEND, 861, src, payload, mr->lkey);
	ud_dest(&wr, &u, UD_QKEY);
	if (post(u.a, &wr) ||
	    expect_wc(u.cq_a, what, u.a, 861, IBV_WC_SUCCESS, IBV_WC_SEND, -1, NULL) ||
	    expect_wc_drv(u.cq_b, what, u.b, 860, IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_QP_OP_ERR,
			  IBV_WC_LOC_QP_OP_ERR) ||
	    outside_untouched(&t, what) || untouched(t.buf, off, ROOM, what))
		return -1;
	QSTATE_W(u.a, IBV_QPS_RTS);
	QSTATE_W(u.b, IBV_QPS_ERR);
	vlog("%s: B's receive failed, B in ERR, nothing outside the MR written", what);
	return drain_events(e, u.b, what);
}

static int cross_all(struct env *e, const struct cross *c)
{
	struct ibv_pd *pd;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (cross_gather(e, pd, c, IBV_WR_SEND) || cross_gather(e, pd, c, IBV_WR_RDMA_WRITE) ||
	    cross_scatter(e, pd, c) || cross_result(e, pd, c, IBV_WR_RDMA_READ) ||
	    cross_result(e, pd, c, IBV_WR_ATOMIC_FETCH_AND_ADD) || cross_ud_gather(e, pd, c))
		return -1;
	vlog("%s: SEND, WRITE, RECV, READ, atomic result and UD SEND failed as expected",
	     c->name);
	return 0;
}

/* SGEs that cross the end of an MR (an ordinary one, IOVA = address) by one byte. */
int t_sge_cross_end(struct env *e)
{
	const struct cross c = {
		.name = "one byte past the MR", .iova = VA_IOVA, .off = PG - 100, .len = 101,
		.aoff = PG - 7,
	};
	struct ibv_pd *pd;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (cross_ud_scatter(e, pd, VA_IOVA, PG - 140, 141, 101, c.name))
		return -1;
	return cross_all(e, &c);
}

/* SGEs of an MR at the top that cross 2^64: [0xFFFFFFFFFFFFFF00, +512). */
int t_sge_cross_2_64(struct env *e)
{
	const struct cross c = {
		.name = "across 2^64", .iova = TOP_IOVA, .off = PG - 256, .len = 512,
		.aoff = PG - 4,
	};

	return cross_all(e, &c);
}

/*
 * The regression test: a UD receive whose SGE [0xFFFFFFFFFFFFFF00, +512)
 * crosses 2^64 on an MR at the top, filled by 40 + 400 bytes (the payload
 * runs 184 bytes past 2^64). An unprivileged process could oops rrxe with it.
 */
int t_ud_recv_2_64(struct env *e)
{
	struct ibv_pd *pd;

	NEW(pd, ibv_alloc_pd(e->ctx));
	return cross_ud_scatter(e, pd, TOP_IOVA, PG - 256, 512, 400, "across 2^64");
}

/* ------------------------------------------------------------------ */
/* sge_zero_len: zero-length SGEs alone and among others              */
/* ------------------------------------------------------------------ */

int t_sge_zero_len(struct env *e)
{
	const struct ibv_qp_cap cap = { .max_send_sge = 3, .max_recv_sge = 3, .max_inline_data = 64 };
	struct ibv_send_wr wr;
	struct ibv_sge s[3], r[3];
	struct edge_mr ta, tb;
	struct ibv_pd *pd;
	struct rc_pair p;
	struct ud_pair u;
	uint8_t msg[256];
	size_t len;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (rc_pair_ex(e, pd, NULL, 7, 7, 4 * DP_BURST, &cap, &p) ||
	    edge_mr(pd, TOP_IOVA, PG, DP_ACCESS, &ta) || edge_mr(pd, TOP_IOVA, PG, DP_ACCESS, &tb))
		return -1;
	fill(ta.buf, PG, 70);

	/* A SEND of one zero-length SGE at the MR's end (2^64): a 0-byte message. */
	if (post_recv1(p.b, 870, sge64(&r[0], io(&tb, 0), 100, tb.mr->lkey)))
		return -1;
	send_wr_sges(&wr, sge64(&s[0], io(&ta, PG), 0, ta.mr->lkey), 1, IBV_WR_SEND, 871);
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "SEND of one 0-byte SGE", p.a, 871, IBV_WC_SUCCESS, IBV_WC_SEND, -1,
		      NULL) ||
	    expect_wc(p.cq_b, "RECV of a 0-byte SEND", p.b, 870, IBV_WC_SUCCESS, IBV_WC_RECV, 0,
		      NULL) ||
	    untouched(tb.buf, PG, ROOM, "RECV of a 0-byte SEND") ||
	    outside_untouched(&tb, "RECV of a 0-byte SEND"))
		return -1;

	/* SEND of 100 + 0 + 50 bytes into 0 + 150 + 0 bytes of room ending at 2^64. */
	sge64(&s[0], io(&ta, 0), 100, ta.mr->lkey);
	sge64(&s[1], io(&ta, PG), 0, ta.mr->lkey);
	sge64(&s[2], io(&ta, 100), 50, ta.mr->lkey);
	memcpy(msg, ta.buf, 150);	/* what s[0] and s[2] hold */
	len = 150;
	sge64(&r[0], io(&tb, 0), 0, tb.mr->lkey);
	sge64(&r[1], io(&tb, PG - 150), 150, tb.mr->lkey);
	sge64(&r[2], io(&tb, PG), 0, tb.mr->lkey);
	send_wr_sges(&wr, s, 3, IBV_WR_SEND, 872);
	if (post_recv_sges(p.b, r, 3, 873) || post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "SEND of 100+0+50 bytes", p.a, 872, IBV_WC_SUCCESS, IBV_WC_SEND, -1,
		      NULL) ||
	    expect_wc(p.cq_b, "RECV into 0+150+0 bytes", p.b, 873, IBV_WC_SUCCESS, IBV_WC_RECV,
		      len, NULL) ||
	    same(tb.buf + PG - 150, msg, 150, "RECV into 0+150+0 bytes") ||
	    untouched(tb.buf, PG - 150, ROOM, "RECV into 0+150+0 bytes, before it") ||
	    outside_untouched(&tb, "RECV into 0+150+0 bytes"))
		return -1;

	/* WRITE of 10 + 0 + 10 bytes. */
	memset(tb.buf, ROOM, PG);
	sge64(&s[0], io(&ta, 200), 10, ta.mr->lkey);
	sge64(&s[1], io(&ta, 0), 0, ta.mr->lkey);
	sge64(&s[2], io(&ta, 300), 10, ta.mr->lkey);
	memcpy(msg, ta.buf + 200, 10);
	memcpy(msg + 10, ta.buf + 300, 10);
	send_wr_sges(&wr, s, 3, IBV_WR_RDMA_WRITE, 874);
	wr.wr.rdma.remote_addr = io(&tb, 1000);
	wr.wr.rdma.rkey = tb.mr->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "WRITE of 10+0+10 bytes", p.a, 874, IBV_WC_SUCCESS,
		      IBV_WC_RDMA_WRITE, -1, NULL) ||
	    same(tb.buf + 1000, msg, 20, "WRITE of 10+0+10 bytes") ||
	    untouched(tb.buf, 1000, ROOM, "WRITE of 10+0+10 bytes, before it") ||
	    untouched(tb.buf + 1020, PG - 1020, ROOM, "WRITE of 10+0+10 bytes, after it"))
		return -1;

	/* READ of 30 bytes into 0 + 30 + 0 bytes (the last SGE at 2^64). */
	fill(tb.buf + 2000, 30, 71);
	memset(ta.buf, ROOM, PG);
	sge64(&s[0], io(&ta, 500), 0, ta.mr->lkey);
	sge64(&s[1], io(&ta, 600), 30, ta.mr->lkey);
	sge64(&s[2], io(&ta, PG), 0, ta.mr->lkey);
	send_wr_sges(&wr, s, 3, IBV_WR_RDMA_READ, 875);
	wr.wr.rdma.remote_addr = io(&tb, 2000);
	wr.wr.rdma.rkey = tb.mr->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "READ into 0+30+0 bytes", p.a, 875, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
		      30, NULL) ||
	    same(ta.buf + 600, tb.buf + 2000, 30, "READ into 0+30+0 bytes") ||
	    untouched(ta.buf, 600, ROOM, "READ into 0+30+0 bytes, before it") ||
	    untouched(ta.buf + 630, PG - 630, ROOM, "READ into 0+30+0 bytes, after it") ||
	    outside_untouched(&ta, "READ into 0+30+0 bytes") ||
	    states(&p, IBV_QPS_RTS, IBV_QPS_RTS) || cq_empty(p.cq_b, "B's CQ"))
		return -1;
	vlog("RC: 0-byte SEND, SEND/RECV, WRITE and READ with 0-byte SGEs among others");

	/* UD: a 0-byte SEND; the receive gets the GRH alone, in its last 40 bytes below 2^64. */
	if (ud_pair(e, pd, &cap, &u))
		return -1;
	memset(tb.buf, ROOM, PG);
	sge64(&r[0], io(&tb, PG - GRH_LEN), GRH_LEN, tb.mr->lkey);
	sge64(&r[1], io(&tb, PG), 0, tb.mr->lkey);
	send_wr_sges(&wr, sge64(&s[0], io(&ta, PG), 0, ta.mr->lkey), 1, IBV_WR_SEND, 876);
	ud_dest(&wr, &u, UD_QKEY);
	if (post_recv_sges(u.b, r, 2, 877) || post(u.a, &wr) ||
	    expect_wc(u.cq_a, "UD SEND of one 0-byte SGE", u.a, 876, IBV_WC_SUCCESS, IBV_WC_SEND,
		      -1, NULL) ||
	    expect_wc(u.cq_b, "UD RECV of a 0-byte SEND", u.b, 877, IBV_WC_SUCCESS, IBV_WC_RECV,
		      GRH_LEN, NULL) ||
	    untouched(tb.buf, PG - GRH_LEN, ROOM, "UD RECV of a 0-byte SEND, before it") ||
	    outside_untouched(&tb, "UD RECV of a 0-byte SEND"))
		return -1;
	QSTATE_W(u.a, IBV_QPS_RTS);
	QSTATE_W(u.b, IBV_QPS_RTS);
	return 0;
}

/* ------------------------------------------------------------------ */
/* sge_max: max_sge SGEs work, max_sge + 1 are refused at posting    */
/* ------------------------------------------------------------------ */

/* A's SEND limit and B's receive limit, as query_qp reports them. */
static int sge_limits(struct ibv_qp *a, struct ibv_qp *b, int *ns, int *nr)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	OK(ibv_query_qp(a, &qa, IBV_QP_CAP, &qi));
	*ns = qa.cap.max_send_sge;
	OK(ibv_query_qp(b, &qa, IBV_QP_CAP, &qi));
	*nr = qa.cap.max_recv_sge;
	CHECK(*ns > 0 && *ns < SGE_MAX_LIMIT && *nr > 0 && *nr < SGE_MAX_LIMIT,
	      "max_send_sge %d max_recv_sge %d", *ns, *nr);
	return 0;
}

/* Posting n + 1 SGEs (one more than the queue takes) fails; bad_wr points at the WR. */
static int too_many(struct ibv_qp *qp, struct ibv_sge *sge, int n, int recv, const char *what)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_recv_wr rwr, *rbad = NULL;
	int rc;

	if (recv) {
		memset(&rwr, 0, sizeof(rwr));
		rwr.wr_id = 880;
		rwr.sg_list = sge;
		rwr.num_sge = n + 1;
		rc = ibv_post_recv(qp, &rwr, &rbad);
		CHECK(rbad == &rwr, "%s: bad_wr not set", what);
	} else {
		send_wr_sges(&wr, sge, n + 1, IBV_WR_SEND, 881);
		rc = ibv_post_send(qp, &wr, &bad);
		CHECK(bad == &wr, "%s: bad_wr not set", what);
	}
	CHECK(rc != 0, "%s: %d SGEs (max %d) posted", what, n + 1, n);
	CHECK(rc_err(rc) == EINVAL, "%s: %s, expected EINVAL (librxe)", what, errname(rc_err(rc)));
	vlog("%s: %d SGEs: EINVAL", what, n + 1);
	return 0;
}

int t_sge_max(struct env *e)
{
	static struct ibv_sge s[SGE_MAX_LIMIT], r[SGE_MAX_LIMIT];
	static uint8_t msg[SGE_MAX_LIMIT * 8], got[SGE_MAX_LIMIT * 8];
	struct ibv_qp_cap cap = { .max_inline_data = 64 };
	struct ibv_send_wr wr;
	struct ibv_pd *pd;
	struct rc_pair p;
	struct ud_pair u;
	size_t len;
	int i, ns, nr;

	CHECK(e->dev.max_sge > 0 && e->dev.max_sge < SGE_MAX_LIMIT, "max_sge %d", e->dev.max_sge);
	cap.max_send_sge = cap.max_recv_sge = e->dev.max_sge;
	NEW(pd, ibv_alloc_pd(e->ctx));
	if (rc_pair_ex(e, pd, NULL, 7, 7, 4 * DP_BURST, &cap, &p) || sge_limits(p.a, p.b, &ns, &nr))
		return -1;
	vlog("device max_sge %d; RC QPs: max_send_sge %d max_recv_sge %d", e->dev.max_sge, ns, nr);
	fill(p.buf_a, DP_BUF, 80);
	memset(p.buf_b, ROOM, DP_BUF);

	/* SEND of ns SGEs of 3 bytes (every 100th byte) into nr SGEs of 5 bytes. */
	for (i = 0; i <= ns; i++)
		set_sge(&s[i], p.buf_a + 100 * i + 1, 3, p.mr_a->lkey);
	for (i = 0; i <= nr; i++)
		set_sge(&r[i], p.buf_b + 64 * i, 5, p.mr_b->lkey);
	CHECK(3 * ns <= 5 * nr, "%d send SGEs do not fit %d receive SGEs", ns, nr);
	len = gather(msg, s, ns);
	send_wr_sges(&wr, s, ns, IBV_WR_SEND, 882);
	if (post_recv_sges(p.b, r, nr, 883) || post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "SEND of max_send_sge SGEs", p.a, 882, IBV_WC_SUCCESS, IBV_WC_SEND,
		      -1, NULL) ||
	    expect_wc(p.cq_b, "RECV into max_recv_sge SGEs", p.b, 883, IBV_WC_SUCCESS, IBV_WC_RECV,
		      len, NULL) ||
	    scattered(r, nr, msg, len, ROOM, "RECV into max_recv_sge SGEs") ||
	    untouched_outside(p.buf_b, DP_BUF, r, nr, ROOM, "RECV into max_recv_sge SGEs"))
		return -1;

	/* WRITE gathered from ns SGEs; READ scattered into ns SGEs. */
	memset(p.buf_b, ROOM, DP_BUF);
	send_wr_sges(&wr, s, ns, IBV_WR_RDMA_WRITE, 884);
	wr.wr.rdma.remote_addr = (uintptr_t)(p.buf_b + 7);
	wr.wr.rdma.rkey = p.mr_b->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "WRITE of max_send_sge SGEs", p.a, 884, IBV_WC_SUCCESS,
		      IBV_WC_RDMA_WRITE, -1, NULL) ||
	    same(p.buf_b + 7, msg, len, "WRITE of max_send_sge SGEs") ||
	    untouched(p.buf_b, 7, ROOM, "WRITE of max_send_sge SGEs, before it") ||
	    untouched(p.buf_b + 7 + len, DP_BUF - 7 - len, ROOM, "WRITE of max_send_sge SGEs"))
		return -1;
	memset(p.buf_a, ROOM, DP_BUF);
	fill(p.buf_b, len, 81);
	memcpy(msg, p.buf_b, len);
	send_wr_sges(&wr, s, ns, IBV_WR_RDMA_READ, 885);
	wr.wr.rdma.remote_addr = (uintptr_t)p.buf_b;
	wr.wr.rdma.rkey = p.mr_b->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "READ into max_send_sge SGEs", p.a, 885, IBV_WC_SUCCESS,
		      IBV_WC_RDMA_READ, len, NULL) ||
	    scattered(s, ns, msg, len, ROOM, "READ into max_send_sge SGEs") ||
	    untouched_outside(p.buf_a, DP_BUF, s, ns, ROOM, "READ into max_send_sge SGEs"))
		return -1;

	/* One SGE more than each queue takes: refused at posting, nothing moves. */
	if (too_many(p.a, s, ns, 0, "RC SEND") || too_many(p.b, r, nr, 1, "RC RECV") ||
	    states(&p, IBV_QPS_RTS, IBV_QPS_RTS) || cq_quiet(p.cq_a, QUIET_MS, "after the refusals") ||
	    cq_empty(p.cq_b, "B's CQ after the refusals"))
		return -1;
	/* The queues still work, and hold nothing from the refused WRs. */
	fill(p.buf_a, 64, 82);
	if (post_recv_b(&p, 886, p.buf_b + 8192, 64))
		return -1;
	send_wr(&wr, &s[0], IBV_WR_SEND, 887, p.buf_a, 64, p.mr_a->lkey);
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "SEND after the refusals", p.a, 887, IBV_WC_SUCCESS, IBV_WC_SEND, -1,
		      NULL) ||
	    expect_wc(p.cq_b, "RECV after the refusals", p.b, 886, IBV_WC_SUCCESS, IBV_WC_RECV, 64,
		      NULL) ||
	    same(p.buf_b + 8192, p.buf_a, 64, "SEND after the refusals") ||
	    cq_empty(p.cq_a, "A's CQ") || cq_empty(p.cq_b, "B's CQ"))
		return -1;
	vlog("RC: %d SGEs for SEND/WRITE/READ and %d for RECV work; one more: EINVAL", ns, nr);

	/* UD: ns SGEs of 2 bytes into nr SGEs of 8 bytes (the GRH takes the first 40). */
	if (ud_pair(e, pd, &cap, &u) || sge_limits(u.a, u.b, &ns, &nr))
		return -1;
	vlog("UD QPs: max_send_sge %d max_recv_sge %d", ns, nr);
	CHECK(GRH_LEN + 2 * ns <= 8 * nr, "%d UD send SGEs do not fit %d receive SGEs", ns, nr);
	fill(p.buf_a, DP_BUF, 83);
	memset(p.buf_b, ROOM, DP_BUF);
	for (i = 0; i <= ns; i++)
		set_sge(&s[i], p.buf_a + 50 * i + 3, 2, p.mr_a->lkey);
	for (i = 0; i <= nr; i++)
		set_sge(&r[i], p.buf_b + 32 * i, 8, p.mr_b->lkey);
	len = gather(msg, s, ns);
	send_wr_sges(&wr, s, ns, IBV_WR_SEND, 888);
	ud_dest(&wr, &u, UD_QKEY);
	if (post_recv_sges(u.b, r, nr, 889) || post(u.a, &wr) ||
	    expect_wc(u.cq_a, "UD SEND of max_send_sge SGEs", u.a, 888, IBV_WC_SUCCESS,
		      IBV_WC_SEND, -1, NULL) ||
	    expect_wc(u.cq_b, "UD RECV into max_recv_sge SGEs", u.b, 889, IBV_WC_SUCCESS,
		      IBV_WC_RECV, GRH_LEN + len, NULL))
		return -1;
	gather(got, r, nr);
	if (same(got + GRH_LEN, msg, len, "UD RECV into max_recv_sge SGEs") ||
	    untouched(got + GRH_LEN + len, 8 * nr - GRH_LEN - len, ROOM,
		      "UD RECV into max_recv_sge SGEs, the room after the message") ||
	    untouched_outside(p.buf_b, DP_BUF, r, nr, ROOM, "UD RECV into max_recv_sge SGEs") ||
	    too_many(u.a, s, ns, 0, "UD SEND") || too_many(u.b, r, nr, 1, "UD RECV") ||
	    cq_quiet(u.cq_a, QUIET_MS, "UD, after the refusals") ||
	    cq_empty(u.cq_b, "UD, B's CQ after the refusals"))
		return -1;
	QSTATE_W(u.a, IBV_QPS_RTS);
	QSTATE_W(u.b, IBV_QPS_RTS);
	vlog("UD: %d SGEs for SEND and %d for RECV work; one more: EINVAL", ns, nr);
	return 0;
}

/* ------------------------------------------------------------------ */
/* UD: the MTU, a short receive buffer, a wrong Q_Key                */
/* ------------------------------------------------------------------ */

/* A UD pair and a registered buffer: A sends from src, B receives into dst. */
struct ud_env {
	struct ud_pair u;
	uint8_t *src, *dst;
	struct ibv_mr *mr_src, *mr_dst;
};

static int ud_env(struct env *e, struct ud_env *v)
{
	struct ibv_pd *pd;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (ud_pair(e, pd, NULL, &v->u))
		return -1;
	v->src = page_buf(2 * PG);
	v->dst = page_buf(2 * PG);
	CHECK(v->src && v->dst, "mmap failed");
	memset(v->dst, ROOM, 2 * PG);
	NEW(v->mr_src, ibv_reg_mr(pd, v->src, 2 * PG, DP_ACCESS));
	NEW(v->mr_dst, ibv_reg_mr(pd, v->dst, 2 * PG, DP_ACCESS));
	return 0;
}

/* Post a UD SEND of len bytes from v->src (seed) with Q_Key qkey; A's completion succeeds. */
static int ud_send(struct ud_env *v, uint64_t wr_id, uint32_t len, unsigned int seed,
		   uint32_t qkey, const char *what)
{
	struct ibv_send_wr wr;
	struct ibv_sge s;

	fill(v->src, len, seed);
	send_wr(&wr, &s, IBV_WR_SEND, wr_id, v->src, len, v->mr_src->lkey);
	ud_dest(&wr, &v->u, qkey);
	if (post(v->u.a, &wr) ||
	    expect_wc(v->u.cq_a, what, v->u.a, wr_id, IBV_WC_SUCCESS, IBV_WC_SEND, -1, NULL))
		return -1;
	return 0;
}

/* B's receive wr_id completes with GRH + len bytes of v->src. */
static int ud_got(struct ud_env *v, uint64_t wr_id, uint32_t len, const char *what)
{
	if (expect_wc(v->u.cq_b, what, v->u.b, wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, GRH_LEN + len,
		      NULL) ||
	    same(v->dst + GRH_LEN, v->src, len, what) ||
	    untouched(v->dst + GRH_LEN + len, 2 * PG - GRH_LEN - len, ROOM, what))
		return -1;
	return 0;
}

/* A UD message that was dropped: no receive completion, the receive buffer untouched. */
static int ud_dropped(struct ud_env *v, const char *what)
{
	if (cq_quiet(v->u.cq_b, QUIET_MS, what) || untouched(v->dst, 2 * PG, ROOM, what))
		return -1;
	QSTATE_W(v->u.a, IBV_QPS_RTS);
	QSTATE_W(v->u.b, IBV_QPS_RTS);
	return 0;
}

/*
 * A UD SEND one byte longer than the port's MTU. IB spec C10-93.1.1 (quoted
 * in rxe_req.c): if the message exceeds the MTU of the port, the CI emits no
 * packet and generates no error. rxe completes the SEND successfully without
 * sending it; the case expects that: SUCCESS at A, nothing at B. A message of
 * exactly the MTU arrives, in the receive the long one left posted.
 */
int t_ud_mtu(struct env *e)
{
	struct ibv_sge r;
	struct ud_env v;
	uint32_t mtu;

	if (ud_env(e, &v))
		return -1;
	mtu = 128u << e->port.active_mtu;
	CHECK(mtu >= 256 && mtu <= PG, "active_mtu %d", e->port.active_mtu);
	if (post_recv1(v.u.b, 900, set_sge(&r, v.dst, 2 * PG, v.mr_dst->lkey)) ||
	    ud_send(&v, 901, mtu + 1, 90, UD_QKEY, "UD SEND of MTU + 1 bytes") ||
	    ud_dropped(&v, "UD SEND of MTU + 1 bytes") ||
	    ud_send(&v, 902, mtu, 91, UD_QKEY, "UD SEND of MTU bytes") ||
	    ud_got(&v, 900, mtu, "UD SEND of MTU bytes") ||
	    cq_empty(v.u.cq_a, "A's CQ") || cq_empty(v.u.cq_b, "B's CQ"))
		return -1;
	vlog("MTU %u: %u bytes completed at A without arriving; %u bytes arrived", mtu, mtu + 1,
	     mtu);
	return 0;
}

/*
 * A receive buffer shorter than 40 + payload. The receive completes with
 * IBV_WC_LOC_LEN_ERR (what hardware reports) and B goes to ERR; nothing is
 * written past the buffer. rxe instead drops the message (UD class D in
 * rxe_resp.c: RESPST_ERR_LENGTH without an SRQ): no completion, the receive
 * stays posted and untouched, and a message one byte shorter then fills that
 * same receive; accepted on rxe only.
 */
int t_ud_short_recv(struct env *e)
{
	const char *what = "UD SEND of 100 bytes into 40 + 99";
	struct ibv_sge r;
	struct ud_env v;

	if (ud_env(e, &v) ||
	    post_recv1(v.u.b, 910, set_sge(&r, v.dst, GRH_LEN + 99, v.mr_dst->lkey)) ||
	    ud_send(&v, 911, 100, 92, UD_QKEY, what))
		return -1;
	if (vt_driver() == DRV_RXE) {
		if (ud_dropped(&v, what) ||
		    ud_send(&v, 912, 99, 93, UD_QKEY, "UD SEND of 99 bytes into 40 + 99") ||
		    ud_got(&v, 910, 99, "UD SEND of 99 bytes into 40 + 99") ||
		    cq_empty(v.u.cq_b, "B's CQ"))
			return -1;
		vlog("rxe: 40 + 99 bytes of room: 100 bytes dropped, 99 bytes received");
		return 0;
	}
	if (expect_wc(v.u.cq_b, what, v.u.b, 910, IBV_WC_LOC_LEN_ERR, 0, -1, NULL) ||
	    untouched(v.dst + GRH_LEN + 99, 2 * PG - GRH_LEN - 99, ROOM, what) ||
	    cq_empty(v.u.cq_b, "B's CQ"))
		return -1;
	QSTATE_W(v.u.a, IBV_QPS_RTS);
	QSTATE_W(v.u.b, IBV_QPS_ERR);
	vlog("40 + 99 bytes of room, 100 bytes sent: LOC_LEN_ERR, B in ERR");
	return drain_events(e, v.u.b, what);
}

/* A wrong Q_Key: B drops the message (no completion); the right one arrives. */
int t_ud_qkey(struct env *e)
{
	struct ibv_sge r;
	struct ud_env v;

	if (ud_env(e, &v) ||
	    post_recv1(v.u.b, 920, set_sge(&r, v.dst, 2 * PG, v.mr_dst->lkey)) ||
	    ud_send(&v, 921, 64, 94, 0x22222222, "UD SEND with a wrong Q_Key") ||
	    ud_dropped(&v, "UD SEND with a wrong Q_Key") ||
	    ud_send(&v, 922, 64, 95, UD_QKEY, "UD SEND with the right Q_Key") ||
	    ud_got(&v, 920, 64, "UD SEND with the right Q_Key") ||
	    cq_empty(v.u.cq_b, "B's CQ"))
		return -1;
	vlog("Q_Key 0x22222222 (B's is 0x%x): dropped; the right one: received", UD_QKEY);
	return 0;
}

/* ------------------------------------------------------------------ */
/* rdma_range: the remote range against the remote MR's edges        */
/* ------------------------------------------------------------------ */

/*
 * A WRITE or READ of len bytes at offset off of B's MR t fails with
 * REM_ACCESS_ERR (rxe: check_rkey's mr_check_range, before any data moves;
 * the spec's R_Key check covers the range), B's memory is unchanged, A's
 * target untouched, and both QPs go to ERR (a remote access error is class C
 * at the responder: NAK, and the QP to ERR; rxe agrees).
 */
static int range_denied(struct env *e, struct ibv_pd *pd, enum ibv_wr_opcode op, int64_t off,
			uint32_t len, const char *how)
{
	struct ibv_send_wr wr;
	struct ibv_sge s;
	struct edge_mr t;
	struct rc_pair p;
	char what[128];

	snprintf(what, sizeof(what), "%s of %u bytes %s", op == IBV_WR_RDMA_READ ? "READ" :
		 "WRITE", len, how);
	if (rc_pair(e, pd, NULL, 7, &p) || edge_mr(pd, VA_IOVA, PG, DP_ACCESS, &t))
		return -1;
	fill(t.buf, PG, 100);
	memcpy(p.buf_b, t.buf, PG);		/* B's page as it was */
	fill(p.buf_a, DP_BUF, 101);
	if (op == IBV_WR_RDMA_READ)
		memset(p.buf_a, ROOM, DP_BUF);
	send_wr(&wr, &s, op, 930, p.buf_a, len, p.mr_a->lkey);
	wr.wr.rdma.remote_addr = io(&t, off);
	wr.wr.rdma.rkey = t.mr->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, what, p.a, 930, IBV_WC_REM_ACCESS_ERR, 0, -1, NULL) ||
	    same(t.buf, p.buf_b, PG, what) || outside_untouched(&t, what) ||
	    (op == IBV_WR_RDMA_READ && untouched(p.buf_a, DP_BUF, ROOM, what)) ||
	    states(&p, IBV_QPS_ERR, IBV_QPS_ERR) || drain_events(e, p.b, what) ||
	    rc_pair_release(&p))
		return -1;
	OK(release(t.mr));
	vlog("%s: REM_ACCESS_ERR, B's memory unchanged, A and B in ERR", what);
	return 0;
}

int t_rdma_range(struct env *e)
{
	static const enum ibv_wr_opcode ops[] = { IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ };
	struct ibv_send_wr wr;
	struct edge_mr top;
	struct ibv_pd *pd;
	struct rc_pair p;
	size_t i;

	NEW(pd, ibv_alloc_pd(e->ctx));
	for (i = 0; i < 2; i++) {
		if (range_denied(e, pd, ops[i], PG - 100, 101, "one byte past the MR's end") ||
		    range_denied(e, pd, ops[i], 100, 8192, "far past the MR's end") ||
		    range_denied(e, pd, ops[i], -1, 16, "from one byte before the MR"))
			return -1;
	}

	/*
	 * A WRITE and a READ of 0 bytes at the very end of an MR at the top (the
	 * remote address wraps to 0): C9-88, nothing is checked or moved; they
	 * succeed and the QPs stay in RTS.
	 */
	if (rc_pair(e, pd, NULL, 7, &p) || edge_mr(pd, TOP_IOVA, PG, DP_ACCESS, &top))
		return -1;
	memset(p.buf_a, ROOM, DP_BUF);
	for (i = 0; i < 2; i++) {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 940 + i;
		wr.opcode = ops[i];
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.num_sge = 0;
		wr.wr.rdma.remote_addr = io(&top, PG);
		wr.wr.rdma.rkey = top.mr->rkey;
		if (post_a(&p, &wr) ||
		    expect_wc(p.cq_a, i ? "READ of 0 bytes at 2^64" : "WRITE of 0 bytes at 2^64",
			      p.a, 940 + i, IBV_WC_SUCCESS,
			      i ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE, i ? 0 : -1, NULL))
			return -1;
	}
	if (untouched(top.buf, PG, ROOM, "0-byte WRITE/READ") ||
	    outside_untouched(&top, "0-byte WRITE/READ") ||
	    untouched(p.buf_a, DP_BUF, ROOM, "0-byte READ, A's buffer") ||
	    states(&p, IBV_QPS_RTS, IBV_QPS_RTS) || cq_empty(p.cq_b, "B's CQ"))
		return -1;
	vlog("WRITE and READ of 0 bytes at the end of an MR at the top: success, nothing moved");
	return 0;
}

/* ------------------------------------------------------------------ */
/* atomic_bounds: alignment, the MR's end, the local buffer's length  */
/* ------------------------------------------------------------------ */

/*
 * librxe refuses an atomic whose remote address is not 8-aligned or whose
 * local SGEs hold fewer than 8 bytes (EINVAL at posting, before the kernel
 * sees it), for rxe and rrxe alike. A longer local buffer is accepted; rxe
 * writes the original value into its first 8 bytes and completes the WR
 * successfully (the case expects that). An aligned atomic whose 8 bytes
 * cross the end of the remote MR (of 4092 bytes) fails with REM_ACCESS_ERR,
 * the word untouched, both QPs in ERR.
 */
int t_atomic_bounds(struct env *e)
{
	static const uint64_t unaligned[] = { 1, 4, 4092 };
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct edge_mr t;
	struct ibv_pd *pd;
	struct rc_pair p;
	uint64_t old, v;
	char what[96];
	size_t i;
	int rc;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (rc_pair(e, pd, NULL, 7, &p) || edge_mr(pd, VA_IOVA, PG - 4, DP_ACCESS, &t))
		return -1;
	memset(p.buf_a, ROOM, DP_BUF);

	for (i = 0; i < sizeof(unaligned) / sizeof(unaligned[0]); i++) {
		snprintf(what, sizeof(what), "FETCH_AND_ADD at MR offset %" PRIu64, unaligned[i]);
		send_wr(&wr, &s, IBV_WR_ATOMIC_FETCH_AND_ADD, 950, p.buf_a, 8, p.mr_a->lkey);
		wr.wr.atomic.remote_addr = io(&t, unaligned[i]);
		wr.wr.atomic.rkey = t.mr->rkey;
		wr.wr.atomic.compare_add = 1;
		bad = NULL;
		rc = ibv_post_send(p.a, &wr, &bad);
		CHECK(rc != 0, "%s (not 8-aligned): posted", what);
		CHECK(rc_err(rc) == EINVAL && bad == &wr, "%s: %s, expected EINVAL", what,
		      errname(rc_err(rc)));
	}
	send_wr(&wr, &s, IBV_WR_ATOMIC_CMP_AND_SWP, 951, p.buf_a, 4, p.mr_a->lkey);
	wr.wr.atomic.remote_addr = io(&t, 0);
	wr.wr.atomic.rkey = t.mr->rkey;
	bad = NULL;
	rc = ibv_post_send(p.a, &wr, &bad);
	CHECK(rc != 0, "CMP_AND_SWP with a 4-byte local buffer: posted");
	CHECK(rc_err(rc) == EINVAL && bad == &wr, "CMP_AND_SWP with a 4-byte local buffer: %s, "
	      "expected EINVAL", errname(rc_err(rc)));
	if (cq_quiet(p.cq_a, QUIET_MS, "after the refused atomics") ||
	    untouched(t.buf, t.len, ROOM, "after the refused atomics") ||
	    outside_untouched(&t, "after the refused atomics") ||
	    untouched(p.buf_a, DP_BUF, ROOM, "after the refused atomics, A's buffer") ||
	    states(&p, IBV_QPS_RTS, IBV_QPS_RTS))
		return -1;
	vlog("atomics at offsets 1, 4, 4092 and with a 4-byte buffer: EINVAL at posting");

	/* A 16-byte local buffer: the original lands in its first 8 bytes. */
	fill(t.buf + 8, 8, 102);
	memcpy(&old, t.buf + 8, 8);
	send_wr(&wr, &s, IBV_WR_ATOMIC_FETCH_AND_ADD, 952, p.buf_a + 64, 16, p.mr_a->lkey);
	wr.wr.atomic.remote_addr = io(&t, 8);
	wr.wr.atomic.rkey = t.mr->rkey;
	wr.wr.atomic.compare_add = 3;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "FETCH_AND_ADD with a 16-byte local buffer", p.a, 952,
		      IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, -1, NULL) ||
	    same(p.buf_a + 64, (const uint8_t *)&old, 8, "FETCH_AND_ADD, the original") ||
	    untouched(p.buf_a + 72, 8, ROOM, "FETCH_AND_ADD, the local buffer's last 8 bytes"))
		return -1;
	memcpy(&v, t.buf + 8, 8);
	CHECK(v == old + 3, "FETCH_AND_ADD with a 16-byte buffer: remote 0x%" PRIx64
	      ", expected 0x%" PRIx64, v, old + 3);

	/* The MR's last whole word, [4080, 4088), then the word [4088, 4096) past its end. */
	memcpy(&old, t.buf + 4080, 8);
	send_wr(&wr, &s, IBV_WR_ATOMIC_CMP_AND_SWP, 953, p.buf_a + 128, 8, p.mr_a->lkey);
	wr.wr.atomic.remote_addr = io(&t, 4080);
	wr.wr.atomic.rkey = t.mr->rkey;
	wr.wr.atomic.compare_add = old;
	wr.wr.atomic.swap = 0x1122334455667788ull;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "CMP_AND_SWP on the MR's last word", p.a, 953, IBV_WC_SUCCESS,
		      IBV_WC_COMP_SWAP, 8, NULL) ||
	    same(p.buf_a + 128, (const uint8_t *)&old, 8, "CMP_AND_SWP, the original"))
		return -1;
	memcpy(&v, t.buf + 4080, 8);
	CHECK(v == 0x1122334455667788ull, "CMP_AND_SWP on the MR's last word: 0x%" PRIx64, v);
	if (untouched(t.buf + 4088, t.len - 4088, ROOM, "the MR's last 4 bytes") ||
	    outside_untouched(&t, "CMP_AND_SWP on the MR's last word"))
		return -1;

	send_wr(&wr, &s, IBV_WR_ATOMIC_FETCH_AND_ADD, 954, p.buf_a + 256, 8, p.mr_a->lkey);
	wr.wr.atomic.remote_addr = io(&t, 4088);
	wr.wr.atomic.rkey = t.mr->rkey;
	wr.wr.atomic.compare_add = 1;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "FETCH_AND_ADD across the MR's end", p.a, 954,
		      IBV_WC_REM_ACCESS_ERR, 0, -1, NULL) ||
	    untouched(t.buf + 4088, t.len - 4088, ROOM, "FETCH_AND_ADD across the MR's end") ||
	    outside_untouched(&t, "FETCH_AND_ADD across the MR's end") ||
	    untouched(p.buf_a + 256, 8, ROOM, "FETCH_AND_ADD across the MR's end, A's buffer") ||
	    states(&p, IBV_QPS_ERR, IBV_QPS_ERR) ||
	    drain_events(e, p.b, "FETCH_AND_ADD across the MR's end"))
		return -1;
	vlog("FETCH_AND_ADD on [4088, 4096) of a 4092-byte MR: REM_ACCESS_ERR, A and B in ERR");
	return 0;
}
