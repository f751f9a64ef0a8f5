// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_verbsfuzz: random sequences of verbs with random attributes on one
 * device, through the stock libibverbs and librxe, plus malformed uverbs
 * commands sent straight to the device (raw.c).
 *
 * usage: rrxe_verbsfuzz [-d DEV] [-s SEED] [-n CALLS] [-t SECONDS] [-v]
 *
 *   -d DEV    device (default: the first one)
 *   -s SEED   PRNG seed (default: from the clock; always printed). The calls
 *             depend only on the seed and on what the device returns, so
 *             the same seed on a fresh boot replays the same sequence.
 *   -n CALLS  calls to make (default 100000; a step that finds nothing to call,
 *             e.g. a destroy with no object left, does not count)
 *   -t SECONDS  stop after SECONDS even if fewer than CALLS were made
 *   -v        print every call and its result
 *
 * Calls: PDs, MRs (addresses inside, across and outside mappings, read-only
 * and unmapped memory, kernel and non-canonical addresses, lengths up to
 * 1 MiB and extreme ones, random access flags, ibv_reg_mr_iova with extreme
 * iovas), CQs (cqe 0, huge, resize), QPs (RC, UC, UD, junk types, random caps,
 * random attribute masks and values, random state transitions, queries), SRQs,
 * AHs (random GID indices and ports), memory windows, completion channels,
 * post_send / post_recv / post_srq_recv with random WR lists on QPs in any
 * state, poll_cq, req_notify_cq; objects are destroyed in random order, those
 * still in use included (which must fail with EBUSY); the context is closed
 * with objects left in it and opened again. QPs that reach RTS are connected
 * to each other through the port's own GID, so their WRs make real traffic.
 *
 * Pass (exit 0): the process is not killed, every failing call returns an
 * errno user space may see (not 0, not a kernel-internal value such as
 * ENOTSUPP 524 or ERESTARTSYS 512), an object in use is never destroyed, and
 * at the end a fresh context still works: PD, CQ, an RC QP pair and one RDMA
 * WRITE whose data is checked. A histogram of the results of every kind of
 * call is printed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vfuzz.h"

#define CALL_NAME(n) #n,
const char *const call_names[NCALLS] = { CALLS(CALL_NAME) };
#undef CALL_NAME

uint64_t g_rng;
char g_last[256];
struct areas g_mem;

static uint64_t g_seed, g_calls, g_count = 100000;
static uint64_t g_made;	/* calls made (an iteration may find nothing to call) */
static char g_replay[256];
static const char *g_dev_name;
#define NERR 140		/* errno 0..133 and a bucket for anything else */
static uint64_t g_hist[NCALLS][NERR];

/* ------------------------------------------------------------------ */
/* Reporting                                                          */
/* ------------------------------------------------------------------ */

void failf(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL (call %" PRIu64 ", last: %s): ", g_made, g_last);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\nseed %" PRIu64 "; replay: %s\n", g_seed, g_replay);
	fflush(stdout);
	_exit(1);
}

static void on_signal(int sig)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg),
			 "FAIL: signal %d (%s) at call %" PRIu64 ", last: %s\nseed %" PRIu64
			 "; replay: %s\n", sig, strsignal(sig), g_made, g_last, g_seed, g_replay);

	if (write(1, msg, n) < 0)
		_exit(3);
	_exit(1);
}

/* errno values user space may get from a verb (positive, below the kernel-internal range). */
static int clean_errno(int e)
{
	return e > 0 && e < 134;
}

void record(enum call c, int err)
{
	g_made++;
	if (g_verbose)
		printf("%" PRIu64 " %s: %s -> %s\n", g_made, call_names[c], g_last,
		       err ? strerrorname_np(err) ? strerrorname_np(err) : "?" : "ok");
	if (err && !clean_errno(err))
		failf("%s failed with errno %d, which is not a user-space errno", call_names[c], err);
	g_hist[c][err >= 0 && err < NERR - 1 ? err : NERR - 1]++;
}

/* ------------------------------------------------------------------ */
/* Values                                                             */
/* ------------------------------------------------------------------ */

uint32_t pick_u32(uint32_t limit)
{
	switch (below(10)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return limit;
	case 3: return limit + 1;
	case 4: return 0xffffffffu - below(4);
	case 5: return 0x80000000u;
	case 6: return 1u << (21 + below(11));	/* beyond every device maximum */
	default: return below(limit + 1);
	}
}

/*
 * A queue size: small ones, the device's maximum + 1 and huge ones (which
 * must be refused), and the maximum itself only where it is small. Sizes the
 * device accepts stay below `mine`, so the rings of a few dozen objects fit
 * the guest's memory (rrxe allows 2^20 WRs, a ring of hundreds of MiB).
 */
static uint32_t pick_cap(uint32_t devmax, uint32_t mine)
{
	switch (below(12)) {
	case 0: return 0;
	case 1: return 1;
	case 2: return devmax + 1;
	case 3: return devmax + 1 + below(1000);
	case 4: return 0xffffffffu - below(4);
	case 5: return 0x80000000u;
	case 6: return devmax <= mine ? devmax : mine;
	default: return below(mine + 1);
	}
}

uint64_t pick_addr(uint64_t *len, int readable)
{
	uint64_t l;
	uint8_t *base;

	switch (below(6)) {
	case 0: l = 0; break;
	case 1: l = 1 + below(64); break;
	case 2: l = 4096 * (1 + below(16)); break;
	case 3: l = 1 + below(g_mem.rw_len); break;
	default: l = 1 + below(65536); break;
	}
	if (!readable) {
		switch (below(20)) {
		case 0: *len = l; return 0;
		case 1: *len = l; return (uintptr_t)g_mem.ro + below(g_mem.ro_len);
		case 2: *len = l; return (uintptr_t)g_mem.none + below(g_mem.none_len);
		case 3: *len = l; return 0xffff888000000000ull + 4096 * below(4096);
		case 4: *len = l; return 0x0000800000000000ull - below(2) * 4096;
		case 5: *len = 4096; return UINT64_MAX - 4095 - 4096 * below(2);
		case 6:
			*len = one_in(2) ? (1ull << 32) + below(4096) : UINT64_MAX - below(4096);
			return (uintptr_t)g_mem.rw[below(4)];
		case 7:	/* runs past the end of a mapping */
			base = g_mem.rw[below(4)];
			*len = 8192 + below(65536);
			return (uintptr_t)base + g_mem.rw_len - 4096;
		default: break;
		}
	}
	base = g_mem.rw[below(4)];
	if (l > g_mem.rw_len)
		l = g_mem.rw_len;
	*len = l;
	return (uintptr_t)base + below(g_mem.rw_len - l + 1);
}

