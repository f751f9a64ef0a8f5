// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_wirefuzz: the live RC traffic between two QPs of the device, checked
 * byte by byte while the fuzzer shoots packets at the device.
 *
 * A (requester) and B (responder) are RC QPs of one PD, connected through the
 * port's own RoCE v2 GID. A batch posts 1-6 operations (RDMA WRITE, RDMA READ,
 * SEND, FETCH_AND_ADD, CMP_AND_SWP) into distinct slots, waits for every
 * completion and checks each result; then both buffers are compared with
 * shadow copies in full, so a stray write by a fuzz packet anywhere in the
 * live MRs is caught too. An error completion is accepted only with a status
 * the IB spec gives for a responder that failed (a NAK, retries exhausted,
 * flush), and only in a connection at which the fuzzer sent packets that can
 * fail it; the pair is then replaced by a fresh one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "wirefuzz.h"
#include "live.h"

#define A_SIZE (512 * 1024)
#define B_SIZE (512 * 1024)
#define SLOT 16384
#define A_SRC 0			/* 8 source slots */
#define A_RDST (128 * 1024)	/* 8 READ destination slots */
#define A_ATOM (256 * 1024)	/* 8 atomic result words */
#define B_TGT 0			/* 16 WRITE target / READ source slots */
#define B_RECV (256 * 1024)	/* 8 receive slots */
#define B_ATOM (384 * 1024)	/* 64 atomic words */
#define MAX_OPS 6

#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

enum op_kind { K_WRITE, K_READ, K_SEND, K_FADD, K_CSWAP };
static const char *const kind_name[] = { "WRITE", "READ", "SEND", "FETCH_ADD", "CMP_SWAP" };

struct op {
	enum op_kind kind;
	uint32_t len;
	size_t a_off, b_off;	/* offsets in A's and B's buffers */
	uint64_t add, cmp, swp;
	int done_a, done_b;
	enum ibv_wc_status st_a, st_b;
	uint32_t byte_len;
};

struct pair {
	struct ibv_cq *cq_a, *cq_b;
	struct ibv_qp *a, *b;
};

struct live {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	union ibv_gid gid;
	int gid_index;
	uint8_t *buf_a, *buf_b, *shadow_a, *shadow_b;
	struct ibv_mr *mr_a, *mr_b;
	struct pair p;
	uint32_t a_psn, b_psn;	/* next PSN A sends; B's send PSN */
	struct rng rng;
	uint64_t batch_no;
};

static struct live L;
struct live_stats g_stats;
volatile int g_stop_live;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static const char *wcs(enum ibv_wc_status s)
{
	return ibv_wc_status_str(s);
}

/* ------------------------------------------------------------------ */
/* Async events: acknowledged at once, so that destroying a QP never   */
/* waits for an acknowledgement.                                       */
/* ------------------------------------------------------------------ */

static void *async_thread(void *arg)
{
	struct ibv_context *ctx = arg;
	struct ibv_async_event ev;

	for (;;) {
		if (ibv_get_async_event(ctx, &ev)) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return NULL;
		}
		__atomic_add_fetch(&g_stats.async_events, 1, __ATOMIC_RELAXED);
		vlog("async event %s", ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
}

void start_async_thread(struct ibv_context *ctx)
{
	pthread_t t;

	if (pthread_create(&t, NULL, async_thread, ctx))
		fatal("pthread_create (async events) failed");
	pthread_detach(t);
}

/* ------------------------------------------------------------------ */
/* Setup                                                              */
/* ------------------------------------------------------------------ */

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		fatal("mmap %zu: %s", len, strerror(errno));
	return p;
}

int qp_connect(struct ibv_qp *qp, const union ibv_gid *gid, int gid_index, uint32_t dest_qpn,
	       uint32_t sq_psn, uint32_t rq_psn, int access, int timeout, int retry,
	       enum ibv_qp_state upto)
{
	int uc = qp->qp_type == IBV_QPT_UC;	/* no reads, atomics, ACKs: fewer attributes */
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = PORT;
	a.qp_access_flags = access;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -1;
	if (upto == IBV_QPS_INIT)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 8;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = PORT;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  (uc ? 0 : IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)))
		return -2;
	if (upto == IBV_QPS_RTR)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = timeout;
	a.retry_cnt = retry;
	a.rnr_retry = 7;
	a.max_rd_atomic = 8;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			  (uc ? 0 : IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				    IBV_QP_MAX_QP_RD_ATOMIC)))
		return -3;
	return 0;
}

