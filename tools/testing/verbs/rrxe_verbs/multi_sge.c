// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_verbs: the "datapath" case multi_sge: gather and scatter lists of several
 * SGEs, inline SGEs, an lkey of another PD.
 */
#define _GNU_SOURCE
#include <unistd.h>

#include "cases.h"

/* multi_sge: gather and scatter lists of several SGEs. */
#define MS_SGE		3	/* max_send_sge and max_recv_sge of its QPs */
#define MS_INLINE	128	/* and max_inline_data */
#define MS_LEN		4001	/* 1 + 1000 + 3000 bytes: 4 packets at MTU 1024 */
#define MS_ROOM		0xee	/* filler of memory nothing may write */

/*
 * An lkey of another PD in a gather or scatter list is a local protection
 * error (IB spec: the L_Key does not name a region of the QP's PD), and that
 * is what rxe reports for an RDMA READ's scatter list (rxe_comp.c do_read:
 * copy_data fails, the WQE completes with IB_WC_LOC_PROT_ERR).
 *
 * For a SEND's gather list rxe differs. copy_data's -EINVAL (lookup_mr finds
 * the MR in another PD) becomes IB_WC_LOC_QP_OP_ERR in rxe_requester (it
 * keeps IB_WC_LOC_PROT_ERR for -EFAULT). The requester then moves the QP to
 * ERR before the completer has reported that WQE. The completer finds the QP
 * in ERR and flushes the whole send queue, so with rxe (7.3, observed) the
 * failed SEND itself completes with IBV_WC_WR_FLUSH_ERR. No packet is sent.
 * The case accepts the spec's status, the one rxe sets and the flush that rxe
 * delivers. It still requires that the SEND fails, that no data reaches B and
 * that the WR behind it is flushed.
 */
static const enum ibv_wc_status ms_foreign_send[] = {
	IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_QP_OP_ERR, IBV_WC_WR_FLUSH_ERR,
};
static const enum ibv_wc_status ms_foreign_read[] = { IBV_WC_LOC_PROT_ERR };

/*
 * A's WR `first` (3 SGEs, one naming the lkey of an MR of another PD, over the
 * buffer y) completes with one of status[0..nstatus), the WR `next` behind it
 * is flushed, A ends in ERR, nothing reaches B's CQ and y stays untouched.
 * Async events that come are acknowledged and logged.
 */
static int foreign_lkey(struct env *e, struct rc_pair *p, struct ibv_send_wr *first,
			struct ibv_send_wr *next, const enum ibv_wc_status *status, int nstatus,
			const uint8_t *y, const char *what)
{
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc[2];
	char w[96];
	int i, n;

	first->next = next;
	OK(ibv_post_send(p->a, first, &bad));
	if (poll_n(p->cq_a, wc, 2, what))
		return -1;
	for (i = 0; i < nstatus && wc[0].status != status[i]; i++)
		;
	CHECK(i < nstatus, "%s: status %s (vendor_err 0x%x, wr_id %" PRIu64 "), expected %s%s",
	      what, ibv_wc_status_str(wc[0].status), wc[0].vendor_err, wc[0].wr_id,
	      ibv_wc_status_str(status[0]), nstatus > 1 ? " or what rxe reports" : "");
	if (check_wc(&wc[0], what, p->a, first->wr_id, wc[0].status, 0, -1, NULL))
		return -1;
	vlog("%s: %s (vendor_err 0x%x)", what, ibv_wc_status_str(wc[0].status), wc[0].vendor_err);
	snprintf(w, sizeof(w), "%s, the WR behind it", what);
	if (check_wc(&wc[1], w, p->a, next->wr_id, IBV_WC_WR_FLUSH_ERR, 0, -1, NULL))
		return -1;
	QSTATE(p->a, IBV_QPS_ERR);
	usleep(100 * 1000);
	snprintf(w, sizeof(w), "%s, B's CQ", what);
	if (cq_empty(p->cq_a, what) || cq_empty(p->cq_b, w))
		return -1;
	snprintf(w, sizeof(w), "%s, the other PD's buffer", what);
	if (untouched(y, 4096, MS_ROOM, w))
		return -1;
	n = count_events(e, IBV_EVENT_QP_FATAL, p->a, 300);
	if (n < 0)
		return -1;
	vlog("%s: the WR behind it flushed, A in ERR, %d IBV_EVENT_QP_FATAL on A", what, n);
	return 0;
}

