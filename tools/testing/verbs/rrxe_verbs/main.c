// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_verbs: verbs conformance tests for a soft-RoCE device, driven through
 * the distribution's stock libibverbs and librxe provider: the control verbs,
 * and (group "datapath") RC traffic between two QPs of the device.
 *
 * usage: rrxe_verbs [-d DEV] [-g GID_INDEX] [-n COUNT] [-v] [-l] [CASE...|GROUP...|all]
 *
 *   -d DEV        device name (default: the first device found)
 *   -g GID_INDEX  RoCE v2 GID table index to use (default: the first RoCE v2
 *                 GID holding an IPv4-mapped address, else any RoCE v2 GID)
 *   -n COUNT      objects created and destroyed by the "objects" case (10000)
 *   -v            verbose: print what each case checks
 *   -l            list the cases and exit
 *   CASE          case names; default: every case that is in no group.
 *   GROUP         the opt-in cases of a group: "slow" (objects) or
 *                 "datapath" (rc_loop, multi_sge, srq_limit, rnr,
 *                 cq_overflow: they need packets; the datapath cases use
 *                 the -g GID as both ends, so the device sends to its own
 *                 address); "all" runs every case.
 *
 * Output is TAP-like: "ok NAME" or "not ok NAME: reason" per case, then
 * "N passed, N failed". The exit status is 1 if any case failed, 2 on a usage
 * error. Each case opens its own device context and closes it at the end, so a
 * failing case cannot leave objects behind for the next one.
 *
 * The expected error numbers are those of upstream rdma_rxe with ib_core (the
 * reference: every case passes on rxe before it is used against rrxe).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <infiniband/verbs.h>

#define PORT 1

struct env {
	struct ibv_context *ctx;
	struct ibv_device_attr dev;
	struct ibv_port_attr port;
	int gid_index;
	union ibv_gid gid;
};

static struct ibv_device *g_dev;
static int g_gid_arg = -1;
static long g_count = 10000;
static int g_verbose;
static char g_reason[1024];

static void vlog(const char *fmt, ...)
{
	va_list ap;

	if (!g_verbose)
		return;
	va_start(ap, fmt);
	fputs("# ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
}

static const char *errname(int e)
{
	static char buf[32];

	switch (e) {
	case 0: return "0";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EIO: return "EIO";
	case EBADF: return "EBADF";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case ERANGE: return "ERANGE";
	case ENOSYS: return "ENOSYS";
	case ENODATA: return "ENODATA";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EOVERFLOW: return "EOVERFLOW";
	case ENXIO: return "ENXIO";
	case ETIMEDOUT: return "ETIMEDOUT";
	default:
		snprintf(buf, sizeof(buf), "errno %d", e);
		return buf;
	}
}

/*
 * libibverbs calls return 0 or a positive errno; a few provider paths return
 * -1 with errno set, or a negative errno. Normalise to a positive errno.
 */
static int rc_err(int rc)
{
	if (rc == -1)
		return errno ? errno : EIO;
	return rc < 0 ? -rc : rc;
}

/* ------------------------------------------------------------------ */
/* Object tracking: every object a case creates is destroyed after it, */
/* newest first, and each destroy verb must succeed.                   */
/* ------------------------------------------------------------------ */

enum kind { K_PD, K_MR, K_CQ, K_QP, K_SRQ, K_AH, K_CH, K_MAP };

struct tracked {
	enum kind k;
	void *p;
	size_t len;		/* K_MAP */
};

#define MAX_TRACKED 64
static struct tracked g_objs[MAX_TRACKED];
static int g_nobjs;

#define KIND(p) _Generic((p), \
	struct ibv_pd *: K_PD, \
	struct ibv_mr *: K_MR, \
	struct ibv_cq *: K_CQ, \
	struct ibv_qp *: K_QP, \
	struct ibv_srq *: K_SRQ, \
	struct ibv_ah *: K_AH, \
	struct ibv_comp_channel *: K_CH)

static const char *const kname[] = { "PD", "MR", "CQ", "QP", "SRQ", "AH", "channel", "mapping" };

static void track(enum kind k, void *p, size_t len)
{
	if (!p)
		return;
	if (g_nobjs == MAX_TRACKED) {
		fprintf(stderr, "rrxe_verbs: too many objects in one case\n");
		abort();
	}
	g_objs[g_nobjs].k = k;
	g_objs[g_nobjs].p = p;
	g_objs[g_nobjs].len = len;
	g_nobjs++;
}

/* Destroy one object with its verb; returns the verb's result. */
static int destroy_obj(enum kind k, void *p, size_t len)
{
	switch (k) {
	case K_PD: return ibv_dealloc_pd(p);
	case K_MR: return ibv_dereg_mr(p);
	case K_CQ: return ibv_destroy_cq(p);
	case K_QP: return ibv_destroy_qp(p);
	case K_SRQ: return ibv_destroy_srq(p);
	case K_AH: return ibv_destroy_ah(p);
	case K_CH: return ibv_destroy_comp_channel(p);
	case K_MAP: return munmap(p, len);
	}
	return EINVAL;
}

/* Destroy a tracked object now (OK(release(x)) checks the verb). */
static int release(void *p)
{
	int i, rc;

	for (i = g_nobjs - 1; i >= 0; i--) {
		if (g_objs[i].p != p)
			continue;
		rc = destroy_obj(g_objs[i].k, p, g_objs[i].len);
		if (rc)
			return rc;
		memmove(&g_objs[i], &g_objs[i + 1], (g_nobjs - i - 1) * sizeof(g_objs[0]));
		g_nobjs--;
		return 0;
	}
	fprintf(stderr, "rrxe_verbs: release of an untracked object\n");
	abort();
}

/* Destroy everything left, newest first; the first failure is described in g_reason. */
static int release_all(int check)
{
	int rc, bad = 0;

	while (g_nobjs > 0) {
		struct tracked *t = &g_objs[--g_nobjs];

		rc = destroy_obj(t->k, t->p, t->len);
		if (rc && check && !bad) {
			snprintf(g_reason, sizeof(g_reason), "destroying a %s: %s",
				 kname[t->k], errname(rc_err(rc)));
			bad = 1;
		}
	}
	return bad ? -1 : 0;
}

#define FAIL(...) do { \
	snprintf(g_reason, sizeof(g_reason), __VA_ARGS__); \
	return -1; \
} while (0)

#define CHECK(cond, ...) do { if (!(cond)) FAIL(__VA_ARGS__); } while (0)

/* A verb returning an int must succeed. */
#define OK(call) do { \
	int rc_ = (call); \
	if (rc_) \
		FAIL("%s failed: %s", #call, errname(rc_err(rc_))); \
} while (0)

/* A verb returning an int must fail with errno `want`. */
#define ERR(want, call, what) do { \
	int rc_ = (call); \
	if (!rc_) \
		FAIL("%s: succeeded, expected %s", what, errname(want)); \
	if (rc_err(rc_) != (want)) \
		FAIL("%s: got %s, expected %s", what, errname(rc_err(rc_)), errname(want)); \
	vlog("%s: %s as expected", what, errname(want)); \
} while (0)

/* A constructor must return non-NULL; the object is tracked. */
#define NEW(var, call) do { \
	errno = 0; \
	(var) = (call); \
	if (!(var)) \
		FAIL("%s failed: %s", #call, errname(errno)); \
	track(KIND(var), (var), 0); \
} while (0)

/*
 * A constructor must return NULL with errno `want`; an object created anyway
 * is tracked (and so destroyed after the case).
 */
#define NEW_ERR(want, tmp, call, what) do { \
	errno = 0; \
	(tmp) = (call); \
	if (tmp) { \
		track(KIND(tmp), (tmp), 0); \
		FAIL("%s: succeeded, expected %s", what, errname(want)); \
	} \
	if (errno != (want)) \
		FAIL("%s: got %s, expected %s", what, errname(errno), errname(want)); \
	vlog("%s: %s as expected", what, errname(want)); \
} while (0)

/* A tracked, filled, anonymous read/write mapping; NULL on failure. */
static void *page_buf(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0xa5, len);
	track(K_MAP, p, len);
	return p;
}

/* ------------------------------------------------------------------ */
/* Environment                                                        */
/* ------------------------------------------------------------------ */

static int is_v4mapped(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, pfx, sizeof(pfx));
}

/* Put `pfx: ` in front of the failure reason of a helper. */
static void prefix_reason(const char *pfx)
{
	char tmp[sizeof(g_reason)];

	snprintf(tmp, sizeof(tmp), "%s", g_reason);
	snprintf(g_reason, sizeof(g_reason), "%s: %.900s", pfx, tmp);
}

static const char *gid_str(const union ibv_gid *g)
{
	static char buf[INET6_ADDRSTRLEN];

	return inet_ntop(AF_INET6, g->raw, buf, sizeof(buf)) ? buf : "?";
}

/* Find the RoCE v2 GID to use: -g, else IPv4-mapped RoCE v2, else any RoCE v2. */
static int find_gid(struct env *e)
{
	struct ibv_gid_entry ent;
	int i, any = -1, v4 = -1;

	if (g_gid_arg >= 0) {
		if (ibv_query_gid(e->ctx, PORT, g_gid_arg, &e->gid))
			return -1;
		e->gid_index = g_gid_arg;
		return 0;
	}
	for (i = 0; i < e->port.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(e->ctx, PORT, i, &ent, 0))
			continue;
		if (ent.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (any < 0)
			any = i;
		if (v4 < 0 && is_v4mapped(&ent.gid))
			v4 = i;
	}
	i = v4 >= 0 ? v4 : any;
	if (i < 0)
		return -1;
	e->gid_index = i;
	return ibv_query_gid(e->ctx, PORT, i, &e->gid);
}

static int env_open(struct env *e)
{
	memset(e, 0, sizeof(*e));
	errno = 0;
	e->ctx = ibv_open_device(g_dev);
	if (!e->ctx) {
		snprintf(g_reason, sizeof(g_reason), "ibv_open_device: %s", errname(errno));
		return -1;
	}
	if (ibv_query_device(e->ctx, &e->dev)) {
		snprintf(g_reason, sizeof(g_reason), "ibv_query_device: %s", errname(errno));
		return -1;
	}
	if (ibv_query_port(e->ctx, PORT, &e->port)) {
		snprintf(g_reason, sizeof(g_reason), "ibv_query_port: %s", errname(errno));
		return -1;
	}
	if (find_gid(e)) {
		snprintf(g_reason, sizeof(g_reason), "no RoCE v2 GID on port %d", PORT);
		return -1;
	}
	return 0;
}

static void env_close(struct env *e)
{
	if (e->ctx && ibv_close_device(e->ctx))
		fprintf(stderr, "ibv_close_device failed: %s\n", errname(errno));
	e->ctx = NULL;
}

/* An address vector to the port's own RoCE v2 GID (loopback). */
static void self_ah_attr(struct env *e, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->grh.dgid = e->gid;
	ah->grh.sgid_index = e->gid_index;
	ah->grh.hop_limit = 64;
	ah->port_num = PORT;
	ah->sl = 0;
}

/* ------------------------------------------------------------------ */
/* device                                                             */
/* ------------------------------------------------------------------ */

