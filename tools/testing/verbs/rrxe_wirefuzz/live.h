/* SPDX-License-Identifier: GPL-2.0 */
/* rrxe_wirefuzz: the live RC traffic (live.c). */
#ifndef RRXE_WIREFUZZ_LIVE_H
#define RRXE_WIREFUZZ_LIVE_H

#include "wirefuzz.h"

struct live_stats {
	uint64_t batches_ok;
	uint64_t ops_ok[5];		/* WRITE, READ, SEND, FETCH_ADD, CMP_SWAP */
	uint64_t reconnects;		/* pairs replaced after a failure */
	uint64_t idle_failures;		/* ... found in ERR between batches */
	uint64_t retry_without_kill;	/* RETRY_EXC_ERR with no failing packet sent */
	uint64_t foreign_failures;	/* pairs failed by packets from a stranger's address */
	char first_foreign[1024];	/* how the first one went */
	uint64_t status[32];		/* error completions at A by status */
	uint64_t async_events;
	double last_ok;			/* time of the last fully successful batch */
	volatile int failed, finished;
};

extern struct live_stats g_stats;
extern volatile int g_stop_live;
extern double g_op_timeout;

void start_async_thread(struct ibv_context *ctx);
int qp_connect(struct ibv_qp *qp, const union ibv_gid *gid, int gid_index, uint32_t dest_qpn,
	       uint32_t sq_psn, uint32_t rq_psn, int access, int timeout, int retry,
	       enum ibv_qp_state upto);
void live_setup(struct ibv_context *ctx, const union ibv_gid *gid, int gid_index, uint64_t seed);
void *live_thread(void *arg);
int live_final(void);
const char *live_kind_name(int k);
/* Record a failure of the live traffic (printed by main); returns -1. */
int live_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
