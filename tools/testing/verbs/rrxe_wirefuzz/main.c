// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_wirefuzz: a RoCE v2 wire fuzzer for a soft-RoCE device, run inside
 * the test guest.
 *
 * One thread keeps verified RC traffic going between two QPs of the device
 * (live.c: RDMA WRITE, READ, SEND/RECV, atomics, every byte checked). Another
 * sends malformed and mutated RoCE v2 packets, most with a valid ICRC, to the
 * device's own IPv4 address, UDP port 4791, through a raw IP socket (fuzz.c).
 * Packets for the live QPs are only ones the spec drops, NAKs or answers
 * without touching memory; the device's own fuzz targets get anything.
 *
 * usage: rrxe_wirefuzz [-d DEV] [-g GID_INDEX] [-s SEED] [-n PACKETS] [-r RATE]
 *                      [-t SECONDS] [-k N] [-p N] [-T SECONDS] [-P SECONDS] [-K] [-i IFACE] [-S ADDR]
 *                      [-L FILE] [-R FILE] [-U] [-v]
 *        rrxe_wirefuzz -X FILE...
 *
 *   -d DEV      device (default: the first one)
 *   -g INDEX    RoCE v2 IPv4 GID index (default: the first one)
 *   -s SEED     PRNG seed (default: from the clock; always printed)
 *   -n PACKETS  packets to send (default 100000)
 *   -r RATE     at most RATE packets per second (default: no limit)
 *   -t SECONDS  stop sending after SECONDS even if fewer than PACKETS went out
 *   -k N        about one packet in N is an invalid request inside the live
 *               pair's PSN window, which fails the pair (default 2000; 0: never)
 *   -p N        about one packet in N is a probe of the requester (default 400;
 *               0: none)
 *   -T SECONDS  longest wait for the completions of one batch (default 30)
 *   -P SECONDS  longest time without a successful batch (default 60)
 *   -K          do not require the drop counters to grow (upstream rxe has none)
 *   -i IFACE    send Ethernet frames out of IFACE (AF_PACKET) to the MAC of the
 *               device's netdev instead of IP packets to the own address; for a
 *               veth pair whose other end carries the device (upstream rxe
 *               drops every packet that arrives through lo)
 *   -S ADDR     IPv4 source address of the packets (default: the own address;
 *               with -i another one, as a local source arriving on a
 *               non-loopback device is martian)
 *   -L FILE     write every packet sent to FILE (sequence, CLOCK_MONOTONIC time,
 *               class, hex)
 *   -R FILE     send the packets of FILE (hex, last word of each line) instead
 *               of generated ones, with the same live traffic (same -s)
 *   -U          self-test of the checks: now and then also send a valid RDMA
 *               WRITE into the live memory, which must make the run fail
 *   -X FILE...  check the ICRC of captured packets (hex files) and exit
 *   -v          verbose
 *
 * Pass (exit 0): every successful completion of the live traffic carried the
 * right data and nothing else in the live buffers changed; the live pair
 * failed only with a status the spec names, only after packets that could
 * fail it, and was then replaced (counted as a reconnection); a batch
 * succeeded at least every -P seconds; the device's drop counters
 * rcvd_icrc_err, rcvd_hdr_err and rcvd_no_qp grew; and a fresh pair carries a
 * last RDMA WRITE, READ and SEND at the end. Anything else exits 1, printing
 * the seed, the replay command line and the last packets sent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "wirefuzz.h"
#include "live.h"
#include "fuzz.h"

struct live_view g_live = { .lock = PTHREAD_MUTEX_INITIALIZER };
uint64_t g_seed;
char g_replay[512];
double g_op_timeout = 30;

static double g_progress = 60;
static int g_no_counters;
static char g_fail_msg[1024];
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const drop_counters[] = { "rcvd_icrc_err", "rcvd_hdr_err", "rcvd_no_qp" };
static const char *const other_counters[] = {
	"sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request", "rcvd_rnr_err",
	"send_rnr_err", "rcvd_seq_err", "ack_deferred", "retry_exceeded_err",
	"retry_rnr_exceeded_err", "completer_retry_err", "send_err", "link_downed",
	"rdma_sends", "rdma_recvs", "sent_bytes", "rcvd_bytes",
};
#define NDROP 3
#define NOTHER (sizeof(other_counters) / sizeof(other_counters[0]))

