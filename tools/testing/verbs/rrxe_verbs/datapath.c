// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_verbs: the "datapath" cases: RC traffic between two QPs of the device
 * (rc_loop, srq_limit, rnr, cq_overflow).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <unistd.h>

#include "cases.h"

/* The bytes of B's buffer that onto_source() copies onto themselves. */
#define ONTO_OFF 5000
#define ONTO_LEN 10000

/*
 * One RDMA READ or WRITE by A of ONTO_LEN bytes at ONTO_OFF of B's buffer onto
 * the same bytes, or onto those `shift` bytes further, with B's keys on both
 * sides (the QPs share the PD); waits for its successful completion.
 */
static int onto_source(struct rc_pair *p, enum ibv_wr_opcode op, uint64_t id, size_t shift,
		       const char *what)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	send_wr(&wr, &sge, op, id, p->buf_b + ONTO_OFF + shift, ONTO_LEN, p->mr_b->lkey);
	wr.wr.rdma.remote_addr = (uintptr_t)(p->buf_b + ONTO_OFF);
	wr.wr.rdma.rkey = p->mr_b->rkey;
	return post_a(p, &wr) ||
	       expect_wc(p->cq_a, what, p->a, id, IBV_WC_SUCCESS,
			 op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE,
			 op == IBV_WR_RDMA_READ ? ONTO_LEN : -1, NULL);
}

