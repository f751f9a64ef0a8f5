// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_floor: what a verbs iteration costs before a driver does any work, for
 * the benchmark's bounds (Documentation/benchmarks.rst, "Floors").
 *
 * The stock provider (librxe) rings a QP's send doorbell with one write(2) of
 * the POST_SEND command on the uverbs file for every ibv_post_send, whatever
 * the driver does with it. Each iteration below is timed as perftest times a
 * latency iteration (from one start to the next; t_typical is the median):
 *
 *   uverbs    that command with a QP handle that names no QP, and one
 *             ibv_poll_cq of an empty CQ. ib_core refuses the handle
 *             (ENOENT) before it calls the driver, so this is a part of
 *             every doorbell that no driver can take away: the system call,
 *             the uverbs dispatch and its allocations. No perftest iteration
 *             on any driver behind librxe can be faster.
 *   doorbell  the same command for a connected RC QP whose send queue is
 *             empty, and one ibv_poll_cq: a doorbell with the driver's own
 *             cost of finding nothing to do.
 *   read      a signaled 2-byte RDMA READ to a QP of the same device, polled
 *             to its completion: ib_read_lat's iteration without perftest.
 *   atomic    the same with an 8-byte FETCH_AND_ADD: ib_atomic_lat's.
 *
 * usage: rrxe_floor -d DEV [-g GID_INDEX] [-n ITERS] [-m uverbs|doorbell|read|atomic]
 * Prints one line per mode: "MODE t_typical_us=X t_min_us=Y iters=N"; exits 1
 * (with the reason) if a verb fails or the kernel answers otherwise than
 * described.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>

#include "vt.h"

/* What librxe writes to ring a send doorbell. */
struct doorbell_cmd {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_post_send core;
};

/*
 * Iterations are timed with the TSC, as perftest times them (a vDSO clock
 * read would add its own cost to every iteration); the TSC's rate comes from
 * CLOCK_MONOTONIC over the whole run of a mode.
 */
static uint64_t tsc(void)
{
	return __builtin_ia32_rdtsc();
}

static double mono_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * Prints the median and minimum of the n gaps between n + 1 start times (TSC
 * values), which took `us` microseconds in all.
 */
static void report(const char *mode, double *t, int n, double us)
{
	double per_tick = us / (t[n] - t[0]);

	for (int i = 0; i < n; i++)
		t[i] = (t[i + 1] - t[i]) * per_tick;
	qsort(t, n, sizeof(*t), cmp_double);
	printf("%s t_typical_us=%.2f t_min_us=%.2f iters=%d\n", mode, t[n / 2], t[0], n);
	fflush(stdout);
}

/*
 * Writes the POST_SEND command for QP handle `handle` (with no work requests,
 * as librxe does) n times, each followed by one poll of `cq`, which must stay
 * empty; `want` is the errno the write must fail with, 0 for success.
 */
static int doorbells(struct ibv_context *ctx, uint32_t handle, struct ibv_cq *cq, int want,
		     const char *mode, double *t, int n)
{
	struct ib_uverbs_post_send_resp resp;
	struct doorbell_cmd cmd;
	struct ibv_wc wc;
	double us;

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	cmd.hdr.in_words = sizeof(cmd) / 4;
	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.core.response = (uintptr_t)&resp;
	cmd.core.qp_handle = handle;
	cmd.core.wqe_size = sizeof(struct ibv_send_wr);
	us = mono_us();
	for (int i = 0; i <= n; i++) {
		ssize_t r;

		t[i] = tsc();
		if (i == n)
			break;
		r = write(ctx->cmd_fd, &cmd, sizeof(cmd));
		if (want)
			CHECK(r < 0 && errno == want, "%s: POST_SEND returned %zd (%s), expected %s",
			      mode, r, r < 0 ? errname(errno) : "success", errname(want));
		else
			CHECK(r == (ssize_t)sizeof(cmd), "%s: POST_SEND returned %zd (%s)", mode, r,
			      r < 0 ? errname(errno) : "short");
		r = ibv_poll_cq(cq, 1, &wc);
		CHECK(r == 0, "%s: ibv_poll_cq returned %zd on an idle CQ", mode, r);
	}
	report(mode, t, n, mono_us() - us);
	return 0;
}

/*
 * n signaled requests from A for B's buffer (`atomic`: 8-byte FETCH_AND_ADDs
 * of 1; else 2-byte READs into A's buffer), each polled to completion.
 */