static int make_pair(struct pair *p)
{
	struct ibv_qp_init_attr ia;
	int rc;

	memset(p, 0, sizeof(*p));
	p->cq_a = ibv_create_cq(L.ctx, 64, NULL, NULL, 0);
	p->cq_b = ibv_create_cq(L.ctx, 64, NULL, NULL, 0);
	if (!p->cq_a || !p->cq_b)
		return -1;
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.sq_sig_all = 1;
	ia.send_cq = ia.recv_cq = p->cq_a;
	p->a = ibv_create_qp(L.pd, &ia);
	ia.send_cq = ia.recv_cq = p->cq_b;
	p->b = ibv_create_qp(L.pd, &ia);
	if (!p->a || !p->b)
		return -1;
	L.a_psn = rng_below(&L.rng, PSN_MASK + 1);
	L.b_psn = rng_below(&L.rng, PSN_MASK + 1);
	/* ACK timeout 17: 0.5 s, six retries (rxe takes seven for "retry forever"). */
	rc = qp_connect(p->a, &L.gid, L.gid_index, p->b->qp_num, L.a_psn, L.b_psn, ACCESS, 17, 6,
			IBV_QPS_RTS);
	if (rc)
		return -10 + rc;
	rc = qp_connect(p->b, &L.gid, L.gid_index, p->a->qp_num, L.b_psn, L.a_psn, ACCESS, 17, 6,
			IBV_QPS_RTS);
	if (rc)
		return -20 + rc;
	return 0;
}

static void destroy_pair(struct pair *p)
{
	if (p->a && ibv_destroy_qp(p->a))
		fatal("ibv_destroy_qp(A): %s", strerror(errno));
	if (p->b && ibv_destroy_qp(p->b))
		fatal("ibv_destroy_qp(B): %s", strerror(errno));
	if (p->cq_a && ibv_destroy_cq(p->cq_a))
		fatal("ibv_destroy_cq(A): %s", strerror(errno));
	if (p->cq_b && ibv_destroy_cq(p->cq_b))
		fatal("ibv_destroy_cq(B): %s", strerror(errno));
	memset(p, 0, sizeof(*p));
}

/* Publish the pair (with the lock held). */
static void publish(void)
{
	g_live.qpn_a = L.p.a ? L.p.a->qp_num : 0;
	g_live.qpn_b = L.p.b ? L.p.b->qp_num : 0;
	g_live.a_lo = g_live.a_hi = L.a_psn;
	g_live.b_sq = L.b_psn;
	g_live.kills = 0;
	g_live.foreign = 0;
	g_live.gen++;
}

/*
 * A fresh pair replaces the old one. The new QPs are created before the old
 * ones go, so their numbers differ from those of packets still in flight.
 */
static void reconnect(void)
{
	struct pair old = L.p;
	int rc;

	pthread_mutex_lock(&g_live.lock);
	rc = make_pair(&L.p);
	if (rc)
		fatal("creating a live QP pair failed (%d): %s", rc, strerror(errno));
	publish();
	pthread_mutex_unlock(&g_live.lock);
	destroy_pair(&old);
	vlog("live pair: A 0x%x (PSN 0x%06x) <-> B 0x%x (PSN 0x%06x), generation %u",
	     L.p.a->qp_num, L.a_psn, L.p.b->qp_num, L.b_psn, g_live.gen);
}