static uint8_t *map(size_t len, int prot)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		failf("mmap: %s", strerror(errno));
	memset(p, 0x3c, len);
	if (prot != (PROT_READ | PROT_WRITE))
		mprotect(p, len, prot);
	return p;
}

static void setup_memory(void)
{
	g_mem.rw_len = 1 << 20;
	for (int i = 0; i < 4; i++)
		g_mem.rw[i] = map(g_mem.rw_len, PROT_READ | PROT_WRITE);
	g_mem.ro_len = 65536;
	g_mem.ro = map(g_mem.ro_len, PROT_READ);
	g_mem.none_len = 16 << 20;
	g_mem.none = map(g_mem.none_len, PROT_NONE);
	g_mem.edge = map(8192, PROT_READ | PROT_WRITE);
	mprotect(g_mem.edge + 4096, 4096, PROT_NONE);
}

/* ------------------------------------------------------------------ */
/* Objects of the libibverbs context                                  */
/* ------------------------------------------------------------------ */

#define NPD 6
#define NMR 24
#define NCQ 10
#define NQP 20
#define NSRQ 6
#define NAH 10
#define NMW 6
#define NCH 3

static struct {
	struct ibv_device *dev;
	struct ibv_context *ctx;
	union ibv_gid gid;
	int gid_index, gid_tbl_len;
	struct ibv_device_attr attr;
	struct ibv_pd *pd[NPD];
	struct ibv_mr *mr[NMR];
	uint64_t mr_iova[NMR];	/* the address WRs name byte 0 of mr[i] by */
	struct ibv_cq *cq[NCQ];
	struct ibv_qp *qp[NQP];
	struct ibv_srq *srq[NSRQ];
	struct ibv_ah *ah[NAH];
	struct ibv_mw *mw[NMW];
	struct ibv_comp_channel *ch[NCH];
} V;

/* A random occupied slot of a pool, or NULL. */
#define ANY(pool) any_of((void **)(pool), sizeof(pool) / sizeof((pool)[0]))
/* A free slot index of a pool, or -1. */
#define FREE(pool) free_of((void **)(pool), sizeof(pool) / sizeof((pool)[0]))

static void *any_of(void **pool, int n)
{
	int start = below(n);

	for (int i = 0; i < n; i++)
		if (pool[(start + i) % n])
			return pool[(start + i) % n];
	return NULL;
}

static int free_of(void **pool, int n)
{
	int start = below(n);

	for (int i = 0; i < n; i++)
		if (!pool[(start + i) % n])
			return (start + i) % n;
	return -1;
}

static void drop_from(void **pool, int n, void *p)
{
	for (int i = 0; i < n; i++)
		if (pool[i] == p)
			pool[i] = NULL;
}
#define DROP(pool, p) drop_from((void **)(pool), sizeof(pool) / sizeof((pool)[0]), (p))

static int find_gid(struct ibv_context *ctx, union ibv_gid *gid, int *tbl_len)
{
	static const uint8_t v4pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, PORT, &pa))
		failf("ibv_query_port: %s", strerror(errno));
	*tbl_len = pa.gid_tbl_len;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(ctx, PORT, i, &e, 0) || e.gid_type != IBV_GID_TYPE_ROCE_V2 ||
		    memcmp(e.gid.raw, v4pfx, 12))
			continue;
		*gid = e.gid;
		return i;
	}
	failf("no RoCE v2 IPv4 GID on port %d", PORT);
}

static void ctx_open(void)
{
	memset(V.pd, 0, sizeof(V) - offsetof(typeof(V), pd));
	V.ctx = ibv_open_device(V.dev);
	if (!V.ctx)
		failf("ibv_open_device: %s", strerror(errno));
	if (ibv_query_device(V.ctx, &V.attr))
		failf("ibv_query_device: %s", strerror(errno));
	V.gid_index = find_gid(V.ctx, &V.gid, &V.gid_tbl_len);
}

/*
 * Close the context with whatever objects it holds. librxe leaves the rings of
 * objects it did not destroy mapped; unmap them, or the kernel keeps their
 * memory for as long as this process lives.
 */
static void ctx_close(void)
{
	FILE *f;
	char line[512];
	struct { unsigned long s, e; } m[256];
	int n = 0, err;

	snprintf(g_last, sizeof(g_last), "ibv_close_device with objects left");
	err = ibv_close_device(V.ctx) ? errno : 0;
	record(C_close_context, err);
	V.ctx = NULL;
	f = fopen("/proc/self/maps", "r");
	while (f && n < 256 && fgets(line, sizeof(line), f)) {
		if (strstr(line, "/dev/infiniband/uverbs") &&
		    sscanf(line, "%lx-%lx", &m[n].s, &m[n].e) == 2 && !raw_is_own_mapping(m[n].s))
			n++;
	}
	if (f)
		fclose(f);
	for (int i = 0; i < n; i++)
		munmap((void *)m[i].s, m[i].e - m[i].s);
}

static int access_flags(void)
{
	static const int valid = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
				 IBV_ACCESS_MW_BIND;

	if (one_in(10))
		return (int)rnd();
	if (one_in(10))
		return IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND | (int)below(32);
	return below(valid + 1) & valid;
}

/* ---- PD ---- */

static void v_alloc_pd(void)
{
	int i = FREE(V.pd);
	struct ibv_pd *pd;

	if (i < 0)
		return;
	snprintf(g_last, sizeof(g_last), "ibv_alloc_pd");
	pd = ibv_alloc_pd(V.ctx);
	record(C_alloc_pd, pd ? 0 : errno);
	V.pd[i] = pd;
}

static int pd_in_use(struct ibv_pd *pd)
{
	for (int i = 0; i < NMR; i++)
		if (V.mr[i] && V.mr[i]->pd == pd)
			return 1;
	for (int i = 0; i < NQP; i++)
		if (V.qp[i] && V.qp[i]->pd == pd)
			return 1;
	for (int i = 0; i < NSRQ; i++)
		if (V.srq[i] && V.srq[i]->pd == pd)
			return 1;
	for (int i = 0; i < NAH; i++)
		if (V.ah[i] && V.ah[i]->pd == pd)
			return 1;
	for (int i = 0; i < NMW; i++)
		if (V.mw[i] && V.mw[i]->pd == pd)
			return 1;
	return 0;
}