static int t_device(struct env *e)
{
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa, pa2;
	struct ibv_gid_entry ent;
	union ibv_gid g;
	__be16 pkey;

	CHECK(!strcmp(ibv_get_device_name(e->ctx->device), ibv_get_device_name(g_dev)),
	      "context device name %s", ibv_get_device_name(e->ctx->device));

	/* ibv_query_device */
	CHECK(e->dev.phys_port_cnt == 1, "phys_port_cnt %u, expected 1", e->dev.phys_port_cnt);
	CHECK(e->dev.node_guid != 0, "node_guid is 0");
	CHECK(e->dev.max_qp > 0 && e->dev.max_cq > 0 && e->dev.max_mr > 0 &&
	      e->dev.max_pd > 0 && e->dev.max_srq > 0 && e->dev.max_ah > 0,
	      "zero object limits: qp %d cq %d mr %d pd %d srq %d ah %d",
	      e->dev.max_qp, e->dev.max_cq, e->dev.max_mr, e->dev.max_pd,
	      e->dev.max_srq, e->dev.max_ah);
	CHECK(e->dev.max_qp_wr > 0 && e->dev.max_sge > 0 && e->dev.max_cqe > 0 &&
	      e->dev.max_srq_wr > 0 && e->dev.max_srq_sge > 0 && e->dev.max_qp_rd_atom > 0,
	      "zero queue limits: qp_wr %d sge %d cqe %d srq_wr %d srq_sge %d rd_atom %d",
	      e->dev.max_qp_wr, e->dev.max_sge, e->dev.max_cqe,
	      e->dev.max_srq_wr, e->dev.max_srq_sge, e->dev.max_qp_rd_atom);
	CHECK(e->dev.max_mr_size > 0, "max_mr_size 0");
	CHECK(e->dev.device_cap_flags & IBV_DEVICE_SRQ_RESIZE,
	      "device_cap_flags 0x%x lacks SRQ_RESIZE", e->dev.device_cap_flags);
	CHECK(e->dev.atomic_cap != IBV_ATOMIC_NONE, "atomic_cap NONE");
	vlog("max_qp %d max_qp_wr %d max_sge %d max_cqe %d max_srq_wr %d max_srq_sge %d",
	     e->dev.max_qp, e->dev.max_qp_wr, e->dev.max_sge, e->dev.max_cqe,
	     e->dev.max_srq_wr, e->dev.max_srq_sge);

	/* ibv_query_device_ex agrees with ibv_query_device */
	memset(&dx, 0, sizeof(dx));
	OK(ibv_query_device_ex(e->ctx, NULL, &dx));
	CHECK(dx.orig_attr.max_qp == e->dev.max_qp && dx.orig_attr.max_cqe == e->dev.max_cqe &&
	      dx.orig_attr.max_mr_size == e->dev.max_mr_size &&
	      dx.orig_attr.node_guid == e->dev.node_guid &&
	      dx.orig_attr.device_cap_flags == e->dev.device_cap_flags,
	      "ibv_query_device_ex orig_attr differs from ibv_query_device");

	/* ibv_query_port */
	memset(&pa, 0, sizeof(pa));
	OK(ibv_query_port(e->ctx, PORT, &pa));
	CHECK(pa.state == IBV_PORT_ACTIVE, "port state %s", ibv_port_state_str(pa.state));
	CHECK(pa.link_layer == IBV_LINK_LAYER_ETHERNET, "link_layer %u, expected Ethernet",
	      pa.link_layer);
	CHECK(pa.gid_tbl_len > 0, "gid_tbl_len 0");
	CHECK(pa.pkey_tbl_len > 0, "pkey_tbl_len 0");
	CHECK(pa.active_mtu >= IBV_MTU_256 && pa.active_mtu <= pa.max_mtu,
	      "active_mtu %d max_mtu %d", pa.active_mtu, pa.max_mtu);
	ERR(EINVAL, ibv_query_port(e->ctx, 2, &pa2), "ibv_query_port(port 2)");

	/* ibv_query_gid / ibv_query_gid_ex: the RoCE v2 entry */
	OK(ibv_query_gid_ex(e->ctx, PORT, e->gid_index, &ent, 0));
	CHECK(ent.gid_type == IBV_GID_TYPE_ROCE_V2, "GID %d type %u, expected RoCE v2",
	      e->gid_index, ent.gid_type);
	CHECK(ent.port_num == PORT && ent.gid_index == (uint32_t)e->gid_index,
	      "gid entry port %u index %u", ent.port_num, ent.gid_index);
	CHECK(ent.ndev_ifindex != 0, "RoCE v2 GID has no netdev");
	OK(ibv_query_gid(e->ctx, PORT, e->gid_index, &g));
	CHECK(!memcmp(&g, &ent.gid, sizeof(g)), "ibv_query_gid %s differs from ibv_query_gid_ex",
	      gid_str(&g));
	memset(&ent, 0, sizeof(ent));
	CHECK(ibv_query_gid_ex(e->ctx, PORT, pa.gid_tbl_len, &ent, 0) != 0,
	      "ibv_query_gid_ex(index %d = gid_tbl_len) succeeded: %s", pa.gid_tbl_len,
	      gid_str(&ent.gid));
	vlog("RoCE v2 GID[%d] = %s", e->gid_index, gid_str(&e->gid));

	/* ibv_query_pkey */
	OK(ibv_query_pkey(e->ctx, PORT, 0, &pkey));
	CHECK(ntohs(pkey) == 0xffff, "pkey[0] 0x%04x, expected 0xffff", ntohs(pkey));
	CHECK(ibv_query_pkey(e->ctx, PORT, pa.pkey_tbl_len, &pkey) != 0,
	      "ibv_query_pkey(index %d = pkey_tbl_len) succeeded", pa.pkey_tbl_len);
	CHECK(ibv_query_pkey(e->ctx, PORT, 0xffff, &pkey) != 0,
	      "ibv_query_pkey(index 0xffff) succeeded");
	return 0;
}

/* ------------------------------------------------------------------ */
/* QP helpers                                                         */
/* ------------------------------------------------------------------ */

static void qp_init_attr(struct ibv_cq *cq, enum ibv_qp_type t, struct ibv_srq *srq,
			 struct ibv_qp_init_attr *ia)
{
	memset(ia, 0, sizeof(*ia));
	ia->send_cq = cq;
	ia->recv_cq = cq;
	ia->srq = srq;
	ia->qp_type = t;
	ia->cap.max_send_wr = 16;
	ia->cap.max_recv_wr = srq ? 0 : 16;
	ia->cap.max_send_sge = 2;
	ia->cap.max_recv_sge = srq ? 0 : 2;
	ia->cap.max_inline_data = 64;
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type t,
			      struct ibv_srq *srq, struct ibv_qp_init_attr *ia)
{
	qp_init_attr(cq, t, srq, ia);
	return ibv_create_qp(pd, ia);
}

static const char *qps(int s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return s >= 0 && s < (int)(sizeof(n) / sizeof(n[0])) ? n[s] : "?";
}

/* query_qp reports state `want`. */
#define QSTATE(qp, want) do { \
	struct ibv_qp_attr qa_; \
	struct ibv_qp_init_attr qi_; \
	OK(ibv_query_qp((qp), &qa_, IBV_QP_STATE, &qi_)); \
	CHECK(qa_.qp_state == (want), "qp 0x%x state %s, expected %s", (qp)->qp_num, \
	      qps(qa_.qp_state), qps(want)); \
	CHECK((qp)->state == (want), "qp->state %s, expected %s", qps((qp)->state), qps(want)); \
} while (0)

/* A new QP is in RESET and query_qp reports at least the requested caps. */
static int check_caps(struct ibv_qp *qp, const struct ibv_qp_init_attr *req, int has_srq)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	OK(ibv_query_qp(qp, &qa, IBV_QP_CAP | IBV_QP_STATE, &qi));
	CHECK(qa.qp_state == IBV_QPS_RESET, "new QP in state %s", qps(qa.qp_state));
	CHECK(qi.qp_type == req->qp_type, "init_attr qp_type %d", qi.qp_type);
	CHECK(qa.cap.max_send_wr >= req->cap.max_send_wr &&
	      qa.cap.max_send_sge >= req->cap.max_send_sge &&
	      qa.cap.max_inline_data >= req->cap.max_inline_data,
	      "send caps wr %u sge %u inline %u < requested %u %u %u",
	      qa.cap.max_send_wr, qa.cap.max_send_sge, qa.cap.max_inline_data,
	      req->cap.max_send_wr, req->cap.max_send_sge, req->cap.max_inline_data);
	if (!has_srq)
		CHECK(qa.cap.max_recv_wr >= req->cap.max_recv_wr &&
		      qa.cap.max_recv_sge >= req->cap.max_recv_sge,
		      "recv caps wr %u sge %u < requested %u %u",
		      qa.cap.max_recv_wr, qa.cap.max_recv_sge,
		      req->cap.max_recv_wr, req->cap.max_recv_sge);
	CHECK(qi.cap.max_send_wr >= req->cap.max_send_wr, "init_attr send_wr %u",
	      qi.cap.max_send_wr);
	CHECK(qp->qp_num != 0 && qp->qp_num != 1, "qp_num %u", qp->qp_num);
	return 0;
}

static int to_init(struct ibv_qp *qp, enum ibv_qp_type t)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = PORT;
	if (t == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
		if (t == IBV_QPT_RC)
			a.qp_access_flags |= IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &a, mask);
}

static int to_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = s;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

