/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rrxe_mw_peer: what its files share.
 *
 *   main.c      options, device, the cases in order, the verdict
 *   ctrl.c      the TCP control channel between the two ends
 *   link.c      one RC connection over the wire, set up through the channel
 *   owner.c     the end that owns the memory and binds the windows
 *   accessor.c  the end that reaches the memory through the windows' rkeys
 *
 * Both ends run the same program (same build, same structure layout), so the
 * control messages travel as they are.
 */
#ifndef MWP_H
#define MWP_H

#include "vt.h"

/*
 * The owner's buffer: a region of REGION_LEN bytes (LOCAL_WRITE | MW_BIND, no
 * remote rights of its own) followed by a page of filler outside every MR, so
 * that a write past the region's end shows.
 */
#define PG		4096
#define REGION_LEN	(64 * 1024)
#define BUF_LEN		(REGION_LEN + PG)
#define ROOM		0xee		/* filler of the owner's buffer */
#define WIN_LEN		8192
#define WIN_RIGHTS	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define W1_OFF		4096		/* type 1 window of the "windows" case */
#define W2_OFF		16384		/* type 2 window (inside the region) */
#define WE_OFF		(REGION_LEN - WIN_LEN)	/* type 1 window ending at the region's end */
#define HALF		(WIN_LEN / 2)	/* the accessor writes a window's first half and reads
					 * the second, which the owner filled */
#define INV_LEN		16		/* SEND_WITH_INV's message */
#define OUT_LEN		64		/* the accesses past a window's end: 64 bytes, */
#define OUT_OVER	32		/* 32 of them past the end */

#define SEED_READ(k)	(100 + (k))	/* the owner's fill of window k's second half */
#define SEED_WRITE(k)	(200 + (k))	/* the accessor's write into window k */
#define SEED_INV	300
#define SEED_LATE	301		/* a WRITE through window 1 after the invalidation */
#define SEED_OUT	302		/* the refused accesses */

/* -F: an injected fault, to prove that the checks fail. */
enum fault { F_NONE, F_DATA, F_RANGE, F_INV };

extern int g_fault;
extern int g_limit_s;		/* bound of every wait on the control channel */

/* ---- ctrl.c ------------------------------------------------------------ */

enum msg_type {
	MSG_HELLO = 1,		/* QPN, PSN, GID, driver: both ends, per connection */
	MSG_WINDOWS,		/* owner: buffer address and window keys are ready */
	MSG_WROTE,		/* accessor: these writes landed (or were refused) */
	MSG_INV_SENT,		/* accessor: SEND_WITH_INV completed */
	MSG_VERDICT,		/* owner: its checks passed (arg 0) or failed (text) */
	MSG_ABORT,		/* either: failed; the other end stops too (text) */
};

#define MAX_WRITES 4

struct write_rec {
	uint32_t off;		/* in the owner's buffer */
	uint32_t len;
	uint32_t seed;		/* fill(seed) of len bytes */
};

struct msg {
	uint32_t type;
	uint32_t arg;		/* HELLO: driver; VERDICT: 0 passed; WROTE: 1 if refused */
	uint32_t qpn, psn;
	union ibv_gid gid;
	uint64_t addr;		/* the owner's buffer */
	uint32_t rkey[2];
	uint32_t nw;
	struct write_rec w[MAX_WRITES];
	char text[512];
};

int ctrl_listen(int port);
int ctrl_accept(int lfd);
int ctrl_connect(const char *host, int port);
int ctrl_send(int fd, const struct msg *m);
int ctrl_recv(int fd, struct msg *m, enum msg_type want);
int ctrl_ask(int fd, const struct msg *m);
int ctrl_verdict(int fd, int rc);
void ctrl_abort(int fd);

/* ---- link.c ------------------------------------------------------------ */

struct link {
	struct ibv_pd *pd;
	struct ibv_cq *cq;	/* send and receive */
	struct ibv_qp *qp;
	int peer_driver;	/* DRV_* of the other end */
};

int link_up(struct env *e, int fd, int owner, struct link *l);
int link_post(struct link *l, struct ibv_send_wr *wr);
int link_errored(struct env *e, struct link *l, const char *what);

/* ---- owner.c / accessor.c: one function per case, 0 if it passed ------- */

int own_windows(struct env *e, int fd);
int own_past_region(struct env *e, int fd);
int own_past_window(struct env *e, int fd);
int use_windows(struct env *e, int fd);
int use_past_region(struct env *e, int fd);
int use_past_window(struct env *e, int fd);

#endif