void live_setup(struct ibv_context *ctx, const union ibv_gid *gid, int gid_index, uint64_t seed)
{
	memset(&L, 0, sizeof(L));
	L.ctx = ctx;
	L.gid = *gid;
	L.gid_index = gid_index;
	rng_seed(&L.rng, seed ^ 0x6c697665ull);
	L.pd = ibv_alloc_pd(ctx);
	if (!L.pd)
		fatal("ibv_alloc_pd: %s", strerror(errno));
	L.buf_a = map(A_SIZE);
	L.buf_b = map(B_SIZE);
	L.shadow_a = map(A_SIZE);
	L.shadow_b = map(B_SIZE);
	rng_bytes(&L.rng, L.buf_a, A_SIZE);
	rng_bytes(&L.rng, L.buf_b, B_SIZE);
	memcpy(L.shadow_a, L.buf_a, A_SIZE);
	memcpy(L.shadow_b, L.buf_b, B_SIZE);
	L.mr_a = ibv_reg_mr(L.pd, L.buf_a, A_SIZE, ACCESS);
	L.mr_b = ibv_reg_mr(L.pd, L.buf_b, B_SIZE, ACCESS);
	if (!L.mr_a || !L.mr_b)
		fatal("ibv_reg_mr: %s", strerror(errno));
	pthread_mutex_lock(&g_live.lock);
	g_live.mr[0] = (struct mr_view){ (uintptr_t)L.buf_a, A_SIZE, L.mr_a->rkey };
	g_live.mr[1] = (struct mr_view){ (uintptr_t)L.buf_b, B_SIZE, L.mr_b->rkey };
	pthread_mutex_unlock(&g_live.lock);
	reconnect();
	g_stats.reconnects = 0;
}

/* ------------------------------------------------------------------ */
/* One batch                                                          */
/* ------------------------------------------------------------------ */

static uint32_t npkts(uint32_t len)
{
	return len ? (len + LIVE_MTU - 1) / LIVE_MTU : 1;
}