int t_rc_loop(struct env *e)
{
	static const uint32_t sizes[] = { 1, 4096, 10000 };
	const __be32 imm1 = htonl(0x12345678), imm2 = htonl(0xfeedf00d);
	struct ibv_send_wr wr, wrs[DP_BURST], *bad;
	struct ibv_recv_wr rwrs[DP_BURST], *rbad;
	struct ibv_sge sge, sges[DP_BURST], rsges[DP_BURST];
	struct ibv_wc wc[DP_BURST];
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_pd *pd;
	struct rc_pair p;
	uint64_t *rem, *res;
	uint32_t len, bad_rkey;
	char what[64];
	int i, n;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (rc_pair(e, pd, NULL, 7, &p))
		return -1;

	/* SEND/RECV: 1 byte, one full page (4 packets), 10000 bytes (10 packets). */
	for (i = 0; i < 3; i++) {
		len = sizes[i];
		snprintf(what, sizeof(what), "SEND %u bytes", len);
		fill(p.buf_a, len, i + 1);
		memset(p.buf_b, 0xee, DP_BUF);
		if (post_recv_b(&p, 100 + i, p.buf_b, 16384))
			return -1;
		send_wr(&wr, &sge, IBV_WR_SEND, 200 + i, p.buf_a, len, p.mr_a->lkey);
		if (post_a(&p, &wr) ||
		    expect_wc(p.cq_a, what, p.a, 200 + i, IBV_WC_SUCCESS, IBV_WC_SEND, -1, NULL) ||
		    expect_wc(p.cq_b, what, p.b, 100 + i, IBV_WC_SUCCESS, IBV_WC_RECV, len, NULL) ||
		    same(p.buf_b, p.buf_a, len, what) ||
		    untouched(p.buf_b + len, 16384 - len, 0xee, what))
			return -1;
		vlog("%s: send and receive completions, data checked", what);
	}

	/* SEND_WITH_IMM */
	fill(p.buf_a, 100, 4);
	memset(p.buf_b, 0xee, DP_BUF);
	if (post_recv_b(&p, 110, p.buf_b, 1024))
		return -1;
	send_wr(&wr, &sge, IBV_WR_SEND_WITH_IMM, 210, p.buf_a, 100, p.mr_a->lkey);
	wr.imm_data = imm1;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "SEND_WITH_IMM", p.a, 210, IBV_WC_SUCCESS, IBV_WC_SEND, -1, NULL) ||
	    expect_wc(p.cq_b, "SEND_WITH_IMM", p.b, 110, IBV_WC_SUCCESS, IBV_WC_RECV, 100, &imm1) ||
	    same(p.buf_b, p.buf_a, 100, "SEND_WITH_IMM"))
		return -1;
	vlog("SEND_WITH_IMM: imm_data 0x%08x received", ntohl(imm1));

	/* RDMA WRITE of 10000 bytes to an odd address: no receive, nothing on B's CQ. */
	fill(p.buf_a, 10000, 5);
	memset(p.buf_b, 0xee, DP_BUF);
	send_wr(&wr, &sge, IBV_WR_RDMA_WRITE, 220, p.buf_a, 10000, p.mr_a->lkey);
	wr.wr.rdma.remote_addr = (uintptr_t)(p.buf_b + 1001);
	wr.wr.rdma.rkey = p.mr_b->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "RDMA WRITE", p.a, 220, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1, NULL) ||
	    same(p.buf_b + 1001, p.buf_a, 10000, "RDMA WRITE") ||
	    untouched(p.buf_b, 1001, 0xee, "RDMA WRITE, before the target") ||
	    untouched(p.buf_b + 11001, DP_BUF - 11001, 0xee, "RDMA WRITE, after the target") ||
	    cq_empty(p.cq_b, "RDMA WRITE, B's CQ"))
		return -1;
	vlog("RDMA WRITE 10000 bytes: data checked, no completion at B");

	/* RDMA WRITE_WITH_IMM consumes a receive; its buffer stays untouched. */
	fill(p.buf_a, 3000, 6);
	memset(p.buf_b, 0xee, DP_BUF);
	if (post_recv_b(&p, 130, p.buf_b + 32768, 1024))
		return -1;
	send_wr(&wr, &sge, IBV_WR_RDMA_WRITE_WITH_IMM, 230, p.buf_a, 3000, p.mr_a->lkey);
	wr.wr.rdma.remote_addr = (uintptr_t)(p.buf_b + 20000);
	wr.wr.rdma.rkey = p.mr_b->rkey;
	wr.imm_data = imm2;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "RDMA WRITE_WITH_IMM", p.a, 230, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
		      -1, NULL) ||
	    expect_wc(p.cq_b, "RDMA WRITE_WITH_IMM", p.b, 130, IBV_WC_SUCCESS,
		      IBV_WC_RECV_RDMA_WITH_IMM, 3000, &imm2) ||
	    same(p.buf_b + 20000, p.buf_a, 3000, "RDMA WRITE_WITH_IMM") ||
	    untouched(p.buf_b + 32768, 1024, 0xee, "RDMA WRITE_WITH_IMM, the receive buffer"))
		return -1;
	vlog("RDMA WRITE_WITH_IMM: RECV_RDMA_WITH_IMM with imm_data 0x%08x", ntohl(imm2));

	/* RDMA READ of 10000 bytes into an odd address. */
	fill(p.buf_b + 5000, 10000, 7);
	memset(p.buf_a, 0xee, DP_BUF);
	send_wr(&wr, &sge, IBV_WR_RDMA_READ, 240, p.buf_a + 3, 10000, p.mr_a->lkey);
	wr.wr.rdma.remote_addr = (uintptr_t)(p.buf_b + 5000);
	wr.wr.rdma.rkey = p.mr_b->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "RDMA READ", p.a, 240, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 10000,
		      NULL) ||
	    same(p.buf_a + 3, p.buf_b + 5000, 10000, "RDMA READ") ||
	    untouched(p.buf_a, 3, 0xee, "RDMA READ, before the target") ||
	    untouched(p.buf_a + 10003, DP_BUF - 10003, 0xee, "RDMA READ, after the target") ||
	    cq_empty(p.cq_b, "RDMA READ, B's CQ"))
		return -1;
	vlog("RDMA READ 10000 bytes: data checked");

	/*
	 * READ and WRITE whose source and target are the same bytes of B's
	 * buffer (both QPs share the PD, so A may name B's MR locally). Packets
	 * of a QP of the same device carry the sender's pages by reference, so
	 * the receiver copies from a page into itself: the data must come out
	 * unchanged, and the kernel must not trip on the overlap. A target one
	 * byte past the source overlaps without being equal: the bytes are
	 * unspecified (a race the verbs allow), the completion is not.
	 */
	fill(p.buf_b + ONTO_OFF, ONTO_LEN, 8);
	memcpy(p.buf_a, p.buf_b + ONTO_OFF, ONTO_LEN);
	if (onto_source(&p, IBV_WR_RDMA_READ, 241, 0, "RDMA READ onto its source") ||
	    same(p.buf_b + ONTO_OFF, p.buf_a, ONTO_LEN, "RDMA READ onto its source") ||
	    onto_source(&p, IBV_WR_RDMA_WRITE, 242, 0, "RDMA WRITE onto its source") ||
	    same(p.buf_b + ONTO_OFF, p.buf_a, ONTO_LEN, "RDMA WRITE onto its source") ||
	    onto_source(&p, IBV_WR_RDMA_READ, 243, 1, "RDMA READ one byte past its source") ||
	    cq_empty(p.cq_b, "READ and WRITE onto their source, B's CQ"))
		return -1;
	vlog("RDMA READ and WRITE onto their own source bytes: data unchanged");

	/* Atomics on an 8-byte aligned word of B's buffer; the original lands in A's. */
	rem = (uint64_t *)(p.buf_b + 40960);
	res = (uint64_t *)(p.buf_a + 40960);
	*rem = 100;
	*res = 0xeeeeeeeeeeeeeeeeull;
	send_wr(&wr, &sge, IBV_WR_ATOMIC_FETCH_AND_ADD, 250, res, 8, p.mr_a->lkey);
	wr.wr.atomic.remote_addr = (uintptr_t)rem;
	wr.wr.atomic.rkey = p.mr_b->rkey;
	wr.wr.atomic.compare_add = 23;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "FETCH_AND_ADD", p.a, 250, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8, NULL))
		return -1;
	CHECK(*res == 100, "FETCH_AND_ADD returned %" PRIu64 ", expected 100", *res);
	CHECK(*rem == 123, "FETCH_AND_ADD: remote %" PRIu64 ", expected 123", *rem);

	send_wr(&wr, &sge, IBV_WR_ATOMIC_CMP_AND_SWP, 251, res, 8, p.mr_a->lkey);
	wr.wr.atomic.remote_addr = (uintptr_t)rem;
	wr.wr.atomic.rkey = p.mr_b->rkey;
	wr.wr.atomic.compare_add = 123;
	wr.wr.atomic.swap = 0x0123456789abcdefull;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "CMP_AND_SWP", p.a, 251, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8, NULL))
		return -1;
	CHECK(*res == 123, "CMP_AND_SWP returned %" PRIu64 ", expected 123", *res);
	CHECK(*rem == 0x0123456789abcdefull, "CMP_AND_SWP: remote 0x%" PRIx64
	      ", expected 0x0123456789abcdef", *rem);

	/* A compare that does not match leaves the word alone. */
	wr.wr_id = 252;
	wr.wr.atomic.compare_add = 5;
	wr.wr.atomic.swap = 7;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "CMP_AND_SWP (no match)", p.a, 252, IBV_WC_SUCCESS,
		      IBV_WC_COMP_SWAP, 8, NULL))
		return -1;
	CHECK(*res == 0x0123456789abcdefull, "CMP_AND_SWP (no match) returned 0x%" PRIx64, *res);
	CHECK(*rem == 0x0123456789abcdefull, "CMP_AND_SWP (no match): remote changed to 0x%" PRIx64,
	      *rem);
	if (cq_empty(p.cq_b, "atomics, B's CQ"))
		return -1;
	vlog("FETCH_AND_ADD, CMP_AND_SWP (match and no match): values checked");

	/* A burst: 64 receives, then 64 signaled SENDs in one chain. */
	memset(p.buf_b, 0xee, DP_BUF);
	for (i = 0; i < DP_BURST; i++) {
		fill(p.buf_a + i * 256, 256, 100 + i);
		recv_wr(&rwrs[i], &rsges[i], 1000 + i, p.buf_b + i * 256, 256, p.mr_b->lkey);
		rwrs[i].next = i + 1 < DP_BURST ? &rwrs[i + 1] : NULL;
		send_wr(&wrs[i], &sges[i], IBV_WR_SEND, 2000 + i, p.buf_a + i * 256, 256,
			p.mr_a->lkey);
		wrs[i].next = i + 1 < DP_BURST ? &wrs[i + 1] : NULL;
	}
	rbad = NULL;
	OK(ibv_post_recv(p.b, rwrs, &rbad));
	bad = NULL;
	OK(ibv_post_send(p.a, wrs, &bad));
	if (poll_n(p.cq_a, wc, DP_BURST, "burst of 64 SENDs"))
		return -1;
	for (i = 0; i < DP_BURST; i++) {
		snprintf(what, sizeof(what), "burst SEND %d", i);
		if (check_wc(&wc[i], what, p.a, 2000 + i, IBV_WC_SUCCESS, IBV_WC_SEND, -1, NULL))
			return -1;
	}
	if (poll_n(p.cq_b, wc, DP_BURST, "burst of 64 receives"))
		return -1;
	for (i = 0; i < DP_BURST; i++) {
		snprintf(what, sizeof(what), "burst receive %d", i);
		if (check_wc(&wc[i], what, p.b, 1000 + i, IBV_WC_SUCCESS, IBV_WC_RECV, 256, NULL) ||
		    same(p.buf_b + i * 256, p.buf_a + i * 256, 256, what))
			return -1;
	}
	if (cq_empty(p.cq_a, "after the burst, A's CQ") || cq_empty(p.cq_b, "after the burst, B's CQ"))
		return -1;
	vlog("burst: 64 send and 64 receive completions in order, data checked");

	/*
	 * RDMA WRITE with a key that is not B's: NAK (remote access error) to A,
	 * whose WR completes with IBV_WC_REM_ACCESS_ERR; both QPs go to ERR.
	 */
	bad_rkey = p.mr_b->rkey ^ 0xff;
	CHECK(bad_rkey != p.mr_a->rkey, "bad rkey 0x%x is A's", bad_rkey);
	send_wr(&wr, &sge, IBV_WR_RDMA_WRITE, 260, p.buf_a, 64, p.mr_a->lkey);
	wr.wr.rdma.remote_addr = (uintptr_t)p.buf_b;
	wr.wr.rdma.rkey = bad_rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "RDMA WRITE with a bad rkey", p.a, 260, IBV_WC_REM_ACCESS_ERR, 0, -1,
		      NULL))
		return -1;
	vlog("RDMA WRITE with rkey 0x%x (B's is 0x%x): IBV_WC_REM_ACCESS_ERR", bad_rkey,
	     p.mr_b->rkey);
	/*
	 * The responder has no completion to report a remote access violation
	 * with, so B gets IBV_EVENT_QP_ACCESS_ERR (C9-222.1); rxe raises it at once.
	 * It must be acknowledged before B is destroyed (ibv_destroy_qp waits for
	 * that), which wait_event does.
	 */
	n = wait_event(e, IBV_EVENT_QP_ACCESS_ERR, p.b, 2000);
	if (n < 0)
		return -1;
	CHECK(n, "no IBV_EVENT_QP_ACCESS_ERR on B within 2 s after a WRITE with a bad rkey");
	OK(ibv_query_qp(p.a, &qa, IBV_QP_STATE, &qi));
	vlog("afterwards: A in %s", qps(qa.qp_state));
	OK(ibv_query_qp(p.b, &qa, IBV_QP_STATE, &qi));
	vlog("afterwards: B in %s", qps(qa.qp_state));
	return 0;
}

