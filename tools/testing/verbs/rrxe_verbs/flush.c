// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_verbs group "rdma_flush": RDMA FLUSH (IBV_WR_FLUSH) between two RC QPs of
 * the device, and the device capabilities that announce it.
 *
 * ibv_wr_flush came with rdma-core 45; Debian bookworm (the guest's user space)
 * has 44, whose librxe knows the FLUSH WQE's kernel ABI only through its headers
 * (rdma_user_rxe.h's `flush` member came with 45 too). With rdma-core >= 45 the
 * cases use ibv_wr_flush. With 44 they post an RDMA READ through ibv_qp_ex and turn
 * the WQE librxe has just written into the ring into the FLUSH WQE librxe 45 would
 * write (opcode, rkey, placement type, selectivity level, length), before
 * ibv_wr_complete hands it to the kernel: that needs librxe 44's private QP
 * layout, mirrored below and checked against the WQE before it is changed.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <rdma/rdma_user_rxe.h>

#include "cases.h"

/* The uverbs values (include/uapi/rdma/ib_user_verbs.h); rdma-core 44 lacks most. */
#define U_WR_FLUSH		14
#define U_WC_FLUSH		8
#define U_FLUSH_GLOBAL		1	/* placement type */
#define U_FLUSH_PERSISTENT	2
#define U_FLUSH_RANGE		0	/* selectivity level */
#define U_FLUSH_MR		1
#define U_ACCESS_FLUSH_GLOBAL		(1 << 8)
#define U_ACCESS_FLUSH_PERSISTENT	(1 << 9)
#define U_DEVICE_FLUSH_GLOBAL		(1ULL << 38)
#define U_DEVICE_FLUSH_PERSISTENT	(1ULL << 39)
#define U_DEVICE_ATOMIC_WRITE		(1ULL << 40)

#define FLUSH_LEN	4096

#ifndef IBV_QP_EX_WITH_FLUSH
/* librxe 44's QP (providers/rxe/rxe.h, libibverbs/driver.h at v44.0). */
struct v44_verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	void *xrcd;
};

struct v44_wq {
	struct rxe_queue_buf *queue;
	pthread_spinlock_t lock;
	unsigned int max_sge;
	unsigned int max_inline;
};

struct v44_qp {
	struct v44_verbs_qp vqp;
	struct mminfo rq_mmap_info;
	struct v44_wq rq;
	struct mminfo sq_mmap_info;
	struct v44_wq sq;
	unsigned int ssn;
	uint32_t cur_index;
	int err;
};

/* The `flush` member of rxe_send_wr's union (kernel >= 6.2). */
struct flush_wr {
	uint64_t remote_addr;
	uint32_t length;
	uint32_t rkey;
	uint8_t type;
	uint8_t level;
};
#endif

/* Post one signaled FLUSH on A's ibv_qp_ex. */
static int post_flush(struct ibv_qp_ex *qx, uint64_t wr_id, uint32_t rkey, uint64_t addr,
		      uint32_t len, uint8_t type, uint8_t level)
{
	ibv_wr_start(qx);
	qx->wr_id = wr_id;
	qx->wr_flags = IBV_SEND_SIGNALED;
#ifdef IBV_QP_EX_WITH_FLUSH
	ibv_wr_flush(qx, rkey, addr, len, type, level);
#else
	{
		struct v44_qp *q = (struct v44_qp *)((char *)qx - offsetof(struct v44_qp, vqp.qp_ex));
		struct rxe_queue_buf *ring = q->sq.queue;
		struct rxe_send_wqe *w;
		struct flush_wr *f;

		ibv_wr_rdma_read(qx, rkey, addr);
		w = (struct rxe_send_wqe *)(ring->data + (((q->cur_index - 1) & ring->index_mask)
							  << ring->log2_elem_size));
		if (q->err || w->wr.wr_id != wr_id || w->wr.opcode != IBV_WR_RDMA_READ ||
		    w->iova != addr) {
			ibv_wr_abort(qx);
			FAIL("librxe's QP layout is not rdma-core 44's: cannot write a FLUSH WQE");
		}
		f = (struct flush_wr *)&w->wr.wr;
		w->wr.opcode = U_WR_FLUSH;
		f->remote_addr = addr;
		f->rkey = rkey;
		f->type = type;
		f->level = level;
		w->dma.length = len;
		w->dma.resid = len;
		w->dma.num_sge = 0;
	}
#endif
	OK(ibv_wr_complete(qx));
	return 0;
}

/*
 * A's QP is an ibv_qp_ex that can post FLUSH; B allows `access_b`. B's buffer
 * gets a second MR with `mr_access` (*mr), over the whole buffer.
 */
static int flush_pair(struct env *e, int access_b, int mr_access, struct rc_pair *p,
		      struct ibv_mr **mr, struct ibv_qp_ex **qx)
{
	const struct rc_opts o = {
		.rnr_retry = 7, .retry_cnt = 7, .cqe_b = 4 * DP_BURST, .access_b = access_b,
#ifdef IBV_QP_EX_WITH_FLUSH
		.send_ops_a = IBV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_RDMA_WRITE,
#else
		.send_ops_a = IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_RDMA_WRITE,
#endif
	};
	struct ibv_pd *pd;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (rc_pair_opts(e, pd, &o, p))
		return -1;
	NEW(*mr, ibv_reg_mr(pd, p->buf_b, DP_BUF, mr_access));
	*qx = ibv_qp_to_qp_ex(p->a);
	CHECK(*qx, "ibv_qp_to_qp_ex: %s", errname(errno));
	return 0;
}

/*
 * The device announces FLUSH (global and persistent) and ATOMIC WRITE in
 * ibv_query_device_ex; an RDMA WRITE then FLUSHes of its range and of the whole
 * region complete with IBV_WC_FLUSH (byte_len: the length posted), change no
 * memory, and put nothing in B's CQ.
 */
int t_flush_global(struct env *e)
{
	const int acc = DP_ACCESS | U_ACCESS_FLUSH_GLOBAL;
	struct ibv_device_attr_ex dx;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_qp_ex *qx;
	struct rc_pair p;
	struct ibv_mr *mr;
	uint64_t caps;

	memset(&dx, 0, sizeof(dx));
	OK(ibv_query_device_ex(e->ctx, NULL, &dx));
	caps = dx.device_cap_flags_ex;
	vlog("device_cap_flags_ex 0x%llx", (unsigned long long)caps);
	CHECK(caps & U_DEVICE_FLUSH_GLOBAL, "no IB_DEVICE_FLUSH_GLOBAL in device_cap_flags_ex");
	CHECK(caps & U_DEVICE_FLUSH_PERSISTENT,
	      "no IB_DEVICE_FLUSH_PERSISTENT in device_cap_flags_ex");
	CHECK(caps & U_DEVICE_ATOMIC_WRITE, "no IB_DEVICE_ATOMIC_WRITE in device_cap_flags_ex");

	if (flush_pair(e, acc, acc, &p, &mr, &qx))
		return -1;
	memset(p.buf_a, 0x5a, FLUSH_LEN);
	memset(p.buf_b, 0xee, DP_BUF);
	send_wr(&wr, &sge, IBV_WR_RDMA_WRITE, 1, p.buf_a, FLUSH_LEN, p.mr_a->lkey);
	wr.wr.rdma.remote_addr = (uintptr_t)p.buf_b;
	wr.wr.rdma.rkey = mr->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "RDMA WRITE", p.a, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1, NULL))
		return -1;
	if (post_flush(qx, 2, mr->rkey, (uintptr_t)p.buf_b, FLUSH_LEN, U_FLUSH_GLOBAL,
		       U_FLUSH_RANGE) ||
	    expect_wc(p.cq_a, "FLUSH global, range", p.a, 2, IBV_WC_SUCCESS, U_WC_FLUSH,
		      FLUSH_LEN, NULL))
		return -1;
	/* The whole region: address and length are not looked at. */
	if (post_flush(qx, 3, mr->rkey, 0, 0, U_FLUSH_GLOBAL, U_FLUSH_MR) ||
	    expect_wc(p.cq_a, "FLUSH global, whole MR", p.a, 3, IBV_WC_SUCCESS, U_WC_FLUSH, 0,
		      NULL))
		return -1;
	/* The last byte of the region, and 0 bytes at its end. */
	if (post_flush(qx, 4, mr->rkey, (uintptr_t)p.buf_b + DP_BUF - 1, 1, U_FLUSH_GLOBAL,
		       U_FLUSH_RANGE) ||
	    expect_wc(p.cq_a, "FLUSH of the last byte", p.a, 4, IBV_WC_SUCCESS, U_WC_FLUSH, 1,
		      NULL) ||
	    post_flush(qx, 5, mr->rkey, (uintptr_t)p.buf_b + DP_BUF, 0, U_FLUSH_GLOBAL,
		       U_FLUSH_RANGE) ||
	    expect_wc(p.cq_a, "FLUSH of 0 bytes at the end", p.a, 5, IBV_WC_SUCCESS, U_WC_FLUSH,
		      0, NULL))
		return -1;
	if (untouched(p.buf_b, FLUSH_LEN, 0x5a, "the written range after the FLUSHes") ||
	    untouched(p.buf_b + FLUSH_LEN, DP_BUF - FLUSH_LEN, 0xee, "the rest of B's buffer") ||
	    cq_empty(p.cq_b, "FLUSH, B's CQ"))
		return -1;
	vlog("WRITE, FLUSH of its range, of the whole MR, of the last byte, of 0 bytes: FLUSH");
	return 0;
}