/* Destroying an object in use must fail with EBUSY; anything else must not fail with it. */
static void check_busy(const char *what, int in_use, int err)
{
	if (in_use && !err)
		failf("destroying %s still in use succeeded", what);
	if (in_use && err != EBUSY)
		vlog("destroying %s in use failed with %s, not EBUSY", what, strerrorname_np(err));
}

static void v_dealloc_pd(void)
{
	struct ibv_pd *pd = ANY(V.pd);
	int busy, err;

	if (!pd)
		return;
	busy = pd_in_use(pd);
	snprintf(g_last, sizeof(g_last), "ibv_dealloc_pd%s", busy ? " (in use)" : "");
	err = ibv_dealloc_pd(pd);
	record(C_dealloc_pd, err);
	check_busy("a PD", busy, err);
	if (!err)
		DROP(V.pd, pd);
}

/* ---- MR ---- */

static void v_reg_mr(int iova)
{
	struct ibv_pd *pd = ANY(V.pd);
	int i = FREE(V.mr), acc = access_flags();
	uint64_t len, addr = pick_addr(&len, 0), va = addr;
	struct ibv_mr *mr;

	if (!pd || i < 0)
		return;
	if (iova) {
		switch (below(7)) {
		case 0: va = 0; break;
		case 1: va = UINT64_MAX - below(4096); break;
		case 2: va = UINT64_MAX - len + 1; break;	/* ends at 2^64 */
		case 3: va = UINT64_MAX - len + 1 - 4096 * below(4); break;
		case 4: va = (1ull << 63) - 4096 * below(2); break;
		case 5: va = addr + 1 + below(4095); break;
		default: va = rnd(); break;
		}
		/* ib_core wants the iova in the same place of its page as the address */
		if (!one_in(5))
			va = (va & ~0xfffull) | (addr & 0xfff);
		snprintf(g_last, sizeof(g_last), "ibv_reg_mr_iova(%#llx, %#llx, iova %#llx, access %#x)",
			 (unsigned long long)addr, (unsigned long long)len, (unsigned long long)va,
			 acc);
		mr = ibv_reg_mr_iova(pd, (void *)(uintptr_t)addr, len, va, acc);
		record(C_reg_mr_iova, mr ? 0 : errno);
	} else {
		snprintf(g_last, sizeof(g_last), "ibv_reg_mr(%#llx, %#llx, access %#x)",
			 (unsigned long long)addr, (unsigned long long)len, acc);
		mr = ibv_reg_mr(pd, (void *)(uintptr_t)addr, len, acc);
		record(C_reg_mr, mr ? 0 : errno);
	}
	V.mr[i] = mr;
	V.mr_iova[i] = va;
}

static void v_dereg_mr(void)
{
	struct ibv_mr *mr = ANY(V.mr);
	int err;

	if (!mr)
		return;
	snprintf(g_last, sizeof(g_last), "ibv_dereg_mr(lkey %#x)", mr->lkey);
	err = ibv_dereg_mr(mr);
	record(C_dereg_mr, err);
	if (!err)
		DROP(V.mr, mr);
}

static void v_rereg_mr(void)
{
	struct ibv_mr *mr = ANY(V.mr);
	uint64_t len, addr = pick_addr(&len, 0);
	int flags = below(8), err;

	if (!mr)
		return;
	snprintf(g_last, sizeof(g_last), "ibv_rereg_mr(flags %#x)", flags);
	err = ibv_rereg_mr(mr, flags, ANY(V.pd), (void *)(uintptr_t)addr, len, access_flags());
	/* ibv_rereg_mr returns an ibv_rereg_mr_err_code; the errno tells why */
	record(C_rereg_mr, err ? (errno ? errno : EINVAL) : 0);
}

/* ---- CQ ---- */

static void v_create_cq(void)
{
	int i = FREE(V.cq), cqe;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch = one_in(3) ? ANY(V.ch) : NULL;
	int vec = one_in(6) ? (int)rnd() : 0;

	if (i < 0)
		return;
	cqe = one_in(3) ? (int)pick_cap(V.attr.max_cqe, 32768) : 1 + (int)below(256);
	snprintf(g_last, sizeof(g_last), "ibv_create_cq(cqe %d, vector %d, channel %p)", cqe, vec,
		 (void *)ch);
	cq = ibv_create_cq(V.ctx, cqe, NULL, ch, vec);
	record(C_create_cq, cq ? 0 : errno);
	V.cq[i] = cq;
}

static void v_resize_cq(void)
{
	struct ibv_cq *cq = ANY(V.cq);
	int cqe = one_in(3) ? (int)pick_cap(V.attr.max_cqe, 32768) : 1 + (int)below(512), err;

	if (!cq)
		return;
	snprintf(g_last, sizeof(g_last), "ibv_resize_cq(cqe %d -> %d)", cq->cqe, cqe);
	err = ibv_resize_cq(cq, cqe);
	record(C_resize_cq, err);
}

static int cq_in_use(struct ibv_cq *cq)
{
	for (int i = 0; i < NQP; i++)
		if (V.qp[i] && (V.qp[i]->send_cq == cq || V.qp[i]->recv_cq == cq))
			return 1;
	return 0;
}

static void v_destroy_cq(void)
{
	struct ibv_cq *cq = ANY(V.cq);
	int busy, err;

	if (!cq)
		return;
	busy = cq_in_use(cq);
	snprintf(g_last, sizeof(g_last), "ibv_destroy_cq%s", busy ? " (in use)" : "");
	err = ibv_destroy_cq(cq);
	record(C_destroy_cq, err);
	check_busy("a CQ", busy, err);
	if (!err)
		DROP(V.cq, cq);
}

/* ---- QP ---- */

