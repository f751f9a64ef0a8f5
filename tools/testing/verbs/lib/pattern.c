// SPDX-License-Identifier: GPL-2.0
/*
 * Data patterns and memory checks.
 */
#define _GNU_SOURCE

#include "vt.h"

/* A byte pattern without short periods (a misplaced packet shows), per seed. */
void fill(uint8_t *p, size_t len, unsigned int seed)
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
int same(const uint8_t *got, const uint8_t *want, size_t len, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		CHECK(got[i] == want[i], "%s: data differs at byte %zu of %zu: 0x%02x, expected 0x%02x",
		      what, i, len, got[i], want[i]);
	return 0;
}

/* p[0..len) must still hold the filler byte c. */
int untouched(const uint8_t *p, size_t len, uint8_t c, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		CHECK(p[i] == c, "%s: byte %zu written (0x%02x)", what, i, p[i]);
	return 0;
}

/* Concatenate the bytes of n SGEs into out (the message a gather list makes); its length. */
size_t gather(uint8_t *out, const struct ibv_sge *sge, int n)
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
int scattered(const struct ibv_sge *sge, int n, const uint8_t *msg, size_t len,
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
int untouched_outside(const uint8_t *buf, size_t size, const struct ibv_sge *sge, int n,
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
