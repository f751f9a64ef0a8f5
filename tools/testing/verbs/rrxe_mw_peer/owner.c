// SPDX-License-Identifier: GPL-2.0
/*
 * The owner's side of the cases: it registers its buffer's region with
 * IBV_ACCESS_MW_BIND and no remote rights, binds windows over it (type 1
 * with ibv_bind_mw, type 2 with an IBV_WR_BIND_MW work request), hands the
 * keys to the accessor, and after each of the accessor's steps checks its
 * whole buffer, byte by byte, against a shadow copy of what it must hold:
 * the writes the accessor reports, and nothing else (the page after the
 * region included). A refused access must leave its QP in ERR.
 */
#define _GNU_SOURCE

#include "mwp.h"

struct owned {
	struct link l;
	uint8_t *buf;			/* BUF_LEN bytes, the region its first REGION_LEN */
	struct ibv_mr *region;
};

static uint8_t shadow[BUF_LEN];		/* what buf must hold */

static int own_setup(struct env *e, int fd, struct owned *o)
{
	if (link_up(e, fd, 1, &o->l))
		return -1;
	o->buf = page_buf(BUF_LEN);
	CHECK(o->buf, "mmap of %d bytes failed", BUF_LEN);
	memset(o->buf, ROOM, BUF_LEN);
	NEW(o->region, ibv_reg_mr(o->l.pd, o->buf, REGION_LEN,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND));
	return 0;
}

/* The bind WR `wr_id` completed successfully on the owner's QP. */
static int bound(struct owned *o, uint64_t wr_id, const char *what)
{
	return expect_wc(o->l.cq, what, o->l.qp, wr_id, IBV_WC_SUCCESS, IBV_WC_BIND_MW, -1, NULL);
}

/* Bind type 1 window mw over [off, off + WIN_LEN) of the region with ibv_bind_mw. */
static int bind1(struct owned *o, struct ibv_mw *mw, uint32_t off, const char *what)
{
	struct ibv_mw_bind b = {
		.wr_id = 1,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = {
			.mr = o->region, .addr = (uintptr_t)o->buf + off, .length = WIN_LEN,
			.mw_access_flags = WIN_RIGHTS,
		},
	};
	uint32_t before = mw->rkey;

	OK(ibv_bind_mw(o->l.qp, mw, &b));
	if (bound(o, 1, what))
		return -1;
	CHECK(mw->rkey != before, "%s: ibv_bind_mw left the key 0x%x", what, before);
	vlog("%s: type 1 window [%u, %u) of the region, rkey 0x%x", what, off, off + WIN_LEN,
	     mw->rkey);
	return 0;
}

/* Bind type 2 window mw over [off, off + WIN_LEN) under key `rkey` with IBV_WR_BIND_MW. */
static int bind2(struct owned *o, struct ibv_mw *mw, uint32_t rkey, uint32_t off,
		 const char *what)
{
	struct ibv_send_wr wr = {
		.wr_id = 2, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
	};

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = o->region;
	wr.bind_mw.bind_info.addr = (uintptr_t)o->buf + off;
	wr.bind_mw.bind_info.length = WIN_LEN;
	wr.bind_mw.bind_info.mw_access_flags = WIN_RIGHTS;
	if (link_post(&o->l, &wr) || bound(o, 2, what))
		return -1;
	vlog("%s: type 2 window [%u, %u) of the region, rkey 0x%x", what, off, off + WIN_LEN,
	     rkey);
	return 0;
}

/* Hand the buffer's address and the window keys to the accessor. */
static int announce(int fd, struct owned *o, uint32_t rkey0, uint32_t rkey1)
{
	struct msg m = { .type = MSG_WINDOWS, .addr = (uintptr_t)o->buf, .rkey = { rkey0, rkey1 } };

	memcpy(shadow, o->buf, BUF_LEN);
	return ctrl_send(fd, &m);
}

/*
 * The accessor's report m: its writes landed (the shadow takes them) and
 * nothing else changed; if it says an access was refused (arg 1), this QP is
 * in ERR. The verdict goes back to the accessor.
 */
static int check_report(struct env *e, int fd, struct owned *o, const struct msg *m,
			const char *what)
{
	uint32_t i;
	int rc = 0;

	if (m->nw > MAX_WRITES) {
		snprintf(g_reason, sizeof(g_reason), "%s: %u writes reported", what, m->nw);
		return ctrl_verdict(fd, -1);
	}
	for (i = 0; i < m->nw && !rc; i++) {
		const struct write_rec *w = &m->w[i];

		if (w->off > BUF_LEN || w->len > BUF_LEN - w->off) {
			snprintf(g_reason, sizeof(g_reason), "%s: write [%u, +%u) outside the buffer",
				 what, w->off, w->len);
			rc = -1;
			break;
		}
		fill(shadow + w->off, w->len, w->seed);
	}
	if (!rc)
		rc = same(o->buf, shadow, BUF_LEN, what);
	if (!rc && m->arg)
		rc = link_errored(e, &o->l, what);
	if (!rc)
		vlog("%s: %u write(s) landed, the rest of the %d bytes unchanged", what, m->nw,
		     BUF_LEN);
	return ctrl_verdict(fd, rc);
}