/* INIT->RTR attributes (the IB spec's required set for the type); returns the mask. */
static int rtr_attr(struct env *e, struct ibv_qp *qp, enum ibv_qp_type t,
		    struct ibv_qp_attr *a)
{
	int mask = IBV_QP_STATE;

	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	if (t == IBV_QPT_UD)
		return mask;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = qp->qp_num;
	a->rq_psn = 0x1234;
	self_ah_attr(e, &a->ah_attr);
	mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (t == IBV_QPT_RC) {
		a->max_dest_rd_atomic = 4;
		a->min_rnr_timer = 12;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	return mask;
}

/* RTR->RTS attributes; returns the mask. */
static int rts_attr(enum ibv_qp_type t, struct ibv_qp_attr *a)
{
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->sq_psn = 0x4321;
	if (t == IBV_QPT_RC) {
		a->timeout = 14;
		a->retry_cnt = 7;
		a->rnr_retry = 7;
		a->max_rd_atomic = 4;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return mask;
}

#define QP_ALL_ATTRS (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | \
		      IBV_QP_QKEY | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
		      IBV_QP_RQ_PSN | IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | \
		      IBV_QP_MIN_RNR_TIMER | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | \
		      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)

/* Walk one QP RESET->INIT->RTR->RTS->ERR->RESET->INIT, checking query_qp at each step. */
static int walk_qp(struct env *e, struct ibv_qp *qp, enum ibv_qp_type t)
{
	struct ibv_qp_attr a, q;
	struct ibv_qp_init_attr qi;
	int mask;

	QSTATE(qp, IBV_QPS_RESET);
	OK(to_init(qp, t));
	memset(&q, 0, sizeof(q));
	OK(ibv_query_qp(qp, &q, QP_ALL_ATTRS, &qi));
	CHECK(q.qp_state == IBV_QPS_INIT, "after INIT: state %s", qps(q.qp_state));
	CHECK(q.port_num == PORT && q.pkey_index == 0, "INIT: port %u pkey_index %u",
	      q.port_num, q.pkey_index);
	if (t == IBV_QPT_UD)
		CHECK(q.qkey == 0x11111111, "INIT: qkey 0x%x", q.qkey);
	else
		CHECK(q.qp_access_flags & IBV_ACCESS_REMOTE_WRITE, "INIT: access 0x%x",
		      q.qp_access_flags);

	mask = rtr_attr(e, qp, t, &a);
	OK(ibv_modify_qp(qp, &a, mask));
	memset(&q, 0, sizeof(q));
	OK(ibv_query_qp(qp, &q, QP_ALL_ATTRS, &qi));
	CHECK(q.qp_state == IBV_QPS_RTR, "after RTR: state %s", qps(q.qp_state));
	if (t != IBV_QPT_UD) {
		CHECK(q.path_mtu == IBV_MTU_1024, "RTR: path_mtu %d", q.path_mtu);
		CHECK(q.dest_qp_num == qp->qp_num, "RTR: dest_qp_num 0x%x, expected 0x%x",
		      q.dest_qp_num, qp->qp_num);
		CHECK(q.rq_psn == 0x1234, "RTR: rq_psn 0x%x", q.rq_psn);
		CHECK(q.ah_attr.is_global && !memcmp(&q.ah_attr.grh.dgid, &e->gid, 16),
		      "RTR: ah_attr global %d dgid %s", q.ah_attr.is_global,
		      gid_str(&q.ah_attr.grh.dgid));
		CHECK(q.ah_attr.grh.sgid_index == e->gid_index, "RTR: sgid_index %u",
		      q.ah_attr.grh.sgid_index);
		CHECK(q.ah_attr.port_num == PORT, "RTR: ah port %u", q.ah_attr.port_num);
	}
	if (t == IBV_QPT_RC) {
		CHECK(q.max_dest_rd_atomic == 4, "RTR: max_dest_rd_atomic %u", q.max_dest_rd_atomic);
		CHECK(q.min_rnr_timer == 12, "RTR: min_rnr_timer %u", q.min_rnr_timer);
	}

	mask = rts_attr(t, &a);
	OK(ibv_modify_qp(qp, &a, mask));
	memset(&q, 0, sizeof(q));
	OK(ibv_query_qp(qp, &q, QP_ALL_ATTRS, &qi));
	CHECK(q.qp_state == IBV_QPS_RTS, "after RTS: state %s", qps(q.qp_state));
	CHECK(q.sq_psn == 0x4321, "RTS: sq_psn 0x%x", q.sq_psn);
	if (t == IBV_QPT_RC) {
		CHECK(q.timeout == 14 && q.retry_cnt == 7 && q.rnr_retry == 7,
		      "RTS: timeout %u retry_cnt %u rnr_retry %u", q.timeout, q.retry_cnt,
		      q.rnr_retry);
		CHECK(q.max_rd_atomic == 4, "RTS: max_rd_atomic %u", q.max_rd_atomic);
	}

	OK(to_state(qp, IBV_QPS_ERR));
	QSTATE(qp, IBV_QPS_ERR);
	OK(to_state(qp, IBV_QPS_RESET));
	QSTATE(qp, IBV_QPS_RESET);
	/* A reset QP can be brought up again. */
	OK(to_init(qp, t));
	QSTATE(qp, IBV_QPS_INIT);
	return 0;
}

/*
 * A tracked 4 KiB buffer and MR, and a receive WR over `nsge` 1 KiB pieces of it
 * (wr->num_sge = 1; the other SGEs are there to exceed a queue's max_sge).
 */
static int recv_setup(struct ibv_pd *pd, struct ibv_sge *sge, int nsge, struct ibv_recv_wr *wr)
{
	struct ibv_mr *mr;
	char *buf;
	int i;

	buf = page_buf(4096);
	CHECK(buf, "mmap failed");
	NEW(mr, ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE));
	for (i = 0; i < nsge; i++) {
		sge[i].addr = (uintptr_t)(buf + i * 1024);
		sge[i].length = 1024;
		sge[i].lkey = mr->lkey;
	}
	memset(wr, 0, sizeof(*wr));
	wr->sg_list = sge;
	wr->num_sge = 1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* pd                                                                 */
/* ------------------------------------------------------------------ */

static int t_pd(struct env *e)
{
	struct ibv_pd *pd, *pd2;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia;
	void *buf;

	NEW(pd, ibv_alloc_pd(e->ctx));
	NEW(pd2, ibv_alloc_pd(e->ctx));
	CHECK(pd->handle != pd2->handle, "two PDs share handle %u", pd->handle);
	OK(release(pd2));

	/* A PD in use by an MR cannot go away. */
	buf = page_buf(4096);
	CHECK(buf, "mmap failed");
	NEW(mr, ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE));
	ERR(EBUSY, ibv_dealloc_pd(pd), "ibv_dealloc_pd with a live MR");
	OK(release(mr));

	/* Nor by a QP; a CQ in use by a QP cannot either. */
	NEW(cq, ibv_create_cq(e->ctx, 8, NULL, NULL, 0));
	NEW(qp, make_qp(pd, cq, IBV_QPT_RC, NULL, &ia));
	ERR(EBUSY, ibv_dealloc_pd(pd), "ibv_dealloc_pd with a live QP");
	ERR(EBUSY, ibv_destroy_cq(cq), "ibv_destroy_cq with a live QP");
	OK(release(qp));
	OK(release(cq));
	OK(release(pd));
	return 0;
}

/* ------------------------------------------------------------------ */
/* mr                                                                 */
/* ------------------------------------------------------------------ */

static int t_mr(struct env *e)
{
	const size_t len = 64 * 1024;
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	static const int single[] = {
		0, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
	};
	struct ibv_pd *pd;
	struct ibv_mr *mr1, *mr2, *mr3, *tmp;
	uint8_t *buf, *ro;
	void *gone;
	size_t i;

	NEW(pd, ibv_alloc_pd(e->ctx));
	buf = page_buf(len);
	CHECK(buf, "mmap failed");

	NEW(mr1, ibv_reg_mr(pd, buf, len, rw));
	CHECK(mr1->addr == buf && mr1->length == len && mr1->pd == pd,
	      "mr1 addr %p length %zu, expected %p %zu", mr1->addr, mr1->length,
	      (void *)buf, len);
	CHECK(mr1->lkey != 0 && mr1->rkey != 0, "mr1 lkey 0x%x rkey 0x%x", mr1->lkey, mr1->rkey);

	/* A second MR over part of the same pages, at an unaligned offset. */
	NEW(mr2, ibv_reg_mr(pd, buf + 100, 5000, rw));
	CHECK(mr2->lkey != 0 && mr2->rkey != 0, "mr2 lkey 0x%x rkey 0x%x", mr2->lkey, mr2->rkey);
	CHECK(mr2->lkey != mr1->lkey && mr2->rkey != mr1->rkey,
	      "MR keys not distinct: lkey 0x%x/0x%x rkey 0x%x/0x%x",
	      mr1->lkey, mr2->lkey, mr1->rkey, mr2->rkey);
	CHECK(mr2->handle != mr1->handle, "two MRs share handle %u", mr1->handle);

	/* Each access right on its own (remote write/atomic with local write). */
	for (i = 0; i < sizeof(single) / sizeof(single[0]); i++) {
		NEW(mr3, ibv_reg_mr(pd, buf, 4096, single[i]));
		CHECK(mr3->lkey != 0 && mr3->lkey != mr1->lkey && mr3->lkey != mr2->lkey,
		      "access 0x%x: lkey 0x%x", single[i], mr3->lkey);
		OK(release(mr3));
	}

	/* Remote write/atomic require local write (IB spec o10-36.2.1). */
	NEW_ERR(EINVAL, tmp, ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE),
		"REMOTE_WRITE without LOCAL_WRITE");
	NEW_ERR(EINVAL, tmp, ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_ATOMIC),
		"REMOTE_ATOMIC without LOCAL_WRITE");

	/* Memory that is not mapped. */
	gone = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(gone != MAP_FAILED, "mmap failed");
	munmap(gone, 2 * 4096);
	NEW_ERR(EFAULT, tmp, ibv_reg_mr(pd, gone, 2 * 4096, IBV_ACCESS_LOCAL_WRITE),
		"MR over unmapped memory");

	/* Read-only memory: fine without write access, EFAULT with it. */
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(ro != MAP_FAILED, "mmap failed");
	track(K_MAP, ro, 4096);
	NEW(mr3, ibv_reg_mr(pd, ro, 4096, IBV_ACCESS_REMOTE_READ));
	OK(release(mr3));
	NEW_ERR(EFAULT, tmp, ibv_reg_mr(pd, ro, 4096, IBV_ACCESS_LOCAL_WRITE),
		"LOCAL_WRITE MR over read-only memory");

	/* Zero length. */
	NEW_ERR(EINVAL, tmp, ibv_reg_mr(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE), "zero-length MR");
	return 0;
}

/* ------------------------------------------------------------------ */
/* cq                                                                 */
/* ------------------------------------------------------------------ */