static void shuffle(struct rng *r, int *v, int n)
{
	for (int i = 0; i < n; i++)
		v[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = rng_below(r, i + 1), t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
}

/* Fill with a pattern, both the buffer and its shadow. */
static void pattern(uint8_t *buf, uint8_t *shadow, size_t off, size_t len)
{
	rng_bytes(&L.rng, buf + off, len);
	memcpy(shadow + off, buf + off, len);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void put64h(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void plan(struct op *ops, int n)
{
	int tgt[16], rcv[8], atom[64];

	shuffle(&L.rng, tgt, 16);
	shuffle(&L.rng, rcv, 8);
	shuffle(&L.rng, atom, 64);
	for (int i = 0; i < n; i++) {
		struct op *o = &ops[i];
		unsigned int k = rng_below(&L.rng, 100);
		uint32_t off;

		memset(o, 0, sizeof(*o));
		o->kind = k < 30 ? K_WRITE : k < 55 ? K_READ : k < 80 ? K_SEND :
			  k < 90 ? K_FADD : K_CSWAP;
		/* Lengths: often around the MTU, sometimes tiny or a whole slot. */
		switch (rng_below(&L.rng, 4)) {
		case 0: o->len = rng_below(&L.rng, 17); break;
		case 1: o->len = LIVE_MTU - 2 + rng_below(&L.rng, 5); break;
		case 2: o->len = 1 + rng_below(&L.rng, SLOT); break;
		default: o->len = rng_below(&L.rng, 4 * LIVE_MTU + 1); break;
		}
		if (o->kind == K_READ && !o->len)
			o->len = 1;
		off = rng_below(&L.rng, SLOT - o->len + 1);
		switch (o->kind) {
		case K_WRITE:
			o->a_off = A_SRC + i * SLOT + off;
			o->b_off = B_TGT + tgt[i] * SLOT + off;
			pattern(L.buf_a, L.shadow_a, o->a_off, o->len);
			break;
		case K_READ:
			o->a_off = A_RDST + i * SLOT + off;
			o->b_off = B_TGT + tgt[i] * SLOT + rng_below(&L.rng, SLOT - o->len + 1);
			break;
		case K_SEND:
			o->a_off = A_SRC + i * SLOT + off;
			o->b_off = B_RECV + rcv[i] * SLOT;
			pattern(L.buf_a, L.shadow_a, o->a_off, o->len);
			break;
		case K_FADD:
		case K_CSWAP:
			o->len = 8;
			o->a_off = A_ATOM + i * 8;
			o->b_off = B_ATOM + atom[i] * 8;
			o->add = rng_next(&L.rng);
			o->cmp = rng_chance(&L.rng, 1, 2) ? get64(L.shadow_b + o->b_off) :
							     rng_next(&L.rng);
			o->swp = rng_next(&L.rng);
			break;
		}
	}
}

static uint32_t batch_pkts(const struct op *ops, int n)
{
	uint32_t t = 0;

	for (int i = 0; i < n; i++)
		t += (ops[i].kind == K_FADD || ops[i].kind == K_CSWAP) ? 1 : npkts(ops[i].len);
	return t;
}

static int post(struct op *ops, int n)
{
	struct ibv_send_wr wr[MAX_OPS], *bad;
	struct ibv_sge sge[MAX_OPS];
	struct ibv_recv_wr rwr;
	struct ibv_sge rsge;
	int rc;

	for (int i = 0; i < n; i++) {
		struct op *o = &ops[i];

		if (o->kind != K_SEND)
			continue;
		rsge = (struct ibv_sge){ (uintptr_t)L.buf_b + o->b_off, SLOT, L.mr_b->lkey };
		rwr = (struct ibv_recv_wr){ .wr_id = i, .sg_list = &rsge, .num_sge = 1 };
		struct ibv_recv_wr *rbad;

		rc = ibv_post_recv(L.p.b, &rwr, &rbad);
		if (rc)
			fatal("ibv_post_recv(B): %s", strerror(rc));
	}
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < n; i++) {
		struct op *o = &ops[i];

		sge[i] = (struct ibv_sge){ (uintptr_t)L.buf_a + o->a_off, o->len, L.mr_a->lkey };
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = o->len ? 1 : 0;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		switch (o->kind) {
		case K_WRITE:
		case K_READ:
			wr[i].opcode = o->kind == K_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
			wr[i].wr.rdma.remote_addr = (uintptr_t)L.buf_b + o->b_off;
			wr[i].wr.rdma.rkey = L.mr_b->rkey;
			break;
		case K_SEND:
			wr[i].opcode = IBV_WR_SEND;
			break;
		case K_FADD:
		case K_CSWAP:
			wr[i].opcode = o->kind == K_FADD ? IBV_WR_ATOMIC_FETCH_AND_ADD :
							   IBV_WR_ATOMIC_CMP_AND_SWP;
			wr[i].wr.atomic.remote_addr = (uintptr_t)L.buf_b + o->b_off;
			wr[i].wr.atomic.rkey = L.mr_b->rkey;
			wr[i].wr.atomic.compare_add = o->kind == K_FADD ? o->add : o->cmp;
			wr[i].wr.atomic.swap = o->swp;
			break;
		}
	}
	pthread_mutex_lock(&g_live.lock);
	L.a_psn = (L.a_psn + batch_pkts(ops, n)) & PSN_MASK;
	g_live.a_hi = L.a_psn;
	pthread_mutex_unlock(&g_live.lock);
	rc = ibv_post_send(L.p.a, wr, &bad);
	if (rc)
		fatal("ibv_post_send(A): %s", strerror(rc));
	return 0;
}

static const char *g_fail_extra = "";

/* Compare a range of a buffer with its shadow; 0 if equal. */
static int cmp_range(const char *what, const uint8_t *buf, const uint8_t *shadow, size_t off,
		     size_t len)
{
	/* memcmp first: the byte loop below only locates a difference */
	if (!memcmp(buf + off, shadow + off, len))
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (buf[off + i] != shadow[off + i]) {
			size_t end = i;

			while (end < len && buf[off + end] != shadow[off + end])
				end++;
			live_fail("%s: byte %zu of buffer differs (0x%02x, expected 0x%02x); %zu "
				  "differing bytes from there%s",
				  what, off + i, buf[off + i], shadow[off + i], end - i, g_fail_extra);
			return -1;
		}
	}
	return 0;
}

static int allowed_a(enum ibv_wc_status s)
{
	return s == IBV_WC_REM_ACCESS_ERR || s == IBV_WC_REM_INV_REQ_ERR ||
	       s == IBV_WC_REM_OP_ERR || s == IBV_WC_RETRY_EXC_ERR || s == IBV_WC_WR_FLUSH_ERR;
}

static void resync(uint8_t *buf, uint8_t *shadow, size_t off, size_t len)
{
	memcpy(shadow + off, buf + off, len);
}

/* Poll both CQs until every expected completion came or the deadline passed. */
static int wait_batch(struct op *ops, int n, int nsend, double deadline, int *errors)
{
	struct ibv_wc wc[16];
	int got_a = 0, got_b = 0;

	while (got_a < n || (got_b < nsend && !*errors)) {
		int k = ibv_poll_cq(L.p.cq_a, 16, wc);

		if (k < 0)
			fatal("ibv_poll_cq(A) failed");
		for (int i = 0; i < k; i++) {
			if (wc[i].wr_id >= (uint64_t)n || ops[wc[i].wr_id].done_a)
				return live_fail("A: completion with unknown wr_id %llu",
						 (unsigned long long)wc[i].wr_id);
			ops[wc[i].wr_id].done_a = 1;
			ops[wc[i].wr_id].st_a = wc[i].status;
			if (wc[i].status != IBV_WC_SUCCESS)
				(*errors)++;
			got_a++;
		}
		k = ibv_poll_cq(L.p.cq_b, 16, wc);
		if (k < 0)
			fatal("ibv_poll_cq(B) failed");
		for (int i = 0; i < k; i++) {
			if (wc[i].wr_id >= (uint64_t)n || ops[wc[i].wr_id].done_b ||
			    ops[wc[i].wr_id].kind != K_SEND)
				return live_fail("B: completion with unknown wr_id %llu (%s)",
						 (unsigned long long)wc[i].wr_id, wcs(wc[i].status));
			ops[wc[i].wr_id].done_b = 1;
			ops[wc[i].wr_id].st_b = wc[i].status;
			ops[wc[i].wr_id].byte_len = wc[i].byte_len;
			if (wc[i].status == IBV_WC_SUCCESS && wc[i].opcode != IBV_WC_RECV)
				return live_fail("B: receive completion with opcode %d", wc[i].opcode);
			if (wc[i].status != IBV_WC_SUCCESS)
				(*errors)++;
			got_b++;
		}
		if (now_s() > deadline) {
			if (*errors)
				return 0;	/* the rest is flushed below */
			return live_fail("batch %llu: %d of %d completions at A and %d of %d at B "
					 "after %.0f s",
					 (unsigned long long)L.batch_no, got_a, n, got_b, nsend,
					 g_op_timeout);
		}
		if (!k)
			usleep(200);
	}
	return 0;
}

/* Move a QP to ERR so its receives flush, and collect them. */
static void flush_b(struct op *ops, int n)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[16];
	double deadline = now_s() + 5;
	int want = 0, got = 0;

	for (int i = 0; i < n; i++)
		want += ops[i].kind == K_SEND && !ops[i].done_b;
	if (!want)
		return;
	ibv_modify_qp(L.p.b, &a, IBV_QP_STATE);
	while (got < want && now_s() < deadline) {
		int k = ibv_poll_cq(L.p.cq_b, 16, wc);

		for (int i = 0; i < k; i++) {
			struct op *o;

			if (wc[i].wr_id >= (uint64_t)n)
				continue;
			o = &ops[wc[i].wr_id];
			o->done_b = 1;
			o->st_b = wc[i].status;
			o->byte_len = wc[i].byte_len;
			got++;
		}
		if (!k)
			usleep(500);
	}
}

