// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_verbs: the "windows" cases: memory windows of type 1 (bound with
 * ibv_bind_mw) and type 2 (bound with an IBV_WR_BIND_MW work request), used
 * by RDMA WRITE and READ from QP A into QP B's memory (RC, a fresh pair for
 * each refused access, since a remote access error moves both QPs to ERR).
 *
 * B binds the windows over a region of its buffer registered with
 * IBV_ACCESS_MW_BIND. Through a window, A may reach exactly the window's
 * bytes with exactly its rights; the region's own remote rights do not
 * matter. A type 2 window ends with a SEND with invalidate from A (B's
 * receive completion says which key) or a LOCAL_INV on B; a type 1 window
 * with a bind of length 0. After that, its key reaches nothing. A bind over
 * a region without MW_BIND fails with IBV_WC_MW_BIND_ERR. Every refusal
 * checks that B's memory did not change.
 *
 * Where rxe differs from the IB spec, rxe's answer is accepted on rxe only:
 * rxe checks an access through a window against the window's rights but
 * against its region's range, not the window's (rxe_resp.c, check_rkey), so
 * an access outside the window succeeds there; and a failed bind completes
 * with IBV_WC_WR_FLUSH_ERR instead of IBV_WC_MW_BIND_ERR.
 */
#define _GNU_SOURCE
#include <string.h>

#include "edge.h"

#define WIN_OFF		4096	/* the window: bytes [WIN_OFF, WIN_OFF + WIN_LEN) of B's buffer */
#define WIN_LEN		8192
#define WIN_RIGHTS	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define REGION_RIGHTS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND)

/* A fresh RC pair and a region of B's whole buffer that windows may open. */
static int window_pair(struct env *e, struct ibv_pd **pd, struct rc_pair *p, struct ibv_mr **mr,
		       int mr_access)
{
	const struct rc_opts o = {
		.rnr_retry = 7, .retry_cnt = 7, .cqe_b = 4 * DP_BURST, .access_b = DP_ACCESS,
	};

	NEW(*pd, ibv_alloc_pd(e->ctx));
	if (rc_pair_opts(e, *pd, &o, p))
		return -1;
	/* No remote rights of its own: only the windows give them. */
	NEW(*mr, ibv_reg_mr(*pd, p->buf_b, DP_BUF, mr_access));
	memset(p->buf_b, 0xee, DP_BUF);
	return 0;
}

/* B's bind `wr_id` completed with `want` (a failure: MW_BIND_ERR, rxe's flush). */
static int bind_done(struct rc_pair *p, uint64_t wr_id, enum ibv_wc_status want,
		     const char *what)
{
	if (want == IBV_WC_SUCCESS)
		return expect_wc(p->cq_b, what, p->b, wr_id, want, IBV_WC_BIND_MW, -1, NULL);
	return expect_wc_drv(p->cq_b, what, p->b, wr_id, IBV_WC_MW_BIND_ERR,
			     IBV_WC_WR_FLUSH_ERR, IBV_WC_MW_BIND_ERR);
}

/* Binds type 1 window mw over B's region: status `want` on B's CQ. */
static int bind1(struct rc_pair *p, struct ibv_mw *mw, struct ibv_mr *mr, uint64_t off,
		 uint64_t len, unsigned int rights, enum ibv_wc_status want, const char *what)
{
	struct ibv_mw_bind b = {
		.wr_id = 500,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = {
			.mr = mr, .addr = (uintptr_t)p->buf_b + off, .length = len,
			.mw_access_flags = rights,
		},
	};

	OK(ibv_bind_mw(p->b, mw, &b));
	return bind_done(p, 500, want, what);
}

/* Binds type 2 window mw under key `rkey` with a work request on B. */
static int bind2(struct rc_pair *p, struct ibv_mw *mw, uint32_t rkey, struct ibv_mr *mr,
		 enum ibv_wc_status want, const char *what)
{
	struct ibv_send_wr wr = {
		.wr_id = 501, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)p->buf_b + WIN_OFF;
	wr.bind_mw.bind_info.length = WIN_LEN;
	wr.bind_mw.bind_info.mw_access_flags = WIN_RIGHTS;
	OK(ibv_post_send(p->b, &wr, &bad));
	return bind_done(p, 501, want, what);
}