/* One FLUSH that B must refuse with `status`, on a fresh pair. */
static int refused(struct env *e, const char *what, int access_b, int mr_access, uint64_t off,
		   uint32_t len, uint8_t type, uint8_t level, enum ibv_wc_status status)
{
	struct ibv_qp_ex *qx;
	struct rc_pair p;
	struct ibv_mr *mr;

	if (flush_pair(e, access_b, mr_access, &p, &mr, &qx))
		return -1;
	memset(p.buf_b, 0xee, DP_BUF);
	if (post_flush(qx, 9, mr->rkey, (uintptr_t)p.buf_b + off, len, type, level) ||
	    expect_wc(p.cq_a, what, p.a, 9, status, U_WC_FLUSH, -1, NULL) ||
	    untouched(p.buf_b, DP_BUF, 0xee, what))
		return -1;
	vlog("%s: %s", what, ibv_wc_status_str(status));
	return 0;
}

/*
 * What the responder refuses: a FLUSH to a region without
 * IBV_ACCESS_FLUSH_GLOBAL, or past its end (a range, not the whole MR), is a
 * remote access error; one to a QP whose qp_access_flags lack it an invalid
 * request. A region cannot be registered with IBV_ACCESS_FLUSH_PERSISTENT
 * (EINVAL: no persistent memory), so a persistent FLUSH finds no region.
 */
