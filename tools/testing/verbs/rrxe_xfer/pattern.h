/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Data patterns for rrxe_xfer: every byte of a transfer is a function of a
 * key (seed, phase, round) and of its offset in the stream, so a byte that
 * lands at the wrong offset, comes from another phase or round, or is stale
 * or corrupted does not verify.
 */
#ifndef RRXE_XFER_PATTERN_H
#define RRXE_XFER_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* A 64-bit mixing function (splitmix64's finaliser). */
uint64_t pat_mix(uint64_t x);

/* The key of one phase of one round. */
uint64_t pat_key(uint64_t seed, unsigned int phase, unsigned int round);

/* Write the pattern bytes [off, off + len) of stream KEY to DST. */
void pat_fill(void *dst, uint64_t key, uint64_t off, size_t len);

/*
 * Compare SRC with the pattern bytes [off, off + len) of stream KEY. Returns
 * the number of bytes that differ; *first_bad (if not NULL) is set to the
 * stream offset of the first one, *got and *want to its value and the expected one.
 */
uint64_t pat_check(const void *src, uint64_t key, uint64_t off, size_t len,
		   uint64_t *first_bad, uint8_t *got, uint8_t *want);

/* Digest of a byte string, and the fold of one message digest into a running one. */
uint64_t pat_digest(const void *src, size_t len);
uint64_t pat_digest_fold(uint64_t acc, uint64_t d);

#endif
