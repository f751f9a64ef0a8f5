/* SPDX-License-Identifier: GPL-2.0 */
/* rrxe_wirefuzz: the packet generator and its thread (fuzz.c). */
#ifndef RRXE_WIREFUZZ_FUZZ_H
#define RRXE_WIREFUZZ_FUZZ_H

#include "wirefuzz.h"

enum cls {
	C_RANDOM, C_TRUNCATED, C_LENGTH, C_OVERSIZED, C_OPCODE, C_RKEY, C_PSN, C_KILL,
	C_RESPONSE, C_UD, C_QPN, C_BAD_ICRC, C_BITFLIP, C_IP, C_CNP, C_SEQUENCE, C_PROBE, C_FOREIGN, C_ACCESS, NCLS
};

extern const char *const class_name[NCLS];

struct fuzz_opts {
	uint64_t count;		/* packets to send */
	double rate;		/* packets per second, 0: as fast as possible */
	double seconds;		/* stop sending after this long (0: no limit) */
	int kill_den;		/* one packet in kill_den tries to fail the live pair */
	int probe_den;		/* one packet in probe_den is a probe (0: none) */
	FILE *log;		/* -L: every packet sent, as hex */
	int unsafe;		/* -U: self-test, also send valid requests into live memory */
	const char *iface;	/* -i: inject Ethernet frames on this interface (AF_PACKET) */
	const char *dev_name;	/* the RDMA device (its netdev's MAC is the frames' target) */
	uint32_t src_ip;	/* -S: source address of the packets (network order, 0: own) */
	volatile int stop;
};

struct fuzz_stats {
	volatile uint64_t sent;
	uint64_t per_class[NCLS];
	uint64_t rejected;	/* generated, unsafe for the live pair, not sent */
	uint64_t busy;		/* generated, aimed at a probe or access check in flight, not sent */
	uint64_t kills;		/* sent inside a live window */
	uint64_t foreign;	/* ... from a source address that is not the peer's */
	uint64_t send_retries, send_errors;
	uint64_t own_wc, own_wc_ok, recycled;
	uint64_t probe_valid, probe_valid_ok, probe_invalid, probe_timeouts;
	uint64_t access_checks, access_violations;
	uint64_t probe_violations;
	uint64_t probe_kind_sent[8], probe_kind_bad[8];	/* by kind of answer */
	char first_probe[512];
	char first_access[512];
	double seconds;
	int time_limited;	/* stopped by -t before -n packets */
	volatile int done;
};

extern struct fuzz_opts g_fopts;
extern struct fuzz_stats g_fstats;

void fuzz_setup(struct ibv_context *ctx, const union ibv_gid *gid, int gid_index, uint64_t seed);
void *fuzz_thread(void *arg);
void *replay_thread(void *arg);
void fuzz_dump_recent(FILE *f);
void fuzz_print_probes(FILE *f);
int safe_for_live(const uint8_t *b, size_t len, int bad_icrc, const struct live_view *v,
		  int *kill);

#endif