int t_flush_refused(struct env *e)
{
	const int acc = DP_ACCESS | U_ACCESS_FLUSH_GLOBAL;
	const int both = acc | U_ACCESS_FLUSH_PERSISTENT;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	void *buf;

	if (refused(e, "FLUSH to an MR without FLUSH_GLOBAL", acc, DP_ACCESS, 0, 64,
		    U_FLUSH_GLOBAL, U_FLUSH_RANGE, IBV_WC_REM_ACCESS_ERR) ||
	    refused(e, "FLUSH of the whole MR without FLUSH_GLOBAL", acc, DP_ACCESS, 0, 0,
		    U_FLUSH_GLOBAL, U_FLUSH_MR, IBV_WC_REM_ACCESS_ERR) ||
	    refused(e, "FLUSH one byte past the MR's end", acc, acc, DP_BUF - 64, 65,
		    U_FLUSH_GLOBAL, U_FLUSH_RANGE, IBV_WC_REM_ACCESS_ERR) ||
	    refused(e, "FLUSH before the MR's start", acc, acc, (uint64_t)-64, 64,
		    U_FLUSH_GLOBAL, U_FLUSH_RANGE, IBV_WC_REM_ACCESS_ERR) ||
	    refused(e, "FLUSH to a QP without FLUSH_GLOBAL", DP_ACCESS, acc, 0, 64,
		    U_FLUSH_GLOBAL, U_FLUSH_RANGE, IBV_WC_REM_INV_REQ_ERR) ||
	    refused(e, "persistent FLUSH to a QP without FLUSH_PERSISTENT", acc, acc, 0, 64,
		    U_FLUSH_PERSISTENT, U_FLUSH_RANGE, IBV_WC_REM_INV_REQ_ERR) ||
	    refused(e, "persistent FLUSH to an MR without FLUSH_PERSISTENT", both, acc, 0, 64,
		    U_FLUSH_PERSISTENT, U_FLUSH_RANGE, IBV_WC_REM_ACCESS_ERR))
		return -1;

	NEW(pd, ibv_alloc_pd(e->ctx));
	buf = page_buf(DP_BUF);
	CHECK(buf, "mmap failed");
	NEW_ERR(EINVAL, mr, ibv_reg_mr(pd, buf, DP_BUF, both),
		"ibv_reg_mr with IBV_ACCESS_FLUSH_PERSISTENT");
	return 0;
}