static void v_create_qp(void)
{
	static const int types[] = { IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_UC,
				     IBV_QPT_UD, IBV_QPT_UD, IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND,
				     0, 77 };
	struct ibv_qp_init_attr ia;
	struct ibv_pd *pd = ANY(V.pd);
	int i = FREE(V.qp);
	struct ibv_qp *qp;

	if (!pd || i < 0)
		return;
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = types[below(sizeof(types) / sizeof(types[0]))];
	ia.send_cq = ANY(V.cq);
	ia.recv_cq = one_in(2) ? ia.send_cq : ANY(V.cq);
	if (!ia.send_cq || !ia.recv_cq)
		return;	/* libibverbs would dereference NULL */
	ia.srq = one_in(4) ? ANY(V.srq) : NULL;
	ia.sq_sig_all = below(2);
	if (one_in(3)) {
		ia.cap.max_send_wr = pick_cap(V.attr.max_qp_wr, 2048);
		ia.cap.max_recv_wr = pick_cap(V.attr.max_qp_wr, 2048);
		ia.cap.max_send_sge = pick_cap(V.attr.max_sge, 64);
		ia.cap.max_recv_sge = pick_cap(V.attr.max_sge, 64);
		ia.cap.max_inline_data = pick_cap(512, 1024);
	} else {
		ia.cap.max_send_wr = below(64);
		ia.cap.max_recv_wr = below(64);
		ia.cap.max_send_sge = below(5);
		ia.cap.max_recv_sge = below(5);
		ia.cap.max_inline_data = below(2) * below(200);
	}
	snprintf(g_last, sizeof(g_last),
		 "ibv_create_qp(type %d, wr %u/%u, sge %u/%u, inline %u, srq %p)", ia.qp_type,
		 ia.cap.max_send_wr, ia.cap.max_recv_wr, ia.cap.max_send_sge, ia.cap.max_recv_sge,
		 ia.cap.max_inline_data, (void *)ia.srq);
	qp = ibv_create_qp(pd, &ia);
	record(C_create_qp, qp ? 0 : errno);
	V.qp[i] = qp;
}

static void random_ah_attr(struct ibv_ah_attr *ah, int sane)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = sane || !one_in(4);
	ah->grh.dgid = V.gid;
	ah->grh.sgid_index = V.gid_index;
	ah->grh.hop_limit = 64;
	ah->port_num = PORT;
	if (sane)
		return;
	if (one_in(3))
		for (int i = 0; i < 16; i++)
			ah->grh.dgid.raw[i] = one_in(3) ? 0 : rnd();
	if (one_in(6)) {
		ah->grh.dgid.raw[0] = 0xff;	/* multicast */
		ah->grh.dgid.raw[1] = 0x0e;
	}
	if (one_in(3))
		ah->grh.sgid_index = one_in(2) ? below(V.gid_tbl_len + 2) : below(256);
	if (one_in(4))
		ah->grh.hop_limit = below(256);
	if (one_in(4))
		ah->port_num = below(one_in(2) ? 3 : 256);
	ah->grh.flow_label = one_in(4) ? rnd() : 0;
	ah->grh.traffic_class = one_in(4) ? below(256) : 0;
	ah->sl = one_in(4) ? below(256) : 0;
	ah->dlid = one_in(4) ? rnd() : 0;
	ah->static_rate = one_in(4) ? below(32) : 0;
	ah->src_path_bits = one_in(4) ? below(256) : 0;
}

static uint32_t some_qpn(void)
{
	struct ibv_qp *qp = ANY(V.qp);

	return qp && !one_in(5) ? qp->qp_num : (uint32_t)rnd() & 0xffffff;
}

/* The next state of the usual ladder, with the mask it needs; or something random. */
static int qp_transition(struct ibv_qp *qp, struct ibv_qp_attr *a)
{
	int rc_like = qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_UC;
	int mask = IBV_QP_STATE;

	memset(a, 0, sizeof(*a));
	a->port_num = PORT;
	a->qp_access_flags = access_flags() & 0xf;
	a->qkey = one_in(4) ? 0x80010000u : 0x11111111u;
	a->path_mtu = 1 + below(5);
	a->dest_qp_num = some_qpn();
	a->rq_psn = rnd() & 0xffffff;
	a->sq_psn = rnd() & 0xffffff;
	a->max_dest_rd_atomic = below(17);
	a->max_rd_atomic = below(17);
	a->min_rnr_timer = below(32);
	a->timeout = 8 + below(16);
	a->retry_cnt = below(8);
	a->rnr_retry = below(8);
	random_ah_attr(&a->ah_attr, !one_in(5));
	switch (qp->state) {
	case IBV_QPS_RESET:
		a->qp_state = IBV_QPS_INIT;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			(rc_like ? IBV_QP_ACCESS_FLAGS : IBV_QP_QKEY);
		break;
	case IBV_QPS_INIT:
		a->qp_state = IBV_QPS_RTR;
		if (rc_like)
			mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (qp->qp_type == IBV_QPT_RC)
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		break;
	case IBV_QPS_RTR:
		a->qp_state = IBV_QPS_RTS;
		mask |= IBV_QP_SQ_PSN;
		if (qp->qp_type == IBV_QPT_RC)
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_MAX_QP_RD_ATOMIC;
		break;
	default:
		a->qp_state = one_in(2) ? IBV_QPS_ERR : one_in(2) ? IBV_QPS_RESET : IBV_QPS_SQD;
		break;
	}
	if (one_in(8))
		mask ^= 1 << below(21);	/* one attribute too many or too few */
	return mask;
}

static int qp_random_attr(struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = below(one_in(4) ? 256 : 8);
	a->cur_qp_state = below(8);
	a->path_mtu = below(one_in(2) ? 256 : 8);
	a->path_mig_state = below(4);
	a->qkey = rnd();
	a->rq_psn = rnd();
	a->sq_psn = rnd();
	a->dest_qp_num = one_in(2) ? some_qpn() : (uint32_t)rnd();
	a->qp_access_flags = access_flags();
	a->cap.max_send_wr = pick_cap(V.attr.max_qp_wr, 1024);
	a->cap.max_recv_wr = pick_cap(V.attr.max_qp_wr, 1024);
	a->cap.max_send_sge = pick_u32(8);
	a->cap.max_recv_sge = pick_u32(8);
	a->cap.max_inline_data = pick_u32(256);
	random_ah_attr(&a->ah_attr, 0);
	random_ah_attr(&a->alt_ah_attr, 0);
	a->pkey_index = one_in(2) ? 0 : rnd();
	a->alt_pkey_index = rnd();
	a->en_sqd_async_notify = below(2);
	a->sq_draining = below(2);
	a->max_rd_atomic = below(256);
	a->max_dest_rd_atomic = below(256);
	a->min_rnr_timer = below(256);
	a->port_num = below(one_in(2) ? 3 : 256);
	a->timeout = below(256);
	a->retry_cnt = below(256);
	a->rnr_retry = below(256);
	a->alt_port_num = below(4);
	a->alt_timeout = below(256);
	a->rate_limit = one_in(4) ? rnd() : 0;
	/* the defined mask bits, sometimes with undefined ones */
	return one_in(6) ? (int)rnd() : (int)(rnd() & ((1u << 21) - 1));
}