/* poll() on a completion channel for `ms`: 1 if readable, 0 if not, -1 on error. */
static int channel_ready(struct ibv_comp_channel *ch, int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	int n = poll(&pfd, 1, ms);

	return n < 0 ? -1 : n > 0 && (pfd.revents & POLLIN);
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int t_cq(struct env *e)
{
	struct ibv_cq *cq1, *cq100, *cqmax, *tmp, *chcq, *ev_cq;
	struct ibv_comp_channel *ch;
	struct ibv_wc wc[4];
	void *ev_ctx;
	int n;

	NEW(cq1, ibv_create_cq(e->ctx, 1, NULL, NULL, 0));
	CHECK(cq1->cqe >= 1, "cqe=1: got %d", cq1->cqe);
	NEW(cq100, ibv_create_cq(e->ctx, 100, (void *)0x1234, NULL, 0));
	CHECK(cq100->cqe >= 100, "cqe=100: got %d", cq100->cqe);
	CHECK(cq100->cq_context == (void *)0x1234, "cq_context not kept");
	NEW(cqmax, ibv_create_cq(e->ctx, e->dev.max_cqe, NULL, NULL, 0));
	CHECK(cqmax->cqe >= e->dev.max_cqe, "cqe=max_cqe %d: got %d", e->dev.max_cqe, cqmax->cqe);
	OK(release(cqmax));

	NEW_ERR(EINVAL, tmp, ibv_create_cq(e->ctx, e->dev.max_cqe + 1, NULL, NULL, 0),
		"cqe = max_cqe + 1");
	NEW_ERR(EINVAL, tmp, ibv_create_cq(e->ctx, 0, NULL, NULL, 0), "cqe = 0");
	NEW_ERR(EINVAL, tmp, ibv_create_cq(e->ctx, 1, NULL, NULL, e->ctx->num_comp_vectors),
		"comp_vector = num_comp_vectors");

	/* Empty CQs poll empty (librxe reads the ring in user space). */
	n = ibv_poll_cq(cq100, 4, wc);
	CHECK(n == 0, "poll on an empty CQ returned %d", n);

	/* Resize bigger, then smaller. */
	OK(ibv_resize_cq(cq100, 500));
	CHECK(cq100->cqe >= 500, "resize to 500: cqe %d", cq100->cqe);
	n = ibv_poll_cq(cq100, 4, wc);
	CHECK(n == 0, "poll after resize returned %d", n);
	OK(ibv_resize_cq(cq100, 10));
	CHECK(cq100->cqe >= 10, "resize to 10: cqe %d", cq100->cqe);
	n = ibv_poll_cq(cq100, 4, wc);
	CHECK(n == 0, "poll after resize returned %d", n);
	ERR(EINVAL, ibv_resize_cq(cq100, e->dev.max_cqe + 1), "resize to max_cqe + 1");
	CHECK(cq100->cqe >= 10, "failed resize changed cqe to %d", cq100->cqe);
	n = ibv_poll_cq(cq100, 4, wc);
	CHECK(n == 0, "poll after a failed resize returned %d", n);

	OK(ibv_req_notify_cq(cq1, 0));
	OK(ibv_req_notify_cq(cq1, 1));

	/* Completion channel: armed, no traffic, so no event. */
	NEW(ch, ibv_create_comp_channel(e->ctx));
	NEW(chcq, ibv_create_cq(e->ctx, 16, NULL, ch, 0));
	CHECK(chcq->channel == ch, "cq->channel not set");
	OK(ibv_req_notify_cq(chcq, 0));
	n = channel_ready(ch, 300);
	CHECK(n == 0, "poll() on the completion channel: %d with no traffic", n);
	CHECK(set_nonblock(ch->fd) == 0, "fcntl O_NONBLOCK failed");
	errno = 0;
	n = ibv_get_cq_event(ch, &ev_cq, &ev_ctx);
	CHECK(n != 0, "ibv_get_cq_event returned an event with no traffic");
	CHECK(errno == EAGAIN, "ibv_get_cq_event: %s, expected EAGAIN", errname(errno));
	ERR(EBUSY, ibv_destroy_comp_channel(ch), "destroy a channel with a CQ on it");
	OK(release(chcq));
	OK(release(ch));
	return 0;
}

/* ------------------------------------------------------------------ */
/* qp                                                                 */
/* ------------------------------------------------------------------ */

static int t_qp(struct env *e)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	static const char *const tname[] = { "RC", "UC", "UD" };
	struct ibv_pd *pd;
	struct ibv_cq *cq, *cq2;
	struct ibv_qp *qp[3], *tmp;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int i, mask;

	NEW(pd, ibv_alloc_pd(e->ctx));
	NEW(cq, ibv_create_cq(e->ctx, 64, NULL, NULL, 0));

	for (i = 0; i < 3; i++) {
		NEW(qp[i], make_qp(pd, cq, types[i], NULL, &ia));
		if (check_caps(qp[i], &ia, 0)) {
			prefix_reason(tname[i]);
			return -1;
		}
		CHECK(i == 0 || qp[i]->qp_num != qp[i - 1]->qp_num, "QPs share qp_num");
	}
	for (i = 0; i < 3; i++) {
		if (walk_qp(e, qp[i], types[i])) {
			prefix_reason(tname[i]);
			return -1;
		}
	}

	/* Separate send and receive CQs; no inline data. */
	NEW(cq2, ibv_create_cq(e->ctx, 8, NULL, NULL, 0));
	qp_init_attr(cq, IBV_QPT_RC, NULL, &ia);
	ia.recv_cq = cq2;
	ia.cap.max_inline_data = 0;
	NEW(tmp, ibv_create_qp(pd, &ia));
	CHECK(tmp->send_cq == cq && tmp->recv_cq == cq2, "send_cq/recv_cq not kept");
	OK(release(tmp));

	/* Creation limits. */
	qp_init_attr(cq, IBV_QPT_RC, NULL, &ia);
	ia.cap.max_send_wr = e->dev.max_qp_wr + 1;
	NEW_ERR(EINVAL, tmp, ibv_create_qp(pd, &ia), "max_send_wr = max_qp_wr + 1");
	qp_init_attr(cq, IBV_QPT_RC, NULL, &ia);
	ia.cap.max_recv_wr = e->dev.max_qp_wr + 1;
	NEW_ERR(EINVAL, tmp, ibv_create_qp(pd, &ia), "max_recv_wr = max_qp_wr + 1");
	qp_init_attr(cq, IBV_QPT_RC, NULL, &ia);
	ia.cap.max_send_sge = e->dev.max_sge + 1;
	NEW_ERR(EINVAL, tmp, ibv_create_qp(pd, &ia), "max_send_sge = max_sge + 1");
	qp_init_attr(cq, IBV_QPT_RC, NULL, &ia);
	ia.cap.max_recv_sge = e->dev.max_sge + 1;
	NEW_ERR(EINVAL, tmp, ibv_create_qp(pd, &ia), "max_recv_sge = max_sge + 1");
	qp_init_attr(cq, IBV_QPT_RC, NULL, &ia);
	ia.cap.max_inline_data = 1 << 20;
	NEW_ERR(EINVAL, tmp, ibv_create_qp(pd, &ia), "max_inline_data = 1 MiB");

	/* Illegal transitions on RC (qp[0] is reused: reset it). */
	OK(to_state(qp[0], IBV_QPS_RESET));
	mask = rts_attr(IBV_QPT_RC, &a);
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, mask), "RC RESET->RTS");
	QSTATE(qp[0], IBV_QPS_RESET);
	mask = rtr_attr(e, qp[0], IBV_QPT_RC, &a);
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, mask), "RC RESET->RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = PORT;
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, IBV_QP_STATE | IBV_QP_PORT),
	    "RC RESET->INIT without PKEY_INDEX and ACCESS_FLAGS");
	QSTATE(qp[0], IBV_QPS_RESET);
	a.port_num = 2;
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX |
				  IBV_QP_ACCESS_FLAGS), "RC RESET->INIT with port 2");
	QSTATE(qp[0], IBV_QPS_RESET);
	OK(to_init(qp[0], IBV_QPT_RC));
	mask = rts_attr(IBV_QPT_RC, &a);
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, mask), "RC INIT->RTS (skipping RTR)");
	QSTATE(qp[0], IBV_QPS_INIT);
	mask = rtr_attr(e, qp[0], IBV_QPT_RC, &a);
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, mask & ~IBV_QP_DEST_QPN),
	    "RC INIT->RTR without DEST_QPN");
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, mask & ~IBV_QP_AV), "RC INIT->RTR without AV");
	ERR(EINVAL, ibv_modify_qp(qp[0], &a,
				  mask & ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)),
	    "RC INIT->RTR without MAX_DEST_RD_ATOMIC/MIN_RNR_TIMER");
	QSTATE(qp[0], IBV_QPS_INIT);
	OK(ibv_modify_qp(qp[0], &a, mask));
	mask = rts_attr(IBV_QPT_RC, &a);
	a.max_rd_atomic = e->dev.max_qp_rd_atom + 1;
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, mask),
	    "RC RTR->RTS with max_rd_atomic > max_qp_rd_atom");
	QSTATE(qp[0], IBV_QPS_RTR);
	mask = rts_attr(IBV_QPT_RC, &a);
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, mask & ~IBV_QP_SQ_PSN), "RC RTR->RTS without SQ_PSN");
	QSTATE(qp[0], IBV_QPS_RTR);
	/* UD: INIT needs a Q_Key. */
	OK(to_state(qp[2], IBV_QPS_RESET));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = PORT;
	ERR(EINVAL, ibv_modify_qp(qp[2], &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX),
	    "UD RESET->INIT without QKEY");
	QSTATE(qp[2], IBV_QPS_RESET);
	return 0;
}

/* ------------------------------------------------------------------ */
/* srq                                                                */
/* ------------------------------------------------------------------ */

static int t_srq(struct env *e)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq, *tmp;
	struct ibv_qp *qp;
	struct ibv_srq_init_attr si;
	struct ibv_srq_attr sa;
	struct ibv_qp_init_attr ia, qi;
	struct ibv_qp_attr qa;
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	int i, r;

	NEW(pd, ibv_alloc_pd(e->ctx));
	NEW(cq, ibv_create_cq(e->ctx, 64, NULL, NULL, 0));

	memset(&si, 0, sizeof(si));
	si.attr.max_wr = 64;
	si.attr.max_sge = 2;
	NEW(srq, ibv_create_srq(pd, &si));
	CHECK(si.attr.max_wr >= 64 && si.attr.max_sge >= 2, "create returned max_wr %u max_sge %u",
	      si.attr.max_wr, si.attr.max_sge);
	memset(&sa, 0, sizeof(sa));
	OK(ibv_query_srq(srq, &sa));
	CHECK(sa.max_wr >= 64 && sa.max_sge >= 2, "query: max_wr %u max_sge %u", sa.max_wr, sa.max_sge);
	CHECK(sa.srq_limit == 0, "query: srq_limit %u, expected 0", sa.srq_limit);

	/* Arm the limit. */
	memset(&sa, 0, sizeof(sa));
	sa.srq_limit = 10;
	OK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT));
	OK(ibv_query_srq(srq, &sa));
	CHECK(sa.srq_limit == 10, "srq_limit %u after arming 10", sa.srq_limit);
	sa.srq_limit = e->dev.max_srq_wr + 1u;
	ERR(EINVAL, ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), "srq_limit > max_srq_wr");
	sa.srq_limit = 100000;
	ERR(EINVAL, ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), "srq_limit 100000 > SRQ size");

	/* Resize (IB_DEVICE_SRQ_RESIZE). */
	memset(&sa, 0, sizeof(sa));
	sa.max_wr = 256;
	OK(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR));
	OK(ibv_query_srq(srq, &sa));
	CHECK(sa.max_wr >= 256, "max_wr %u after resize to 256", sa.max_wr);
	CHECK(sa.srq_limit == 10, "srq_limit %u after resize, expected 10", sa.srq_limit);
	sa.max_wr = e->dev.max_srq_wr + 1u;
	ERR(EINVAL, ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), "resize to max_srq_wr + 1");
	sa.max_wr = 5;
	ERR(EINVAL, ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), "resize below the armed limit");
	OK(ibv_query_srq(srq, &sa));
	CHECK(sa.max_wr >= 256, "max_wr %u after a failed resize", sa.max_wr);

	/* post_srq_recv goes to the user-space ring: at least max_wr fit. */
	if (recv_setup(pd, &sge, 1, &wr))
		return -1;
	for (i = 0, r = 0; i < 100000 && !r; i++) {
		wr.wr_id = i;
		r = ibv_post_srq_recv(srq, &wr, &bad);
	}
	CHECK(r != 0, "the SRQ never filled up");
	CHECK(i - 1 >= 256, "SRQ full after %d WRs, max_wr 256", i - 1);
	vlog("SRQ took %d WRs (max_wr 256): %s when full", i - 1, errname(rc_err(r)));

	/* A QP on the SRQ keeps the SRQ alive. */
	NEW(qp, make_qp(pd, cq, IBV_QPT_RC, srq, &ia));
	CHECK(qp->srq == srq, "qp->srq not set");
	OK(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qi));
	CHECK(qi.srq == srq, "query_qp init_attr.srq not set");
	ERR(EBUSY, ibv_destroy_srq(srq), "destroy an SRQ with a QP on it");
	OK(release(qp));

	/* Creation limits. */
	memset(&si, 0, sizeof(si));
	si.attr.max_wr = e->dev.max_srq_wr + 1u;
	si.attr.max_sge = 1;
	NEW_ERR(EINVAL, tmp, ibv_create_srq(pd, &si), "max_wr = max_srq_wr + 1");
	si.attr.max_wr = 16;
	si.attr.max_sge = e->dev.max_srq_sge + 1u;
	NEW_ERR(EINVAL, tmp, ibv_create_srq(pd, &si), "max_sge = max_srq_sge + 1");
	return 0;
}

/* ------------------------------------------------------------------ */
/* ah                                                                 */
/* ------------------------------------------------------------------ */

