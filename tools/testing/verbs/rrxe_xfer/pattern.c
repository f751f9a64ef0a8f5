// SPDX-License-Identifier: GPL-2.0
/* Data patterns and digests for rrxe_xfer (see pattern.h). */
#include <string.h>

#include "pattern.h"

uint64_t pat_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t pat_key(uint64_t seed, unsigned int phase, unsigned int round)
{
	return pat_mix(seed ^ ((uint64_t)phase << 56) ^ ((uint64_t)round << 24));
}

/* Word W of the stream: bytes [8W, 8W + 8), least significant byte first. */
static inline uint64_t word_at(uint64_t key, uint64_t w)
{
	return pat_mix(key ^ (w * 0xd6e8feb86659fd93ULL));
}

static inline uint8_t byte_at(uint64_t key, uint64_t off)
{
	return (uint8_t)(word_at(key, off >> 3) >> ((off & 7) * 8));
}

void pat_fill(void *dst, uint64_t key, uint64_t off, size_t len)
{
	uint8_t *p = dst;
	uint64_t w;

	while (len && (off & 7)) {
		*p++ = byte_at(key, off++);
		len--;
	}
	while (len >= 8) {
		w = word_at(key, off >> 3);
		/* The stream is little-endian, like the guests. */
		memcpy(p, &w, 8);
		p += 8;
		off += 8;
		len -= 8;
	}
	while (len) {
		*p++ = byte_at(key, off++);
		len--;
	}
}

uint64_t pat_check(const void *src, uint64_t key, uint64_t off, size_t len,
		   uint64_t *first_bad, uint8_t *got, uint8_t *want)
{
	const uint8_t *p = src;
	uint64_t bad = 0, w, v;
	size_t i;

	while (len) {
		if ((off & 7) == 0 && len >= 8) {
			w = word_at(key, off >> 3);
			memcpy(&v, p, 8);
			if (v == w) {
				p += 8;
				off += 8;
				len -= 8;
				continue;
			}
			/* Count the bytes of this word one by one. */
			for (i = 0; i < 8; i++) {
				uint8_t e = (uint8_t)(w >> (i * 8));

				if (p[i] != e) {
					if (!bad && first_bad) {
						*first_bad = off + i;
						*got = p[i];
						*want = e;
					}
					bad++;
				}
			}
			p += 8;
			off += 8;
			len -= 8;
			continue;
		}
		if (*p != byte_at(key, off)) {
			if (!bad && first_bad) {
				*first_bad = off;
				*got = *p;
				*want = byte_at(key, off);
			}
			bad++;
		}
		p++;
		off++;
		len--;
	}
	return bad;
}

uint64_t pat_digest(const void *src, size_t len)
{
	const uint8_t *p = src;
	uint64_t h = 0xcbf29ce484222325ULL ^ len, v;

	while (len >= 8) {
		memcpy(&v, p, 8);
		h = (h ^ v) * 0x100000001b3ULL;
		h ^= h >> 29;
		p += 8;
		len -= 8;
	}
	while (len--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return pat_mix(h);
}

uint64_t pat_digest_fold(uint64_t acc, uint64_t d)
{
	return pat_mix(acc ^ d) + d;
}