static void v_modify_qp(void)
{
	struct ibv_qp *qp = ANY(V.qp);
	struct ibv_qp_attr a;
	int mask, err;

	if (!qp)
		return;
	mask = one_in(3) ? qp_random_attr(&a) : qp_transition(qp, &a);
	snprintf(g_last, sizeof(g_last), "ibv_modify_qp(qpn %#x type %d state %d -> %d, mask %#x)",
		 qp->qp_num, qp->qp_type, qp->state, a.qp_state, mask);
	err = ibv_modify_qp(qp, &a, mask);
	record(C_modify_qp, err);
}

static void v_query_qp(void)
{
	struct ibv_qp *qp = ANY(V.qp);
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int mask = one_in(4) ? (int)rnd() : (int)(rnd() & ((1u << 21) - 1)), err;

	if (!qp)
		return;
	snprintf(g_last, sizeof(g_last), "ibv_query_qp(qpn %#x, mask %#x)", qp->qp_num, mask);
	err = ibv_query_qp(qp, &a, mask, &ia);
	record(C_query_qp, err);
}

static void v_destroy_qp(void)
{
	struct ibv_qp *qp = ANY(V.qp);
	int err;

	if (!qp)
		return;
	snprintf(g_last, sizeof(g_last), "ibv_destroy_qp(qpn %#x, state %d)", qp->qp_num,
		 qp->state);
	err = ibv_destroy_qp(qp);
	record(C_destroy_qp, err);
	if (!err)
		DROP(V.qp, qp);
}

/* ---- SRQ ---- */

static void v_create_srq(void)
{
	struct ibv_pd *pd = ANY(V.pd);
	struct ibv_srq_init_attr ia;
	struct ibv_srq *srq;
	int i = FREE(V.srq);

	if (!pd || i < 0)
		return;
	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = one_in(3) ? pick_cap(V.attr.max_srq_wr, 2048) : 1 + below(64);
	ia.attr.max_sge = one_in(3) ? pick_cap(V.attr.max_srq_sge, 64) : 1 + below(4);
	ia.attr.srq_limit = one_in(3) ? pick_u32(64) : 0;
	snprintf(g_last, sizeof(g_last), "ibv_create_srq(max_wr %u, max_sge %u, limit %u)",
		 ia.attr.max_wr, ia.attr.max_sge, ia.attr.srq_limit);
	srq = ibv_create_srq(pd, &ia);
	record(C_create_srq, srq ? 0 : errno);
	V.srq[i] = srq;
}

static void v_modify_srq(void)
{
	struct ibv_srq *srq = ANY(V.srq);
	struct ibv_srq_attr a;
	int mask = one_in(5) ? (int)rnd() : (int)below(4), err;

	if (!srq)
		return;
	a.max_wr = one_in(3) ? pick_cap(V.attr.max_srq_wr, 2048) : 1 + below(128);
	a.max_sge = pick_u32(8);
	a.srq_limit = one_in(3) ? pick_u32(128) : below(64);
	snprintf(g_last, sizeof(g_last), "ibv_modify_srq(mask %#x, max_wr %u, limit %u)", mask,
		 a.max_wr, a.srq_limit);
	err = ibv_modify_srq(srq, &a, mask);
	record(C_modify_srq, err);
}

static void v_query_srq(void)
{
	struct ibv_srq *srq = ANY(V.srq);
	struct ibv_srq_attr a;

	if (!srq)
		return;
	snprintf(g_last, sizeof(g_last), "ibv_query_srq");
	record(C_query_srq, ibv_query_srq(srq, &a));
}

static int srq_in_use(struct ibv_srq *srq)
{
	for (int i = 0; i < NQP; i++)
		if (V.qp[i] && V.qp[i]->srq == srq)
			return 1;
	return 0;
}

static void v_destroy_srq(void)
{
	struct ibv_srq *srq = ANY(V.srq);
	int busy, err;

	if (!srq)
		return;
	busy = srq_in_use(srq);
	snprintf(g_last, sizeof(g_last), "ibv_destroy_srq%s", busy ? " (in use)" : "");
	err = ibv_destroy_srq(srq);
	record(C_destroy_srq, err);
	check_busy("an SRQ", busy, err);
	if (!err)
		DROP(V.srq, srq);
}

/* ---- AH, MW, channels ---- */

static void v_create_ah(void)
{
	struct ibv_pd *pd = ANY(V.pd);
	struct ibv_ah_attr a;
	struct ibv_ah *ah;
	int i = FREE(V.ah);

	if (!pd || i < 0)
		return;
	random_ah_attr(&a, one_in(2));
	snprintf(g_last, sizeof(g_last), "ibv_create_ah(global %d, sgid_index %u, port %u)",
		 a.is_global, a.grh.sgid_index, a.port_num);
	ah = ibv_create_ah(pd, &a);
	record(C_create_ah, ah ? 0 : errno);
	V.ah[i] = ah;
}

static void v_destroy_ah(void)
{
	struct ibv_ah *ah = ANY(V.ah);
	int err;

	if (!ah)
		return;
	snprintf(g_last, sizeof(g_last), "ibv_destroy_ah");
	err = ibv_destroy_ah(ah);
	record(C_destroy_ah, err);
	if (!err)
		DROP(V.ah, ah);
}

static void v_alloc_mw(void)
{
	struct ibv_pd *pd = ANY(V.pd);
	struct ibv_mw *mw;
	int i = FREE(V.mw), type = one_in(2) ? IBV_MW_TYPE_1 : one_in(2) ? IBV_MW_TYPE_2 : 7;

	if (!pd || i < 0)
		return;
	snprintf(g_last, sizeof(g_last), "ibv_alloc_mw(type %d)", type);
	mw = ibv_alloc_mw(pd, type);
	record(C_alloc_mw, mw ? 0 : errno);
	V.mw[i] = mw;
}

static void v_dealloc_mw(void)
{
	struct ibv_mw *mw = ANY(V.mw);
	int err;

	if (!mw)
		return;
	snprintf(g_last, sizeof(g_last), "ibv_dealloc_mw");
	err = ibv_dealloc_mw(mw);
	record(C_dealloc_mw, err);
	if (!err)
		DROP(V.mw, mw);
}