static int t_ah(struct env *e)
{
	struct ibv_pd *pd;
	struct ibv_ah *ah, *ah2, *tmp;
	struct ibv_ah_attr aa;
	struct ibv_gid_entry ent;
	int i, n = 0;

	NEW(pd, ibv_alloc_pd(e->ctx));
	self_ah_attr(e, &aa);
	NEW(ah, ibv_create_ah(pd, &aa));
	CHECK(ah->pd == pd, "ah->pd not set");
	NEW(ah2, ibv_create_ah(pd, &aa));
	CHECK(ah2->handle != ah->handle, "two AHs share handle %u", ah->handle);
	ERR(EBUSY, ibv_dealloc_pd(pd), "ibv_dealloc_pd with a live AH");
	OK(release(ah2));

	/* One AH from every RoCE v2 GID to itself (IPv4-mapped, IPv6, link-local). */
	for (i = 0; i < e->port.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(e->ctx, PORT, i, &ent, 0) ||
		    ent.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		self_ah_attr(e, &aa);
		aa.grh.sgid_index = i;
		aa.grh.dgid = ent.gid;
		errno = 0;
		tmp = ibv_create_ah(pd, &aa);
		CHECK(tmp, "AH from RoCE v2 GID[%d] %s: %s", i, gid_str(&ent.gid), errname(errno));
		track(K_AH, tmp, 0);
		OK(release(tmp));
		n++;
	}
	vlog("AHs from %d RoCE v2 GIDs", n);

	self_ah_attr(e, &aa);
	aa.grh.sgid_index = e->port.gid_tbl_len;
	NEW_ERR(EINVAL, tmp, ibv_create_ah(pd, &aa), "sgid_index = gid_tbl_len");
	self_ah_attr(e, &aa);
	aa.port_num = 2;
	NEW_ERR(EINVAL, tmp, ibv_create_ah(pd, &aa), "AH on port 2");
	return 0;
}

/* ------------------------------------------------------------------ */
/* fastpath: librxe's user-space rings without traffic                */
/* ------------------------------------------------------------------ */

static int t_fastpath(struct env *e)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia;
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge[3];
	struct ibv_wc wc[8];
	int i, n, r;

	NEW(pd, ibv_alloc_pd(e->ctx));
	NEW(cq, ibv_create_cq(e->ctx, 64, NULL, NULL, 0));
	NEW(qp, make_qp(pd, cq, IBV_QPT_RC, NULL, &ia));
	OK(to_init(qp, IBV_QPT_RC));
	if (recv_setup(pd, sge, 3, &wr))
		return -1;
	wr.wr_id = 1;
	bad = NULL;
	OK(ibv_post_recv(qp, &wr, &bad));
	CHECK(bad == NULL, "bad_wr set on success");

	n = ibv_poll_cq(cq, 8, wc);
	CHECK(n == 0, "poll on an idle CQ returned %d", n);

	/* More SGEs than the RQ was created with. */
	wr.num_sge = 3;
	bad = NULL;
	r = ibv_post_recv(qp, &wr, &bad);
	CHECK(r != 0, "post_recv with 3 SGEs on a 2-SGE RQ succeeded");
	CHECK(bad == &wr, "bad_wr not set on failure");

	/* Fill the RQ: at least max_recv_wr (16) fit, then it reports full. */
	wr.num_sge = 1;
	for (i = 1, r = 0; i < 100000 && !r; i++) {
		wr.wr_id = i + 1;
		r = ibv_post_recv(qp, &wr, &bad);
	}
	CHECK(r != 0, "the RQ never filled up");
	CHECK(i - 1 >= 16, "RQ full after %d WRs, requested 16", i - 1);
	vlog("RQ took %d WRs (requested 16): %s when full", i - 1, errname(rc_err(r)));

	n = ibv_poll_cq(cq, 8, wc);
	CHECK(n == 0, "poll returned %d with nothing sent", n);
	return 0;
}

/* ------------------------------------------------------------------ */
/* flush: a QP moved to ERR flushes its posted receives to the CQ     */
/* ------------------------------------------------------------------ */

static int t_flush(struct env *e)
{
	const int nrecv = 5;
	struct ibv_pd *pd;
	struct ibv_cq *cq, *ev_cq;
	struct ibv_comp_channel *ch;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia;
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc[16];
	void *ev_ctx;
	int i, n, got = 0, tries;

	NEW(pd, ibv_alloc_pd(e->ctx));
	NEW(ch, ibv_create_comp_channel(e->ctx));
	NEW(cq, ibv_create_cq(e->ctx, 32, (void *)0xc0ffee, ch, 0));
	NEW(qp, make_qp(pd, cq, IBV_QPT_RC, NULL, &ia));
	OK(to_init(qp, IBV_QPT_RC));
	if (recv_setup(pd, &sge, 1, &wr))
		return -1;
	for (i = 0; i < nrecv; i++) {
		wr.wr_id = 100 + i;
		OK(ibv_post_recv(qp, &wr, &bad));
	}
	OK(ibv_req_notify_cq(cq, 0));
	CHECK(channel_ready(ch, 100) == 0, "completion event before anything happened");

	OK(to_state(qp, IBV_QPS_ERR));

	/* The flushed receives raise a completion event... */
	n = channel_ready(ch, 5000);
	CHECK(n == 1, "no completion event within 5 s of moving the QP to ERR");
	OK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx));
	ibv_ack_cq_events(ev_cq, 1);	/* before any check: destroy_cq waits for acks */
	CHECK(ev_cq == cq && ev_ctx == (void *)0xc0ffee, "event for cq %p ctx %p",
	      (void *)ev_cq, ev_ctx);

	/* ...and complete in order with IBV_WC_WR_FLUSH_ERR. */
	for (tries = 0; got < nrecv && tries < 50; tries++) {
		n = ibv_poll_cq(cq, 16, wc);
		CHECK(n >= 0, "poll_cq returned %d", n);
		for (i = 0; i < n; i++, got++) {
			CHECK(got < nrecv, "more than %d completions", nrecv);
			CHECK(wc[i].wr_id == (uint64_t)(100 + got), "completion %d: wr_id %" PRIu64,
			      got, wc[i].wr_id);
			CHECK(wc[i].status == IBV_WC_WR_FLUSH_ERR, "completion %d: status %s", got,
			      ibv_wc_status_str(wc[i].status));
			CHECK(wc[i].qp_num == qp->qp_num, "completion %d: qp_num 0x%x", got,
			      wc[i].qp_num);
		}
		if (got < nrecv)
			usleep(100 * 1000);
	}
	CHECK(got == nrecv, "%d of %d receives flushed", got, nrecv);
	n = ibv_poll_cq(cq, 16, wc);
	CHECK(n == 0, "poll after the flush returned %d", n);
	return 0;
}

/* ------------------------------------------------------------------ */
/* cleanup: closing a context with live objects frees them            */
/* ------------------------------------------------------------------ */

static int t_cleanup(struct env *e)
{
	struct env e2;
	struct ibv_pd *pd;
	struct ibv_qp_init_attr ia;
	struct ibv_srq_init_attr si;
	struct ibv_ah_attr aa;
	struct ibv_comp_channel *ch[4];
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	void *buf;
	int i, rc = -1;

	/* Everything is left for ibv_close_device (in a second, untracked context). */
	if (env_open(&e2)) {
		prefix_reason("second context");
		env_close(&e2);
		return -1;
	}
	memset(ch, 0, sizeof(ch));
	buf = page_buf(8192);
	if (!buf) {
		snprintf(g_reason, sizeof(g_reason), "mmap failed");
		goto out;
	}
	self_ah_attr(e, &aa);
	for (i = 0; i < 4; i++) {
		memset(&si, 0, sizeof(si));
		si.attr.max_wr = 16;
		si.attr.max_sge = 1;
		ch[i] = ibv_create_comp_channel(e2.ctx);
		if (!(pd = ibv_alloc_pd(e2.ctx)) ||
		    !ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ) ||
		    !ch[i] ||
		    !(cq = ibv_create_cq(e2.ctx, 32, NULL, ch[i], 0)) ||
		    ibv_req_notify_cq(cq, 0) ||
		    !(srq = ibv_create_srq(pd, &si)) ||
		    !(qp = make_qp(pd, cq, IBV_QPT_RC, NULL, &ia)) || to_init(qp, IBV_QPT_RC) ||
		    !make_qp(pd, cq, IBV_QPT_RC, srq, &ia) ||
		    !(qp = make_qp(pd, cq, IBV_QPT_UD, NULL, &ia)) || to_init(qp, IBV_QPT_UD) ||
		    !ibv_create_ah(pd, &aa)) {
			snprintf(g_reason, sizeof(g_reason), "creating objects, round %d: %s", i,
				 errname(errno));
			goto out;
		}
	}
	rc = 0;
out:
	if (ibv_close_device(e2.ctx)) {
		snprintf(g_reason, sizeof(g_reason), "ibv_close_device with live objects: %s",
			 errname(errno));
		rc = -1;
	}
	/*
	 * The channels outlive the context. libibverbs still counts the CQs the
	 * kernel freed on close (ibv_destroy_comp_channel says EBUSY), so close the
	 * event files themselves: the kernel must cope with them going last.
	 */
	for (i = 0; i < 4; i++)
		if (ch[i] && close(ch[i]->fd) && !rc) {
			snprintf(g_reason, sizeof(g_reason), "close(channel fd) after close: %s",
				 errname(errno));
			rc = -1;
		}
	return rc;
}

/* ------------------------------------------------------------------ */
/* objects: create/destroy churn (run under KASAN/kmemleak/lockdep)   */
/* ------------------------------------------------------------------ */