/* A WRITE of `len` bytes at B's buffer + off through rkey works. */
static int write_ok(struct rc_pair *p, uint32_t rkey, uint64_t off, uint32_t len, uint64_t id,
		    const char *what)
{
	struct ibv_send_wr wr;
	struct ibv_sge s;

	fill(p->buf_a, len, (unsigned int)id);
	send_wr(&wr, &s, IBV_WR_RDMA_WRITE, id, p->buf_a, len, p->mr_a->lkey);
	wr.wr.rdma.remote_addr = (uintptr_t)p->buf_b + off;
	wr.wr.rdma.rkey = rkey;
	if (post_a(p, &wr) ||
	    expect_wc(p->cq_a, what, p->a, id, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1, NULL) ||
	    same(p->buf_b + off, p->buf_a, len, what))
		return -1;
	vlog("%s: written", what);
	return 0;
}

/* A READ of `len` bytes at B's buffer + off through rkey works. */
static int read_ok(struct rc_pair *p, uint32_t rkey, uint64_t off, uint32_t len, uint64_t id,
		   const char *what)
{
	struct ibv_send_wr wr;
	struct ibv_sge s;

	fill(p->buf_b + off, len, (unsigned int)id);
	memset(p->buf_a, 0, len);
	send_wr(&wr, &s, IBV_WR_RDMA_READ, id, p->buf_a, len, p->mr_a->lkey);
	wr.wr.rdma.remote_addr = (uintptr_t)p->buf_b + off;
	wr.wr.rdma.rkey = rkey;
	if (post_a(p, &wr) ||
	    expect_wc(p->cq_a, what, p->a, id, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, len, NULL) ||
	    same(p->buf_a, p->buf_b + off, len, what))
		return -1;
	vlog("%s: read", what);
	return 0;
}

/*
 * A `op` (WRITE or READ) of 64 bytes at B's buffer + off through rkey is
 * refused with a remote access error, B's memory unchanged, both QPs in ERR.
 */
static int refused(struct rc_pair *p, enum ibv_wr_opcode op, uint32_t rkey, uint64_t off,
		   const char *what)
{
	static uint8_t saved[DP_BUF];
	struct ibv_send_wr wr;
	struct ibv_sge s;

	memcpy(saved, p->buf_b, DP_BUF);
	fill(p->buf_a, 64, 77);
	send_wr(&wr, &s, op, 999, p->buf_a, 64, p->mr_a->lkey);
	wr.wr.rdma.remote_addr = (uintptr_t)p->buf_b + off;
	wr.wr.rdma.rkey = rkey;
	if (post_a(p, &wr) ||
	    expect_wc(p->cq_a, what, p->a, 999, IBV_WC_REM_ACCESS_ERR,
		      op == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ, -1, NULL) ||
	    same(p->buf_b, saved, DP_BUF, what))
		return -1;
	QSTATE_W(p->a, IBV_QPS_ERR);
	QSTATE_W(p->b, IBV_QPS_ERR);
	vlog("%s: REM_ACCESS_ERR, B's memory unchanged", what);
	return 0;
}

/* A refused access through a type 1 window bound with `rights` over [off, off + len). */
static int t1_refused(struct env *e, enum ibv_wr_opcode op, uint64_t off, uint64_t len,
		      unsigned int rights, uint64_t at, const char *what)
{
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	struct rc_pair p;

	if (window_pair(e, &pd, &p, &mr, REGION_RIGHTS))
		return -1;
	NEW(mw, ibv_alloc_mw(pd, IBV_MW_TYPE_1));
	if (bind1(&p, mw, mr, off, len, rights, IBV_WC_SUCCESS, what))
		return -1;
	if (vt_driver() == DRV_RXE && (at < off || at + 64 > off + len)) {
		/* rxe: the region's range, not the window's (see the top). */
		if (op == IBV_WR_RDMA_WRITE)
			return write_ok(&p, mw->rkey, at, 64, 998, what);
		return read_ok(&p, mw->rkey, at, 64, 998, what);
	}
	return refused(&p, op, mw->rkey, at, what);
}