static void __attribute__((noreturn)) fail_exit(const char *msg)
{
	g_fopts.stop = 1;
	printf("FAIL: %s\n", msg);
	fuzz_dump_recent(stdout);
	printf("seed %" PRIu64 "; replay: %s\n", g_seed, g_replay);
	fflush(stdout);
	_exit(1);
}

void fatal(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fail_exit(msg);
}

int live_fail(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&fail_lock);
	if (!g_fail_msg[0]) {
		va_start(ap, fmt);
		vsnprintf(g_fail_msg, sizeof(g_fail_msg), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&fail_lock);
	return -1;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* ---- -X: ICRC known answers ---- */

static int check_fixture(const char *path)
{
	static uint8_t b[PKT_MAX];
	char line[4096], all[65536] = "";
	uint8_t icrc[4];
	size_t len;
	FILE *f = fopen(path, "r");

	if (!f) {
		printf("not ok %s: %s\n", path, strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), f))
		if (line[0] != '#' && strlen(all) + strlen(line) < sizeof(all))
			strcat(all, line);
	fclose(f);
	if (hex_parse(all, b, sizeof(b), &len) || len < BTH_OFF + BTH_LEN + ICRC_LEN) {
		printf("not ok %s: not a hex packet\n", path);
		return 1;
	}
	if ((b[0] >> 4) != 4) {
		printf("ok %s # skip: not IPv4\n", path);
		return 0;
	}
	roce_icrc(b, len, icrc);
	if (memcmp(icrc, b + len - 4, 4)) {
		printf("not ok %s: ICRC %02x%02x%02x%02x, packet has %02x%02x%02x%02x\n", path,
		       icrc[0], icrc[1], icrc[2], icrc[3], b[len - 4], b[len - 3], b[len - 2],
		       b[len - 1]);
		return 1;
	}
	printf("ok %s (opcode 0x%02x, %zu bytes)\n", path, b[BTH_OFF], len);
	return 0;
}

/* ---- device ---- */

static int find_gid(struct ibv_context *ctx, int want, union ibv_gid *gid)
{
	struct ibv_port_attr pa;
	struct ibv_gid_entry ent;
	static const uint8_t v4pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (ibv_query_port(ctx, PORT, &pa))
		fatal("ibv_query_port: %s", strerror(errno));
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		if (want >= 0 && i != want)
			continue;
		if (ibv_query_gid_ex(ctx, PORT, i, &ent, 0))
			continue;
		if (ent.gid_type != IBV_GID_TYPE_ROCE_V2 || memcmp(ent.gid.raw, v4pfx, 12))
			continue;
		*gid = ent.gid;
		return i;
	}
	return -1;
}

static int read_counter(const char *dev, const char *name, uint64_t *v)
{
	char path[256];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/hw_counters/%s", dev,
		 PORT, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ok = fscanf(f, "%" SCNu64, v) == 1;
	fclose(f);
	return ok ? 0 : -1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: rrxe_wirefuzz [-d DEV] [-g GID_INDEX] [-s SEED] [-n PACKETS] [-r RATE]\n"
		   "                     [-t SECONDS] [-k N] [-p N] [-T SECONDS] [-P SECONDS] [-K] [-i IFACE]\n"
		   "                     [-S ADDR] [-L FILE] [-R FILE] [-U] [-v]\n"
		   "       rrxe_wirefuzz -X FILE...\n");
}

