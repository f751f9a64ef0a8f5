// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_idle_qps: hold N idle RC QPs open on a device, connected in pairs
 * (each in RTS with its partner on the device's own GID), so that a
 * benchmark runs next to many QPs that have nothing to do. Prints "ready N"
 * once they are up and then sleeps until killed (or for -t seconds).
 *
 * usage: rrxe_idle_qps -d DEV -g GID_INDEX [-n N] [-t SECONDS]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static int connect_qp(struct ibv_qp *qp, uint32_t peer, int gid_index, const union ibv_gid *gid)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_qp_init_attr ia;
	struct ibv_qp **qps;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	union ibv_gid gid;
	const char *dev = NULL;
	int n = 1000, gid_index = -1, secs = 3600, opt, i, ndev;

	while ((opt = getopt(argc, argv, "d:g:n:t:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'n': n = atoi(optarg); break;
		case 't': secs = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: rrxe_idle_qps -d DEV -g GID_INDEX [-n N] [-t SECONDS]\n");
			return 2;
		}
	}
	if (!dev || gid_index < 0 || n < 2 || n % 2) {
		fprintf(stderr, "rrxe_idle_qps: need -d, -g and an even -n of at least 2\n");
		return 2;
	}
	list = ibv_get_device_list(&ndev);
	for (i = 0; list && i < ndev; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "rrxe_idle_qps: cannot open %s\n", dev);
		return 1;
	}
	if (ibv_query_gid(ctx, 1, gid_index, &gid)) {
		perror("ibv_query_gid");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	qps = calloc(n, sizeof(*qps));
	if (!pd || !cq || !qps) {
		fprintf(stderr, "rrxe_idle_qps: PD/CQ: %s\n", strerror(errno));
		return 1;
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	for (i = 0; i < n; i++) {
		qps[i] = ibv_create_qp(pd, &ia);
		if (!qps[i]) {
			fprintf(stderr, "rrxe_idle_qps: QP %d: %s\n", i, strerror(errno));
			return 1;
		}
	}
	for (i = 0; i < n; i++) {
		if (connect_qp(qps[i], qps[i ^ 1]->qp_num, gid_index, &gid)) {
			fprintf(stderr, "rrxe_idle_qps: connecting QP %d: %s\n", i, strerror(errno));
			return 1;
		}
	}
	printf("ready %d\n", n);
	fflush(stdout);
	sleep(secs);
	for (i = 0; i < n; i++)
		ibv_destroy_qp(qps[i]);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