int t_mw_type1(struct env *e)
{
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_mw *mw, *other;
	struct rc_pair p;
	uint32_t first;

	if (window_pair(e, &pd, &p, &mr, REGION_RIGHTS))
		return -1;
	NEW(mw, ibv_alloc_mw(pd, IBV_MW_TYPE_1));
	NEW(other, ibv_alloc_mw(pd, IBV_MW_TYPE_1));
	CHECK(mw->type == IBV_MW_TYPE_1 && mw->rkey != other->rkey,
	      "two windows: type %d, keys 0x%x and 0x%x", mw->type, mw->rkey, other->rkey);
	first = mw->rkey;
	if (bind1(&p, mw, mr, WIN_OFF, WIN_LEN, WIN_RIGHTS, IBV_WC_SUCCESS, "bind type 1"))
		return -1;
	CHECK(mw->rkey != first, "ibv_bind_mw left the key 0x%x", first);
	if (write_ok(&p, mw->rkey, WIN_OFF, 64, 510, "WRITE at the window's start") ||
	    write_ok(&p, mw->rkey, WIN_OFF + WIN_LEN - 4096, 4096, 511,
		     "WRITE of 4 KiB ending at the window's end") ||
	    read_ok(&p, mw->rkey, WIN_OFF + 100, 2000, 512, "READ inside the window"))
		return -1;
	/* Rebinding moves the window and changes its key: the old key is dead. */
	first = mw->rkey;
	if (bind1(&p, mw, mr, 0, 4096, WIN_RIGHTS, IBV_WC_SUCCESS, "rebind type 1") ||
	    write_ok(&p, mw->rkey, 0, 64, 513, "WRITE through the rebound window"))
		return -1;
	/* A bind of length 0 unbinds: the key reaches nothing. */
	if (bind1(&p, mw, mr, 0, 0, WIN_RIGHTS, IBV_WC_SUCCESS, "unbind type 1") ||
	    refused(&p, IBV_WR_RDMA_WRITE, mw->rkey, 0, "WRITE through an unbound window"))
		return -1;
	/* A fresh pair: the key of before the rebind. */
	if (window_pair(e, &pd, &p, &mr, REGION_RIGHTS))
		return -1;
	NEW(mw, ibv_alloc_mw(pd, IBV_MW_TYPE_1));
	if (bind1(&p, mw, mr, WIN_OFF, WIN_LEN, WIN_RIGHTS, IBV_WC_SUCCESS, "bind type 1") ||
	    bind1(&p, mw, mr, WIN_OFF, WIN_LEN, WIN_RIGHTS, IBV_WC_SUCCESS, "bind again"))
		return -1;
	return refused(&p, IBV_WR_RDMA_WRITE, (mw->rkey & ~0xffu) | ((mw->rkey - 1) & 0xff),
		       WIN_OFF, "WRITE with a stale window key");
}

int t_mw_range(struct env *e)
{
	return t1_refused(e, IBV_WR_RDMA_WRITE, WIN_OFF, WIN_LEN, WIN_RIGHTS, WIN_OFF - 64,
			  "WRITE before the window's start") ||
	       t1_refused(e, IBV_WR_RDMA_READ, WIN_OFF, WIN_LEN, WIN_RIGHTS, WIN_OFF + WIN_LEN - 32,
			  "READ across the window's end") ||
	       t1_refused(e, IBV_WR_RDMA_WRITE, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_READ, WIN_OFF,
			  "WRITE through a read-only window") ||
	       t1_refused(e, IBV_WR_RDMA_READ, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_WRITE, WIN_OFF,
			  "READ through a write-only window");
}