static int t_objects(struct env *e)
{
	struct ibv_pd *pd, *p;
	struct ibv_cq *cq, *c;
	struct ibv_mr *m;
	struct ibv_qp *q;
	struct ibv_ah *a;
	struct ibv_qp_init_attr ia;
	struct ibv_ah_attr aa;
	struct timespec t0, t1;
	char *buf;
	long i;

	NEW(pd, ibv_alloc_pd(e->ctx));
	NEW(cq, ibv_create_cq(e->ctx, 16, NULL, NULL, 0));
	buf = page_buf(3 * 4096);
	CHECK(buf, "mmap failed");
	self_ah_attr(e, &aa);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < g_count; i++) {
		errno = 0;
		switch (i % 5) {
		case 0:
			p = ibv_alloc_pd(e->ctx);
			CHECK(p, "object %ld: alloc PD: %s", i, errname(errno));
			OK(ibv_dealloc_pd(p));
			break;
		case 1:
			m = ibv_reg_mr(pd, buf + (i % 7) * 8, 2 * 4096,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
			CHECK(m, "object %ld: reg MR: %s", i, errname(errno));
			OK(ibv_dereg_mr(m));
			break;
		case 2:
			c = ibv_create_cq(e->ctx, 1 + (int)(i % 300), NULL, NULL, 0);
			CHECK(c, "object %ld: create CQ: %s", i, errname(errno));
			OK(ibv_destroy_cq(c));
			break;
		case 3:
			q = make_qp(pd, cq, (i / 5) % 2 ? IBV_QPT_UD : IBV_QPT_RC, NULL, &ia);
			CHECK(q, "object %ld: create QP: %s", i, errname(errno));
			OK(ibv_destroy_qp(q));
			break;
		case 4:
			a = ibv_create_ah(pd, &aa);
			CHECK(a, "object %ld: create AH: %s", i, errname(errno));
			OK(ibv_destroy_ah(a));
			break;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	vlog("%ld objects in %.1f s", g_count,
	     (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}

/* ------------------------------------------------------------------ */
/* datapath: an RC connection between two QPs of the device           */
/* ------------------------------------------------------------------ */

/*
 * Both QPs use the port's RoCE v2 GID (-g) as source and destination, so the
 * packets go to the device's own address: rxe (and rrxe) loop them back inside
 * the kernel. A is the requester of every operation, B the responder.
 */
#define DP_BUF		(64 * 1024)	/* each QP's buffer and MR */
#define DP_WAIT_MS	5000		/* a completion or event later than this fails */
#define DP_BURST	64
#define DP_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
/* A's first PSN is just below the 24-bit wrap: multi-packet messages cross it. */
#define PSN_A		0xfffff0
#define PSN_B		0x000123

struct rc_pair {
	struct ibv_cq *cq_a, *cq_b;	/* A's and B's CQ (send and receive) */
	struct ibv_qp *a, *b;
	uint8_t *buf_a, *buf_b;
	struct ibv_mr *mr_a, *mr_b;	/* DP_ACCESS over the whole buffer */
};

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* RESET->INIT->RTR->RTS of an RC QP towards peer_qpn on the port's own GID. */
static int rc_connect(struct env *e, struct ibv_qp *qp, uint32_t peer_qpn, uint32_t sq_psn,
		      uint32_t rq_psn, int rnr_retry, int retry_cnt)
{
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = PORT;
	a.qp_access_flags = DP_ACCESS;
	OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			 IBV_QP_ACCESS_FLAGS));
	/* path_mtu 1024, AV to the own GID (hop_limit 64), max_dest_rd_atomic 4 */
	mask = rtr_attr(e, qp, IBV_QPT_RC, &a);
	a.dest_qp_num = peer_qpn;
	a.rq_psn = rq_psn;
	OK(ibv_modify_qp(qp, &a, mask));
	/* timeout 14, max_rd_atomic 4 */
	mask = rts_attr(IBV_QPT_RC, &a);
	a.sq_psn = sq_psn;
	a.rnr_retry = rnr_retry;
	a.retry_cnt = retry_cnt;
	OK(ibv_modify_qp(qp, &a, mask));
	QSTATE(qp, IBV_QPS_RTS);
	return 0;
}

/* The SGE and inline limits of `cap`, if not NULL (max_recv_sge only without an SRQ). */
static void dp_caps(struct ibv_qp_init_attr *ia, const struct ibv_qp_cap *cap)
{
	if (!cap)
		return;
	ia->cap.max_send_sge = cap->max_send_sge;
	if (!ia->srq)
		ia->cap.max_recv_sge = cap->max_recv_sge;
	ia->cap.max_inline_data = cap->max_inline_data;
}

/*
 * Two RC QPs on `pd` connected to each other, each with its own CQ, buffer and
 * MR; B takes its receives from `srq` if not NULL. rnr_retry and retry_cnt
 * apply to both; B's CQ is created with cqe_b entries, A's with 4 * DP_BURST.
 * The QPs have 2 * DP_BURST WRs per queue and qp_init_attr's SGE and inline
 * limits, or those of `cap` if not NULL (B's max_recv_sge stays 0 on an SRQ).
 */
static int rc_pair_ex(struct env *e, struct ibv_pd *pd, struct ibv_srq *srq, int rnr_retry,
		      int retry_cnt, int cqe_b, const struct ibv_qp_cap *cap, struct rc_pair *p)
{
	struct ibv_qp_init_attr ia;

	memset(p, 0, sizeof(*p));
	NEW(p->cq_a, ibv_create_cq(e->ctx, 4 * DP_BURST, NULL, NULL, 0));
	NEW(p->cq_b, ibv_create_cq(e->ctx, cqe_b, NULL, NULL, 0));
	p->buf_a = page_buf(DP_BUF);
	p->buf_b = page_buf(DP_BUF);
	CHECK(p->buf_a && p->buf_b, "mmap failed");
	NEW(p->mr_a, ibv_reg_mr(pd, p->buf_a, DP_BUF, DP_ACCESS));
	NEW(p->mr_b, ibv_reg_mr(pd, p->buf_b, DP_BUF, DP_ACCESS));
	qp_init_attr(p->cq_a, IBV_QPT_RC, NULL, &ia);
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 2 * DP_BURST;
	dp_caps(&ia, cap);
	NEW(p->a, ibv_create_qp(pd, &ia));
	qp_init_attr(p->cq_b, IBV_QPT_RC, srq, &ia);
	ia.cap.max_send_wr = 2 * DP_BURST;
	if (!srq)
		ia.cap.max_recv_wr = 2 * DP_BURST;
	dp_caps(&ia, cap);
	NEW(p->b, ibv_create_qp(pd, &ia));
	if (rc_connect(e, p->a, p->b->qp_num, PSN_A, PSN_B, rnr_retry, retry_cnt)) {
		prefix_reason("connecting QP A");
		return -1;
	}
	if (rc_connect(e, p->b, p->a->qp_num, PSN_B, PSN_A, rnr_retry, retry_cnt)) {
		prefix_reason("connecting QP B");
		return -1;
	}
	vlog("RC QP A 0x%x <-> QP B 0x%x%s, GID[%d] %s, rnr_retry %d, retry_cnt %d",
	     p->a->qp_num, p->b->qp_num, srq ? " (B on an SRQ)" : "", e->gid_index,
	     gid_str(&e->gid), rnr_retry, retry_cnt);
	return 0;
}

/* rc_pair_ex with retry_cnt 7, B's CQ as large as A's and the default caps. */
static int rc_pair(struct env *e, struct ibv_pd *pd, struct ibv_srq *srq, int rnr_retry,
		   struct rc_pair *p)
{
	return rc_pair_ex(e, pd, srq, rnr_retry, 7, 4 * DP_BURST, NULL, p);
}

static struct ibv_sge *set_sge(struct ibv_sge *sge, void *addr, uint32_t len, uint32_t lkey)
{
	sge->addr = (uintptr_t)addr;
	sge->length = len;
	sge->lkey = lkey;
	return sge;
}

/* A signaled single-SGE send WR; the caller sets the remote, immediate or atomic fields. */
static void send_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, enum ibv_wr_opcode op,
		    uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = set_sge(sge, addr, len, lkey);
	wr->num_sge = 1;
	wr->opcode = op;
	wr->send_flags = IBV_SEND_SIGNALED;
}

/* A single-SGE receive WR. */
static void recv_wr(struct ibv_recv_wr *wr, struct ibv_sge *sge, uint64_t wr_id, void *addr,
		    uint32_t len, uint32_t lkey)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = set_sge(sge, addr, len, lkey);
	wr->num_sge = 1;
}

/* Post one receive of len bytes at addr (B's MR) to B's RQ. */
static int post_recv_b(struct rc_pair *p, uint64_t wr_id, void *addr, uint32_t len)
{
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge;

	recv_wr(&wr, &sge, wr_id, addr, len, p->mr_b->lkey);
	OK(ibv_post_recv(p->b, &wr, &bad));
	return 0;
}

/* Post one WR to A's SQ. */
static int post_a(struct rc_pair *p, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	OK(ibv_post_send(p->a, wr, &bad));
	return 0;
}

static const char *wc_opname(enum ibv_wc_opcode op)
{
	static char buf[16];

	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default:
		snprintf(buf, sizeof(buf), "opcode %d", op);
		return buf;
	}
}

/* Collect exactly n completions from cq, waiting at most DP_WAIT_MS (never blocks). */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, const char *what)
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
static int cq_empty(struct ibv_cq *cq, const char *what)
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
 * it undefined for SEND/WRITE), and for receives the immediate: `imm` (network
 * order) or, if NULL, none.
 */
static int check_wc(const struct ibv_wc *wc, const char *what, struct ibv_qp *qp,
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
static int expect_wc(struct ibv_cq *cq, const char *what, struct ibv_qp *qp, uint64_t wr_id,
		     enum ibv_wc_status status, enum ibv_wc_opcode op, long len,
		     const __be32 *imm)
{
	struct ibv_wc wc;

	if (poll_n(cq, &wc, 1, what))
		return -1;
	return check_wc(&wc, what, qp, wr_id, status, op, len, imm);
}

/* A byte pattern without short periods (a misplaced packet shows), per seed. */
static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;
	uint32_t x;

	for (i = 0; i < len; i++) {
		x = seed * 0x9e3779b1u ^ (uint32_t)i * 0x85ebca6bu;
		x ^= x >> 13;
		x *= 0xc2b2ae35u;
		p[i] = (uint8_t)(x ^ (x >> 16));
	}
}

/* got[0..len) must equal want[0..len). */
static int same(const uint8_t *got, const uint8_t *want, size_t len, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		CHECK(got[i] == want[i], "%s: data differs at byte %zu of %zu: 0x%02x, expected 0x%02x",
		      what, i, len, got[i], want[i]);
	return 0;
}

/* p[0..len) must still hold the filler byte c. */
static int untouched(const uint8_t *p, size_t len, uint8_t c, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		CHECK(p[i] == c, "%s: byte %zu written (0x%02x)", what, i, p[i]);
	return 0;
}

/*
 * Wait up to ms for an async event of `type` on object `obj` (a QP, SRQ or CQ);
 * every event read is acknowledged at once and logged. 1 if it came, 0 if not,
 * -1 on error.
 */
static int wait_event(struct env *e, enum ibv_event_type type, void *obj, int ms)
{
	struct pollfd pfd = { .fd = e->ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	struct timespec t0;
	long left;
	void *what;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		left = ms - ms_since(&t0);
		n = poll(&pfd, 1, left > 0 ? (int)left : 0);
		CHECK(n >= 0, "poll(async_fd): %s", errname(errno));
		if (n == 0 || !(pfd.revents & POLLIN))
			return 0;
		OK(ibv_get_async_event(e->ctx, &ev));
		switch (ev.event_type) {
		case IBV_EVENT_CQ_ERR:
			what = ev.element.cq;
			break;
		case IBV_EVENT_SRQ_ERR:
		case IBV_EVENT_SRQ_LIMIT_REACHED:
			what = ev.element.srq;
			break;
		default:
			what = ev.element.qp;
			break;
		}
		/* Before any check: destroying the object waits for the acknowledgement. */
		ibv_ack_async_event(&ev);
		vlog("async event %s on %p after %ld ms", ibv_event_type_str(ev.event_type), what,
		     ms_since(&t0));
		if (ev.event_type == type && what == obj)
			return 1;
	}
}

static int t_rc_loop(struct env *e)
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

static int t_srq_limit(struct env *e)
{
	const int nrecv = 16, limit = 8, msg = 32;
	struct ibv_srq_init_attr si;
	struct ibv_srq_attr sa;
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
	return 0;
}

static int t_rnr(struct env *e)
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

