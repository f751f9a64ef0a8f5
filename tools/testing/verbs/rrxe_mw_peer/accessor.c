// SPDX-License-Identifier: GPL-2.0
/*
 * The accessor's side of the cases: RDMA WRITE and READ into the owner's
 * buffer through the windows' rkeys, SEND_WITH_INV of the type 2 window's
 * key, and accesses that must be refused with IBV_WC_REM_ACCESS_ERR. It
 * checks its completions and the data it reads; after each step it reports
 * its writes to the owner, which checks its memory and answers with a
 * verdict.
 *
 * Where upstream rxe owns the windows it checks an access through a window
 * against the window's rights but against its region's range, not the
 * window's (rxe_resp.c, check_rkey): a WRITE past a window's end that stays
 * inside the region succeeds there. That is accepted with rxe as the owner
 * only (and the owner then checks that the write landed where it was aimed);
 * a window that ends at the region's end refuses it on every driver.
 */
#define _GNU_SOURCE

#include "mwp.h"

struct access {
	struct link l;
	uint8_t *buf;			/* local buffer */
	struct ibv_mr *mr;
	struct msg win;			/* the owner's WINDOWS: address and keys */
	struct msg report;		/* MSG_WROTE being filled */
};

static int use_setup(struct env *e, int fd, struct access *a)
{
	if (link_up(e, fd, 0, &a->l))
		return -1;
	a->buf = page_buf(BUF_LEN);
	CHECK(a->buf, "mmap of %d bytes failed", BUF_LEN);
	NEW(a->mr, ibv_reg_mr(a->l.pd, a->buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE));
	memset(&a->report, 0, sizeof(a->report));
	a->report.type = MSG_WROTE;
	if (ctrl_recv(fd, &a->win, MSG_WINDOWS))
		return -1;
	vlog("owner's buffer at 0x%" PRIx64 ", window keys 0x%x 0x%x", a->win.addr,
	     a->win.rkey[0], a->win.rkey[1]);
	return 0;
}

/*
 * Post an RDMA `op` (WRITE from, READ into a->buf) of len bytes at the owner's
 * buffer + off through rkey, and wait for its completion in *wc.
 */
static int rdma(struct access *a, enum ibv_wr_opcode op, uint32_t rkey, uint32_t off,
		uint32_t len, struct ibv_wc *wc, const char *what)
{
	static uint64_t wr_id = 100;
	struct ibv_send_wr wr;
	struct ibv_sge s;

	send_wr(&wr, &s, op, ++wr_id, a->buf, len, a->mr->lkey);
	wr.wr.rdma.remote_addr = a->win.addr + off;
	wr.wr.rdma.rkey = rkey;
	if (link_post(&a->l, &wr) || poll_n(a->l.cq, wc, 1, what))
		return -1;
	CHECK(wc->wr_id == wr_id && wc->qp_num == a->l.qp->qp_num,
	      "%s: completion of wr_id %" PRIu64 " on QP 0x%x, expected %" PRIu64 " on 0x%x", what,
	      wc->wr_id, wc->qp_num, wr_id, a->l.qp->qp_num);
	return 0;
}

/* An RDMA `op` that must complete with `status` (a READ: len bytes read). */
static int rdma_expect(struct access *a, enum ibv_wr_opcode op, uint32_t rkey, uint32_t off,
		       uint32_t len, enum ibv_wc_status status, const char *what)
{
	struct ibv_wc wc;

	if (rdma(a, op, rkey, off, len, &wc, what))
		return -1;
	return check_wc(&wc, what, a->l.qp, wc.wr_id, status,
			op == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ,
			op == IBV_WR_RDMA_READ ? (long)len : -1, NULL);
}

/* Note a write of fill(seed) for the owner's check (-F data: a seed it did not write). */
static void wrote(struct access *a, uint32_t off, uint32_t len, uint32_t seed)
{
	struct write_rec *w = &a->report.w[a->report.nw++];

	w->off = off;
	w->len = len;
	w->seed = g_fault == F_DATA && a->report.nw == 1 ? seed + 1 : seed;
}

/* Send the report (arg 1: an access was refused) and wait for the owner's verdict. */
static int report(int fd, struct access *a, int refused)
{
	a->report.arg = (uint32_t)refused;
	if (ctrl_ask(fd, &a->report))
		return -1;
	a->report.nw = 0;
	return 0;
}

/*
 * Through window k (rkey at off): WRITE its first half, READ its second half
 * (the owner's fill), READ the first half back; the data is checked.
 */
static int window_rw(struct access *a, int k, uint32_t rkey, uint32_t off)
{
	static uint8_t want[HALF];
	char what[64];

	snprintf(what, sizeof(what), "type %d window: WRITE", k + 1);
	fill(a->buf, HALF, SEED_WRITE(k));
	if (rdma_expect(a, IBV_WR_RDMA_WRITE, rkey, off, HALF, IBV_WC_SUCCESS, what))
		return -1;
	wrote(a, off, HALF, SEED_WRITE(k));
	snprintf(what, sizeof(what), "type %d window: READ of the owner's data", k + 1);
	memset(a->buf, 0, HALF);
	fill(want, HALF, SEED_READ(k));
	if (rdma_expect(a, IBV_WR_RDMA_READ, rkey, off + HALF, HALF, IBV_WC_SUCCESS, what) ||
	    same(a->buf, want, HALF, what))
		return -1;
	snprintf(what, sizeof(what), "type %d window: READ back of the WRITE", k + 1);
	memset(a->buf, 0, HALF);
	fill(want, HALF, SEED_WRITE(k));
	if (rdma_expect(a, IBV_WR_RDMA_READ, rkey, off, HALF, IBV_WC_SUCCESS, what) ||
	    same(a->buf, want, HALF, what))
		return -1;
	vlog("type %d window: WRITE, READ and READ back of %d bytes verified", k + 1, HALF);
	return 0;
}

