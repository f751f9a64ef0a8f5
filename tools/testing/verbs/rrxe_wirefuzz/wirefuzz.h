/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rrxe_wirefuzz: shared declarations (see main.c for what the program does).
 */
#ifndef RRXE_WIREFUZZ_H
#define RRXE_WIREFUZZ_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>

#define PORT 1
#define ROCE_PORT 4791
#define PSN_MASK 0xffffffu
#define PKT_MAX 9216		/* largest IP packet the fuzzer builds */
#define IP_LEN 20
#define UDP_LEN 8
#define BTH_LEN 12
#define ICRC_LEN 4
#define BTH_OFF (IP_LEN + UDP_LEN)
#define LIVE_MTU 1024		/* path MTU of every connected QP */

/* ---- PRNG (xoshiro256**, seeded through splitmix64) ---- */
struct rng {
	uint64_t s[4];
};

void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, n) (n > 0). */
uint64_t rng_below(struct rng *r, uint64_t n);
/* True with probability num/den. */
int rng_chance(struct rng *r, unsigned int num, unsigned int den);
void rng_bytes(struct rng *r, void *p, size_t n);

/* ---- RoCE v2 wire format ---- */

/* Header bits of an opcode (wire.c). */
enum {
	H_RETH = 1 << 0,
	H_AETH = 1 << 1,
	H_ATOMIC = 1 << 2,
	H_ATMACK = 1 << 3,
	H_IMM = 1 << 4,
	H_IETH = 1 << 5,
	H_DETH = 1 << 6,
	H_PAYLOAD = 1 << 7,
	H_REQ = 1 << 8,
	H_RESP = 1 << 9,
	H_KNOWN = 1 << 10,
	H_FIRST = 1 << 11,	/* starts a message (ONLY has FIRST and LAST) */
	H_LAST = 1 << 12,
};

enum {
	OP_RC_SEND_FIRST = 0x00, OP_RC_SEND_MIDDLE = 0x01, OP_RC_SEND_LAST = 0x02,
	OP_RC_SEND_LAST_IMM = 0x03, OP_RC_SEND_ONLY = 0x04, OP_RC_SEND_ONLY_IMM = 0x05,
	OP_RC_WRITE_FIRST = 0x06, OP_RC_WRITE_MIDDLE = 0x07, OP_RC_WRITE_LAST = 0x08,
	OP_RC_WRITE_LAST_IMM = 0x09, OP_RC_WRITE_ONLY = 0x0a, OP_RC_WRITE_ONLY_IMM = 0x0b,
	OP_RC_READ_REQ = 0x0c, OP_RC_READ_RESP_FIRST = 0x0d, OP_RC_READ_RESP_MIDDLE = 0x0e,
	OP_RC_READ_RESP_LAST = 0x0f, OP_RC_READ_RESP_ONLY = 0x10, OP_RC_ACK = 0x11,
	OP_RC_ATOMIC_ACK = 0x12, OP_RC_CMP_SWAP = 0x13, OP_RC_FETCH_ADD = 0x14,
	OP_RC_SEND_LAST_INV = 0x16, OP_RC_SEND_ONLY_INV = 0x17,
	OP_UC_SEND_ONLY = 0x24, OP_UC_WRITE_ONLY = 0x2a,
	OP_UD_SEND_ONLY = 0x64, OP_UD_SEND_ONLY_IMM = 0x65,
	OP_CNP = 0x81,
};

/* Header and extension-header lengths. */
#define RETH_LEN 16
#define AETH_LEN 4
#define ATOMIC_LEN 28
#define ATMACK_LEN 8
#define IMM_LEN 4
#define IETH_LEN 4
#define DETH_LEN 8

unsigned int op_mask(uint8_t opcode);
/* Length of BTH plus the extension headers the opcode carries. */
size_t op_hdr_len(uint8_t opcode);
/* Offset (from the BTH) of extension header `h` (an H_* bit), or 0. */
size_t op_ext_off(uint8_t opcode, unsigned int h);

/* Field values of one packet's transport headers. */
struct hdrs {
	uint8_t opcode;
	uint8_t se, mig, tver;
	int pad;		/* pad count to write; -1: the right one */
	uint16_t pkey;
	uint8_t fb;		/* BTH byte 4 (FECN, BECN, reserved) */
	uint32_t qpn;
	uint8_t ack_req;
	uint32_t psn;
	uint64_t va;		/* RETH / AtomicETH */
	uint32_t rkey, dlen;
	uint8_t syndrome;	/* AETH */
	uint32_t msn;
	uint64_t swap_add, compare, orig;
	uint32_t imm, ieth;
	uint32_t qkey, src_qpn;	/* DETH */
};

struct pkt {
	uint8_t b[PKT_MAX];
	size_t len;		/* whole IP packet, ICRC included */
	int bad_icrc;		/* the ICRC was spoiled on purpose */
	int frag;		/* send as two IP fragments */
	size_t eff_len;		/* if not 0: bytes the receiver keeps (UDP length < IP) */
};

/*
 * The RoCE v2 ICRC of a whole IPv4 packet `ip` of `len` bytes whose last four
 * bytes are the ICRC: returns the four bytes as they go on the wire.
 */
void roce_icrc(const uint8_t *ip, size_t len, uint8_t out[4]);
/* Store the right ICRC in the last four bytes. */
void pkt_seal(struct pkt *p);

/*
 * Write the transport headers of `h` and `plen` payload bytes from `payload`
 * (random if NULL) at p->b + BTH_OFF, followed by pad bytes and the ICRC;
 * sets p->len and the IPv4/UDP headers. Returns the UDP payload length.
 */
size_t pkt_build(struct pkt *p, struct rng *r, const struct hdrs *h,
		 const uint8_t *payload, size_t plen, uint32_t src, uint32_t dst);
/*
 * (Re)write the IPv4 and UDP headers for a UDP payload of `udp_plen` bytes,
 * from address src to dst (network order).
 */
void pkt_ip_udp(struct pkt *p, struct rng *r, size_t udp_plen, uint32_t src, uint32_t dst);
/* The IPv4 header checksum of a 20-byte header (its checksum field taken as 0). */
uint16_t ip_checksum(const uint8_t *ip);
void pkt_hex(FILE *f, const struct pkt *p);
int hex_parse(const char *s, uint8_t *out, size_t max, size_t *len);

/* ---- state shared between the live traffic and the fuzzer ---- */

struct mr_view {
	uint64_t addr, len;
	uint32_t rkey;
};

struct live_view {
	pthread_mutex_t lock;
	uint32_t gen;			/* bumped on every reconnection */
	uint32_t qpn_a, qpn_b;		/* the live pair (0: none) */
	uint32_t a_lo, a_hi;		/* A's oldest unacknowledged PSN, next PSN */
	uint32_t b_sq;			/* B's send PSN = A's expected request PSN */
	uint32_t kills;			/* packets sent in this generation that may fail it */
	uint32_t foreign;		/* ... that would, but come from an address not its peer's */
	struct mr_view mr[2];		/* every MR of the live PD */
};

extern struct live_view g_live;

/* Options and environment shared by the files. */
extern int g_verbose;		/* lib/report.c */
extern uint64_t g_seed;
extern char g_replay[512];

void vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