static int check_op(struct op *o, int i)
{
	char what[96];

	snprintf(what, sizeof(what), "batch %llu op %d %s len %u",
		 (unsigned long long)L.batch_no, i, kind_name[o->kind], o->len);
	if (o->st_a != IBV_WC_SUCCESS)
		return 0;
	switch (o->kind) {
	case K_WRITE:
		memcpy(L.shadow_b + o->b_off, L.buf_a + o->a_off, o->len);
		return cmp_range(what, L.buf_b, L.shadow_b, o->b_off, o->len);
	case K_READ:
		memcpy(L.shadow_a + o->a_off, L.shadow_b + o->b_off, o->len);
		if (memcmp(L.buf_a + o->a_off, L.shadow_a + o->a_off, o->len)) {
			/* which side went wrong: the source at B, or the data on the way */
			g_fail_extra = memcmp(L.buf_b + o->b_off, L.shadow_b + o->b_off, o->len) ?
				" (B's source bytes differ from their shadow too: a stray write at B)" :
				" (B's source bytes are intact: the READ delivered other data)";
		}
		return cmp_range(what, L.buf_a, L.shadow_a, o->a_off, o->len);
	case K_SEND:
		if (!o->done_b)
			return live_fail("%s: SEND completed at A, no receive completion at B", what);
		if (o->st_b != IBV_WC_SUCCESS)
			return live_fail("%s: SEND completed at A, receive failed at B: %s", what,
					 wcs(o->st_b));
		if (o->byte_len != o->len)
			return live_fail("%s: receive byte_len %u", what, o->byte_len);
		memcpy(L.shadow_b + o->b_off, L.buf_a + o->a_off, o->len);
		return cmp_range(what, L.buf_b, L.shadow_b, o->b_off, o->len);
	case K_FADD:
	case K_CSWAP: {
		uint64_t old = get64(L.shadow_b + o->b_off), got = get64(L.buf_a + o->a_off);

		if (got != old)
			return live_fail("%s: returned 0x%016llx, the word held 0x%016llx", what,
					 (unsigned long long)got, (unsigned long long)old);
		put64h(L.shadow_a + o->a_off, got);
		if (o->kind == K_FADD)
			put64h(L.shadow_b + o->b_off, old + o->add);
		else if (old == o->cmp)
			put64h(L.shadow_b + o->b_off, o->swp);
		return cmp_range(what, L.buf_b, L.shadow_b, o->b_off, 8);
	}
	}
	return 0;
}