static void v_create_channel(void)
{
	int i = FREE(V.ch);
	struct ibv_comp_channel *ch;

	if (i < 0)
		return;
	snprintf(g_last, sizeof(g_last), "ibv_create_comp_channel");
	ch = ibv_create_comp_channel(V.ctx);
	record(C_create_channel, ch ? 0 : errno);
	if (ch)
		fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	V.ch[i] = ch;
}

static void v_destroy_channel(void)
{
	struct ibv_comp_channel *ch = ANY(V.ch);
	int busy = 0, err;

	if (!ch)
		return;
	for (int i = 0; i < NCQ; i++)
		busy |= V.cq[i] && V.cq[i]->channel == ch;
	snprintf(g_last, sizeof(g_last), "ibv_destroy_comp_channel%s", busy ? " (in use)" : "");
	err = ibv_destroy_comp_channel(ch);	/* returns EBUSY without setting errno */
	record(C_destroy_channel, err);
	check_busy("a completion channel", busy, err);
	if (!err)
		DROP(V.ch, ch);
}

/* ---- data path ---- */

/* A random MR and the address WRs name its byte 0 by. */
static struct ibv_mr *any_mr(uint64_t *base)
{
	int start = below(NMR);

	for (int k = 0; k < NMR; k++) {
		int i = (start + k) % NMR;

		if (V.mr[i]) {
			*base = V.mr_iova[i];
			return V.mr[i];
		}
	}
	return NULL;
}

static void random_sges(struct ibv_sge *sge, int n, int inline_data)
{
	for (int i = 0; i < n; i++) {
		uint64_t base = 0, len;
		struct ibv_mr *mr = any_mr(&base);

		if (inline_data) {
			/* librxe copies inline data itself: readable, bounded lengths */
			sge[i].addr = pick_addr(&len, 1);
			sge[i].length = len > 256 ? below(257) : len;
			sge[i].lkey = rnd();
			continue;
		}
		if (mr && !one_in(4) && mr->length) {
			uint64_t off = below(mr->length);

			sge[i].addr = base + off;
			sge[i].length = one_in(4) ? pick_u32(mr->length) : below(mr->length - off + 1);
			sge[i].lkey = one_in(8) ? mr->rkey ^ 1 : mr->lkey;
		} else {
			sge[i].addr = pick_addr(&len, 0);
			sge[i].length = one_in(3) ? pick_u32(65536) : len;
			sge[i].lkey = mr && one_in(2) ? mr->lkey : (uint32_t)rnd();
		}
	}
}

static void v_post_send(void)
{
	static const int ops[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM,
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_LOCAL_INV, IBV_WR_SEND_WITH_INV, IBV_WR_TSO, IBV_WR_DRIVER1, 12, 31, 255,
	};
	struct ibv_qp *qp = ANY(V.qp);
	struct ibv_send_wr wr[4], *bad;
	struct ibv_sge sge[4][6];
	int n = 1 + below(4), err;

	if (!qp)
		return;
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < n; i++) {
		uint64_t base = 0;
		struct ibv_mr *mr = any_mr(&base);
		int inl = one_in(5);

		wr[i].wr_id = rnd();
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		wr[i].opcode = ops[below(sizeof(ops) / sizeof(ops[0]))];
		wr[i].send_flags = below(32) & ~IBV_SEND_INLINE;
		if (inl)
			wr[i].send_flags |= IBV_SEND_INLINE;
		wr[i].num_sge = below(one_in(4) ? 7 : 3);
		wr[i].sg_list = sge[i];
		random_sges(sge[i], wr[i].num_sge, inl);
		wr[i].imm_data = rnd();
		if (qp->qp_type == IBV_QPT_UD) {
			/* librxe reads wr.ud.ah of every WR on a UD QP, whatever the opcode */
			struct ibv_ah *ah = ANY(V.ah);

			if (!ah)
				return;
			wr[i].wr.ud.ah = ah;
			wr[i].wr.ud.remote_qpn = some_qpn();
			wr[i].wr.ud.remote_qkey = one_in(2) ? 0x11111111u : (uint32_t)rnd();
		} else if (wr[i].opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			   wr[i].opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr[i].wr.atomic.remote_addr = mr && !one_in(4) ?
				(base + below(mr->length + 8)) & ~7ull : rnd();
			wr[i].wr.atomic.rkey = mr && !one_in(4) ? mr->rkey : (uint32_t)rnd();
			wr[i].wr.atomic.compare_add = rnd();
			wr[i].wr.atomic.swap = rnd();
		} else {
			wr[i].wr.rdma.remote_addr = mr && !one_in(4) ?
				base + below(mr->length + 64) : rnd();
			wr[i].wr.rdma.rkey = mr && !one_in(4) ? mr->rkey : (uint32_t)rnd();
		}
	}
	snprintf(g_last, sizeof(g_last), "ibv_post_send(qpn %#x type %d state %d, %d WRs, first "
		 "opcode %d, %d SGEs, flags %#x)", qp->qp_num, qp->qp_type, qp->state, n,
		 wr[0].opcode, wr[0].num_sge, wr[0].send_flags);
	err = ibv_post_send(qp, wr, &bad);
	record(C_post_send, err);
}

static void v_post_recv(int srq_recv)
{
	struct ibv_recv_wr wr[4], *bad;
	struct ibv_sge sge[4][6];
	int n = 1 + below(4), err;
	struct ibv_qp *qp = srq_recv ? NULL : ANY(V.qp);
	struct ibv_srq *srq = srq_recv ? ANY(V.srq) : NULL;

	if (!qp && !srq)
		return;
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < n; i++) {
		wr[i].wr_id = rnd();
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		wr[i].num_sge = below(one_in(4) ? 7 : 3);
		wr[i].sg_list = sge[i];
		random_sges(sge[i], wr[i].num_sge, 0);
	}
	if (srq) {
		snprintf(g_last, sizeof(g_last), "ibv_post_srq_recv(%d WRs)", n);
		err = ibv_post_srq_recv(srq, wr, &bad);
		record(C_post_srq_recv, err);
	} else {
		snprintf(g_last, sizeof(g_last), "ibv_post_recv(qpn %#x state %d, %d WRs)",
			 qp->qp_num, qp->state, n);
		err = ibv_post_recv(qp, wr, &bad);
		record(C_post_recv, err);
	}
}

static void v_poll_cq(void)
{
	struct ibv_cq *cq = ANY(V.cq);
	struct ibv_wc wc[64];
	int ne = below(65), k;

	if (!cq)
		return;
	snprintf(g_last, sizeof(g_last), "ibv_poll_cq(ne %d)", ne);
	k = ibv_poll_cq(cq, ne, wc);
	record(C_poll_cq, k < 0 ? EINVAL : 0);
}

