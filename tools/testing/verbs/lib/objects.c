// SPDX-License-Identifier: GPL-2.0
/*
 * Object tracking: every object a case creates is destroyed after it,
 * newest first, and each destroy verb must succeed. Page buffers.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vt.h"

struct tracked {
	enum kind k;
	void *p;
	size_t len;		/* K_MAP */
};

#define MAX_TRACKED 256
static struct tracked g_objs[MAX_TRACKED];
static int g_nobjs;

static const char *const kname[] = { "PD", "MR", "CQ", "QP", "SRQ", "AH", "channel", "mapping" };

void track(enum kind k, void *p, size_t len)
{
	if (!p)
		return;
	if (g_nobjs == MAX_TRACKED) {
		fprintf(stderr, "%s: too many objects in one case\n",
			program_invocation_short_name);
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
	case K_MW: return ibv_dealloc_mw(p);
	case K_MAP: return munmap(p, len);
	}
	return EINVAL;
}

/* Destroy a tracked object now (OK(release(x)) checks the verb). */
int release(void *p)
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
	fprintf(stderr, "%s: release of an untracked object\n",
		program_invocation_short_name);
	abort();
}

/* Destroy everything left, newest first; the first failure is described in g_reason. */
int release_all(int check)
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

/* A tracked, filled, anonymous read/write mapping; NULL on failure. */
void *page_buf(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0xa5, len);
	track(K_MAP, p, len);
	return p;
}

/* Forget every tracked object (a new case starts). */
void track_reset(void)
{
	g_nobjs = 0;
}