/* The ranges a failed operation may have written become whatever they hold. */
static void forget(const struct op *o)
{
	if (o->st_a == IBV_WC_SUCCESS && (o->kind != K_SEND || o->st_b == IBV_WC_SUCCESS))
		return;
	switch (o->kind) {
	case K_WRITE:
		resync(L.buf_b, L.shadow_b, o->b_off, o->len);
		break;
	case K_READ:
		resync(L.buf_a, L.shadow_a, o->a_off, o->len);
		break;
	case K_SEND:
		resync(L.buf_b, L.shadow_b, o->b_off, SLOT);
		break;
	default:
		resync(L.buf_a, L.shadow_a, o->a_off, 8);
		resync(L.buf_b, L.shadow_b, o->b_off, 8);
		break;
	}
}

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		fatal("ibv_query_qp: %s", strerror(errno));
	return a.qp_state;
}

static int full_compare(void)
{
	g_fail_extra = " (full comparison of the live buffers with their shadows: a stray write)";
	if (cmp_range("A's buffer", L.buf_a, L.shadow_a, 0, A_SIZE) ||
	    cmp_range("B's buffer", L.buf_b, L.shadow_b, 0, B_SIZE))
		return -1;
	g_fail_extra = "";
	return 0;
}

/* One batch; 0 if it passed (with or without an accepted failure of the pair). */
static int batch(void)
{
	struct op ops[MAX_OPS];
	int n = 1 + rng_below(&L.rng, MAX_OPS), nsend = 0, errors = 0;
	uint32_t gen, kills, foreign;
	int sa, sb;

	L.batch_no++;
	sa = qp_state(L.p.a);
	sb = qp_state(L.p.b);
	if (sa == IBV_QPS_ERR || sb == IBV_QPS_ERR) {
		pthread_mutex_lock(&g_live.lock);
		kills = g_live.kills;
		foreign = g_live.foreign;
		pthread_mutex_unlock(&g_live.lock);
		if (!kills && foreign && !g_stats.foreign_failures++)
			snprintf(g_stats.first_foreign, sizeof(g_stats.first_foreign),
				 "live QP %s was in ERR after %u invalid requests from an address "
				 "that is not its peer's, and no other packet that could fail it",
				 sa == IBV_QPS_ERR ? "A" : "B", foreign);
		if (!kills && !foreign)
			return live_fail("live QP %s is in ERR, and no packet that could fail it "
					 "was sent", sa == IBV_QPS_ERR ? "A" : "B");
		g_stats.idle_failures++;
		if (full_compare())
			return -1;
		reconnect();
		g_stats.reconnects++;
		return 0;
	}
	plan(ops, n);
	for (int i = 0; i < n; i++)
		nsend += ops[i].kind == K_SEND;
	gen = g_live.gen;
	post(ops, n);
	if (wait_batch(ops, n, nsend, now_s() + g_op_timeout, &errors))
		return -1;
	if (errors)
		flush_b(ops, n);
	for (int i = 0; i < n; i++) {
		struct op *o = &ops[i];

		if (!o->done_a)
			return live_fail("batch %llu op %d: no completion at A after an error",
					 (unsigned long long)L.batch_no, i);
		if (o->st_a != IBV_WC_SUCCESS && !allowed_a(o->st_a))
			return live_fail("batch %llu op %d %s: completed with %s at A",
					 (unsigned long long)L.batch_no, i, kind_name[o->kind],
					 wcs(o->st_a));
		if (o->kind == K_SEND && o->done_b && o->st_b != IBV_WC_SUCCESS &&
		    o->st_b != IBV_WC_WR_FLUSH_ERR)
			return live_fail("batch %llu op %d SEND: receive completed with %s at B",
					 (unsigned long long)L.batch_no, i, wcs(o->st_b));
		if (check_op(o, i))
			return -1;
		if (o->st_a == IBV_WC_SUCCESS)
			g_stats.ops_ok[o->kind]++;
	}
	if (!errors) {
		pthread_mutex_lock(&g_live.lock);
		g_live.a_lo = g_live.a_hi;
		pthread_mutex_unlock(&g_live.lock);
		g_stats.last_ok = now_s();
		g_stats.batches_ok++;
		return full_compare();
	}
	for (int i = 0; i < n; i++) {
		forget(&ops[i]);
		if (ops[i].st_a != IBV_WC_SUCCESS)
			g_stats.status[ops[i].st_a < 32 ? ops[i].st_a : 31]++;
	}
	pthread_mutex_lock(&g_live.lock);
	kills = g_live.kills;
	foreign = g_live.foreign;
	pthread_mutex_unlock(&g_live.lock);
	if (!kills && gen == g_live.gen) {
		int only_retry = 1;
		char st[512];
		int k = 0;

		for (int i = 0; i < n && k < (int)sizeof(st) - 64; i++)
			k += snprintf(st + k, sizeof(st) - k, "%s%s %u: %s", i ? ", " : "",
				      kind_name[ops[i].kind], ops[i].len, wcs(ops[i].st_a));
		for (int i = 0; i < n; i++)
			if (ops[i].st_a != IBV_WC_SUCCESS && ops[i].st_a != IBV_WC_RETRY_EXC_ERR &&
			    ops[i].st_a != IBV_WC_WR_FLUSH_ERR)
				only_retry = 0;
		if (foreign && !g_stats.foreign_failures++)
			snprintf(g_stats.first_foreign, sizeof(g_stats.first_foreign),
				 "batch %llu: error completions at A after %u invalid requests from "
				 "an address that is not the pair's, and no other packet that could "
				 "fail it (%s)", (unsigned long long)L.batch_no, foreign, st);
		if (!foreign && !only_retry)
			return live_fail("batch %llu: error completions at A, and no packet that "
					 "could fail the pair was sent (%s)",
					 (unsigned long long)L.batch_no, st);
		if (!foreign)
			g_stats.retry_without_kill++;
	}
	if (full_compare())
		return -1;
	reconnect();
	g_stats.reconnects++;
	return 0;
}