/* A 64-byte WRITE that must fail with IBV_WC_REM_ACCESS_ERR; the QP ends in ERR. */
static int write_refused(struct env *e, struct access *a, uint32_t rkey, uint32_t off,
			 const char *what)
{
	fill(a->buf, OUT_LEN, SEED_OUT);
	if (rdma_expect(a, IBV_WR_RDMA_WRITE, rkey, off, OUT_LEN, IBV_WC_REM_ACCESS_ERR, what) ||
	    link_errored(e, &a->l, what))
		return -1;
	vlog("%s: IBV_WC_REM_ACCESS_ERR", what);
	return 0;
}

/* SEND_WITH_INV of the type 2 window's key into the owner's posted receive. */
static int send_inv(struct access *a, uint32_t rkey)
{
	struct ibv_send_wr wr;
	struct ibv_sge s;

	fill(a->buf, INV_LEN, SEED_INV);
	/* -F inv: a plain SEND, which the owner must notice. */
	send_wr(&wr, &s, g_fault == F_INV ? IBV_WR_SEND : IBV_WR_SEND_WITH_INV, 50, a->buf,
		INV_LEN, a->mr->lkey);
	wr.invalidate_rkey = rkey;
	if (link_post(&a->l, &wr) ||
	    expect_wc(a->l.cq, "SEND_WITH_INV", a->l.qp, 50, IBV_WC_SUCCESS, IBV_WC_SEND, -1, NULL))
		return -1;
	vlog("SEND_WITH_INV of key 0x%x completed", rkey);
	return 0;
}

int use_windows(struct env *e, int fd)
{
	struct msg m = { .type = MSG_INV_SENT };
	struct access a;

	if (use_setup(e, fd, &a) ||
	    window_rw(&a, 0, a.win.rkey[0], W1_OFF) ||
	    window_rw(&a, 1, a.win.rkey[1], W2_OFF) ||
	    report(fd, &a, 0))
		return -1;
	/* The owner checks the receive: data, invalidate flag, the key. */
	if (send_inv(&a, a.win.rkey[1]) || ctrl_ask(fd, &m))
		return -1;
	/* The type 1 window still works; the invalidated type 2 key reaches nothing. */
	fill(a.buf, OUT_LEN, SEED_LATE);
	if (rdma_expect(&a, IBV_WR_RDMA_WRITE, a.win.rkey[0], W1_OFF + 100, OUT_LEN,
			IBV_WC_SUCCESS, "WRITE through the type 1 window after the invalidation"))
		return -1;
	wrote(&a, W1_OFF + 100, OUT_LEN, SEED_LATE);
	if (write_refused(e, &a, a.win.rkey[1], W2_OFF, "WRITE with the invalidated type 2 key"))
		return -1;
	return report(fd, &a, 1);
}

int use_past_region(struct env *e, int fd)
{
	uint32_t end = WE_OFF + WIN_LEN;
	struct access a;

	if (use_setup(e, fd, &a))
		return -1;
	fill(a.buf, OUT_LEN, SEED_WRITE(2));
	if (rdma_expect(&a, IBV_WR_RDMA_WRITE, a.win.rkey[0], end - OUT_LEN, OUT_LEN,
			IBV_WC_SUCCESS, "WRITE of the window's last bytes"))
		return -1;
	wrote(&a, end - OUT_LEN, OUT_LEN, SEED_WRITE(2));
	/* -F range: the access stays inside the window and succeeds. */
	if (write_refused(e, &a, a.win.rkey[0],
			  end - OUT_LEN + (g_fault == F_RANGE ? 0 : OUT_OVER),
			  "WRITE across the end of a window at the region's end"))
		return -1;
	return report(fd, &a, 1);
}

int use_past_window(struct env *e, int fd)
{
	const char *what = "WRITE across the type 2 window's end, inside the region";
	uint32_t at = W2_OFF + WIN_LEN - OUT_OVER;
	struct access a;
	struct ibv_wc wc;

	if (use_setup(e, fd, &a))
		return -1;
	fill(a.buf, OUT_LEN, SEED_OUT);
	if (rdma(&a, IBV_WR_RDMA_WRITE, a.win.rkey[0], at, OUT_LEN, &wc, what))
		return -1;
	if (wc.status == IBV_WC_SUCCESS && a.l.peer_driver == DRV_RXE) {
		/* rxe checks the region's range (see the top): the owner checks where it went. */
		printf("# note: the owner (rxe) let a WRITE %d bytes past a window's end through "
		       "(rxe checks the region's range, not the window's)\n", OUT_OVER);
		wrote(&a, at, OUT_LEN, SEED_OUT);
		return report(fd, &a, 0);
	}
	if (check_wc(&wc, what, a.l.qp, wc.wr_id, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, -1,
		     NULL) ||
	    link_errored(e, &a.l, what))
		return -1;
	return report(fd, &a, 1);
}
