/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rrxe_verbsfuzz: shared declarations (see main.c for what the program does).
 */
#ifndef RRXE_VERBSFUZZ_H
#define RRXE_VERBSFUZZ_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#define PORT 1

/* Every kind of call, for the result histogram. */
#define CALLS(X) \
	X(alloc_pd) X(dealloc_pd) X(reg_mr) X(reg_mr_iova) X(dereg_mr) X(rereg_mr) \
	X(create_cq) X(resize_cq) X(destroy_cq) X(create_qp) X(modify_qp) X(query_qp) \
	X(destroy_qp) X(create_srq) X(modify_srq) X(query_srq) X(destroy_srq) \
	X(create_ah) X(destroy_ah) X(post_send) X(post_recv) X(post_srq_recv) X(poll_cq) \
	X(req_notify_cq) X(get_cq_event) X(query) X(alloc_mw) X(dealloc_mw) \
	X(create_channel) X(destroy_channel) X(close_context) \
	X(raw_write) X(raw_ioctl) X(raw_mmap) X(ring_scribble) X(raw_reopen)

#define CALL_ENUM(n) C_##n,
enum call { CALLS(CALL_ENUM) NCALLS };
#undef CALL_ENUM

extern const char *const call_names[NCALLS];

/* ---- PRNG: splitmix64 ---- */
extern uint64_t g_rng;

static inline uint64_t rnd(void)
{
	uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static inline int one_in(unsigned int n)
{
	return below(n) == 0;
}

/* A "size-like" 32-bit value: small, around a limit, or extreme. */
uint32_t pick_u32(uint32_t limit);

/* Memory the fuzzer hands to the kernel. */
struct areas {
	uint8_t *rw[4];		/* 1 MiB each, read-write */
	size_t rw_len;
	uint8_t *ro;		/* read-only */
	size_t ro_len;
	uint8_t *none;		/* PROT_NONE */
	size_t none_len;
	uint8_t *edge;		/* a read-write page followed by a PROT_NONE page */
};

extern struct areas g_mem;

/* An address (and length) for an MR, SGE or response: valid, bad or extreme. */
uint64_t pick_addr(uint64_t *len, int user_readable_only);

/* Record a call's outcome (0 or a positive errno); fails the run on an unclean errno. */
void record(enum call c, int err);
void vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));	/* lib/report.c */
void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

extern int g_verbose;		/* lib/report.c */
extern char g_last[256];	/* the call in progress, for crash reports */

/* raw.c: straight to the uverbs file descriptor */
void raw_open(struct ibv_device *dev);
void raw_close(void);
void raw_write(void);
void raw_ioctl(void);
void raw_mmap(void);
void ring_scribble(void);
int raw_is_own_mapping(uintptr_t start);

#endif
