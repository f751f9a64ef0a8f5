/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vt: shared helpers of the verbs test programs (tools/testing/verbs/NAME/),
 * driven through the distribution's stock libibverbs and librxe provider.
 *
 *   report.c      failure reason, -v logging, errno names
 *   objects.c     object tracking (destroyed after a case), page buffers
 *   env.c         device context, port, RoCE v2 GID, loopback address vector
 *   qp.c          QP creation attributes and state transitions
 *   rc_pair.c     RC connections: to a peer's GID, and two RC QPs of the
 *                 device connected to each other (loopback)
 *   ud.c          two UD QPs of the device and an address handle between them
 *   wr.c          SGEs and work requests
 *   completion.c  bounded completion polling and checking
 *   pattern.c     data patterns and memory checks
 *   events.c      completion channels and asynchronous events
 *   crc32.c       crc32_le for programs that build RoCE v2 packets (crc32.h)
 *
 * Convention: a helper returning int returns 0 on success and -1 on failure,
 * with the reason in g_reason (the FAIL/CHECK/OK/ERR/NEW macros do that).
 */
#ifndef VT_H
#define VT_H

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#define PORT 1

/* ---- report.c ---------------------------------------------------------- */

extern int g_verbose;		/* vlog prints */
extern char g_reason[1024];	/* why the current case failed */

void vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *errname(int e);
int rc_err(int rc);
void prefix_reason(const char *pfx);

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

/* ---- objects.c --------------------------------------------------------- */

/*
 * Object tracking: every object a case creates is destroyed after it,
 * newest first, and each destroy verb must succeed.
 */
enum kind { K_PD, K_MR, K_CQ, K_QP, K_SRQ, K_AH, K_CH, K_MW, K_MAP };

#define KIND(p) _Generic((p), \
	struct ibv_pd *: K_PD, \
	struct ibv_mr *: K_MR, \
	struct ibv_cq *: K_CQ, \
	struct ibv_qp *: K_QP, \
	struct ibv_srq *: K_SRQ, \
	struct ibv_ah *: K_AH, \
	struct ibv_comp_channel *: K_CH, \
	struct ibv_mw *: K_MW)

void track(enum kind k, void *p, size_t len);
void track_reset(void);
int release(void *p);
int release_all(int check);
void *page_buf(size_t len);

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

/* ---- env.c ------------------------------------------------------------- */

struct env {
	struct ibv_context *ctx;
	struct ibv_device_attr dev;
	struct ibv_port_attr port;
	int gid_index;
	union ibv_gid gid;
};

extern struct ibv_device *g_dev;	/* the device env_open opens */
extern int g_gid_arg;			/* GID index to use, or -1 to find one */

/* The driver behind g_dev: -D, else the device name's prefix ("rrxe", "rxe"). */
enum vt_driver { DRV_OTHER, DRV_RXE, DRV_RRXE };
extern int g_driver;			/* set by an option, or DRV_OTHER to detect */
int vt_driver(void);
const char *vt_driver_name(int d);

struct ibv_device **env_device(const char *name);
int env_open(struct env *e);
void env_close(struct env *e);
const char *gid_str(const union ibv_gid *g);
void self_ah_attr(struct env *e, struct ibv_ah_attr *ah);

/* ---- qp.c -------------------------------------------------------------- */

void qp_init_attr(struct ibv_cq *cq, enum ibv_qp_type t, struct ibv_srq *srq,
		  struct ibv_qp_init_attr *ia);
struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type t,
		       struct ibv_srq *srq, struct ibv_qp_init_attr *ia);
const char *qps(int s);
int to_init(struct ibv_qp *qp, enum ibv_qp_type t);
int to_state(struct ibv_qp *qp, enum ibv_qp_state s);
int rtr_attr(struct env *e, struct ibv_qp *qp, enum ibv_qp_type t, struct ibv_qp_attr *a);
int rts_attr(enum ibv_qp_type t, struct ibv_qp_attr *a);
int qstate_within(struct ibv_qp *qp, enum ibv_qp_state want, int ms);

/* query_qp reports state `want`. */
#define QSTATE(qp, want) do { \
	struct ibv_qp_attr qa_; \
	struct ibv_qp_init_attr qi_; \
	OK(ibv_query_qp((qp), &qa_, IBV_QP_STATE, &qi_)); \
	CHECK(qa_.qp_state == (want), "qp 0x%x state %s, expected %s", (qp)->qp_num, \
	      qps(qa_.qp_state), qps(want)); \
	CHECK((qp)->state == (want), "qp->state %s, expected %s", qps((qp)->state), qps(want)); \
} while (0)

/* ---- rc_pair.c --------------------------------------------------------- */

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

/* What rc_pair_opts makes. */
struct rc_opts {
	struct ibv_srq *srq;		/* B's receives come from it, if not NULL */
	int rnr_retry, retry_cnt;	/* both QPs */
	int cqe_b;			/* entries of B's CQ */
	const struct ibv_qp_cap *cap;	/* SGE and inline limits, if not NULL */
	int access_b;			/* B's qp_access_flags */
	uint64_t send_ops_a;		/* if not 0: A is an ibv_qp_ex with these
					 * IBV_QP_EX_WITH_* send operations */
};