void *live_thread(void *arg)
{
	(void)arg;
	g_stats.last_ok = now_s();
	while (!g_stop_live) {
		if (batch()) {
			g_stats.failed = 1;
			break;
		}
	}
	g_stats.finished = 1;
	return NULL;
}

/*
 * The final check: a fresh pair carries one RDMA WRITE, READ and SEND of a few
 * MTUs with nobody shooting at it.
 */
int live_final(void)
{
	struct op ops[3];
	int errors = 0;

	reconnect();
	memset(ops, 0, sizeof(ops));
	ops[0] = (struct op){ .kind = K_WRITE, .len = 5000, .a_off = A_SRC, .b_off = B_TGT + 100 };
	ops[1] = (struct op){ .kind = K_READ, .len = 5000, .a_off = A_RDST, .b_off = B_TGT + 100 };
	ops[2] = (struct op){ .kind = K_SEND, .len = 3000, .a_off = A_SRC + SLOT, .b_off = B_RECV };
	pattern(L.buf_a, L.shadow_a, ops[0].a_off, ops[0].len);
	pattern(L.buf_a, L.shadow_a, ops[2].a_off, ops[2].len);
	L.batch_no++;
	post(ops, 3);
	if (wait_batch(ops, 3, 1, now_s() + g_op_timeout, &errors))
		return -1;
	for (int i = 0; i < 3; i++) {
		if (ops[i].st_a != IBV_WC_SUCCESS)
			return live_fail("final exchange: %s completed with %s",
					 kind_name[ops[i].kind], wcs(ops[i].st_a));
		if (check_op(&ops[i], i))
			return -1;
	}
	if (full_compare())
		return -1;
	pthread_mutex_lock(&g_live.lock);
	destroy_pair(&L.p);
	publish();
	pthread_mutex_unlock(&g_live.lock);
	return 0;
}

const char *live_kind_name(int k)
{
	return kind_name[k];
}