static void v_req_notify(void)
{
	struct ibv_cq *cq = ANY(V.cq);
	int sol = below(2);

	if (!cq)
		return;
	snprintf(g_last, sizeof(g_last), "ibv_req_notify_cq(solicited %d)", sol);
	record(C_req_notify_cq, ibv_req_notify_cq(cq, sol));
}

static void v_cq_event(void)
{
	struct ibv_comp_channel *ch = ANY(V.ch);
	struct ibv_cq *cq;
	void *cq_ctx;

	if (!ch)
		return;
	snprintf(g_last, sizeof(g_last), "ibv_get_cq_event (non-blocking)");
	if (ibv_get_cq_event(ch, &cq, &cq_ctx)) {
		record(C_get_cq_event, errno == EAGAIN ? 0 : errno);
		return;
	}
	ibv_ack_cq_events(cq, 1);
	record(C_get_cq_event, 0);
}

static void v_query(void)
{
	struct ibv_port_attr pa;
	struct ibv_device_attr_ex ax;
	union ibv_gid gid;
	uint16_t pkey;
	int err;

	switch (below(4)) {
	case 0:
		snprintf(g_last, sizeof(g_last), "ibv_query_port");
		err = ibv_query_port(V.ctx, below(4), &pa);
		break;
	case 1:
		snprintf(g_last, sizeof(g_last), "ibv_query_device_ex");
		err = ibv_query_device_ex(V.ctx, NULL, &ax);
		break;
	case 2:
		snprintf(g_last, sizeof(g_last), "ibv_query_gid");
		err = ibv_query_gid(V.ctx, below(3), below(V.gid_tbl_len + 4), &gid) ? errno : 0;
		break;
	default:
		snprintf(g_last, sizeof(g_last), "ibv_query_pkey");
		err = ibv_query_pkey(V.ctx, below(3), below(4), &pkey) ? errno : 0;
		break;
	}
	record(C_query, err);
}

/* ------------------------------------------------------------------ */
/* The final check                                                    */
/* ------------------------------------------------------------------ */