int rc_connect_remote(struct env *e, struct ibv_qp *qp, const union ibv_gid *dgid,
		      uint32_t peer_qpn, uint32_t sq_psn, uint32_t rq_psn, int rnr_retry,
		      int retry_cnt, int access);
int rc_connect_access(struct env *e, struct ibv_qp *qp, uint32_t peer_qpn, uint32_t sq_psn,
		      uint32_t rq_psn, int rnr_retry, int retry_cnt, int access);
int rc_connect(struct env *e, struct ibv_qp *qp, uint32_t peer_qpn, uint32_t sq_psn,
	       uint32_t rq_psn, int rnr_retry, int retry_cnt);
int rc_pair_opts(struct env *e, struct ibv_pd *pd, const struct rc_opts *o, struct rc_pair *p);
int rc_pair_ex(struct env *e, struct ibv_pd *pd, struct ibv_srq *srq, int rnr_retry,
	       int retry_cnt, int cqe_b, const struct ibv_qp_cap *cap, struct rc_pair *p);
int rc_pair(struct env *e, struct ibv_pd *pd, struct ibv_srq *srq, int rnr_retry,
	    struct rc_pair *p);

int rc_pair_release(struct rc_pair *p);

/* ---- ud.c -------------------------------------------------------------- */

#define UD_QKEY		0x11111111	/* to_init's Q_Key of UD QPs */
#define GRH_LEN		40		/* the GRH in front of every UD receive */

struct ud_pair {
	struct ibv_cq *cq_a, *cq_b;	/* A's and B's CQ (send and receive) */
	struct ibv_qp *a, *b;		/* A sends to B */
	struct ibv_ah *ah;		/* to the port's own GID */
};

int ud_pair(struct env *e, struct ibv_pd *pd, const struct ibv_qp_cap *cap, struct ud_pair *p);
void ud_dest(struct ibv_send_wr *wr, const struct ud_pair *p, uint32_t qkey);

/* ---- wr.c -------------------------------------------------------------- */

struct ibv_sge *set_sge(struct ibv_sge *sge, void *addr, uint32_t len, uint32_t lkey);
void send_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, enum ibv_wr_opcode op,
	     uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey);
void recv_wr(struct ibv_recv_wr *wr, struct ibv_sge *sge, uint64_t wr_id, void *addr,
	     uint32_t len, uint32_t lkey);
void send_wr_sges(struct ibv_send_wr *wr, struct ibv_sge *sge, int n,
		  enum ibv_wr_opcode op, uint64_t wr_id);
int post_recv_b(struct rc_pair *p, uint64_t wr_id, void *addr, uint32_t len);
int post_a(struct rc_pair *p, struct ibv_send_wr *wr);
int post_recv_sges(struct ibv_qp *qp, struct ibv_sge *sge, int n, uint64_t wr_id);

/* ---- completion.c ------------------------------------------------------ */

long ms_since(const struct timespec *t0);
const char *wc_opname(enum ibv_wc_opcode op);
int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, const char *what);
int cq_empty(struct ibv_cq *cq, const char *what);
int check_wc(const struct ibv_wc *wc, const char *what, struct ibv_qp *qp,
	     uint64_t wr_id, enum ibv_wc_status status, enum ibv_wc_opcode op, long len,
	     const __be32 *imm);
int expect_wc(struct ibv_cq *cq, const char *what, struct ibv_qp *qp, uint64_t wr_id,
	      enum ibv_wc_status status, enum ibv_wc_opcode op, long len,
	      const __be32 *imm);
int check_wc_drv(const struct ibv_wc *wc, const char *what, struct ibv_qp *qp, uint64_t wr_id,
		 enum ibv_wc_status spec, enum ibv_wc_status rxe1, enum ibv_wc_status rxe2);
int expect_wc_drv(struct ibv_cq *cq, const char *what, struct ibv_qp *qp, uint64_t wr_id,
		  enum ibv_wc_status spec, enum ibv_wc_status rxe1, enum ibv_wc_status rxe2);
int cq_quiet(struct ibv_cq *cq, int ms, const char *what);

/* ---- pattern.c --------------------------------------------------------- */

void fill(uint8_t *p, size_t len, unsigned int seed);
int same(const uint8_t *got, const uint8_t *want, size_t len, const char *what);
int untouched(const uint8_t *p, size_t len, uint8_t c, const char *what);
size_t gather(uint8_t *out, const struct ibv_sge *sge, int n);
int scattered(const struct ibv_sge *sge, int n, const uint8_t *msg, size_t len,
	      uint8_t c, const char *what);
int untouched_outside(const uint8_t *buf, size_t size, const struct ibv_sge *sge, int n,
		      uint8_t c, const char *what);

/* ---- events.c ---------------------------------------------------------- */

int channel_ready(struct ibv_comp_channel *ch, int ms);
int set_nonblock(int fd);
int wait_event(struct env *e, enum ibv_event_type type, void *obj, int ms);
int count_events(struct env *e, enum ibv_event_type type, void *obj, int ms);

#endif
