/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rrxe_verbs: what the "bounds" and "protection" cases share: MRs with pages
 * of filler around them (so a write past an MR's end shows), at any IOVA.
 */
#ifndef RRXE_VERBS_EDGE_H
#define RRXE_VERBS_EDGE_H

#include "cases.h"

#define PG		4096
#define ROOM		0xee		/* filler of memory nothing may write */
#define TOP_IOVA	((uint64_t)0 - PG)	/* an MR's page whose last byte is 2^64 - 1 */
#define VA_IOVA		1		/* edge_mr: the IOVA is the buffer's address */
#define QUIET_MS	300		/* how long "nothing arrives" is watched */

struct edge_mr {
	uint8_t *map;		/* three pages of ROOM; the MR starts at the second */
	uint8_t *buf;		/* map + PG: the MR's first byte */
	size_t len;		/* the MR's length (at most PG) */
	uint64_t iova;		/* the MR's IOVA: SGEs and remote addresses use it */
	struct ibv_mr *mr;
};

/* qp reaches state `want` within DP_WAIT_MS (QSTATE, for a QP another side may move). */
#define QSTATE_W(qp, want) do { \
	if (qstate_within((qp), (want), DP_WAIT_MS)) \
		return -1; \
} while (0)

/* qp reaches the state the spec names, or on rxe rxe's (the caller says why). */
#define QSTATE_DRV(qp, spec, rxe) QSTATE_W((qp), vt_driver() == DRV_RXE ? (rxe) : (spec))

int edge_mr(struct ibv_pd *pd, uint64_t iova, size_t len, int access, struct edge_mr *t);
uint64_t io(const struct edge_mr *t, int64_t off);
int outside_untouched(const struct edge_mr *t, const char *what);
struct ibv_sge *sge64(struct ibv_sge *sge, uint64_t addr, uint32_t len, uint32_t lkey);
int drain_events(struct env *e, struct ibv_qp *qp, const char *what);

#endif
