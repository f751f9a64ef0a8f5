// SPDX-License-Identifier: GPL-2.0
/*
 * Bounded completion polling and checking.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <unistd.h>

#include "vt.h"

long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

const char *wc_opname(enum ibv_wc_opcode op)
{
	static char buf[16];

	/* IBV_WC_FLUSH (8): not in rdma-core 44's enum. */
	if ((int)op == 8)
		return "FLUSH";
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_ATOMIC_WRITE: return "ATOMIC_WRITE";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default:
		snprintf(buf, sizeof(buf), "opcode %d", op);
		return buf;
	}
}

/* Collect exactly n completions from cq, waiting at most DP_WAIT_MS (never blocks). */
int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, const char *what)
{
	struct timespec t0;
	int got = 0, r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < n) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		CHECK(r >= 0, "%s: ibv_poll_cq returned %d", what, r);
		got += r;
		if (got < n) {
			CHECK(ms_since(&t0) < DP_WAIT_MS, "%s: %d of %d completions after %d ms",
			      what, got, n, DP_WAIT_MS);
			usleep(200);
		}
	}
	return 0;
}

/* Nothing (more) on cq. */
int cq_empty(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;
	int r = ibv_poll_cq(cq, 1, &wc);

	CHECK(r == 0, "%s: unexpected completion (poll %d): wr_id %" PRIu64 " status %s", what, r,
	      wc.wr_id, ibv_wc_status_str(wc.status));
	return 0;
}

/*
 * A completion of qp's WR wr_id with `status`. On success also `op`, byte_len
 * `len` unless len < 0 (checked for receives, RDMA READ and atomics: rxe sets
 * byte_len of every successful send-queue WR to its length, but the spec leaves
 * it undefined for SEND/WRITE), and for receives IBV_WC_GRH and the immediate:
 * `imm` (network order) or, if NULL, none.
 */
int check_wc(const struct ibv_wc *wc, const char *what, struct ibv_qp *qp,
	     uint64_t wr_id, enum ibv_wc_status status, enum ibv_wc_opcode op, long len,
	     const __be32 *imm)
{
	CHECK(wc->status == status, "%s: status %s (vendor_err 0x%x), expected %s", what,
	      ibv_wc_status_str(wc->status), wc->vendor_err, ibv_wc_status_str(status));
	CHECK(wc->wr_id == wr_id, "%s: wr_id %" PRIu64 ", expected %" PRIu64, what, wc->wr_id,
	      wr_id);
	CHECK(wc->qp_num == qp->qp_num, "%s: qp_num 0x%x, expected 0x%x", what, wc->qp_num,
	      qp->qp_num);
	if (status != IBV_WC_SUCCESS)
		return 0;
	CHECK(wc->opcode == op, "%s: opcode %s, expected %s", what, wc_opname(wc->opcode),
	      wc_opname(op));
	if (len >= 0)
		CHECK(wc->byte_len == (uint32_t)len, "%s: byte_len %u, expected %ld", what,
		      wc->byte_len, len);
	if (!(op & IBV_WC_RECV))
		return 0;
	/* Every RoCE v2 packet has a GRH (its IP header): rxe reports it on every
	 * successful receive, RC and UC included, as RoCE NICs do. */
	CHECK(wc->wc_flags & IBV_WC_GRH, "%s: no IBV_WC_GRH (wc_flags 0x%x)", what,
	      wc->wc_flags);
	if (imm) {
		CHECK(wc->wc_flags & IBV_WC_WITH_IMM, "%s: no IBV_WC_WITH_IMM (wc_flags 0x%x)",
		      what, wc->wc_flags);
		CHECK(wc->imm_data == *imm, "%s: imm_data 0x%08x, expected 0x%08x", what,
		      ntohl(wc->imm_data), ntohl(*imm));
	} else {
		CHECK(!(wc->wc_flags & IBV_WC_WITH_IMM), "%s: IBV_WC_WITH_IMM set (imm 0x%08x)",
		      what, ntohl(wc->imm_data));
	}
	return 0;
}

/* Wait for one completion on cq and check it (see check_wc). */
int expect_wc(struct ibv_cq *cq, const char *what, struct ibv_qp *qp, uint64_t wr_id,
	      enum ibv_wc_status status, enum ibv_wc_opcode op, long len,
	      const __be32 *imm)
{
	struct ibv_wc wc;

	if (poll_n(cq, &wc, 1, what))
		return -1;
	return check_wc(&wc, what, qp, wr_id, status, op, len, imm);
}

/*
 * A completion of qp's WR wr_id with the status the IB spec names (`spec`),
 * or, on rxe, with rxe1 or rxe2: where rxe differs from the spec, rxe's
 * status is accepted on rxe only (the caller documents why).
 */
int check_wc_drv(const struct ibv_wc *wc, const char *what, struct ibv_qp *qp, uint64_t wr_id,
		 enum ibv_wc_status spec, enum ibv_wc_status rxe1, enum ibv_wc_status rxe2)
{
	if (vt_driver() != DRV_RXE || wc->status == spec)
		return check_wc(wc, what, qp, wr_id, spec, 0, -1, NULL);
	CHECK(wc->status == rxe1 || wc->status == rxe2,
	      "%s: status %s (vendor_err 0x%x), expected %s (the spec's) or %s%s%s (rxe's)", what,
	      ibv_wc_status_str(wc->status), wc->vendor_err, ibv_wc_status_str(spec),
	      ibv_wc_status_str(rxe1), rxe2 != rxe1 ? " or " : "",
	      rxe2 != rxe1 ? ibv_wc_status_str(rxe2) : "");
	vlog("%s: %s, rxe's status (the spec's is %s)", what, ibv_wc_status_str(wc->status),
	     ibv_wc_status_str(spec));
	return check_wc(wc, what, qp, wr_id, wc->status, 0, -1, NULL);
}

/* Wait for one completion on cq and check it (see check_wc_drv). */
int expect_wc_drv(struct ibv_cq *cq, const char *what, struct ibv_qp *qp, uint64_t wr_id,
		  enum ibv_wc_status spec, enum ibv_wc_status rxe1, enum ibv_wc_status rxe2)
{
	struct ibv_wc wc;

	if (poll_n(cq, &wc, 1, what))
		return -1;
	return check_wc_drv(&wc, what, qp, wr_id, spec, rxe1, rxe2);
}

/* Nothing arrives on cq for ms milliseconds. */
int cq_quiet(struct ibv_cq *cq, int ms, const char *what)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (ms_since(&t0) < ms) {
		if (cq_empty(cq, what))
			return -1;
		usleep(1000);
	}
	return cq_empty(cq, what);
}
