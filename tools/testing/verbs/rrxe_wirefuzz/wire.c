// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_wirefuzz: the PRNG, the RoCE v2 opcode table, the ICRC and the packet
 * builder.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <string.h>

#include "crc32.h"
#include "wirefuzz.h"

/* ------------------------------------------------------------------ */
/* PRNG                                                               */
/* ------------------------------------------------------------------ */

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
	return n ? rng_next(r) % n : 0;
}

int rng_chance(struct rng *r, unsigned int num, unsigned int den)
{
	return rng_below(r, den) < num;
}

void rng_bytes(struct rng *r, void *p, size_t n)
{
	uint8_t *b = p;

	while (n) {
		uint64_t v = rng_next(r);
		size_t k = n < 8 ? n : 8;

		memcpy(b, &v, k);
		b += k;
		n -= k;
	}
}

/* ------------------------------------------------------------------ */
/* Opcodes                                                            */
/* ------------------------------------------------------------------ */

#define SEND_F (H_KNOWN | H_REQ | H_PAYLOAD | H_FIRST)
#define SEND_M (H_KNOWN | H_REQ | H_PAYLOAD)
#define SEND_L (H_KNOWN | H_REQ | H_PAYLOAD | H_LAST)
#define SEND_O (SEND_F | H_LAST)
#define WRITE_F (H_KNOWN | H_REQ | H_PAYLOAD | H_RETH | H_FIRST)
#define WRITE_M (H_KNOWN | H_REQ | H_PAYLOAD)
#define WRITE_L (H_KNOWN | H_REQ | H_PAYLOAD | H_LAST)
#define WRITE_O (WRITE_F | H_LAST)

/* The RC opcodes 0x00-0x17; UC 0x20-0x2b uses the same layout (no reads, atomics, acks). */
static const unsigned int rc_ops[0x20] = {
	[0x00] = SEND_F,
	[0x01] = SEND_M,
	[0x02] = SEND_L,
	[0x03] = SEND_L | H_IMM,
	[0x04] = SEND_O,
	[0x05] = SEND_O | H_IMM,
	[0x06] = WRITE_F,
	[0x07] = WRITE_M,
	[0x08] = WRITE_L,
	[0x09] = WRITE_L | H_IMM,
	[0x0a] = WRITE_O,
	[0x0b] = WRITE_O | H_IMM,
	[0x0c] = H_KNOWN | H_REQ | H_RETH | H_FIRST | H_LAST,
	[0x0d] = H_KNOWN | H_RESP | H_AETH | H_PAYLOAD | H_FIRST,
	[0x0e] = H_KNOWN | H_RESP | H_PAYLOAD,
	[0x0f] = H_KNOWN | H_RESP | H_AETH | H_PAYLOAD | H_LAST,
	[0x10] = H_KNOWN | H_RESP | H_AETH | H_PAYLOAD | H_FIRST | H_LAST,
	[0x11] = H_KNOWN | H_RESP | H_AETH | H_FIRST | H_LAST,
	[0x12] = H_KNOWN | H_RESP | H_AETH | H_ATMACK | H_FIRST | H_LAST,
	[0x13] = H_KNOWN | H_REQ | H_ATOMIC | H_FIRST | H_LAST,
	[0x14] = H_KNOWN | H_REQ | H_ATOMIC | H_FIRST | H_LAST,
	[0x16] = SEND_L | H_IETH,
	[0x17] = SEND_O | H_IETH,
	[0x1d] = H_KNOWN | H_REQ | H_RETH | H_PAYLOAD | H_FIRST | H_LAST,	/* ATOMIC WRITE */
};

unsigned int op_mask(uint8_t op)
{
	uint8_t low = op & 0x1f;

	switch (op >> 5) {
	case 0:	/* RC */
		return low < sizeof(rc_ops) / sizeof(rc_ops[0]) ? rc_ops[low] : 0;
	case 1:	/* UC: sends and writes */
		return low < 0x0c ? rc_ops[low] : 0;
	case 3:	/* UD */
		if (low == 4)
			return SEND_O | H_DETH;
		if (low == 5)
			return SEND_O | H_DETH | H_IMM;
		return 0;
	default:
		return 0;
	}
}