int t_srq_limit(struct env *e)
{
	const int nrecv = 16, limit = 8, msg = 32;
	struct ibv_srq_init_attr si;
	struct ibv_srq_attr sa;
	struct ibv_qp_attr qa;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc[16];
	struct ibv_srq *srq;
	struct ibv_pd *pd;
	struct rc_pair p;
	char what[64];
	int i, n;

	NEW(pd, ibv_alloc_pd(e->ctx));
	memset(&si, 0, sizeof(si));
	si.attr.max_wr = nrecv;
	si.attr.max_sge = 1;
	NEW(srq, ibv_create_srq(pd, &si));
	if (rc_pair(e, pd, srq, 7, &p))
		return -1;
	memset(p.buf_b, 0xee, DP_BUF);
	for (i = 0; i < nrecv; i++) {
		recv_wr(&rwr, &sge, 500 + i, p.buf_b + i * 64, 64, p.mr_b->lkey);
		rbad = NULL;
		OK(ibv_post_srq_recv(srq, &rwr, &rbad));
	}
	memset(&sa, 0, sizeof(sa));
	sa.srq_limit = limit;
	OK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT));
	OK(ibv_query_srq(srq, &sa));
	CHECK(sa.srq_limit == (uint32_t)limit, "srq_limit %u after arming %d", sa.srq_limit, limit);

	/*
	 * The event comes when fewer than `limit` WQEs are left: after the 9th
	 * receive (7 left), not after the 8th (8 left). rxe raises it as the
	 * responder takes the WQE, before the ACK, so it is there by the time the
	 * SEND completes at A; 200 ms more for a driver that is slower about it.
	 */
	for (i = 0; i <= nrecv - limit; i++) {
		snprintf(what, sizeof(what), "SEND %d to the SRQ", i);
		fill(p.buf_a + i * 64, msg, 50 + i);
		send_wr(&wr, &sge, IBV_WR_SEND, 600 + i, p.buf_a + i * 64, msg, p.mr_a->lkey);
		if (post_a(&p, &wr) ||
		    expect_wc(p.cq_a, what, p.a, 600 + i, IBV_WC_SUCCESS, IBV_WC_SEND, -1, NULL))
			return -1;
		if (i == nrecv - limit - 1) {
			n = wait_event(e, IBV_EVENT_SRQ_LIMIT_REACHED, srq, 200);
			if (n < 0)
				return -1;
			CHECK(n == 0, "IBV_EVENT_SRQ_LIMIT_REACHED with %d receives left (limit %d)",
			      nrecv - i - 1, limit);
		}
	}
	n = wait_event(e, IBV_EVENT_SRQ_LIMIT_REACHED, srq, DP_WAIT_MS);
	if (n < 0)
		return -1;
	CHECK(n == 1, "no IBV_EVENT_SRQ_LIMIT_REACHED within %d ms with %d receives left (limit %d)",
	      DP_WAIT_MS, nrecv - i, limit);
	vlog("IBV_EVENT_SRQ_LIMIT_REACHED with %d of %d receives left (limit %d)", nrecv - i,
	     nrecv, limit);
	OK(ibv_query_srq(srq, &sa));
	CHECK(sa.srq_limit == 0, "srq_limit %u after the event, expected 0 (disarmed)",
	      sa.srq_limit);

	/* The consumed receives completed at B, in order, with the data. */
	n = i;
	if (poll_n(p.cq_b, wc, n, "receives from the SRQ"))
		return -1;
	for (i = 0; i < n; i++) {
		snprintf(what, sizeof(what), "SRQ receive %d", i);
		if (check_wc(&wc[i], what, p.b, 500 + i, IBV_WC_SUCCESS, IBV_WC_RECV, msg, NULL) ||
		    same(p.buf_b + i * 64, p.buf_a + i * 64, msg, what) ||
		    untouched(p.buf_b + i * 64 + msg, 64 - msg, 0xee, what))
			return -1;
	}
	if (cq_empty(p.cq_b, "B's CQ after the SRQ receives"))
		return -1;

	/* Disarmed: one more receive taken raises no second event. */
	fill(p.buf_a + n * 64, msg, 50 + n);
	send_wr(&wr, &sge, IBV_WR_SEND, 600 + n, p.buf_a + n * 64, msg, p.mr_a->lkey);
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "SEND after the event", p.a, 600 + n, IBV_WC_SUCCESS, IBV_WC_SEND,
		      -1, NULL) ||
	    expect_wc(p.cq_b, "SRQ receive after the event", p.b, 500 + n, IBV_WC_SUCCESS,
		      IBV_WC_RECV, msg, NULL))
		return -1;
	n = wait_event(e, IBV_EVENT_SRQ_LIMIT_REACHED, srq, 200);
	if (n < 0)
		return -1;
	CHECK(n == 0, "a second IBV_EVENT_SRQ_LIMIT_REACHED after the limit was disarmed");

	/*
	 * B to ERR: it takes no more receives from the SRQ, which the consumer
	 * learns from IBV_EVENT_QP_LAST_WQE_REACHED on B (IB spec C10-96; rxe
	 * raises it as it flushes the QP). A, on no SRQ, gets none.
	 */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_ERR;
	OK(ibv_modify_qp(p.b, &qa, IBV_QP_STATE));
	n = wait_event(e, IBV_EVENT_QP_LAST_WQE_REACHED, p.b, DP_WAIT_MS);
	if (n < 0)
		return -1;
	CHECK(n == 1, "no IBV_EVENT_QP_LAST_WQE_REACHED within %d ms of moving B to ERR",
	      DP_WAIT_MS);
	OK(ibv_modify_qp(p.a, &qa, IBV_QP_STATE));
	n = wait_event(e, IBV_EVENT_QP_LAST_WQE_REACHED, p.a, 200);
	if (n < 0)
		return -1;
	CHECK(n == 0, "IBV_EVENT_QP_LAST_WQE_REACHED on A, which has no SRQ");
	return 0;
}