/*
 * RC pairs with max_send_sge/max_recv_sge 3 and max_inline_data 128: a SEND
 * gathered from 3 SGEs of two MRs into a receive scattered over 2 SGEs split
 * elsewhere, an RDMA WRITE gathered from 3 SGEs, an RDMA READ scattered into
 * 3 SGEs, an inline SEND gathered from 2 buffers (one not registered), and an
 * lkey of another PD in a gather list (SEND) and in a scatter list (READ).
 * The data SGEs start at odd addresses and some cross a page boundary.
 */
int t_multi_sge(struct env *e)
{
	const struct ibv_qp_cap cap = {
		.max_send_sge = MS_SGE, .max_recv_sge = MS_SGE, .max_inline_data = MS_INLINE,
	};
	struct ibv_send_wr wr, wr2;
	struct ibv_sge s[MS_SGE], r[MS_SGE], sge2;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_pd *pd, *pd2;
	struct ibv_mr *mr_x, *mr_y;
	struct ibv_qp *qp;
	struct rc_pair p, q;
	uint8_t msg[MS_LEN], local[37], *x, *xh, *y;
	const size_t half = DP_BUF / 2;
	size_t len;
	int i;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (rc_pair_ex(e, pd, NULL, 7, 7, 4 * DP_BURST, &cap, &p))
		return -1;
	for (i = 0; i < 2; i++) {
		qp = i ? p.b : p.a;
		OK(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qi));
		CHECK(qa.cap.max_send_sge >= MS_SGE && qa.cap.max_recv_sge >= MS_SGE &&
		      qa.cap.max_inline_data >= MS_INLINE,
		      "QP %c: max_send_sge %u max_recv_sge %u max_inline_data %u, created with "
		      "%d %d %d", 'A' + i, qa.cap.max_send_sge, qa.cap.max_recv_sge,
		      qa.cap.max_inline_data, MS_SGE, MS_SGE, MS_INLINE);
		vlog("QP %c: max_send_sge %u max_recv_sge %u max_inline_data %u", 'A' + i,
		     qa.cap.max_send_sge, qa.cap.max_recv_sge, qa.cap.max_inline_data);
	}
	/* A second MR (same PD): its lower half is a source, its upper half xh a target. */
	x = page_buf(DP_BUF);
	CHECK(x, "mmap failed");
	xh = x + half;
	NEW(mr_x, ibv_reg_mr(pd, x, DP_BUF, DP_ACCESS));

	/* SEND of 1 + 1000 + 3000 bytes from two MRs into 2000 + 3000 bytes of room. */
	fill(p.buf_a, DP_BUF, 21);
	fill(x, half, 22);
	memset(xh, MS_ROOM, half);
	memset(p.buf_b, MS_ROOM, DP_BUF);
	set_sge(&s[0], p.buf_a + 7, 1, p.mr_a->lkey);
	set_sge(&s[1], x + 333, 1000, mr_x->lkey);
	set_sge(&s[2], p.buf_a + 3001, 3000, p.mr_a->lkey);	/* crosses a page */
	len = gather(msg, s, 3);
	set_sge(&r[0], p.buf_b + 3001, 2000, p.mr_b->lkey);	/* crosses a page */
	set_sge(&r[1], xh + 7777, 3000, mr_x->lkey);
	send_wr_sges(&wr, s, 3, IBV_WR_SEND, 7000);
	if (post_recv_sges(p.b, r, 2, 7100) || post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "SEND of 3 SGEs", p.a, 7000, IBV_WC_SUCCESS, IBV_WC_SEND, -1, NULL) ||
	    expect_wc(p.cq_b, "receive of 2 SGEs", p.b, 7100, IBV_WC_SUCCESS, IBV_WC_RECV, len,
		      NULL) ||
	    scattered(r, 2, msg, len, MS_ROOM, "receive of 2 SGEs") ||
	    untouched_outside(p.buf_b, DP_BUF, r, 2, MS_ROOM, "receive of 2 SGEs, B's buffer") ||
	    untouched_outside(xh, half, r, 2, MS_ROOM, "receive of 2 SGEs, the second MR"))
		return -1;
	vlog("SEND 1+1000+3000 bytes (2 MRs) into 2000+3000 bytes: byte_len %zu, data checked, "
	     "999 bytes of room untouched", len);

	/* RDMA WRITE of 3000 + 1 + 1000 bytes from two MRs to one remote buffer. */
	memset(p.buf_b, MS_ROOM, DP_BUF);
	set_sge(&s[0], x + 20001, 3000, mr_x->lkey);
	set_sge(&s[1], p.buf_a + 4095, 1, p.mr_a->lkey);	/* the last byte of a page */
	set_sge(&s[2], p.buf_a + 8191, 1000, p.mr_a->lkey);	/* crosses a page */
	len = gather(msg, s, 3);
	set_sge(&r[0], p.buf_b + 1001, len, p.mr_b->lkey);	/* the target, for the checks */
	send_wr_sges(&wr, s, 3, IBV_WR_RDMA_WRITE, 7200);
	wr.wr.rdma.remote_addr = r[0].addr;
	wr.wr.rdma.rkey = p.mr_b->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "RDMA WRITE of 3 SGEs", p.a, 7200, IBV_WC_SUCCESS,
		      IBV_WC_RDMA_WRITE, -1, NULL) ||
	    same(p.buf_b + 1001, msg, len, "RDMA WRITE of 3 SGEs") ||
	    untouched_outside(p.buf_b, DP_BUF, r, 1, MS_ROOM, "RDMA WRITE of 3 SGEs") ||
	    cq_empty(p.cq_b, "RDMA WRITE of 3 SGEs, B's CQ"))
		return -1;
	vlog("RDMA WRITE 3000+1+1000 bytes (2 MRs): data checked, nothing else written");

	/* RDMA READ of 4001 bytes into 1 + 3000 + 1000 bytes in two MRs. */
	fill(p.buf_b + 5003, MS_LEN, 23);
	memcpy(msg, p.buf_b + 5003, MS_LEN);
	memset(p.buf_a, MS_ROOM, DP_BUF);
	memset(xh, MS_ROOM, half);
	set_sge(&s[0], p.buf_a + 11, 1, p.mr_a->lkey);
	set_sge(&s[1], xh + 7777, 3000, mr_x->lkey);
	set_sge(&s[2], p.buf_a + 4095, 1000, p.mr_a->lkey);	/* crosses a page */
	send_wr_sges(&wr, s, 3, IBV_WR_RDMA_READ, 7300);
	wr.wr.rdma.remote_addr = (uintptr_t)(p.buf_b + 5003);
	wr.wr.rdma.rkey = p.mr_b->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "RDMA READ into 3 SGEs", p.a, 7300, IBV_WC_SUCCESS,
		      IBV_WC_RDMA_READ, MS_LEN, NULL) ||
	    scattered(s, 3, msg, MS_LEN, MS_ROOM, "RDMA READ into 3 SGEs") ||
	    untouched_outside(p.buf_a, DP_BUF, s, 3, MS_ROOM, "RDMA READ into 3 SGEs, A's buffer") ||
	    untouched_outside(xh, half, s, 3, MS_ROOM, "RDMA READ into 3 SGEs, the second MR") ||
	    cq_empty(p.cq_b, "RDMA READ into 3 SGEs, B's CQ"))
		return -1;
	vlog("RDMA READ %d bytes into 1+3000+1000 bytes (2 MRs): byte_len, data checked", MS_LEN);

	/*
	 * SEND_INLINE of 37 + 60 bytes: the first buffer is not registered (lkey 0;
	 * the lkey of inline data is not checked), and both are overwritten as soon
	 * as ibv_post_send returns (the data was copied into the WQE).
	 */
	fill(local, sizeof(local), 24);
	fill(p.buf_a + 501, 60, 25);
	memset(p.buf_b, MS_ROOM, DP_BUF);
	set_sge(&s[0], local, sizeof(local), 0);
	set_sge(&s[1], p.buf_a + 501, 60, p.mr_a->lkey);
	len = gather(msg, s, 2);
	CHECK(len <= MS_INLINE, "inline message of %zu bytes", len);
	set_sge(&r[0], p.buf_b + 99, 50, p.mr_b->lkey);
	set_sge(&r[1], p.buf_b + 9001, 100, p.mr_b->lkey);
	send_wr_sges(&wr, s, 2, IBV_WR_SEND, 7400);
	wr.send_flags |= IBV_SEND_INLINE;
	if (post_recv_sges(p.b, r, 2, 7410) || post_a(&p, &wr))
		return -1;
	memset(local, 0, sizeof(local));
	memset(p.buf_a + 501, 0, 60);
	if (expect_wc(p.cq_a, "SEND_INLINE of 2 SGEs", p.a, 7400, IBV_WC_SUCCESS, IBV_WC_SEND, -1,
		      NULL) ||
	    expect_wc(p.cq_b, "receive of SEND_INLINE", p.b, 7410, IBV_WC_SUCCESS, IBV_WC_RECV,
		      len, NULL) ||
	    scattered(r, 2, msg, len, MS_ROOM, "receive of SEND_INLINE") ||
	    untouched_outside(p.buf_b, DP_BUF, r, 2, MS_ROOM, "receive of SEND_INLINE"))
		return -1;
	vlog("SEND_INLINE 37+60 bytes (sources overwritten after posting) into 50+100 bytes: "
	     "data checked");

	/* An MR of another PD: its lkey in a SEND's gather list, then in a READ's scatter list. */
	NEW(pd2, ibv_alloc_pd(e->ctx));
	y = page_buf(4096);
	CHECK(y, "mmap failed");
	memset(y, MS_ROOM, 4096);
	NEW(mr_y, ibv_reg_mr(pd2, y, 4096, DP_ACCESS));
	memset(p.buf_b, MS_ROOM, DP_BUF);
	if (post_recv_b(&p, 7510, p.buf_b, 4096))
		return -1;
	set_sge(&s[0], p.buf_a, 100, p.mr_a->lkey);
	set_sge(&s[1], y + 100, 100, mr_y->lkey);
	set_sge(&s[2], p.buf_a + 200, 100, p.mr_a->lkey);
	send_wr_sges(&wr, s, 3, IBV_WR_SEND, 7500);
	send_wr(&wr2, &sge2, IBV_WR_SEND, 7501, p.buf_a, 64, p.mr_a->lkey);
	if (foreign_lkey(e, &p, &wr, &wr2, ms_foreign_send, 3, y, "SEND with another PD's lkey") ||
	    untouched(p.buf_b, DP_BUF, MS_ROOM, "SEND with another PD's lkey, B's buffer"))
		return -1;

	if (rc_pair_ex(e, pd, NULL, 7, 7, 4 * DP_BURST, &cap, &q))
		return -1;
	fill(q.buf_b, 300, 26);
	set_sge(&s[0], q.buf_a, 100, q.mr_a->lkey);
	set_sge(&s[1], y + 100, 100, mr_y->lkey);
	set_sge(&s[2], q.buf_a + 200, 100, q.mr_a->lkey);
	send_wr_sges(&wr, s, 3, IBV_WR_RDMA_READ, 7600);
	wr.wr.rdma.remote_addr = (uintptr_t)q.buf_b;
	wr.wr.rdma.rkey = q.mr_b->rkey;
	send_wr(&wr2, &sge2, IBV_WR_RDMA_READ, 7601, q.buf_a + 1000, 64, q.mr_a->lkey);
	wr2.wr.rdma.remote_addr = (uintptr_t)q.buf_b;
	wr2.wr.rdma.rkey = q.mr_b->rkey;
	if (foreign_lkey(e, &q, &wr, &wr2, ms_foreign_read, 1, y, "READ with another PD's lkey"))
		return -1;
	return 0;
}
