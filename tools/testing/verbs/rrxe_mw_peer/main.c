// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_mw_peer: memory windows across the wire, between two hosts (or
 * guests) whose devices may run different drivers (upstream rxe and rrxe).
 * One end owns the memory and binds the windows, the other reaches it
 * through their rkeys. A TCP control channel carries the QP numbers, GIDs,
 * keys and each end's verdicts.
 *
 * usage: rrxe_mw_peer -o [-p PORT] [-d DEV] [-g GID_INDEX] [-t SECONDS] [-v]
 *        rrxe_mw_peer -a ADDR [-p PORT] [-d DEV] [-g GID_INDEX] [-t SECONDS] [-v]
 *                     [-F data|range|inv]
 *
 *   -o          owner: listen on TCP PORT for one accessor
 *   -a ADDR     accessor: connect to the owner at IPv4 ADDR (retried until it
 *               listens, for -t seconds)
 *   -p PORT     TCP port of the control channel (default 18620)
 *   -d DEV      RDMA device (default: the first)
 *   -g INDEX    GID index (default: the port's IPv4 RoCE v2 GID)
 *   -t SECONDS  bound of every wait on the control channel (default 60);
 *               completions are bounded by 5 s each
 *   -F FAULT    (accessor) inject a fault to prove the checks fail:
 *               data   the first write is reported with another pattern
 *               range  the access "past the end" stays inside the window
 *               inv    a plain SEND instead of the SEND_WITH_INV
 *   -v          details
 *
 * Cases, each on a fresh RC connection (a remote access error moves both QPs
 * to ERR, so it comes last on its connection):
 *   windows      type 1 window bound with ibv_bind_mw and type 2 window bound
 *                with IBV_WR_BIND_MW over a region without remote rights;
 *                through each, RDMA WRITE, READ of the owner's data and READ
 *                back, data checked on both ends; SEND_WITH_INV with the type
 *                2 key: the owner's receive has the data, the invalidate flag
 *                and that key; the type 1 window still takes a WRITE; a WRITE
 *                with the invalidated key fails with IBV_WC_REM_ACCESS_ERR and
 *                the owner's memory is unchanged
 *   past_region  a type 1 window at the region's end takes a WRITE of its last
 *                bytes; a WRITE across its end fails with REM_ACCESS_ERR, the
 *                owner's memory (and the page after the region) unchanged
 *   past_window  a WRITE across a type 2 window's end, inside the region:
 *                REM_ACCESS_ERR, memory unchanged (rxe as the owner lets it
 *                through: accepted there only, see accessor.c)
 * Prints "ok CASE" per case and "PASS" or "FAIL: CASE: reason". Exit status:
 * 0 passed, 1 a check failed, 2 usage or setup error.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdlib.h>
#include <unistd.h>

#include "mwp.h"

int g_fault = F_NONE;
int g_limit_s = 60;

struct mw_case {
	const char *name;
	int (*own)(struct env *e, int fd);
	int (*use)(struct env *e, int fd);
};

static const struct mw_case cases[] = {
	{ "windows", own_windows, use_windows },
	{ "past_region", own_past_region, use_past_region },
	{ "past_window", own_past_window, use_past_window },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: rrxe_mw_peer -o|-a ADDR [-p PORT] [-d DEV] [-g GID_INDEX] "
		"[-t SECONDS] [-F data|range|inv] [-v]\n");
}

/* One case on this end; the objects it made are destroyed after it. */
static int run_case(struct env *e, int fd, int owner, const struct mw_case *c)
{
	int rc;

	track_reset();
	rc = owner ? c->own(e, fd) : c->use(e, fd);
	if (rc) {
		prefix_reason(c->name);
		ctrl_abort(fd);
	}
	/*
	 * A failed case may leave async events unread (a passed one read them in
	 * link_errored): acknowledge them, destroying a QP waits for that.
	 */
	if (rc)
		count_events(e, IBV_EVENT_QP_ACCESS_ERR, NULL, 300);
	if (release_all(!rc) && !rc) {
		prefix_reason(c->name);
		rc = -1;
	}
	if (!rc)
		printf("ok %s\n", c->name);
	return rc;
}

int main(int argc, char **argv)
{
	const char *devname = NULL, *peer = NULL;
	int opt, owner = 0, port = 18620, fd = -1, lfd, rc = 0;
	struct ibv_device **list;
	struct env e;
	size_t c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "oa:p:d:g:t:F:vh")) != -1) {
		switch (opt) {
		case 'o': owner = 1; break;
		case 'a': peer = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'd': devname = optarg; break;
		case 'g': g_gid_arg = atoi(optarg); break;
		case 't': g_limit_s = atoi(optarg); break;
		case 'F':
			if (!strcmp(optarg, "data"))
				g_fault = F_DATA;
			else if (!strcmp(optarg, "range"))
				g_fault = F_RANGE;
			else if (!strcmp(optarg, "inv"))
				g_fault = F_INV;
			else {
				usage(stderr);
				return 2;
			}
			break;
		case 'v': g_verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (owner == !!peer || optind != argc || g_limit_s <= 0 || (owner && g_fault)) {
		usage(stderr);
		return 2;
	}
	list = env_device(devname);
	if (!list || env_open(&e)) {
		fprintf(stderr, "rrxe_mw_peer: %s\n", g_reason);
		return 2;
	}
	printf("# rrxe_mw_peer on %s (%s), GID[%d] %s, %s\n", ibv_get_device_name(g_dev),
	       vt_driver_name(vt_driver()), e.gid_index, gid_str(&e.gid),
	       owner ? "owner" : "accessor");
	if (owner) {
		lfd = ctrl_listen(port);
		if (lfd >= 0) {
			fd = ctrl_accept(lfd);
			close(lfd);
		}
	} else {
		fd = ctrl_connect(peer, port);
	}
	if (fd < 0) {
		printf("FAIL: control channel: %s\n", g_reason);
		return 2;
	}
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]) && !rc; c++)
		rc = run_case(&e, fd, owner, &cases[c]);
	close(fd);
	env_close(&e);
	ibv_free_device_list(list);
	if (rc) {
		printf("FAIL: %s\n", g_reason);
		return 1;
	}
	printf("PASS\n");
	return 0;
}