/*
 * RDMA ATOMIC WRITE through the extended QP API (librxe's ibv_wr_atomic_write):
 * the 8 bytes land in B's word and nowhere else, a FETCH_AND_ADD after it
 * returns them, and one to an address that is not 8-byte aligned completes
 * with IBV_WC_REM_INV_REQ_ERR (rxe: a misaligned atomic) and stores nothing.
 */
int t_atomic_write(struct env *e)
{
	const struct rc_opts o = {
		.rnr_retry = 7, .retry_cnt = 7, .cqe_b = 4 * DP_BURST, .access_b = DP_ACCESS,
		.send_ops_a = IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
	};
	const uint64_t v = 0x1122334455667788ull;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_qp_ex *qx;
	struct ibv_pd *pd;
	struct rc_pair p;
	uint64_t *rem, *res;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (rc_pair_opts(e, pd, &o, &p))
		return -1;
	qx = ibv_qp_to_qp_ex(p.a);
	CHECK(qx, "ibv_qp_to_qp_ex: %s", errname(errno));
	memset(p.buf_b, 0xee, DP_BUF);
	rem = (uint64_t *)(p.buf_b + 4096);

	ibv_wr_start(qx);
	qx->wr_id = 300;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qx, p.mr_b->rkey, (uintptr_t)rem, &v);
	OK(ibv_wr_complete(qx));
	if (expect_wc(p.cq_a, "ATOMIC_WRITE", p.a, 300, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE, -1,
		      NULL))
		return -1;
	CHECK(*rem == v, "ATOMIC_WRITE stored %#" PRIx64 ", expected %#" PRIx64, *rem, v);
	if (untouched(p.buf_b, 4096, 0xee, "B's buffer before the word") ||
	    untouched(p.buf_b + 4104, DP_BUF - 4104, 0xee, "B's buffer after the word"))
		return -1;

	res = (uint64_t *)p.buf_a;
	*res = 0;
	send_wr(&wr, &sge, IBV_WR_ATOMIC_FETCH_AND_ADD, 301, res, 8, p.mr_a->lkey);
	wr.wr.atomic.remote_addr = (uintptr_t)rem;
	wr.wr.atomic.rkey = p.mr_b->rkey;
	wr.wr.atomic.compare_add = 1;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "FETCH_AND_ADD after ATOMIC_WRITE", p.a, 301, IBV_WC_SUCCESS,
		      IBV_WC_FETCH_ADD, 8, NULL))
		return -1;
	CHECK(*res == v, "FETCH_AND_ADD returned %#" PRIx64 ", expected %#" PRIx64, *res, v);
	CHECK(*rem == v + 1, "word %#" PRIx64 " after the add, expected %#" PRIx64, *rem, v + 1);
	if (cq_empty(p.cq_b, "ATOMIC_WRITE, B's CQ"))
		return -1;

	ibv_wr_start(qx);
	qx->wr_id = 302;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qx, p.mr_b->rkey, (uintptr_t)(p.buf_b + 8196), &v);
	OK(ibv_wr_complete(qx));
	if (expect_wc(p.cq_a, "misaligned ATOMIC_WRITE", p.a, 302, IBV_WC_REM_INV_REQ_ERR,
		      IBV_WC_ATOMIC_WRITE, -1, NULL) ||
	    untouched(p.buf_b + 8192, 16, 0xee, "B's buffer at the misaligned word"))
		return -1;
	vlog("ATOMIC_WRITE stored, FETCH_AND_ADD read it back, misaligned: REM_INV_REQ_ERR");
	return 0;
}