/* Wire order of the extension headers and their lengths. */
static const struct {
	unsigned int bit;
	size_t len;
} ext_order[] = {
	{ H_DETH, DETH_LEN }, { H_RETH, RETH_LEN }, { H_ATOMIC, ATOMIC_LEN },
	{ H_AETH, AETH_LEN }, { H_ATMACK, ATMACK_LEN }, { H_IMM, IMM_LEN },
	{ H_IETH, IETH_LEN },
};

size_t op_ext_off(uint8_t op, unsigned int h)
{
	unsigned int m = op_mask(op);
	size_t off = BTH_LEN;

	if (!(m & h))
		return 0;
	for (size_t i = 0; i < sizeof(ext_order) / sizeof(ext_order[0]); i++) {
		if (ext_order[i].bit == h)
			return off;
		if (m & ext_order[i].bit)
			off += ext_order[i].len;
	}
	return 0;
}

size_t op_hdr_len(uint8_t op)
{
	unsigned int m = op_mask(op);
	size_t len = BTH_LEN;

	for (size_t i = 0; i < sizeof(ext_order) / sizeof(ext_order[0]); i++)
		if (m & ext_order[i].bit)
			len += ext_order[i].len;
	return len;
}

/* ------------------------------------------------------------------ */
/* ICRC                                                               */
/* ------------------------------------------------------------------ */

void roce_icrc(const uint8_t *ip, size_t len, uint8_t out[4])
{
	static const uint8_t lrh[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t pseudo[IP_LEN + UDP_LEN + BTH_LEN];
	size_t body = len >= ICRC_LEN ? len - ICRC_LEN : 0;
	size_t n = body < sizeof(pseudo) ? body : sizeof(pseudo);
	uint32_t crc;

	memcpy(pseudo, ip, n);
	/* IPv4: TOS, TTL and the header checksum are not covered. */
	if (n > 1)
		pseudo[1] = 0xff;
	if (n > 8)
		pseudo[8] = 0xff;
	for (size_t i = 10; i < 12 && i < n; i++)
		pseudo[i] = 0xff;
	/* UDP checksum */
	for (size_t i = IP_LEN + 6; i < IP_LEN + 8 && i < n; i++)
		pseudo[i] = 0xff;
	/* BTH byte 4: FECN, BECN and reserved bits */
	if (n > BTH_OFF + 4)
		pseudo[BTH_OFF + 4] = 0xff;
	crc = crc32_le(0xffffffffu, lrh, sizeof(lrh));
	crc = crc32_le(crc, pseudo, n);
	if (body > n)
		crc = crc32_le(crc, ip + n, body - n);
	crc = ~crc;
	out[0] = crc & 0xff;
	out[1] = (crc >> 8) & 0xff;
	out[2] = (crc >> 16) & 0xff;
	out[3] = crc >> 24;
}

void pkt_seal(struct pkt *p)
{
	if (p->len >= BTH_OFF + ICRC_LEN)
		roce_icrc(p->b, p->len, p->b + p->len - ICRC_LEN);
	p->bad_icrc = 0;
}

/* ------------------------------------------------------------------ */
/* Building packets                                                   */
/* ------------------------------------------------------------------ */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = v >> 16;
	p[1] = v >> 8;
	p[2] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, v);
}