static int final_check(void)
{
	struct ibv_context *ctx = ibv_open_device(V.dev);
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	struct ibv_mr *mr;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	union ibv_gid gid;
	int gid_index, tbl, n = 0;
	uint8_t *buf;
	struct timespec t0, t;

	if (!ctx)
		failf("final check: ibv_open_device: %s", strerror(errno));
	gid_index = find_gid(ctx, &gid, &tbl);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	buf = map(16384, PROT_READ | PROT_WRITE);
	if (!pd || !cq)
		failf("final check: PD/CQ: %s", strerror(errno));
	mr = ibv_reg_mr(pd, buf, 16384, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		failf("final check: ibv_reg_mr: %s", strerror(errno));
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.send_cq = ia.recv_cq = cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	qp[0] = ibv_create_qp(pd, &ia);
	qp[1] = ibv_create_qp(pd, &ia);
	if (!qp[0] || !qp[1])
		failf("final check: ibv_create_qp: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.port_num = PORT;
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
			failf("final check: QP to INIT: %s", strerror(errno));
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = qp[!i]->qp_num;
		a.rq_psn = 100;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = gid;
		a.ah_attr.grh.sgid_index = gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = PORT;
		if (ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
			failf("final check: QP to RTR: %s", strerror(errno));
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 100;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		if (ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
			failf("final check: QP to RTS: %s", strerror(errno));
	}
	for (int i = 0; i < 4096; i++)
		buf[i] = (uint8_t)(i * 7 + g_seed);
	memset(buf + 8192, 0, 4096);
	sge = (struct ibv_sge){ (uintptr_t)buf, 4096, mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)buf + 8192;
	wr.wr.rdma.rkey = mr->rkey;
	if (ibv_post_send(qp[0], &wr, &bad))
		failf("final check: ibv_post_send: %s", strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!(n = ibv_poll_cq(cq, 1, &wc))) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 20)
			failf("final check: no completion of the RDMA WRITE in 20 s");
		usleep(1000);
	}
	if (n < 0 || wc.status != IBV_WC_SUCCESS)
		failf("final check: RDMA WRITE completed with %s",
		      n < 0 ? "a poll error" : ibv_wc_status_str(wc.status));
	if (memcmp(buf, buf + 8192, 4096))
		failf("final check: RDMA WRITE data differ");
	ibv_destroy_qp(qp[0]);
	ibv_destroy_qp(qp[1]);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

/* ------------------------------------------------------------------ */

static void one_call(void)
{
	static const struct {
		unsigned char weight;
		enum call c;
	} mix[] = {
		{ 3, C_alloc_pd }, { 2, C_dealloc_pd }, { 6, C_reg_mr }, { 3, C_reg_mr_iova },
		{ 4, C_dereg_mr }, { 1, C_rereg_mr }, { 4, C_create_cq }, { 3, C_resize_cq },
		{ 2, C_destroy_cq }, { 6, C_create_qp }, { 14, C_modify_qp }, { 3, C_query_qp },
		{ 3, C_destroy_qp }, { 2, C_create_srq }, { 2, C_modify_srq }, { 1, C_query_srq },
		{ 1, C_destroy_srq }, { 3, C_create_ah }, { 2, C_destroy_ah }, { 12, C_post_send },
		{ 6, C_post_recv }, { 3, C_post_srq_recv }, { 8, C_poll_cq }, { 2, C_req_notify_cq },
		{ 1, C_get_cq_event }, { 1, C_query }, { 1, C_alloc_mw }, { 1, C_dealloc_mw },
		{ 1, C_create_channel }, { 1, C_destroy_channel }, { 10, C_raw_write },
		{ 5, C_raw_ioctl }, { 2, C_raw_mmap }, { 3, C_ring_scribble },
	};
	static unsigned int total;
	unsigned int x;
	enum call c = C_query;

	if (!total)
		for (size_t i = 0; i < sizeof(mix) / sizeof(mix[0]); i++)
			total += mix[i].weight;
	if (one_in(4000)) {
		ctx_close();
		ctx_open();
		return;
	}
	if (one_in(3000)) {
		snprintf(g_last, sizeof(g_last), "closing the raw context");
		raw_close();
		raw_open(V.dev);
		record(C_raw_reopen, 0);
		return;
	}
	x = below(total);
	for (size_t i = 0; i < sizeof(mix) / sizeof(mix[0]); i++) {
		if (x < mix[i].weight) {
			c = mix[i].c;
			break;
		}
		x -= mix[i].weight;
	}
	switch (c) {
	case C_alloc_pd: v_alloc_pd(); break;
	case C_dealloc_pd: v_dealloc_pd(); break;
	case C_reg_mr: v_reg_mr(0); break;
	case C_reg_mr_iova: v_reg_mr(1); break;
	case C_dereg_mr: v_dereg_mr(); break;
	case C_rereg_mr: v_rereg_mr(); break;
	case C_create_cq: v_create_cq(); break;
	case C_resize_cq: v_resize_cq(); break;
	case C_destroy_cq: v_destroy_cq(); break;
	case C_create_qp: v_create_qp(); break;
	case C_modify_qp: v_modify_qp(); break;
	case C_query_qp: v_query_qp(); break;
	case C_destroy_qp: v_destroy_qp(); break;
	case C_create_srq: v_create_srq(); break;
	case C_modify_srq: v_modify_srq(); break;
	case C_query_srq: v_query_srq(); break;
	case C_destroy_srq: v_destroy_srq(); break;
	case C_create_ah: v_create_ah(); break;
	case C_destroy_ah: v_destroy_ah(); break;
	case C_post_send: v_post_send(); break;
	case C_post_recv: v_post_recv(0); break;
	case C_post_srq_recv: v_post_recv(1); break;
	case C_poll_cq: v_poll_cq(); break;
	case C_req_notify_cq: v_req_notify(); break;
	case C_get_cq_event: v_cq_event(); break;
	case C_query: v_query(); break;
	case C_alloc_mw: v_alloc_mw(); break;
	case C_dealloc_mw: v_dealloc_mw(); break;
	case C_create_channel: v_create_channel(); break;
	case C_destroy_channel: v_destroy_channel(); break;
	case C_raw_write: raw_write(); break;
	case C_raw_ioctl: raw_ioctl(); break;
	case C_raw_mmap: raw_mmap(); break;
	case C_ring_scribble: ring_scribble(); break;
	default: break;
	}
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void print_histogram(void)
{
	uint64_t ok = 0, bad = 0;

	printf("results (call: ok N, ERRNO N ...):\n");
	for (int c = 0; c < NCALLS; c++) {
		uint64_t sum = 0;

		for (int e = 0; e < NERR; e++)
			sum += g_hist[c][e];
		if (!sum)
			continue;
		printf("  %-16s", call_names[c]);
		for (int e = 0; e < NERR; e++) {
			if (!g_hist[c][e])
				continue;
			if (e == 0)
				printf(" ok %" PRIu64, g_hist[c][e]);
			else
				printf(" %s %" PRIu64, e < NERR - 1 && strerrorname_np(e) ?
				       strerrorname_np(e) : "other", g_hist[c][e]);
			if (e)
				bad += g_hist[c][e];
			else
				ok += g_hist[c][e];
		}
		printf("\n");
	}
	printf("calls: %" PRIu64 " succeeded, %" PRIu64 " failed with a clean errno\n", ok, bad);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	int n, opt, have_seed = 0;
	double t0, last, limit = 0;

	while ((opt = getopt(argc, argv, "d:s:n:t:vh")) != -1) {
		switch (opt) {
		case 'd': g_dev_name = optarg; break;
		case 's': g_seed = strtoull(optarg, NULL, 0); have_seed = 1; break;
		case 'n': g_count = strtoull(optarg, NULL, 0); break;
		case 't': limit = atof(optarg); break;
		case 'v': g_verbose = 1; break;
		default:
			fprintf(opt == 'h' ? stdout : stderr,
				"usage: rrxe_verbsfuzz [-d DEV] [-s SEED] [-n CALLS] [-t SECONDS] [-v]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!have_seed) {
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		g_seed = (uint64_t)t.tv_sec * 1000003u ^ t.tv_nsec;
	}
	g_rng = g_seed;
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* fds 0-2 must exist, or the device's descriptors would take their numbers */
	while (fcntl(0, F_GETFD) < 0 || fcntl(1, F_GETFD) < 0 || fcntl(2, F_GETFD) < 0)
		if (open("/dev/null", O_RDWR) < 0)
			break;
	signal(SIGSEGV, on_signal);
	signal(SIGBUS, on_signal);
	signal(SIGILL, on_signal);
	signal(SIGFPE, on_signal);
	signal(SIGABRT, on_signal);
	signal(SIGPIPE, SIG_IGN);

	list = ibv_get_device_list(&n);
	if (!list || !n)
		failf("no RDMA devices");
	for (int i = 0; i < n && !V.dev; i++)
		if (!g_dev_name || !strcmp(ibv_get_device_name(list[i]), g_dev_name))
			V.dev = list[i];
	if (!V.dev)
		failf("no device %s", g_dev_name);
	g_dev_name = ibv_get_device_name(V.dev);
	snprintf(g_replay, sizeof(g_replay), "rrxe_verbsfuzz -d %s -s %" PRIu64 " -n %" PRIu64,
		 g_dev_name, g_seed, g_count);
	printf("rrxe_verbsfuzz: seed %" PRIu64 "\nreplay: %s\n", g_seed, g_replay);

	setup_memory();
	ctx_open();
	raw_open(V.dev);
	t0 = last = now_s();
	for (g_calls = 0; g_made < g_count; g_calls++) {
		one_call();
		if (limit > 0 && !(g_calls % 64) && now_s() - t0 > limit) {
			printf("stopped by -t %g after %" PRIu64 " of %" PRIu64 " calls (the same "
			       "calls: rrxe_verbsfuzz -d %s -s %" PRIu64 " -n %" PRIu64 ")\n", limit,
			       g_made, g_count, g_dev_name, g_seed, g_made);
			break;
		}
		if (now_s() - last >= 10) {
			last = now_s();
			printf("[%5.0fs] %" PRIu64 " calls (%.0f/s)\n", last - t0, g_made,
			       g_made / (last - t0));
		}
	}
	t0 = now_s() - t0;
	printf("%" PRIu64 " calls in %.1f s (%.0f/s)\n", g_made, t0, g_made / t0);
	snprintf(g_last, sizeof(g_last), "closing both contexts at the end");
	ctx_close();
	raw_close();
	print_histogram();
	snprintf(g_last, sizeof(g_last), "final check");
	final_check();
	printf("final: a fresh context carried a verified RDMA WRITE\nPASS (seed %" PRIu64 ")\n",
	       g_seed);
	return 0;
}