int t_rnr(struct env *e)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct ibv_pd *pd;
	struct rc_pair p, q;
	struct timespec t0;
	int n;

	NEW(pd, ibv_alloc_pd(e->ctx));

	/* rnr_retry 7 (infinite): the SEND waits for the receive posted 200 ms later. */
	if (rc_pair(e, pd, NULL, 7, &p))
		return -1;
	fill(p.buf_a, 2000, 8);
	memset(p.buf_b, 0xee, DP_BUF);
	send_wr(&wr, &sge, IBV_WR_SEND, 300, p.buf_a, 2000, p.mr_a->lkey);
	if (post_a(&p, &wr))
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	usleep(200 * 1000);
	n = ibv_poll_cq(p.cq_a, 1, &wc);
	CHECK(n == 0, "SEND without a receive completed (poll %d, status %s)", n,
	      n > 0 ? ibv_wc_status_str(wc.status) : "-");
	if (cq_empty(p.cq_b, "B's CQ with no receive posted") ||
	    post_recv_b(&p, 301, p.buf_b, 4096) ||
	    expect_wc(p.cq_a, "SEND after RNR", p.a, 300, IBV_WC_SUCCESS, IBV_WC_SEND, -1, NULL) ||
	    expect_wc(p.cq_b, "receive after RNR", p.b, 301, IBV_WC_SUCCESS, IBV_WC_RECV, 2000,
		      NULL) ||
	    same(p.buf_b, p.buf_a, 2000, "SEND after RNR"))
		return -1;
	vlog("rnr_retry 7: SEND completed %ld ms after posting, receive posted at 200 ms",
	     ms_since(&t0));

	/* rnr_retry 0 on a fresh pair: the first RNR NAK fails the SEND. */
	if (rc_pair(e, pd, NULL, 0, &q))
		return -1;
	send_wr(&wr, &sge, IBV_WR_SEND, 310, q.buf_a, 100, q.mr_a->lkey);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (post_a(&q, &wr) ||
	    expect_wc(q.cq_a, "SEND with rnr_retry 0", q.a, 310, IBV_WC_RNR_RETRY_EXC_ERR, 0, -1,
		      NULL) ||
	    cq_empty(q.cq_b, "B's CQ after RNR_RETRY_EXC_ERR"))
		return -1;
	vlog("rnr_retry 0: IBV_WC_RNR_RETRY_EXC_ERR after %ld ms", ms_since(&t0));
	return 0;
}