uint16_t ip_checksum(const uint8_t *ip)
{
	uint32_t sum = 0;

	for (int i = 0; i < IP_LEN; i += 2)
		if (i != 10)
			sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

void pkt_ip_udp(struct pkt *p, struct rng *r, size_t udp_plen, uint32_t src, uint32_t dst)
{
	uint8_t *ip = p->b, *udp = p->b + IP_LEN;
	uint16_t id = 1 + rng_below(r, 0xffff);	/* never 0: the kernel would choose one */

	p->len = IP_LEN + UDP_LEN + udp_plen;
	ip[0] = 0x45;
	ip[1] = rng_chance(r, 1, 8) ? rng_below(r, 256) : 0;
	put16(ip + 2, p->len);
	put16(ip + 4, id);
	put16(ip + 6, rng_chance(r, 1, 2) ? 0x4000 : 0);	/* DF or not */
	ip[8] = rng_chance(r, 1, 8) ? 1 + rng_below(r, 255) : 64;
	ip[9] = 17;	/* UDP */
	put16(ip + 10, 0);	/* the kernel fills the header checksum */
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	put16(udp, 0xc000 | rng_below(r, 0x4000));
	put16(udp + 2, ROCE_PORT);
	put16(udp + 4, UDP_LEN + udp_plen);
	put16(udp + 6, 0);	/* no UDP checksum (IPv4) */
}

size_t pkt_build(struct pkt *p, struct rng *r, const struct hdrs *h,
		 const uint8_t *payload, size_t plen, uint32_t src, uint32_t dst)
{
	uint8_t *t = p->b + BTH_OFF;
	uint8_t op = h->opcode;
	unsigned int m = op_mask(op);
	size_t hl = op_hdr_len(op), off;
	unsigned int pad = (-plen) & 3;
	size_t udp_plen;

	if (BTH_OFF + hl + plen + 3 + ICRC_LEN > PKT_MAX)
		plen = PKT_MAX - BTH_OFF - hl - 3 - ICRC_LEN;
	pad = (-plen) & 3;
	memset(t, 0, hl);
	t[0] = op;
	t[1] = (h->se ? 0x80 : 0) | (h->mig ? 0x40 : 0) |
	       (((h->pad >= 0 ? (unsigned int)h->pad : pad) & 3) << 4) | (h->tver & 0xf);
	put16(t + 2, h->pkey);
	t[4] = h->fb;
	put24(t + 5, h->qpn);
	t[8] = h->ack_req ? 0x80 : 0;
	put24(t + 9, h->psn);
	if ((off = op_ext_off(op, H_DETH))) {
		put32(t + off, h->qkey);
		put24(t + off + 5, h->src_qpn);
	}
	if ((off = op_ext_off(op, H_RETH))) {
		put64(t + off, h->va);
		put32(t + off + 8, h->rkey);
		put32(t + off + 12, h->dlen);
	}
	if ((off = op_ext_off(op, H_ATOMIC))) {
		put64(t + off, h->va);
		put32(t + off + 8, h->rkey);
		put64(t + off + 12, h->swap_add);
		put64(t + off + 20, h->compare);
	}
	if ((off = op_ext_off(op, H_AETH))) {
		t[off] = h->syndrome;
		put24(t + off + 1, h->msn);
	}
	if ((off = op_ext_off(op, H_ATMACK)))
		put64(t + off, h->orig);
	if ((off = op_ext_off(op, H_IMM)))
		put32(t + off, h->imm);
	if ((off = op_ext_off(op, H_IETH)))
		put32(t + off, h->ieth);
	(void)m;
	if (payload)
		memcpy(t + hl, payload, plen);
	else
		rng_bytes(r, t + hl, plen);
	memset(t + hl + plen, 0, pad);
	udp_plen = hl + plen + pad + ICRC_LEN;
	pkt_ip_udp(p, r, udp_plen, src, dst);
	p->bad_icrc = 0;
	p->frag = 0;
	pkt_seal(p);
	return udp_plen;
}

void pkt_hex(FILE *f, const struct pkt *p)
{
	for (size_t i = 0; i < p->len; i++)
		fprintf(f, "%02x", p->b[i]);
}

/* Hex digits (whitespace ignored) into bytes; 0 on success. */
int hex_parse(const char *s, uint8_t *out, size_t max, size_t *len)
{
	size_t n = 0;
	int hi = -1;

	for (; *s; s++) {
		int v;

		if (isspace((unsigned char)*s))
			continue;
		if (!isxdigit((unsigned char)*s))
			return -1;
		v = isdigit((unsigned char)*s) ? *s - '0' : (tolower((unsigned char)*s) - 'a' + 10);
		if (hi < 0) {
			hi = v;
			continue;
		}
		if (n == max)
			return -1;
		out[n++] = hi << 4 | v;
		hi = -1;
	}
	*len = n;
	return hi < 0 ? 0 : -1;
}
