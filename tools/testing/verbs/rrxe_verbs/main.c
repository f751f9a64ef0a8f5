// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_verbs: verbs conformance tests for a soft-RoCE device, driven through
 * the distribution's stock libibverbs and librxe provider: the control verbs,
 * and (group "datapath") RC traffic between two QPs of the device.
 *
 * usage: rrxe_verbs [-d DEV] [-D rxe|rrxe] [-g GID_INDEX] [-n COUNT] [-v] [-l]
 *                   [CASE...|GROUP...|all]
 *
 *   -d DEV        device name (default: the first device found)
 *   -D DRIVER     the driver behind DEV, rxe or rrxe (default: from the
 *                 device name's prefix). Where rxe differs from the IB spec,
 *                 the bounds and protection cases accept rxe's answer on
 *                 rxe only.
 *   -g GID_INDEX  RoCE v2 GID table index to use (default: the first RoCE v2
 *                 GID holding an IPv4-mapped address, else any RoCE v2 GID)
 *   -n COUNT      objects created and destroyed by the "objects" case (10000)
 *   -v            verbose: print what each case checks
 *   -l            list the cases and exit
 *   CASE          case names; default: every case that is in no group.
 *   GROUP         the opt-in cases of a group: "slow" (objects),
 *                 "datapath" (rc_loop, multi_sge, srq_limit, rnr,
 *                 cq_overflow: they need packets; the datapath cases use
 *                 the -g GID as both ends, so the device sends to its own
 *                 address), "bounds" (address-space, MR, SGE, MTU and
 *                 Q_Key edges), "protection" (remote accesses the
 *                 responder must refuse), "windows" (memory windows),
 *                 "rdma_flush" (RDMA FLUSH), "odp" (on-demand paging) or
 *                 "rereg" (ibv_rereg_mr of access and PD);
 *                 "all" runs every case.
 *
 * Output is TAP-like: "ok NAME" or "not ok NAME: reason" per case, then
 * "N passed, N failed". The exit status is 1 if any case failed, 2 on a usage
 * error. Each case opens its own device context and closes it at the end, so a
 * failing case cannot leave objects behind for the next one.
 *
 * The expected error numbers are those of upstream rdma_rxe with ib_core (the
 * reference: every case passes on rxe before it is used against rrxe).
 *
 * Files: main.c (options, the case table, running cases), control.c (cases
 * without packets), datapath.c and multi_sge.c (group "datapath"),
 * bounds.c and protection.c (groups "bounds" and "protection", with edge.c),
 * windows.c (group "windows"), flush.c (group "rdma_flush"), odp.c (group
 * "odp"), rereg.c (group "rereg").
 * The helpers they share with other test programs are in ../lib (vt.h).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include "cases.h"

long g_count = 10000;

struct tcase {
	const char *name;
	int (*fn)(struct env *e);
	/*
	 * NULL: in the default list. Otherwise the case is opt-in: it runs when
	 * named, when its group is named, or with "all".
	 */
	const char *group;
	const char *what;
};

static const struct tcase cases[] = {
	{ "device", t_device, NULL, "open, query_device(_ex)/port/gid(_ex)/pkey, bad indices" },
	{ "pd", t_pd, NULL, "alloc/dealloc PD; PD/CQ still in use: EBUSY" },
	{ "mr", t_mr, NULL, "reg/dereg MR; keys; bad access EINVAL; unmapped EFAULT; zero length" },
	{ "cq", t_cq, NULL, "create/resize/notify/destroy CQ; limits; completion channel stays quiet" },
	{ "qp", t_qp, NULL, "RC/UC/UD QPs: caps, RESET-INIT-RTR-RTS-ERR-RESET, illegal transitions" },
	{ "srq", t_srq, NULL, "create/query/arm/resize SRQ; QP on SRQ; limits" },
	{ "ah", t_ah, NULL, "create/destroy AH on the RoCE v2 GID; bad sgid_index/port" },
	{ "fastpath", t_fastpath, NULL, "post_recv into the user-space RQ ring; poll an empty CQ" },
	{ "flush", t_flush, NULL, "QP to ERR flushes posted receives: CQ event, WR_FLUSH_ERR" },
	{ "cleanup", t_cleanup, NULL, "close a context holding PD/MR/CQ/SRQ/QP/AH objects" },
	{ "objects", t_objects, "slow", "create and destroy -n objects (PD, MR, CQ, QP, AH in turn)" },
	{ "rc_loop", t_rc_loop, "datapath",
	  "RC QP pair on the own GID: SEND(_IMM), WRITE(_IMM), READ, onto the source, atomics, burst, "
	  "bad rkey" },
	{ "multi_sge", t_multi_sge, "datapath",
	  "SEND/WRITE gathered from 3 SGEs, READ and RECV scattered, inline SGEs, other PD's lkey" },
	{ "srq_limit", t_srq_limit, "datapath",
	  "SENDs to an SRQ below its armed limit: SRQ_LIMIT_REACHED, limit disarmed; "
	  "QP on the SRQ to ERR: QP_LAST_WQE_REACHED" },
	{ "rnr", t_rnr, "datapath", "SEND before its receive: RNR retry (7), RNR_RETRY_EXC_ERR (0)" },
	{ "atomic_write", t_atomic_write, "datapath",
	  "ibv_wr_atomic_write: 8 bytes stored, then FETCH_AND_ADD sees them; misaligned fails" },
	{ "cq_overflow", t_cq_overflow, "datapath",
	  "SENDs into a full receive CQ: CQ_ERR, QPs to ERR, sender's completions" },
	{ "mr_iova", t_mr_iova, "bounds",
	  "MRs at IOVA 0, 2^64-8192, 2^64-4096 (RDMA at both ends); IOVA range past 2^64" },
	{ "sge_end", t_sge_end, "bounds",
	  "SEND/RECV/WRITE/READ/atomic SGEs ending at 2^64-1, RC and UD" },
	{ "sge_zero_len", t_sge_zero_len, "bounds",
	  "0-byte SGEs alone and among others (at 2^64), RC SEND/RECV/WRITE/READ, UD" },
	{ "sge_max", t_sge_max, "bounds",
	  "max_sge SGEs for SEND/RECV/WRITE/READ (RC, UD); max_sge + 1: EINVAL" },
	{ "sge_cross_end", t_sge_cross_end, "bounds",
	  "SGEs one byte past an MR: SEND, WRITE, RECV, READ, atomic, UD SEND and RECV" },
	{ "sge_cross_2_64", t_sge_cross_2_64, "bounds",
	  "SGEs across 2^64 on an MR at the top: SEND, WRITE, RECV, READ, atomic, UD SEND" },
	{ "rdma_range", t_rdma_range, "bounds",
	  "WRITE/READ past the remote MR's end, before its start; 0 bytes at 2^64" },
	{ "atomic_bounds", t_atomic_bounds, "bounds",
	  "atomics: unaligned, local buffer of 4 and 16 bytes, last word, across the end" },
	{ "ud_mtu", t_ud_mtu, "bounds", "UD SEND of MTU + 1 bytes (not sent), of MTU bytes" },
	{ "ud_short_recv", t_ud_short_recv, "bounds",
	  "UD receive shorter than 40 + payload: LOC_LEN_ERR (rxe: dropped)" },
	{ "ud_qkey", t_ud_qkey, "bounds", "UD SEND with a wrong Q_Key: dropped" },
	{ "ud_recv_2_64", t_ud_recv_2_64, "bounds",
	  "UD receive SGE across 2^64 on an MR at the top (a kernel oops in rrxe)" },
	{ "prot_bad_rkey", t_prot_bad_rkey, "protection", "WRITE and READ with a wrong rkey" },
	{ "prot_other_pd", t_prot_other_pd, "protection",
	  "WRITE and atomic with the rkey of an MR in another PD" },
	{ "prot_past_end", t_prot_past_end, "protection",
	  "WRITE and READ of 16 bytes over the MR's last 8" },
	{ "prot_mr_no_write", t_prot_mr_no_write, "protection",
	  "WRITE into an MR without REMOTE_WRITE" },
	{ "prot_mr_no_read", t_prot_mr_no_read, "protection",
	  "READ from an MR without REMOTE_READ" },
	{ "prot_mr_no_atomic", t_prot_mr_no_atomic, "protection",
	  "atomic on an MR without REMOTE_ATOMIC" },
	{ "prot_qp_no_write", t_prot_qp_no_write, "protection",
	  "WRITE to a QP whose qp_access_flags lack REMOTE_WRITE" },
	{ "prot_qp_no_read", t_prot_qp_no_read, "protection",
	  "READ from a QP whose qp_access_flags lack REMOTE_READ" },
	{ "prot_qp_no_atomic", t_prot_qp_no_atomic, "protection",
	  "atomic to a QP whose qp_access_flags lack REMOTE_ATOMIC" },
	{ "prot_dereg", t_prot_dereg, "protection",
	  "WRITE and READ with the rkey of a deregistered MR" },
	{ "mw_type1", t_mw_type1, "windows",
	  "type 1 window: ibv_bind_mw, WRITE/READ through it, rebind, unbind, stale key" },
	{ "mw_range", t_mw_range, "windows",
	  "type 1 window: before its start, across its end, without the right: REM_ACCESS_ERR" },
	{ "mw_type2", t_mw_type2, "windows",
	  "type 2 window: IBV_WR_BIND_MW, SEND_WITH_INV and LOCAL_INV end it, no second bind" },
	{ "flush_global", t_flush_global, "rdma_flush",
	  "FLUSH caps in query_device_ex; WRITE, then FLUSH (global) of a range, the MR, 0 bytes" },
	{ "flush_refused", t_flush_refused, "rdma_flush",
	  "FLUSH without the MR's or QP's FLUSH right, past the MR; FLUSH_PERSISTENT MR: EINVAL" },
	{ "mw_bind_err", t_mw_bind_err, "windows",
	  "bind over a region without MW_BIND or past its end: MW_BIND_ERR; dealloc while bound" },
	{ "odp_caps", t_odp_caps, "odp",
	  "ODP caps in query_device_ex; ODP registration takes no page; implicit ODP refused" },
	{ "odp_rdma", t_odp_rdma, "odp",
	  "WRITE, READ, atomics into untouched ODP pages; data checked" },
	{ "odp_local", t_odp_local, "odp",
	  "SEND from / receive into / READ into untouched ODP regions; data checked" },
	{ "odp_prefetch", t_odp_prefetch, "odp",
	  "ibv_advise_mr PREFETCH(_WRITE, _NO_FAULT), sync and async; unknown lkey EINVAL" },
	{ "odp_invalidate", t_odp_invalidate, "odp",
	  "MADV_DONTNEED and munmap+mmap of ODP pages: new pages reached; unmapped: REM_ACCESS_ERR" },
	{ "rereg_access", t_rereg_access, "rereg",
	  "rereg access without REMOTE_WRITE: WRITE REM_ACCESS_ERR, READ works; back: WRITE works" },
	{ "rereg_pd", t_rereg_pd, "rereg",
	  "rereg PD: the new PD's QPs reach the MR (rkey and lkey), the old one's REM_ACCESS_ERR" },
	{ "rereg_bad", t_rereg_bad, "rereg",
	  "rereg: no flag, TRANSLATION, bad access, write on read-only pages refused; MR unchanged" },
	{ "rereg_odp", t_rereg_odp, "rereg",
	  "rereg access of ODP regions: WRITE refused, then works; write on a read-only one EACCES" },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static int run_case(const struct tcase *tc)
{
	struct env e;
	int rc;

	g_reason[0] = 0;
	track_reset();
	rc = env_open(&e);
	if (!rc)
		rc = tc->fn(&e);
	/* Destroy what the case left, newest first; on success every destroy must work. */
	if (release_all(!rc))
		rc = -1;
	env_close(&e);
	if (rc) {
		printf("not ok %s: %s\n", tc->name, g_reason[0] ? g_reason : "failed");
		return -1;
	}
	printf("ok %s\n", tc->name);
	return 0;
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: rrxe_verbs [-d DEV] [-D rxe|rrxe] [-g GID_INDEX] [-n COUNT] [-v] [-l] "
		"[CASE...|GROUP...|all]\n"
		"cases (default: those without a [group]; a group name selects its cases):\n");
	for (i = 0; i < NCASES; i++)
		fprintf(f, "  %-11s %s%s%s%s\n", cases[i].name, cases[i].what,
			cases[i].group ? " [" : "", cases[i].group ? cases[i].group : "",
			cases[i].group ? "]" : "");
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	const char *devname = NULL;
	int opt, i, passed = 0, failed = 0;
	int sel[NCASES];
	size_t c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:D:g:n:vlh")) != -1) {
		switch (opt) {
		case 'd': devname = optarg; break;
		case 'D':
			if (!strcmp(optarg, "rxe"))
				g_driver = DRV_RXE;
			else if (!strcmp(optarg, "rrxe"))
				g_driver = DRV_RRXE;
			else {
				usage(stderr);
				return 2;
			}
			break;
		case 'g': g_gid_arg = atoi(optarg); break;
		case 'n': g_count = atol(optarg); break;
		case 'v': g_verbose = 1; break;
		case 'l': usage(stdout); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	memset(sel, 0, sizeof(sel));
	if (optind == argc) {
		for (c = 0; c < NCASES; c++)
			sel[c] = !cases[c].group;
	}
	for (i = optind; i < argc; i++) {
		int found = 0;

		for (c = 0; c < NCASES; c++) {
			if (!strcmp(argv[i], "all") || !strcmp(argv[i], cases[c].name) ||
			    (cases[c].group && !strcmp(argv[i], cases[c].group))) {
				sel[c] = 1;
				found = 1;
			}
		}
		if (!found) {
			fprintf(stderr, "rrxe_verbs: unknown case '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}

	list = env_device(devname);
	if (!list) {
		fprintf(stderr, "rrxe_verbs: %s\n", g_reason);
		return 2;
	}
	printf("# rrxe_verbs on %s\n", ibv_get_device_name(g_dev));
	vlog("driver: %s", vt_driver_name(vt_driver()));

	for (c = 0; c < NCASES; c++) {
		if (!sel[c])
			continue;
		if (run_case(&cases[c]))
			failed++;
		else
			passed++;
	}
	ibv_free_device_list(list);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