/* A's retry_cnt in cq_overflow: the SEND B never acknowledges fails after 3 timeouts. */
#define OVF_RETRY_CNT	2
#define OVF_MSG		256

/*
 * CQ overflow at the responder. B's CQ is created with 4 entries (the device
 * may give more: cq->cqe is what it holds), B posts cqe + 3 receives, and A
 * sends cqe + 3 SENDs in one chain while nobody polls B's CQ.
 *
 * The IB spec: a completion that does not fit is a CQ error, an affiliated
 * asynchronous error (IBV_EVENT_CQ_ERR) on the CQ, and the QP that tried to
 * post it goes to ERR; completions already in the CQ are not guaranteed. Every
 * WR A posted still completes: A's QP goes to ERR once a SEND fails, and the
 * SENDs behind it are flushed.
 *
 * Upstream rxe (rxe_cq_post, rxe_resp.c do_complete, rxe_comp.c; observed
 * with cqe 4, which rxe rounds up to 7): the (cqe+1)-th receive is executed
 * (its data lands in B's buffer) and its WQE consumed, but its completion is
 * dropped ("queue full" in dmesg), IB_EVENT_CQ_ERR is raised on B's CQ and B
 * moves to ERR (responder class G) without acknowledging that SEND. Moving
 * to ERR flushes B's RQ: the first flush completion does not fit either and
 * raises a second IB_EVENT_CQ_ERR, the other receives go without completions
 * and their buffers stay untouched. No IBV_EVENT_QP_FATAL is raised. The cqe
 * completions already in the CQ stay intact and in order. B, in ERR, silently
 * drops A's later SENDs and retransmissions, so A sees its first cqe SENDs
 * succeed (rxe acknowledges each after writing its receive completion), the
 * (cqe+1)-th fail with IBV_WC_RETRY_EXC_ERR after retry_cnt + 1 ACK timeouts
 * (about 200 ms; rxe treats retry_cnt 7 as "retry forever", hence
 * OVF_RETRY_CNT) and the rest flushed with IBV_WC_WR_FLUSH_ERR; A ends in
 * ERR without an async event.
 *
 * Checked: the spec's part (CQ_ERR on B's CQ, B and A in ERR, every SEND
 * completes, successes first and flushes last) and, of rxe's behaviour, that
 * exactly the cqe SENDs whose receive completions fit succeed (none whose
 * completion was lost reports success to the sender), that the first failure
 * is an error other than a flush, and that B's CQ still returns its cqe
 * receive completions with the data, followed by nothing successful.
 */