int t_mw_type2(struct env *e)
{
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_send_wr wr;
	struct ibv_sge s, rs;
	struct ibv_wc wc;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	struct rc_pair p;
	uint32_t rkey;

	/* Remote invalidation: SEND_WITH_INV from A. */
	if (window_pair(e, &pd, &p, &mr, REGION_RIGHTS))
		return -1;
	NEW(mw, ibv_alloc_mw(pd, IBV_MW_TYPE_2));
	rkey = ibv_inc_rkey(mw->rkey);
	if (bind2(&p, mw, rkey, mr, IBV_WC_SUCCESS, "bind type 2") ||
	    write_ok(&p, rkey, WIN_OFF + 8, 64, 520, "WRITE through the type 2 window") ||
	    read_ok(&p, rkey, WIN_OFF + WIN_LEN - 64, 64, 521, "READ through the type 2 window"))
		return -1;
	/* B's receive lands outside the window (the buffer's first page). */
	recv_wr(&rwr, &rs, 522, p.buf_b, 64, p.mr_b->lkey);
	OK(ibv_post_recv(p.b, &rwr, &rbad));
	send_wr(&wr, &s, IBV_WR_SEND_WITH_INV, 523, p.buf_a, 16, p.mr_a->lkey);
	wr.invalidate_rkey = rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "SEND_WITH_INV", p.a, 523, IBV_WC_SUCCESS, IBV_WC_SEND, -1, NULL) ||
	    poll_n(p.cq_b, &wc, 1, "SEND_WITH_INV's receive"))
		return -1;
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.byte_len == 16,
	      "receive: status %s, opcode %s, %u bytes", ibv_wc_status_str(wc.status),
	      wc_opname(wc.opcode), wc.byte_len);
	/*
	 * librxe hands the kernel's completion flags over as they are, so the
	 * kernel's IB_WC_WITH_INVALIDATE (bit 2) reads as IBV_WC_IP_CSUM_OK;
	 * either bit says the key was invalidated.
	 */
	CHECK(wc.wc_flags & (IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK),
	      "receive without the invalidate flag (flags 0x%x)", wc.wc_flags);
	CHECK(wc.invalidated_rkey == rkey, "invalidated key 0x%x, expected 0x%x",
	      wc.invalidated_rkey, rkey);
	if (refused(&p, IBV_WR_RDMA_WRITE, rkey, WIN_OFF + 8, "WRITE after SEND_WITH_INV"))
		return -1;

	/* Local invalidation on B; then the window can be bound again. */
	if (window_pair(e, &pd, &p, &mr, REGION_RIGHTS))
		return -1;
	NEW(mw, ibv_alloc_mw(pd, IBV_MW_TYPE_2));
	rkey = ibv_inc_rkey(mw->rkey);
	if (bind2(&p, mw, rkey, mr, IBV_WC_SUCCESS, "bind type 2") ||
	    bind2(&p, mw, ibv_inc_rkey(rkey), mr, IBV_WC_MW_BIND_ERR,
		  "second bind of a bound type 2 window"))
		return -1;
	QSTATE_W(p.b, IBV_QPS_ERR);

	if (window_pair(e, &pd, &p, &mr, REGION_RIGHTS))
		return -1;
	NEW(mw, ibv_alloc_mw(pd, IBV_MW_TYPE_2));
	rkey = ibv_inc_rkey(mw->rkey);
	if (bind2(&p, mw, rkey, mr, IBV_WC_SUCCESS, "bind type 2") ||
	    write_ok(&p, rkey, WIN_OFF, 64, 530, "WRITE before LOCAL_INV"))
		return -1;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 531;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	{
		struct ibv_send_wr *bad;

		OK(ibv_post_send(p.b, &wr, &bad));
	}
	if (expect_wc(p.cq_b, "LOCAL_INV", p.b, 531, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV, -1, NULL))
		return -1;
	return refused(&p, IBV_WR_RDMA_WRITE, rkey, WIN_OFF, "WRITE after LOCAL_INV");
}

int t_mw_bind_err(struct env *e)
{
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	struct rc_pair p;

	/* The region does not allow windows. */
	if (window_pair(e, &pd, &p, &mr, IBV_ACCESS_LOCAL_WRITE))
		return -1;
	NEW(mw, ibv_alloc_mw(pd, IBV_MW_TYPE_1));
	if (bind1(&p, mw, mr, WIN_OFF, WIN_LEN, WIN_RIGHTS, IBV_WC_MW_BIND_ERR,
		  "bind over a region without MW_BIND"))
		return -1;
	QSTATE_W(p.b, IBV_QPS_ERR);
	/* A window past the region's end. */
	if (window_pair(e, &pd, &p, &mr, REGION_RIGHTS))
		return -1;
	NEW(mw, ibv_alloc_mw(pd, IBV_MW_TYPE_1));
	if (bind1(&p, mw, mr, DP_BUF - 4096, 8192, WIN_RIGHTS, IBV_WC_MW_BIND_ERR,
		  "bind past the region's end"))
		return -1;
	QSTATE_W(p.b, IBV_QPS_ERR);
	/* Deallocating a bound window is allowed; its key then reaches nothing. */
	if (window_pair(e, &pd, &p, &mr, REGION_RIGHTS))
		return -1;
	NEW(mw, ibv_alloc_mw(pd, IBV_MW_TYPE_1));
	if (bind1(&p, mw, mr, WIN_OFF, WIN_LEN, WIN_RIGHTS, IBV_WC_SUCCESS, "bind type 1"))
		return -1;
	{
		uint32_t rkey = mw->rkey;

		OK(release(mw));
		return refused(&p, IBV_WR_RDMA_WRITE, rkey, WIN_OFF,
			       "WRITE through a deallocated window");
	}
}