/* Wait for the accessor's report and check it. */
static int await_report(struct env *e, int fd, struct owned *o, const char *what)
{
	struct msg m;

	if (ctrl_recv(fd, &m, MSG_WROTE))
		return -1;
	return check_report(e, fd, o, &m, what);
}

/*
 * The receive of the SEND_WITH_INV: 16 bytes of data, the invalidate flag
 * and the type 2 window's key. librxe hands the kernel's completion flags
 * over as they are, so the kernel's IB_WC_WITH_INVALIDATE (bit 2) reads as
 * IBV_WC_IP_CSUM_OK; either bit says the key was invalidated.
 */
static int check_inv_recv(struct owned *o, const uint8_t *rbuf, uint32_t rkey)
{
	uint8_t want[INV_LEN];
	struct ibv_wc wc;

	if (poll_n(o->l.cq, &wc, 1, "SEND_WITH_INV's receive") ||
	    check_wc(&wc, "SEND_WITH_INV's receive", o->l.qp, 7, IBV_WC_SUCCESS, IBV_WC_RECV,
		     INV_LEN, NULL))
		return -1;
	vlog("receive: wc_flags 0x%x, invalidated_rkey 0x%x", wc.wc_flags, wc.invalidated_rkey);
	CHECK(wc.wc_flags & (IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK),
	      "SEND_WITH_INV's receive: no invalidate flag (wc_flags 0x%x)", wc.wc_flags);
	CHECK(wc.invalidated_rkey == rkey, "SEND_WITH_INV's receive: invalidated key 0x%x, "
	      "expected the type 2 window's 0x%x", wc.invalidated_rkey, rkey);
	fill(want, INV_LEN, SEED_INV);
	return same(rbuf, want, INV_LEN, "SEND_WITH_INV's data");
}

int own_windows(struct env *e, int fd)
{
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_mw *mw1, *mw2;
	struct ibv_mr *rmr;
	struct ibv_sge rs;
	struct owned o;
	struct msg m;
	uint8_t *rbuf;
	uint32_t rkey2;

	if (own_setup(e, fd, &o))
		return -1;
	rbuf = page_buf(PG);
	CHECK(rbuf, "mmap of a page failed");
	NEW(rmr, ibv_reg_mr(o.l.pd, rbuf, PG, IBV_ACCESS_LOCAL_WRITE));
	NEW(mw1, ibv_alloc_mw(o.l.pd, IBV_MW_TYPE_1));
	NEW(mw2, ibv_alloc_mw(o.l.pd, IBV_MW_TYPE_2));
	/* The second half of each window holds what the accessor must read. */
	fill(o.buf + W1_OFF + HALF, HALF, SEED_READ(0));
	fill(o.buf + W2_OFF + HALF, HALF, SEED_READ(1));
	rkey2 = ibv_inc_rkey(mw2->rkey);
	if (bind1(&o, mw1, W1_OFF, "bind type 1") ||
	    bind2(&o, mw2, rkey2, W2_OFF, "bind type 2"))
		return -1;
	recv_wr(&rwr, &rs, 7, rbuf, PG, rmr->lkey);
	OK(ibv_post_recv(o.l.qp, &rwr, &rbad));
	if (announce(fd, &o, mw1->rkey, rkey2) ||
	    await_report(e, fd, &o, "WRITEs through both windows"))
		return -1;
	if (ctrl_recv(fd, &m, MSG_INV_SENT) ||
	    ctrl_verdict(fd, check_inv_recv(&o, rbuf, rkey2)))
		return -1;
	return await_report(e, fd, &o, "WRITE with the invalidated key");
}

int own_past_region(struct env *e, int fd)
{
	struct ibv_mw *mw;
	struct owned o;

	if (own_setup(e, fd, &o))
		return -1;
	NEW(mw, ibv_alloc_mw(o.l.pd, IBV_MW_TYPE_1));
	if (bind1(&o, mw, WE_OFF, "bind type 1 at the region's end") ||
	    announce(fd, &o, mw->rkey, 0))
		return -1;
	return await_report(e, fd, &o, "WRITE past the window's (and region's) end");
}

int own_past_window(struct env *e, int fd)
{
	struct ibv_mw *mw;
	struct owned o;
	uint32_t rkey;

	if (own_setup(e, fd, &o))
		return -1;
	NEW(mw, ibv_alloc_mw(o.l.pd, IBV_MW_TYPE_2));
	rkey = ibv_inc_rkey(mw->rkey);
	if (bind2(&o, mw, rkey, W2_OFF, "bind type 2 inside the region") ||
	    announce(fd, &o, rkey, 0))
		return -1;
	return await_report(e, fd, &o, "WRITE past the window's end, inside the region");
}
