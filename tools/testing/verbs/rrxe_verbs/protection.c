// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_verbs: the "protection" cases: RDMA WRITE, READ and atomics from QP A
 * to QP B (RC, on a fresh pair each) that B must refuse: a wrong rkey, an
 * rkey of another PD, a range past the MR's end, an MR without the access
 * right, a responder QP without it, a deregistered MR's rkey
 * (after B used it).
 *
 * Each case checks A's completion status, that B's memory is unchanged (and
 * A's target, for READ and atomics, untouched), and the QP states: A in ERR,
 * and B in ERR too. The IB spec makes a remote access error, and an invalid
 * request, a class C responder error on RC: B NAKs and goes to the error
 * state; rxe does the same (rxe_resp.c, do_class_ac_error). Asynchronous
 * events B raises (rxe: IBV_EVENT_QP_ACCESS_ERR for a bad R_Key, C9-222.1)
 * are read, acknowledged and logged, not required.
 *
 * An operation that B's qp_access_flags do not enable is an invalid request
 * (NAK invalid request, the requester gets IBV_WC_REM_INV_REQ_ERR), not a
 * remote access error: rxe (check_op_valid) and the IB transports written
 * by the spec's authors (qib, hfi1: "goto nack_inv") all answer so, and
 * rrxe does the same.
 */
#define _GNU_SOURCE
#include <unistd.h>

#include "edge.h"

#define ALL_BUT(x)	(DP_ACCESS & ~(x))

/* One refused operation of a protection case. */
struct denied {
	const char *name;		/* the case it belongs to */
	const char *what;
	enum ibv_wr_opcode op;		/* RDMA_WRITE, RDMA_READ or ATOMIC_FETCH_AND_ADD */
	int qp_access_b;		/* B's qp_access_flags */
	int mr_access;			/* the target MR's access rights */
	int other_pd;			/* the target MR is in another PD */
	int dereg;			/* the target MR is deregistered before the WR */
	uint32_t rkey_xor;		/* flipped bits of the target MR's rkey */
	int64_t off;			/* the remote address: the target MR's + off */
	uint32_t len;			/* the WR's length (atomics: 8) */
	enum ibv_wc_status spec, rxe;	/* A's status: the spec's, rxe's */
};

/* The WR of d against remote address addr with rkey, from A's buffer. */
static void denied_wr(const struct denied *d, struct rc_pair *p, struct ibv_send_wr *wr,
		      struct ibv_sge *s, uint64_t wr_id, uint64_t addr, uint32_t rkey)
{
	send_wr(wr, s, d->op, wr_id, p->buf_a, d->len, p->mr_a->lkey);
	if (d->op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr->wr.atomic.remote_addr = addr;
		wr->wr.atomic.rkey = rkey;
		wr->wr.atomic.compare_add = 0x0101010101010101ull;
	} else {
		wr->wr.rdma.remote_addr = addr;
		wr->wr.rdma.rkey = rkey;
	}
}

static int run_denied(struct env *e, const struct denied *d)
{
	const struct rc_opts o = {
		.rnr_retry = 7, .retry_cnt = 7, .cqe_b = 4 * DP_BURST, .access_b = d->qp_access_b,
	};
	struct ibv_send_wr wr;
	struct ibv_sge s;
	struct ibv_pd *pd, *tpd;
	struct edge_mr t;
	struct rc_pair p;
	uint8_t *saved;
	uint32_t rkey;
	uint64_t addr;

	NEW(pd, ibv_alloc_pd(e->ctx));
	tpd = pd;
	if (d->other_pd)
		NEW(tpd, ibv_alloc_pd(e->ctx));
	if (rc_pair_opts(e, pd, &o, &p) || edge_mr(tpd, VA_IOVA, PG, d->mr_access, &t))
		return -1;
	saved = page_buf(PG);
	CHECK(saved, "mmap failed");
	fill(t.buf, PG, 110);
	memcpy(saved, t.buf, PG);
	fill(p.buf_a, DP_BUF, 111);
	if (d->op != IBV_WR_RDMA_WRITE)
		memset(p.buf_a, ROOM, DP_BUF);
	addr = io(&t, d->off);
	rkey = t.mr->rkey ^ d->rkey_xor;
	CHECK(!d->rkey_xor || (rkey != p.mr_a->rkey && rkey != p.mr_b->rkey),
	      "the wrong rkey 0x%x is a valid one", rkey);

	/*
	 * The control: with B's own MR (every right, B's PD), the same operation
	 * works, unless B's QP lacks the right (then nothing would).
	 */
	if (d->qp_access_b == DP_ACCESS) {
		denied_wr(d, &p, &wr, &s, 960, (uintptr_t)p.buf_b, p.mr_b->rkey);
		if (post_a(&p, &wr) ||
		    expect_wc(p.cq_a, "the control", p.a, 960, IBV_WC_SUCCESS,
			      d->op == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE :
			      d->op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_FETCH_ADD,
			      -1, NULL))
			return -1;
		if (d->op != IBV_WR_RDMA_WRITE)
			memset(p.buf_a, ROOM, DP_BUF);
	}
	if (d->dereg) {
		/*
		 * B's QP uses the region first (a driver may remember the keys a
		 * QP used last): the deregistration must reach it all the same.
		 */
		denied_wr(d, &p, &wr, &s, 959, addr, rkey);
		if (post_a(&p, &wr) ||
		    expect_wc(p.cq_a, "the region before its deregistration", p.a, 959,
			      IBV_WC_SUCCESS,
			      d->op == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ,
			      -1, NULL))
			return -1;
		memcpy(saved, t.buf, PG);
		if (d->op != IBV_WR_RDMA_WRITE)
			memset(p.buf_a, ROOM, DP_BUF);
		OK(release(t.mr));
	}

	denied_wr(d, &p, &wr, &s, 961, addr, rkey);
	if (post_a(&p, &wr) ||
	    expect_wc_drv(p.cq_a, d->what, p.a, 961, d->spec, d->rxe, d->rxe) ||
	    same(t.buf, saved, PG, d->what) || outside_untouched(&t, d->what) ||
	    (d->op != IBV_WR_RDMA_WRITE && untouched(p.buf_a, DP_BUF, ROOM, d->what)))
		return -1;
	QSTATE_W(p.a, IBV_QPS_ERR);
	QSTATE_W(p.b, IBV_QPS_ERR);
	if (cq_empty(p.cq_b, d->what) || drain_events(e, p.b, d->what))
		return -1;
	vlog("%s: A's WR failed, B's memory unchanged, A and B in ERR", d->what);
	return 0;
}

#define W	IBV_WR_RDMA_WRITE
#define R	IBV_WR_RDMA_READ
#define FA	IBV_WR_ATOMIC_FETCH_AND_ADD
#define ACC	IBV_WC_REM_ACCESS_ERR
#define INV	IBV_WC_REM_INV_REQ_ERR
#define WR_	IBV_ACCESS_REMOTE_WRITE
#define RD_	IBV_ACCESS_REMOTE_READ
#define AT_	IBV_ACCESS_REMOTE_ATOMIC

/*
 * name, what, op, B's qp_access_flags, the MR's rights, then the twist, the
 * length and A's status (the spec's, rxe's).
 */
static const struct denied denials[] = {
	{ "prot_bad_rkey", "WRITE with a wrong rkey", W, DP_ACCESS, DP_ACCESS,
	  .rkey_xor = 0x80, .len = 64, .spec = ACC, .rxe = ACC },
	{ "prot_bad_rkey", "READ with a wrong rkey", R, DP_ACCESS, DP_ACCESS,
	  .rkey_xor = 0x80, .len = 64, .spec = ACC, .rxe = ACC },
	{ "prot_other_pd", "WRITE with the rkey of an MR in another PD", W, DP_ACCESS, DP_ACCESS,
	  .other_pd = 1, .len = 64, .spec = ACC, .rxe = ACC },
	{ "prot_other_pd", "FETCH_AND_ADD with the rkey of an MR in another PD", FA, DP_ACCESS,
	  DP_ACCESS, .other_pd = 1, .len = 8, .spec = ACC, .rxe = ACC },
	{ "prot_past_end", "WRITE of 16 bytes over the MR's last 8", W, DP_ACCESS, DP_ACCESS,
	  .off = PG - 8, .len = 16, .spec = ACC, .rxe = ACC },
	{ "prot_past_end", "READ of 16 bytes over the MR's last 8", R, DP_ACCESS, DP_ACCESS,
	  .off = PG - 8, .len = 16, .spec = ACC, .rxe = ACC },
	{ "prot_mr_no_write", "WRITE into an MR without REMOTE_WRITE", W, DP_ACCESS,
	  ALL_BUT(WR_), .len = 64, .spec = ACC, .rxe = ACC },
	{ "prot_mr_no_read", "READ from an MR without REMOTE_READ", R, DP_ACCESS,
	  ALL_BUT(RD_), .len = 64, .spec = ACC, .rxe = ACC },
	{ "prot_mr_no_atomic", "FETCH_AND_ADD on an MR without REMOTE_ATOMIC", FA, DP_ACCESS,
	  ALL_BUT(AT_), .len = 8, .spec = ACC, .rxe = ACC },
	/* B's qp_access_flags lack the right: an invalid request. */
	{ "prot_qp_no_write", "WRITE to a QP without REMOTE_WRITE", W, ALL_BUT(WR_), DP_ACCESS,
	  .len = 64, .spec = INV, .rxe = INV },
	{ "prot_qp_no_read", "READ from a QP without REMOTE_READ", R, ALL_BUT(RD_), DP_ACCESS,
	  .len = 64, .spec = INV, .rxe = INV },
	{ "prot_qp_no_atomic", "FETCH_AND_ADD to a QP without REMOTE_ATOMIC", FA, ALL_BUT(AT_),
	  DP_ACCESS, .len = 8, .spec = INV, .rxe = INV },
	{ "prot_dereg", "WRITE with a deregistered MR's rkey", W, DP_ACCESS, DP_ACCESS,
	  .dereg = 1, .len = 64, .spec = ACC, .rxe = ACC },
	{ "prot_dereg", "READ with a deregistered MR's rkey", R, DP_ACCESS, DP_ACCESS,
	  .dereg = 1, .len = 64, .spec = ACC, .rxe = ACC },
};

/* Every operation of the case `name`. */
static int run_case_denials(struct env *e, const char *name)
{
	size_t i;
	int n = 0;

	for (i = 0; i < sizeof(denials) / sizeof(denials[0]); i++) {
		if (strcmp(denials[i].name, name))
			continue;
		if (run_denied(e, &denials[i]))
			return -1;
		n++;
	}
	CHECK(n > 0, "no operations for %s", name);
	return 0;
}

int t_prot_bad_rkey(struct env *e) { return run_case_denials(e, "prot_bad_rkey"); }
int t_prot_other_pd(struct env *e) { return run_case_denials(e, "prot_other_pd"); }
int t_prot_past_end(struct env *e) { return run_case_denials(e, "prot_past_end"); }
int t_prot_mr_no_write(struct env *e) { return run_case_denials(e, "prot_mr_no_write"); }
int t_prot_mr_no_read(struct env *e) { return run_case_denials(e, "prot_mr_no_read"); }
int t_prot_mr_no_atomic(struct env *e) { return run_case_denials(e, "prot_mr_no_atomic"); }
int t_prot_qp_no_write(struct env *e) { return run_case_denials(e, "prot_qp_no_write"); }
int t_prot_qp_no_read(struct env *e) { return run_case_denials(e, "prot_qp_no_read"); }
int t_prot_qp_no_atomic(struct env *e) { return run_case_denials(e, "prot_qp_no_atomic"); }
int t_prot_dereg(struct env *e) { return run_case_denials(e, "prot_dereg"); }