/* Wait ms for async events; the number of `type` on obj that came (all are acknowledged). */
static int count_events(struct env *e, enum ibv_event_type type, void *obj, int ms)
{
	struct timespec t0;
	long left;
	int n = 0, r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((left = ms - ms_since(&t0)) > 0) {
		r = wait_event(e, type, obj, (int)left);
		if (r < 0)
			return -1;
		if (!r)
			break;
		n++;
	}
	return n;
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
static int t_cq_overflow(struct env *e)
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

/* multi_sge: gather and scatter lists of several SGEs. */
#define MS_SGE		3	/* max_send_sge and max_recv_sge of its QPs */
#define MS_INLINE	128	/* and max_inline_data */
#define MS_LEN		4001	/* 1 + 1000 + 3000 bytes: 4 packets at MTU 1024 */
#define MS_ROOM		0xee	/* filler of memory nothing may write */

/*
 * An lkey of another PD in a gather or scatter list is a local protection
 * error (IB spec: the L_Key does not name a region of the QP's PD), and that
 * is what rxe reports for an RDMA READ's scatter list (rxe_comp.c do_read:
 * copy_data fails, the WQE completes with IB_WC_LOC_PROT_ERR).
 *
 * For a SEND's gather list rxe differs. copy_data's -EINVAL (lookup_mr finds
 * the MR in another PD) becomes IB_WC_LOC_QP_OP_ERR in rxe_requester (it
 * keeps IB_WC_LOC_PROT_ERR for -EFAULT). The requester then moves the QP to
 * ERR before the completer has reported that WQE. The completer finds the QP
 * in ERR and flushes the whole send queue, so with rxe (7.3, observed) the
 * failed SEND itself completes with IBV_WC_WR_FLUSH_ERR. No packet is sent.
 * The case accepts the spec's status, the one rxe sets and the flush that rxe
 * delivers. It still requires that the SEND fails, that no data reaches B and
 * that the WR behind it is flushed.
 */
static const enum ibv_wc_status ms_foreign_send[] = {
	IBV_WC_LOC_PROT_ERR, IBV_WC_LOC_QP_OP_ERR, IBV_WC_WR_FLUSH_ERR,
};
static const enum ibv_wc_status ms_foreign_read[] = { IBV_WC_LOC_PROT_ERR };

/* Concatenate the bytes of n SGEs into out (the message a gather list makes); its length. */
static size_t gather(uint8_t *out, const struct ibv_sge *sge, int n)
{
	size_t off = 0;
	int i;

	for (i = 0; i < n; i++) {
		memcpy(out + off, (const void *)(uintptr_t)sge[i].addr, sge[i].length);
		off += sge[i].length;
	}
	return off;
}

/*
 * msg[0..len) landed across the n SGEs in order, each filled before the next,
 * and the room left in them (after the message) still holds the filler c.
 */
static int scattered(const struct ibv_sge *sge, int n, const uint8_t *msg, size_t len,
		     uint8_t c, const char *what)
{
	const uint8_t *p;
	size_t off = 0, k;
	char w[96];
	int i;

	for (i = 0; i < n; i++) {
		p = (const uint8_t *)(uintptr_t)sge[i].addr;
		k = len - off < sge[i].length ? len - off : sge[i].length;
		snprintf(w, sizeof(w), "%s, SGE %d (%u bytes, message bytes %zu..%zu)", what, i,
			 sge[i].length, off, off + k);
		if (same(p, msg + off, k, w) || untouched(p + k, sge[i].length - k, c, w))
			return -1;
		off += k;
	}
	CHECK(off == len, "%s: %zu bytes of room for a %zu-byte message", what, off, len);
	return 0;
}

/* Every byte of buf[0..size) outside the n SGEs (those in it) still holds the filler c. */
static int untouched_outside(const uint8_t *buf, size_t size, const struct ibv_sge *sge, int n,
			     uint8_t c, const char *what)
{
	static uint8_t in[DP_BUF];
	uintptr_t b = (uintptr_t)buf, a;
	size_t i;
	int k;

	CHECK(size <= sizeof(in), "%s: buffer of %zu bytes", what, size);
	memset(in, 0, size);
	for (k = 0; k < n; k++) {
		a = (uintptr_t)sge[k].addr;
		if (a >= b && a + sge[k].length <= b + size)
			memset(in + (a - b), 1, sge[k].length);
	}
	for (i = 0; i < size; i++)
		CHECK(in[i] || buf[i] == c, "%s: byte %zu outside the target written (0x%02x)", what,
		      i, buf[i]);
	return 0;
}

/* A signaled send WR over n SGEs. */
static void send_wr_sges(struct ibv_send_wr *wr, struct ibv_sge *sge, int n,
			 enum ibv_wr_opcode op, uint64_t wr_id)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = n;
	wr->opcode = op;
	wr->send_flags = IBV_SEND_SIGNALED;
}

/* Post one receive over n SGEs to qp's RQ. */
static int post_recv_sges(struct ibv_qp *qp, struct ibv_sge *sge, int n, uint64_t wr_id)
{
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sge;
	wr.num_sge = n;
	OK(ibv_post_recv(qp, &wr, &bad));
	return 0;
}

/*
 * A's WR `first` (3 SGEs, one naming the lkey of an MR of another PD, over the
 * buffer y) completes with one of status[0..nstatus), the WR `next` behind it
 * is flushed, A ends in ERR, nothing reaches B's CQ and y stays untouched.
 * Async events that come are acknowledged and logged.
 */
static int foreign_lkey(struct env *e, struct rc_pair *p, struct ibv_send_wr *first,
			struct ibv_send_wr *next, const enum ibv_wc_status *status, int nstatus,
			const uint8_t *y, const char *what)
{
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc[2];
	char w[96];
	int i, n;

	first->next = next;
	OK(ibv_post_send(p->a, first, &bad));
	if (poll_n(p->cq_a, wc, 2, what))
		return -1;
	for (i = 0; i < nstatus && wc[0].status != status[i]; i++)
		;
	CHECK(i < nstatus, "%s: status %s (vendor_err 0x%x, wr_id %" PRIu64 "), expected %s%s",
	      what, ibv_wc_status_str(wc[0].status), wc[0].vendor_err, wc[0].wr_id,
	      ibv_wc_status_str(status[0]), nstatus > 1 ? " or what rxe reports" : "");
	if (check_wc(&wc[0], what, p->a, first->wr_id, wc[0].status, 0, -1, NULL))
		return -1;
	vlog("%s: %s (vendor_err 0x%x)", what, ibv_wc_status_str(wc[0].status), wc[0].vendor_err);
	snprintf(w, sizeof(w), "%s, the WR behind it", what);
	if (check_wc(&wc[1], w, p->a, next->wr_id, IBV_WC_WR_FLUSH_ERR, 0, -1, NULL))
		return -1;
	QSTATE(p->a, IBV_QPS_ERR);
	usleep(100 * 1000);
	snprintf(w, sizeof(w), "%s, B's CQ", what);
	if (cq_empty(p->cq_a, what) || cq_empty(p->cq_b, w))
		return -1;
	snprintf(w, sizeof(w), "%s, the other PD's buffer", what);
	if (untouched(y, 4096, MS_ROOM, w))
		return -1;
	n = count_events(e, IBV_EVENT_QP_FATAL, p->a, 300);
	if (n < 0)
		return -1;
	vlog("%s: the WR behind it flushed, A in ERR, %d IBV_EVENT_QP_FATAL on A", what, n);
	return 0;
}

/*
 * RC pairs with max_send_sge/max_recv_sge 3 and max_inline_data 128: a SEND
 * gathered from 3 SGEs of two MRs into a receive scattered over 2 SGEs split
 * elsewhere, an RDMA WRITE gathered from 3 SGEs, an RDMA READ scattered into
 * 3 SGEs, an inline SEND gathered from 2 buffers (one not registered), and an
 * lkey of another PD in a gather list (SEND) and in a scatter list (READ).
 * The data SGEs start at odd addresses and some cross a page boundary.
 */