static int one_sided(struct rc_pair *p, int atomic, double *t, int n)
{
	const char *mode = atomic ? "atomic" : "read";
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint64_t first = *(volatile uint64_t *)p->buf_b;
	double us;

	if (atomic) {
		send_wr(&wr, &sge, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, p->buf_a, 8, p->mr_a->lkey);
		wr.wr.atomic.remote_addr = (uintptr_t)p->buf_b;
		wr.wr.atomic.rkey = p->mr_b->rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		send_wr(&wr, &sge, IBV_WR_RDMA_READ, 1, p->buf_a, 2, p->mr_a->lkey);
		wr.wr.rdma.remote_addr = (uintptr_t)p->buf_b;
		wr.wr.rdma.rkey = p->mr_b->rkey;
	}
	us = mono_us();
	for (int i = 0; i <= n; i++) {
		double waiting = 0;
		int r, spins = 0;

		t[i] = tsc();
		if (i == n)
			break;
		OK(ibv_post_send(p->a, &wr, &bad));
		/* A slow completion starts a clock (off the fast path). */
		while ((r = ibv_poll_cq(p->cq_a, 1, &wc)) == 0) {
			if (++spins % 4096)
				continue;
			if (!waiting)
				waiting = mono_us();
			CHECK(mono_us() - waiting < DP_WAIT_MS * 1000.0,
			      "%s %d: no completion after %d ms", mode, i, DP_WAIT_MS);
		}
		CHECK(r == 1, "%s %d: ibv_poll_cq returned %d", mode, i, r);
		CHECK(wc.status == IBV_WC_SUCCESS, "%s %d: %s", mode, i, ibv_wc_status_str(wc.status));
	}
	report(mode, t, n, mono_us() - us);
	/* Each FETCH_AND_ADD returned the sum before it, and added 1. */
	CHECK(!atomic || (*(volatile uint64_t *)p->buf_a == first + n - 1 &&
			  *(volatile uint64_t *)p->buf_b == first + n),
	      "atomic: after %d FETCH_AND_ADDs of 1 to %llu, fetched %llu, sum %llu", n,
	      (unsigned long long)first, (unsigned long long)*(volatile uint64_t *)p->buf_a,
	      (unsigned long long)*(volatile uint64_t *)p->buf_b);
	return 0;
}

static int run(const char *mode, int n)
{
	struct rc_pair p;
	struct ibv_pd *pd;
	struct env e;
	double *t;
	int all = !mode, rc = 0;

	if (env_open(&e))
		return -1;
	NEW(pd, ibv_alloc_pd(e.ctx));
	if (rc_pair(&e, pd, NULL, 7, &p))
		return -1;
	t = calloc(n + 1, sizeof(*t));
	CHECK(t, "no memory for %d times", n);
	/* Handles count up from 0 per object type: no QP has this one. */
	if (!rc && (all || !strcmp(mode, "uverbs")))
		rc = doorbells(e.ctx, 0x7fffffff, p.cq_a, ENOENT, "uverbs", t, n);
	if (!rc && (all || !strcmp(mode, "doorbell")))
		rc = doorbells(e.ctx, p.a->handle, p.cq_a, 0, "doorbell", t, n);
	if (!rc && (all || !strcmp(mode, "read")))
		rc = one_sided(&p, 0, t, n);
	if (!rc && (all || !strcmp(mode, "atomic")))
		rc = one_sided(&p, 1, t, n);
	free(t);
	if (!rc)
		rc = release_all(1);
	env_close(&e);
	return rc;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	const char *dev = NULL, *mode = NULL;
	int n = 2000, opt, rc;

	while ((opt = getopt(argc, argv, "d:g:n:m:v")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': g_gid_arg = atoi(optarg); break;
		case 'n': n = atoi(optarg); break;
		case 'm': mode = optarg; break;
		case 'v': g_verbose = 1; break;
		default:
			fprintf(stderr, "usage: rrxe_floor -d DEV [-g GID_INDEX] [-n ITERS] "
				"[-m uverbs|doorbell|read|atomic] [-v]\n");
			return 2;
		}
	}
	if (!dev || n < 2 || n > 100000000 || (mode && strcmp(mode, "uverbs") && strcmp(mode, "doorbell") &&
			      strcmp(mode, "read") && strcmp(mode, "atomic"))) {
		fprintf(stderr, "rrxe_floor: need -d DEV, -n from 2 to 100000000 and a known -m\n");
		return 2;
	}
	list = env_device(dev);
	if (!list) {
		fprintf(stderr, "rrxe_floor: FAIL %s\n", g_reason);
		return 1;
	}
	rc = run(mode, n);
	if (rc)
		fprintf(stderr, "rrxe_floor: FAIL %s\n", g_reason);
	ibv_free_device_list(list);
	return rc ? 1 : 0;
}