static void status_line(double t0)
{
	double t = now_s() - t0;
	uint64_t ops = 0;

	for (int i = 0; i < 5; i++)
		ops += g_stats.ops_ok[i];
	printf("[%5.0fs] packets %" PRIu64 " (%.0f/s), live batches %" PRIu64 ", ops %" PRIu64
	       ", reconnections %" PRIu64 "\n",
	       t, (uint64_t)g_fstats.sent, t > 0 ? g_fstats.sent / t : 0, g_stats.batches_ok, ops,
	       g_stats.reconnects);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *dev_name = NULL, *log_path = NULL, *replay_path = NULL;
	struct ibv_device **list;
	struct ibv_device *dev = NULL;
	struct ibv_context *ctx_live, *ctx_fuzz;
	union ibv_gid gid;
	int gid_arg = -1, gid_index, opt, have_seed = 0, n, fixtures = 0;
	uint64_t before[NDROP + NOTHER], after[NDROP + NOTHER];
	int have[NDROP + NOTHER];
	pthread_t tl, tf;
	FILE *replay = NULL;
	double t0, last_status;
	char ip[32];
	int rc = 0, counters_bad = 0;

	g_fopts.count = 100000;
	g_fopts.kill_den = 2000;
	g_fopts.probe_den = 400;
	while ((opt = getopt(argc, argv, "d:g:s:n:r:t:k:p:T:P:Ki:S:L:R:UXvh")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'g': gid_arg = atoi(optarg); break;
		case 's': g_seed = strtoull(optarg, NULL, 0); have_seed = 1; break;
		case 'n': g_fopts.count = strtoull(optarg, NULL, 0); break;
		case 'r': g_fopts.rate = atof(optarg); break;
		case 't': g_fopts.seconds = atof(optarg); break;
		case 'k': g_fopts.kill_den = atoi(optarg); break;
		case 'p': g_fopts.probe_den = atoi(optarg); break;
		case 'T': g_op_timeout = atof(optarg); break;
		case 'P': g_progress = atof(optarg); break;
		case 'K': g_no_counters = 1; break;
		case 'i': g_fopts.iface = optarg; break;
		case 'S':
			if (inet_pton(AF_INET, optarg, &g_fopts.src_ip) != 1)
				fatal("-S %s: not an IPv4 address", optarg);
			break;
		case 'L': log_path = optarg; break;
		case 'R': replay_path = optarg; break;
		case 'U': g_fopts.unsafe = 1; break;
		case 'X': fixtures = 1; break;
		case 'v': g_verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (fixtures) {
		int bad = 0;

		for (int i = optind; i < argc; i++)
			bad += check_fixture(argv[i]);
		return bad ? 1 : 0;
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!have_seed) {
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		g_seed = (uint64_t)t.tv_sec * 1000003u ^ t.tv_nsec;
	}

	list = ibv_get_device_list(&n);
	if (!list || !n)
		fatal("no RDMA devices");
	for (int i = 0; i < n; i++)
		if (!dev_name || !strcmp(ibv_get_device_name(list[i]), dev_name))
			dev = dev ? dev : list[i];
	if (!dev)
		fatal("no device %s", dev_name);
	dev_name = ibv_get_device_name(dev);
	g_fopts.dev_name = dev_name;
	n = snprintf(g_replay, sizeof(g_replay), "rrxe_wirefuzz -d %s -s %" PRIu64 " -n %" PRIu64,
		     dev_name, g_seed, g_fopts.count);
	if (g_fopts.rate > 0)
		n += snprintf(g_replay + n, sizeof(g_replay) - n, " -r %g", g_fopts.rate);
	if (g_fopts.seconds > 0)
		n += snprintf(g_replay + n, sizeof(g_replay) - n, " -t %g", g_fopts.seconds);
	if (g_fopts.kill_den != 2000)
		n += snprintf(g_replay + n, sizeof(g_replay) - n, " -k %d", g_fopts.kill_den);
	if (g_fopts.probe_den != 400)
		n += snprintf(g_replay + n, sizeof(g_replay) - n, " -p %d", g_fopts.probe_den);
	if (g_op_timeout != 30)
		n += snprintf(g_replay + n, sizeof(g_replay) - n, " -T %g", g_op_timeout);
	if (g_progress != 60)
		n += snprintf(g_replay + n, sizeof(g_replay) - n, " -P %g", g_progress);
	if (g_no_counters)
		n += snprintf(g_replay + n, sizeof(g_replay) - n, " -K");
	if (g_fopts.unsafe)
		n += snprintf(g_replay + n, sizeof(g_replay) - n, " -U");
	if (g_fopts.iface)
		n += snprintf(g_replay + n, sizeof(g_replay) - n, " -i %s", g_fopts.iface);
	if (g_fopts.src_ip)
		n += snprintf(g_replay + n, sizeof(g_replay) - n, " -S %s",
			      inet_ntoa(*(struct in_addr *)&g_fopts.src_ip));
	if (replay_path)
		snprintf(g_replay + n, sizeof(g_replay) - n, " -R %s", replay_path);
	printf("rrxe_wirefuzz: seed %" PRIu64 "\nreplay: %s\n", g_seed, g_replay);
	fflush(stdout);

	ctx_live = ibv_open_device(dev);
	ctx_fuzz = ibv_open_device(dev);
	if (!ctx_live || !ctx_fuzz)
		fatal("ibv_open_device(%s): %s", dev_name, strerror(errno));
	gid_index = find_gid(ctx_live, gid_arg, &gid);
	if (gid_index < 0)
		fatal("no RoCE v2 IPv4 GID on %s port %d", dev_name, PORT);
	snprintf(ip, sizeof(ip), "%u.%u.%u.%u", gid.raw[12], gid.raw[13], gid.raw[14], gid.raw[15]);
	printf("device %s, GID index %d, address %s, %" PRIu64 " packets\n", dev_name, gid_index,
	       ip, g_fopts.count);
	start_async_thread(ctx_live);
	start_async_thread(ctx_fuzz);
	if (log_path) {
		g_fopts.log = fopen(log_path, "w");
		if (!g_fopts.log)
			fatal("%s: %s", log_path, strerror(errno));
		setvbuf(g_fopts.log, NULL, _IOFBF, 1 << 16);
	}
	if (replay_path) {
		replay = fopen(replay_path, "r");
		if (!replay)
			fatal("%s: %s", replay_path, strerror(errno));
	}

	for (unsigned int i = 0; i < NDROP + NOTHER; i++) {
		const char *name = i < NDROP ? drop_counters[i] : other_counters[i - NDROP];

		have[i] = !read_counter(dev_name, name, &before[i]);
	}

	live_setup(ctx_live, &gid, gid_index, g_seed);
	fuzz_setup(ctx_fuzz, &gid, gid_index, g_seed);
	if (pthread_create(&tl, NULL, live_thread, NULL) ||
	    pthread_create(&tf, NULL, replay ? replay_thread : fuzz_thread, replay))
		fatal("pthread_create failed");

	t0 = last_status = now_s();
	for (;;) {
		usleep(100000);
		if (g_stats.failed)
			fail_exit(g_fail_msg);
		if (now_s() - g_stats.last_ok > g_progress)
			fatal("no successful batch of the live traffic for %.0f s", g_progress);
		if (now_s() - last_status >= 10) {
			status_line(t0);
			last_status = now_s();
		}
		if (g_fstats.done)
			break;
	}
	pthread_join(tf, NULL);
	g_stop_live = 1;
	while (!g_stats.finished) {
		usleep(100000);
		if (g_stats.failed)
			fail_exit(g_fail_msg);
		if (now_s() - g_stats.last_ok > g_progress + g_op_timeout)
			fatal("the live traffic did not stop");
	}
	pthread_join(tl, NULL);
	if (g_stats.failed)
		fail_exit(g_fail_msg);
	if (g_fopts.log)
		fclose(g_fopts.log);
	status_line(t0);

	if (g_fstats.time_limited)
		printf("fuzz: stopped by -t %g after %" PRIu64 " of %" PRIu64 " packets\n",
		       g_fopts.seconds, (uint64_t)g_fstats.sent, g_fopts.count);
	printf("fuzz: %" PRIu64 " packets in %.1f s (%.0f/s), %" PRIu64
	       " generated ones unsafe for the live pair and not sent, %" PRIu64
	       " aimed at a probe or access check in flight and not sent, %" PRIu64
	       " inside its window (%" PRIu64 " more from a foreign address), %" PRIu64
	       " send retries, %" PRIu64 " send errors\n",
	       (uint64_t)g_fstats.sent, g_fstats.seconds,
	       g_fstats.seconds > 0 ? g_fstats.sent / g_fstats.seconds : 0, g_fstats.rejected,
	       g_fstats.busy,
	       g_fstats.kills, g_fstats.foreign, g_fstats.send_retries, g_fstats.send_errors);
	printf("fuzz classes:");
	for (int i = 0; i < NCLS; i++)
		printf(" %s %" PRIu64, class_name[i], g_fstats.per_class[i]);
	printf("\nfuzz targets: %" PRIu64 " completions (%" PRIu64 " successful), %" PRIu64
	       " target QPs replaced after an error\n",
	       g_fstats.own_wc, g_fstats.own_wc_ok, g_fstats.recycled);
	printf("probes: %" PRIu64 " answered correctly (%" PRIu64 " completed with the data, %" PRIu64
	       " ran out of retries first), %" PRIu64 " answered wrongly; %" PRIu64
	       " went wrong\n", g_fstats.probe_valid, g_fstats.probe_valid_ok,
	       g_fstats.probe_timeouts, g_fstats.probe_invalid, g_fstats.probe_violations);
	if (g_fstats.probe_violations || g_verbose)
		fuzz_print_probes(stdout);
	printf("access checks: %" PRIu64 ", violations %" PRIu64 "\n", g_fstats.access_checks,
	       g_fstats.access_violations);
	printf("live: %" PRIu64 " good batches; ops WRITE %" PRIu64 " READ %" PRIu64 " SEND %" PRIu64
	       " FETCH_ADD %" PRIu64 " CMP_SWAP %" PRIu64 "; reconnections %" PRIu64
	       " (%" PRIu64 " found failed between batches, %" PRIu64
	       " retry-exceeded without a failing packet, %" PRIu64 " after packets from a "
	       "foreign address); async events %" PRIu64 "\n",
	       g_stats.batches_ok, g_stats.ops_ok[0], g_stats.ops_ok[1], g_stats.ops_ok[2],
	       g_stats.ops_ok[3], g_stats.ops_ok[4], g_stats.reconnects, g_stats.idle_failures,
	       g_stats.retry_without_kill, g_stats.foreign_failures, g_stats.async_events);
	for (int i = 0; i < 32; i++)
		if (g_stats.status[i])
			printf("live: %" PRIu64 " error completions %s\n", g_stats.status[i],
			       ibv_wc_status_str(i));
	if (!g_stats.batches_ok)
		fatal("the live traffic never completed a batch");

	if (live_final()) {
		if (!g_fail_msg[0])
			snprintf(g_fail_msg, sizeof(g_fail_msg), "final exchange failed");
		fail_exit(g_fail_msg);
	}
	printf("final: RDMA WRITE, READ and SEND on a fresh pair verified\n");
	if (g_fstats.probe_violations) {
		printf("FAIL: %" PRIu64 " probes of the requester went wrong; the first: %s\n",
		       g_fstats.probe_violations, g_fstats.first_probe);
		rc = 1;
	}
	if (g_fstats.access_violations) {
		printf("FAIL: %" PRIu64 " of %" PRIu64 " requests that a QP's access flags forbid "
		       "changed memory (the spec wants a Remote Access Error NAK); the first: %s\n",
		       g_fstats.access_violations, g_fstats.access_checks, g_fstats.first_access);
		rc = 1;
	}
	if (g_stats.foreign_failures) {
		printf("FAIL: the live pair failed %" PRIu64 " times after invalid requests from an "
		       "address that is not its peer's (and no other packet that could fail it): "
		       "a connected QP must drop packets from other sources; the first: %s\n",
		       g_stats.foreign_failures, g_stats.first_foreign);
		rc = 1;
	}

	for (unsigned int i = 0; i < NDROP + NOTHER; i++) {
		const char *name = i < NDROP ? drop_counters[i] : other_counters[i - NDROP];

		if (!have[i] || read_counter(dev_name, name, &after[i])) {
			if (i < NDROP) {
				printf("counter %s: missing (no /sys/class/infiniband/%s/ports/%d/"
				       "hw_counters/%s)\n", name, dev_name, PORT, name);
				if (!g_no_counters)
					counters_bad = 1;
			}
			continue;
		}
		printf("counter %s: %" PRIu64 " -> %" PRIu64 " (+%" PRIu64 ")\n", name, before[i],
		       after[i], after[i] - before[i]);
		if (i < NDROP && after[i] <= before[i] && !g_no_counters) {
			printf("counter %s did not grow\n", name);
			counters_bad = 1;
		}
	}
	if (counters_bad)
		printf("FAIL: the device's drop counters (rcvd_icrc_err, rcvd_hdr_err, rcvd_no_qp) "
		       "are missing or did not grow\n");
	if (rc || counters_bad) {
		printf("seed %" PRIu64 "; replay: %s\n", g_seed, g_replay);
		return 1;
	}
	printf("PASS (seed %" PRIu64 ")\n", g_seed);
	fflush(stdout);
	/* The async-event threads still block in the kernel: leave without joining. */
	_exit(0);
}