static int t_multi_sge(struct env *e)
{
	const struct ibv_qp_cap cap = {
		.max_send_sge = MS_SGE, .max_recv_sge = MS_SGE, .max_inline_data = MS_INLINE,
	};
	struct ibv_send_wr wr, wr2;
	struct ibv_sge s[MS_SGE], r[MS_SGE], sge2;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_pd *pd, *pd2;
	struct ibv_mr *mr_x, *mr_y;
	struct ibv_qp *qp;
	struct rc_pair p, q;
	uint8_t msg[MS_LEN], local[37], *x, *xh, *y;
	const size_t half = DP_BUF / 2;
	size_t len;
	int i;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (rc_pair_ex(e, pd, NULL, 7, 7, 4 * DP_BURST, &cap, &p))
		return -1;
	for (i = 0; i < 2; i++) {
		qp = i ? p.b : p.a;
		OK(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qi));
		CHECK(qa.cap.max_send_sge >= MS_SGE && qa.cap.max_recv_sge >= MS_SGE &&
		      qa.cap.max_inline_data >= MS_INLINE,
		      "QP %c: max_send_sge %u max_recv_sge %u max_inline_data %u, created with "
		      "%d %d %d", 'A' + i, qa.cap.max_send_sge, qa.cap.max_recv_sge,
		      qa.cap.max_inline_data, MS_SGE, MS_SGE, MS_INLINE);
		vlog("QP %c: max_send_sge %u max_recv_sge %u max_inline_data %u", 'A' + i,
		     qa.cap.max_send_sge, qa.cap.max_recv_sge, qa.cap.max_inline_data);
	}
	/* A second MR (same PD): its lower half is a source, its upper half xh a target. */
	x = page_buf(DP_BUF);
	CHECK(x, "mmap failed");
	xh = x + half;
	NEW(mr_x, ibv_reg_mr(pd, x, DP_BUF, DP_ACCESS));

	/* SEND of 1 + 1000 + 3000 bytes from two MRs into 2000 + 3000 bytes of room. */
	fill(p.buf_a, DP_BUF, 21);
	fill(x, half, 22);
	memset(xh, MS_ROOM, half);
	memset(p.buf_b, MS_ROOM, DP_BUF);
	set_sge(&s[0], p.buf_a + 7, 1, p.mr_a->lkey);
	set_sge(&s[1], x + 333, 1000, mr_x->lkey);
	set_sge(&s[2], p.buf_a + 3001, 3000, p.mr_a->lkey);	/* crosses a page */
	len = gather(msg, s, 3);
	set_sge(&r[0], p.buf_b + 3001, 2000, p.mr_b->lkey);	/* crosses a page */
	set_sge(&r[1], xh + 7777, 3000, mr_x->lkey);
	send_wr_sges(&wr, s, 3, IBV_WR_SEND, 7000);
	if (post_recv_sges(p.b, r, 2, 7100) || post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "SEND of 3 SGEs", p.a, 7000, IBV_WC_SUCCESS, IBV_WC_SEND, -1, NULL) ||
	    expect_wc(p.cq_b, "receive of 2 SGEs", p.b, 7100, IBV_WC_SUCCESS, IBV_WC_RECV, len,
		      NULL) ||
	    scattered(r, 2, msg, len, MS_ROOM, "receive of 2 SGEs") ||
	    untouched_outside(p.buf_b, DP_BUF, r, 2, MS_ROOM, "receive of 2 SGEs, B's buffer") ||
	    untouched_outside(xh, half, r, 2, MS_ROOM, "receive of 2 SGEs, the second MR"))
		return -1;
	vlog("SEND 1+1000+3000 bytes (2 MRs) into 2000+3000 bytes: byte_len %zu, data checked, "
	     "999 bytes of room untouched", len);

	/* RDMA WRITE of 3000 + 1 + 1000 bytes from two MRs to one remote buffer. */
	memset(p.buf_b, MS_ROOM, DP_BUF);
	set_sge(&s[0], x + 20001, 3000, mr_x->lkey);
	set_sge(&s[1], p.buf_a + 4095, 1, p.mr_a->lkey);	/* the last byte of a page */
	set_sge(&s[2], p.buf_a + 8191, 1000, p.mr_a->lkey);	/* crosses a page */
	len = gather(msg, s, 3);
	set_sge(&r[0], p.buf_b + 1001, len, p.mr_b->lkey);	/* the target, for the checks */
	send_wr_sges(&wr, s, 3, IBV_WR_RDMA_WRITE, 7200);
	wr.wr.rdma.remote_addr = r[0].addr;
	wr.wr.rdma.rkey = p.mr_b->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "RDMA WRITE of 3 SGEs", p.a, 7200, IBV_WC_SUCCESS,
		      IBV_WC_RDMA_WRITE, -1, NULL) ||
	    same(p.buf_b + 1001, msg, len, "RDMA WRITE of 3 SGEs") ||
	    untouched_outside(p.buf_b, DP_BUF, r, 1, MS_ROOM, "RDMA WRITE of 3 SGEs") ||
	    cq_empty(p.cq_b, "RDMA WRITE of 3 SGEs, B's CQ"))
		return -1;
	vlog("RDMA WRITE 3000+1+1000 bytes (2 MRs): data checked, nothing else written");

	/* RDMA READ of 4001 bytes into 1 + 3000 + 1000 bytes in two MRs. */
	fill(p.buf_b + 5003, MS_LEN, 23);
	memcpy(msg, p.buf_b + 5003, MS_LEN);
	memset(p.buf_a, MS_ROOM, DP_BUF);
	memset(xh, MS_ROOM, half);
	set_sge(&s[0], p.buf_a + 11, 1, p.mr_a->lkey);
	set_sge(&s[1], xh + 7777, 3000, mr_x->lkey);
	set_sge(&s[2], p.buf_a + 4095, 1000, p.mr_a->lkey);	/* crosses a page */
	send_wr_sges(&wr, s, 3, IBV_WR_RDMA_READ, 7300);
	wr.wr.rdma.remote_addr = (uintptr_t)(p.buf_b + 5003);
	wr.wr.rdma.rkey = p.mr_b->rkey;
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "RDMA READ into 3 SGEs", p.a, 7300, IBV_WC_SUCCESS,
		      IBV_WC_RDMA_READ, MS_LEN, NULL) ||
	    scattered(s, 3, msg, MS_LEN, MS_ROOM, "RDMA READ into 3 SGEs") ||
	    untouched_outside(p.buf_a, DP_BUF, s, 3, MS_ROOM, "RDMA READ into 3 SGEs, A's buffer") ||
	    untouched_outside(xh, half, s, 3, MS_ROOM, "RDMA READ into 3 SGEs, the second MR") ||
	    cq_empty(p.cq_b, "RDMA READ into 3 SGEs, B's CQ"))
		return -1;
	vlog("RDMA READ %d bytes into 1+3000+1000 bytes (2 MRs): byte_len, data checked", MS_LEN);

	/*
	 * SEND_INLINE of 37 + 60 bytes: the first buffer is not registered (lkey 0;
	 * the lkey of inline data is not checked), and both are overwritten as soon
	 * as ibv_post_send returns (the data was copied into the WQE).
	 */
	fill(local, sizeof(local), 24);
	fill(p.buf_a + 501, 60, 25);
	memset(p.buf_b, MS_ROOM, DP_BUF);
	set_sge(&s[0], local, sizeof(local), 0);
	set_sge(&s[1], p.buf_a + 501, 60, p.mr_a->lkey);
	len = gather(msg, s, 2);
	CHECK(len <= MS_INLINE, "inline message of %zu bytes", len);
	set_sge(&r[0], p.buf_b + 99, 50, p.mr_b->lkey);
	set_sge(&r[1], p.buf_b + 9001, 100, p.mr_b->lkey);
	send_wr_sges(&wr, s, 2, IBV_WR_SEND, 7400);
	wr.send_flags |= IBV_SEND_INLINE;
	if (post_recv_sges(p.b, r, 2, 7410) || post_a(&p, &wr))
		return -1;
	memset(local, 0, sizeof(local));
	memset(p.buf_a + 501, 0, 60);
	if (expect_wc(p.cq_a, "SEND_INLINE of 2 SGEs", p.a, 7400, IBV_WC_SUCCESS, IBV_WC_SEND, -1,
		      NULL) ||
	    expect_wc(p.cq_b, "receive of SEND_INLINE", p.b, 7410, IBV_WC_SUCCESS, IBV_WC_RECV,
		      len, NULL) ||
	    scattered(r, 2, msg, len, MS_ROOM, "receive of SEND_INLINE") ||
	    untouched_outside(p.buf_b, DP_BUF, r, 2, MS_ROOM, "receive of SEND_INLINE"))
		return -1;
	vlog("SEND_INLINE 37+60 bytes (sources overwritten after posting) into 50+100 bytes: "
	     "data checked");

	/* An MR of another PD: its lkey in a SEND's gather list, then in a READ's scatter list. */
	NEW(pd2, ibv_alloc_pd(e->ctx));
	y = page_buf(4096);
	CHECK(y, "mmap failed");
	memset(y, MS_ROOM, 4096);
	NEW(mr_y, ibv_reg_mr(pd2, y, 4096, DP_ACCESS));
	memset(p.buf_b, MS_ROOM, DP_BUF);
	if (post_recv_b(&p, 7510, p.buf_b, 4096))
		return -1;
	set_sge(&s[0], p.buf_a, 100, p.mr_a->lkey);
	set_sge(&s[1], y + 100, 100, mr_y->lkey);
	set_sge(&s[2], p.buf_a + 200, 100, p.mr_a->lkey);
	send_wr_sges(&wr, s, 3, IBV_WR_SEND, 7500);
	send_wr(&wr2, &sge2, IBV_WR_SEND, 7501, p.buf_a, 64, p.mr_a->lkey);
	if (foreign_lkey(e, &p, &wr, &wr2, ms_foreign_send, 3, y, "SEND with another PD's lkey") ||
	    untouched(p.buf_b, DP_BUF, MS_ROOM, "SEND with another PD's lkey, B's buffer"))
		return -1;

	if (rc_pair_ex(e, pd, NULL, 7, 7, 4 * DP_BURST, &cap, &q))
		return -1;
	fill(q.buf_b, 300, 26);
	set_sge(&s[0], q.buf_a, 100, q.mr_a->lkey);
	set_sge(&s[1], y + 100, 100, mr_y->lkey);
	set_sge(&s[2], q.buf_a + 200, 100, q.mr_a->lkey);
	send_wr_sges(&wr, s, 3, IBV_WR_RDMA_READ, 7600);
	wr.wr.rdma.remote_addr = (uintptr_t)q.buf_b;
	wr.wr.rdma.rkey = q.mr_b->rkey;
	send_wr(&wr2, &sge2, IBV_WR_RDMA_READ, 7601, q.buf_a + 1000, 64, q.mr_a->lkey);
	wr2.wr.rdma.remote_addr = (uintptr_t)q.buf_b;
	wr2.wr.rdma.rkey = q.mr_b->rkey;
	if (foreign_lkey(e, &q, &wr, &wr2, ms_foreign_read, 1, y, "READ with another PD's lkey"))
		return -1;
	return 0;
}

struct tcase {
	const char *name;
	int (*fn)(struct env *e);
	/*
	 * NULL: in the default list. Otherwise the case is opt-in: it runs when
	 * named, when its group is named, or with "all".
	 */
	const char *group;
	const char *what;
};

static const struct tcase cases[] = {
	{ "device", t_device, NULL, "open, query_device(_ex)/port/gid(_ex)/pkey, bad indices" },
	{ "pd", t_pd, NULL, "alloc/dealloc PD; PD/CQ still in use: EBUSY" },
	{ "mr", t_mr, NULL, "reg/dereg MR; keys; bad access EINVAL; unmapped EFAULT; zero length" },
	{ "cq", t_cq, NULL, "create/resize/notify/destroy CQ; limits; completion channel stays quiet" },
	{ "qp", t_qp, NULL, "RC/UC/UD QPs: caps, RESET-INIT-RTR-RTS-ERR-RESET, illegal transitions" },
	{ "srq", t_srq, NULL, "create/query/arm/resize SRQ; QP on SRQ; limits" },
	{ "ah", t_ah, NULL, "create/destroy AH on the RoCE v2 GID; bad sgid_index/port" },
	{ "fastpath", t_fastpath, NULL, "post_recv into the user-space RQ ring; poll an empty CQ" },
	{ "flush", t_flush, NULL, "QP to ERR flushes posted receives: CQ event, WR_FLUSH_ERR" },
	{ "cleanup", t_cleanup, NULL, "close a context holding PD/MR/CQ/SRQ/QP/AH objects" },
	{ "objects", t_objects, "slow", "create and destroy -n objects (PD, MR, CQ, QP, AH in turn)" },
	{ "rc_loop", t_rc_loop, "datapath",
	  "RC QP pair on the own GID: SEND(_IMM), WRITE(_IMM), READ, atomics, burst, bad rkey" },
	{ "multi_sge", t_multi_sge, "datapath",
	  "SEND/WRITE gathered from 3 SGEs, READ and RECV scattered, inline SGEs, other PD's lkey" },
	{ "srq_limit", t_srq_limit, "datapath",
	  "SENDs to an SRQ below its armed limit: SRQ_LIMIT_REACHED, limit disarmed" },
	{ "rnr", t_rnr, "datapath", "SEND before its receive: RNR retry (7), RNR_RETRY_EXC_ERR (0)" },
	{ "cq_overflow", t_cq_overflow, "datapath",
	  "SENDs into a full receive CQ: CQ_ERR, QPs to ERR, sender's completions" },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static int run_case(const struct tcase *tc)
{
	struct env e;
	int rc;

	g_reason[0] = 0;
	g_nobjs = 0;
	rc = env_open(&e);
	if (!rc)
		rc = tc->fn(&e);
	/* Destroy what the case left, newest first; on success every destroy must work. */
	if (release_all(!rc))
		rc = -1;
	env_close(&e);
	if (rc) {
		printf("not ok %s: %s\n", tc->name, g_reason[0] ? g_reason : "failed");
		return -1;
	}
	printf("ok %s\n", tc->name);
	return 0;
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: rrxe_verbs [-d DEV] [-g GID_INDEX] [-n COUNT] [-v] [-l] "
		"[CASE...|GROUP...|all]\n"
		"cases (default: those without a [group]; a group name selects its cases):\n");
	for (i = 0; i < NCASES; i++)
		fprintf(f, "  %-11s %s%s%s%s\n", cases[i].name, cases[i].what,
			cases[i].group ? " [" : "", cases[i].group ? cases[i].group : "",
			cases[i].group ? "]" : "");
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	const char *devname = NULL;
	int opt, ndev, i, passed = 0, failed = 0;
	int sel[NCASES];
	size_t c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:g:n:vlh")) != -1) {
		switch (opt) {
		case 'd': devname = optarg; break;
		case 'g': g_gid_arg = atoi(optarg); break;
		case 'n': g_count = atol(optarg); break;
		case 'v': g_verbose = 1; break;
		case 'l': usage(stdout); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	memset(sel, 0, sizeof(sel));
	if (optind == argc) {
		for (c = 0; c < NCASES; c++)
			sel[c] = !cases[c].group;
	}
	for (i = optind; i < argc; i++) {
		int found = 0;

		for (c = 0; c < NCASES; c++) {
			if (!strcmp(argv[i], "all") || !strcmp(argv[i], cases[c].name) ||
			    (cases[c].group && !strcmp(argv[i], cases[c].group))) {
				sel[c] = 1;
				found = 1;
			}
		}
		if (!found) {
			fprintf(stderr, "rrxe_verbs: unknown case '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}

	list = ibv_get_device_list(&ndev);
	if (!list || ndev == 0) {
		fprintf(stderr, "rrxe_verbs: no RDMA devices (%s)\n", errname(errno));
		return 2;
	}
	for (i = 0; i < ndev; i++)
		if (!devname || !strcmp(ibv_get_device_name(list[i]), devname))
			break;
	if (i == ndev) {
		fprintf(stderr, "rrxe_verbs: device %s not found\n", devname);
		ibv_free_device_list(list);
		return 2;
	}
	g_dev = list[i];
	printf("# rrxe_verbs on %s\n", ibv_get_device_name(g_dev));

	for (c = 0; c < NCASES; c++) {
		if (!sel[c])
			continue;
		if (run_case(&cases[c]))
			failed++;
		else
			passed++;
	}
	ibv_free_device_list(list);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