int t_cq_overflow(struct env *e)
{
	struct ibv_send_wr wrs[DP_BURST], *bad;
	struct ibv_recv_wr rwrs[DP_BURST], *rbad;
	struct ibv_sge sges[DP_BURST], rsges[DP_BURST];
	struct ibv_wc wc[DP_BURST];
	struct ibv_pd *pd;
	struct rc_pair p;
	struct timespec t0;
	char what[64];
	int cqe, n, i, k, r, more;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (rc_pair_ex(e, pd, NULL, 7, OVF_RETRY_CNT, 4, NULL, &p))
		return -1;
	cqe = p.cq_b->cqe;
	CHECK(cqe >= 4, "B's CQ: cqe %d for 4 requested", cqe);
	CHECK(cqe + 3 <= DP_BURST, "B's CQ holds %d completions for 4 requested (this case needs "
	      "at most %d)", cqe, DP_BURST - 3);
	n = cqe + 3;
	vlog("B's CQ holds %d completions (4 requested): %d receives, %d SENDs of %d bytes",
	     cqe, n, n, OVF_MSG);

	memset(p.buf_b, 0xee, DP_BUF);
	for (i = 0; i < n; i++) {
		fill(p.buf_a + i * OVF_MSG, OVF_MSG, 300 + i);
		recv_wr(&rwrs[i], &rsges[i], 3000 + i, p.buf_b + i * OVF_MSG, OVF_MSG,
			p.mr_b->lkey);
		rwrs[i].next = i + 1 < n ? &rwrs[i + 1] : NULL;
		send_wr(&wrs[i], &sges[i], IBV_WR_SEND, 4000 + i, p.buf_a + i * OVF_MSG, OVF_MSG,
			p.mr_a->lkey);
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
	}
	rbad = NULL;
	OK(ibv_post_recv(p.b, rwrs, &rbad));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	bad = NULL;
	OK(ibv_post_send(p.a, wrs, &bad));

	r = wait_event(e, IBV_EVENT_CQ_ERR, p.cq_b, DP_WAIT_MS);
	if (r < 0)
		return -1;
	CHECK(r == 1, "no IBV_EVENT_CQ_ERR on B's CQ within %d ms (%d SENDs, CQ of %d)",
	      DP_WAIT_MS, n, cqe);
	vlog("IBV_EVENT_CQ_ERR on B's CQ %ld ms after posting", ms_since(&t0));

	/* Every SEND completes at A: successes, one error, flushes. */
	if (poll_n(p.cq_a, wc, n, "A's SENDs"))
		return -1;
	vlog("all %d SEND completions at A %ld ms after posting", n, ms_since(&t0));
	for (k = 0; k < n && wc[k].status == IBV_WC_SUCCESS; k++) {
		snprintf(what, sizeof(what), "SEND %d", k);
		if (check_wc(&wc[k], what, p.a, 4000 + k, IBV_WC_SUCCESS, IBV_WC_SEND, -1, NULL))
			return -1;
	}
	CHECK(k == cqe, "%d SENDs completed successfully, expected %d (those whose receive "
	      "completions fit in B's CQ)%s", k, cqe,
	      k > cqe ? ": a SEND whose receive completion was lost reported success" : "");
	snprintf(what, sizeof(what), "SEND %d (its receive completion did not fit)", k);
	CHECK(wc[k].status != IBV_WC_WR_FLUSH_ERR, "%s: IBV_WC_WR_FLUSH_ERR, expected the error "
	      "that moved A to ERR", what);
	if (check_wc(&wc[k], what, p.a, 4000 + k, wc[k].status, 0, -1, NULL))
		return -1;
	vlog("SENDs 0..%d succeeded, SEND %d: %s (vendor_err 0x%x)", k - 1, k,
	     ibv_wc_status_str(wc[k].status), wc[k].vendor_err);
	for (i = k + 1; i < n; i++) {
		snprintf(what, sizeof(what), "SEND %d behind the failed one", i);
		if (check_wc(&wc[i], what, p.a, 4000 + i, IBV_WC_WR_FLUSH_ERR, 0, -1, NULL))
			return -1;
	}
	if (cq_empty(p.cq_a, "A's CQ after its SENDs"))
		return -1;
	vlog("SENDs %d..%d: IBV_WC_WR_FLUSH_ERR", k + 1, n - 1);

	/* Further events (rxe: a second CQ_ERR from flushing B's RQ): acknowledged, logged. */
	more = count_events(e, IBV_EVENT_CQ_ERR, p.cq_b, 300);
	if (more < 0)
		return -1;
	vlog("%d more IBV_EVENT_CQ_ERR on B's CQ", more);

	QSTATE(p.b, IBV_QPS_ERR);
	QSTATE(p.a, IBV_QPS_ERR);
	vlog("B and A in ERR");

	/* B's CQ: the cqe receive completions that fit, in order, with the data. */
	if (poll_n(p.cq_b, wc, cqe, "B's receive completions that fit"))
		return -1;
	for (i = 0; i < cqe; i++) {
		snprintf(what, sizeof(what), "receive %d", i);
		if (check_wc(&wc[i], what, p.b, 3000 + i, IBV_WC_SUCCESS, IBV_WC_RECV, OVF_MSG,
			     NULL) ||
		    same(p.buf_b + i * OVF_MSG, p.buf_a + i * OVF_MSG, OVF_MSG, what))
			return -1;
	}
	/* Anything after them (rxe: nothing) must not be a successful receive. */
	usleep(100 * 1000);
	r = ibv_poll_cq(p.cq_b, DP_BURST, wc);
	CHECK(r >= 0, "B's CQ: ibv_poll_cq returned %d", r);
	for (i = 0; i < r; i++) {
		CHECK(wc[i].status != IBV_WC_SUCCESS, "B's CQ: a successful completion (wr_id %"
		      PRIu64 ") after the %d that fit", wc[i].wr_id, cqe);
		vlog("B's CQ, entry %d: wr_id %" PRIu64 " %s", cqe + i, wc[i].wr_id,
		     ibv_wc_status_str(wc[i].status));
	}
	vlog("B's CQ: %d receive completions with the data, then %d more", cqe, r);
	return 0;
}
