// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_verbsfuzz: malformed uverbs commands on a context of their own.
 *
 * write() of legacy commands (struct ib_uverbs_cmd_hdr + command) with wrong
 * word counts, driver data too short / too long / with a non-zero tail for the
 * commands that carry rxe's driver data, and response pointers that are NULL,
 * unmapped, read-only, kernel addresses or run into an unmapped page;
 * ioctl(RDMA_VERBS_IOCTL) with random headers and attributes (and a
 * well-formed CQ_CREATE with random driver attributes); mmap() of the context
 * file at random offsets; and writes into the queue rings mapped into this
 * process (indices and WQEs), followed by a doorbell.
 *
 * Objects the raw commands create are remembered by handle, so that later
 * commands name them; the raw context is closed with whatever it holds and
 * opened again now and then.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/rdma_user_rxe.h>

#include "vfuzz.h"

enum { H_PD, H_CQ, H_QP, H_SRQ, H_MR, H_AH, H_MW, NH };
#define NHANDLE 16
#define NMAP 64

static struct {
	struct ibv_context *ctx;
	struct ibv_device *dev;
	int fd;
	uint32_t h[NH][NHANDLE];
	int nh[NH];
	uint32_t qpn[NHANDLE];	/* QP numbers, parallel to h[H_QP] */
	struct {
		void *addr;
		size_t len;
		int kind;	/* 0 ring of unknown kind, 1 send queue, 2 receive queue */
	} map[NMAP];
	int nmap;
	struct {
		uint64_t offset;
		uint32_t size;
	} entry[NMAP];		/* every mmap offset the driver handed out */
	int nentry;
	union ibv_gid gid;
	int gid_index;
} R;

/*
 * Responses land here. The kernel zero-fills a legacy command's response
 * buffer up to out_words * 4 bytes (up to 256 KiB), and an ioctl attribute's
 * up to its len: the area is larger than both.
 */
#define RESP_LEN (512 * 1024)
static uint8_t *resp_buf;

static void keep(int kind, uint32_t handle)
{
	if (R.nh[kind] < NHANDLE)
		R.h[kind][R.nh[kind]++] = handle;
	else
		R.h[kind][below(NHANDLE)] = handle;
}

static uint32_t handle(int kind)
{
	if (!R.nh[kind] || one_in(8))
		return one_in(2) ? (uint32_t)below(64) : (uint32_t)rnd();
	return R.h[kind][below(R.nh[kind])];
}

static void forget_handle(int kind, uint32_t h)
{
	for (int i = 0; i < R.nh[kind]; i++) {
		if (R.h[kind][i] != h)
			continue;
		R.h[kind][i] = R.h[kind][--R.nh[kind]];
		if (kind == H_QP)
			R.qpn[i] = R.qpn[R.nh[kind]];
		return;
	}
}

int raw_is_own_mapping(uintptr_t start)
{
	for (int i = 0; i < R.nmap; i++)
		if ((uintptr_t)R.map[i].addr == start)
			return 1;
	return 0;
}

static void map_ring(uint64_t offset, uint32_t size, int kind)
{
	void *p;

	if (R.nentry < NMAP) {
		R.entry[R.nentry].offset = offset;
		R.entry[R.nentry].size = size;
		R.nentry++;
	} else {
		int k = below(NMAP);

		R.entry[k].offset = offset;
		R.entry[k].size = size;
	}
	if (!size || size > (64u << 20) || R.nmap == NMAP)
		return;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, R.fd, offset);
	if (p == MAP_FAILED) {
		vlog("mmap of a ring (offset 0x%llx, %u bytes) returned by the driver failed: %s",
		     (unsigned long long)offset, size, strerror(errno));
		return;
	}
	R.map[R.nmap].addr = p;
	R.map[R.nmap].len = size;
	R.map[R.nmap].kind = kind;
	R.nmap++;
}

void raw_open(struct ibv_device *dev)
{
	struct ibv_port_attr pa;

	if (!resp_buf) {
		resp_buf = mmap(NULL, RESP_LEN, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (resp_buf == MAP_FAILED)
			failf("mmap: %s", strerror(errno));
	}
	R.dev = dev;
	R.ctx = ibv_open_device(dev);
	if (!R.ctx)
		failf("ibv_open_device (raw context): %s", strerror(errno));
	R.fd = R.ctx->cmd_fd;
	memset(R.nh, 0, sizeof(R.nh));
	R.nentry = 0;
	R.gid_index = 0;
	if (!ibv_query_port(R.ctx, PORT, &pa)) {
		for (int i = 0; i < pa.gid_tbl_len; i++) {
			struct ibv_gid_entry e;

			if (ibv_query_gid_ex(R.ctx, PORT, i, &e, 0) ||
			    e.gid_type != IBV_GID_TYPE_ROCE_V2)
				continue;
			R.gid = e.gid;
			R.gid_index = i;
			break;
		}
	}
}

void raw_close(void)
{
	for (int i = 0; i < R.nmap; i++)
		munmap(R.map[i].addr, R.map[i].len);
	R.nmap = 0;
	if (R.ctx && ibv_close_device(R.ctx))
		vlog("ibv_close_device (raw context): %s", strerror(errno));
	R.ctx = NULL;
}

/* ------------------------------------------------------------------ */
/* Pointers                                                           */
/* ------------------------------------------------------------------ */

/* A response pointer for `len` bytes: good most of the time, else bad. */
static uint64_t resp_ptr(size_t len, int *good)
{
	*good = 0;
	switch (below(12)) {
	case 0: return 0;
	case 1: return (uintptr_t)g_mem.none + 4096 * below(g_mem.none_len / 4096);
	case 2: return (uintptr_t)g_mem.ro;
	case 3: return 0xffff888000000000ull + 4096 * below(1024);
	case 4: return (uintptr_t)g_mem.edge + 4096 - (len > 1 ? below(len) : 0);
	case 5: return 0x0000800000000000ull;
	default:
		memset(resp_buf, 0, len < RESP_LEN ? len : RESP_LEN);
		*good = len <= RESP_LEN;
		return (uintptr_t)resp_buf;
	}
}

/* A size field: usually valid, one time in four extreme. */
static uint32_t size_field(uint32_t limit)
{
	return one_in(4) ? pick_u32(limit) : 1 + below(limit);
}

static uint16_t words(size_t bytes)
{
	uint16_t w = (bytes + 3) / 4;

	switch (below(10)) {
	case 0: return 0;
	case 1: return w > 1 ? w - 1 - below(w > 4 ? 4 : w - 1) : 0;
	case 2: return w + 1 + below(16);
	case 3: return 0xffff;
	default: return w;
	}
}

/* ------------------------------------------------------------------ */
/* write()                                                            */
/* ------------------------------------------------------------------ */

struct wspec {
	uint32_t cmd;
	size_t req, resp;	/* the core structures */
	size_t drv_resp;	/* rxe's driver response (0: none) */
	size_t drv_req;		/* rxe's driver request (0: none) */
};

static const struct wspec wspecs[] = {
	{ IB_USER_VERBS_CMD_QUERY_DEVICE, sizeof(struct ib_uverbs_query_device),
	  sizeof(struct ib_uverbs_query_device_resp), 0, 0 },
	{ IB_USER_VERBS_CMD_QUERY_PORT, sizeof(struct ib_uverbs_query_port),
	  sizeof(struct ib_uverbs_query_port_resp), 0, 0 },
	{ IB_USER_VERBS_CMD_ALLOC_PD, sizeof(struct ib_uverbs_alloc_pd),
	  sizeof(struct ib_uverbs_alloc_pd_resp), 0, 0 },
	{ IB_USER_VERBS_CMD_DEALLOC_PD, sizeof(struct ib_uverbs_dealloc_pd), 0, 0, 0 },
	{ IB_USER_VERBS_CMD_CREATE_AH, sizeof(struct ib_uverbs_create_ah),
	  sizeof(struct ib_uverbs_create_ah_resp), sizeof(struct rxe_create_ah_resp), 0 },
	{ IB_USER_VERBS_CMD_DESTROY_AH, sizeof(struct ib_uverbs_destroy_ah), 0, 0, 0 },
	{ IB_USER_VERBS_CMD_REG_MR, sizeof(struct ib_uverbs_reg_mr),
	  sizeof(struct ib_uverbs_reg_mr_resp), 0, 0 },
	{ IB_USER_VERBS_CMD_DEREG_MR, sizeof(struct ib_uverbs_dereg_mr), 0, 0, 0 },
	{ IB_USER_VERBS_CMD_ALLOC_MW, sizeof(struct ib_uverbs_alloc_mw),
	  sizeof(struct ib_uverbs_alloc_mw_resp), 0, 0 },
	{ IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, sizeof(struct ib_uverbs_create_comp_channel),
	  sizeof(struct ib_uverbs_create_comp_channel_resp), 0, 0 },
	{ IB_USER_VERBS_CMD_CREATE_CQ, sizeof(struct ib_uverbs_create_cq),
	  sizeof(struct ib_uverbs_create_cq_resp), sizeof(struct rxe_create_cq_resp), 0 },
	{ IB_USER_VERBS_CMD_RESIZE_CQ, sizeof(struct ib_uverbs_resize_cq),
	  sizeof(struct ib_uverbs_resize_cq_resp), sizeof(struct rxe_resize_cq_resp), 0 },
	{ IB_USER_VERBS_CMD_DESTROY_CQ, sizeof(struct ib_uverbs_destroy_cq),
	  sizeof(struct ib_uverbs_destroy_cq_resp), 0, 0 },
	{ IB_USER_VERBS_CMD_POLL_CQ, sizeof(struct ib_uverbs_poll_cq),
	  sizeof(struct ib_uverbs_poll_cq_resp), 0, 0 },
	{ IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, sizeof(struct ib_uverbs_req_notify_cq), 0, 0, 0 },
	{ IB_USER_VERBS_CMD_CREATE_QP, sizeof(struct ib_uverbs_create_qp),
	  sizeof(struct ib_uverbs_create_qp_resp), sizeof(struct rxe_create_qp_resp), 0 },
	{ IB_USER_VERBS_CMD_QUERY_QP, sizeof(struct ib_uverbs_query_qp),
	  sizeof(struct ib_uverbs_query_qp_resp), 0, 0 },
	{ IB_USER_VERBS_CMD_MODIFY_QP, sizeof(struct ib_uverbs_modify_qp), 0, 0, 0 },
	{ IB_USER_VERBS_CMD_DESTROY_QP, sizeof(struct ib_uverbs_destroy_qp),
	  sizeof(struct ib_uverbs_destroy_qp_resp), 0, 0 },
	{ IB_USER_VERBS_CMD_POST_SEND, sizeof(struct ib_uverbs_post_send),
	  sizeof(struct ib_uverbs_post_send_resp), 0, 0 },
	{ IB_USER_VERBS_CMD_POST_RECV, sizeof(struct ib_uverbs_post_recv),
	  sizeof(struct ib_uverbs_post_recv_resp), 0, 0 },
	{ IB_USER_VERBS_CMD_CREATE_SRQ, sizeof(struct ib_uverbs_create_srq),
	  sizeof(struct ib_uverbs_create_srq_resp), sizeof(struct rxe_create_srq_resp), 0 },
	{ IB_USER_VERBS_CMD_MODIFY_SRQ, sizeof(struct ib_uverbs_modify_srq), 0, 0,
	  sizeof(struct rxe_modify_srq_cmd) },
	{ IB_USER_VERBS_CMD_QUERY_SRQ, sizeof(struct ib_uverbs_query_srq),
	  sizeof(struct ib_uverbs_query_srq_resp), 0, 0 },
	{ IB_USER_VERBS_CMD_DESTROY_SRQ, sizeof(struct ib_uverbs_destroy_srq),
	  sizeof(struct ib_uverbs_destroy_srq_resp), 0, 0 },
	{ IB_USER_VERBS_CMD_POST_SRQ_RECV, sizeof(struct ib_uverbs_post_srq_recv),
	  sizeof(struct ib_uverbs_post_srq_recv_resp), 0, 0 },
};
#define NWSPEC (sizeof(wspecs) / sizeof(wspecs[0]))

static void fill_dest(struct ib_uverbs_qp_dest *d)
{
	memcpy(d->dgid, one_in(4) ? (const void *)resp_buf : (const void *)R.gid.raw, 16);
	d->sgid_index = one_in(4) ? below(256) : (uint64_t)R.gid_index;
	d->hop_limit = one_in(4) ? below(256) : 64;
	d->flow_label = one_in(4) ? rnd() : 0;
	d->is_global = one_in(8) ? 0 : 1;
	d->port_num = one_in(8) ? below(256) : PORT;
	d->sl = one_in(8) ? below(256) : 0;
	d->static_rate = one_in(8) ? below(256) : 0;
}

/* The command body: sensible handles and values, or junk. */
static void fill_body(uint32_t cmd, uint8_t *body, size_t len)
{
	memset(body, 0, len);
	if (one_in(10)) {
		for (size_t i = 0; i < len; i++)
			body[i] = rnd();
		return;
	}
	switch (cmd) {
	case IB_USER_VERBS_CMD_QUERY_PORT: {
		struct ib_uverbs_query_port *c = (void *)body;

		c->port_num = one_in(4) ? below(256) : PORT;
		break;
	}
	case IB_USER_VERBS_CMD_DEALLOC_PD:
		((struct ib_uverbs_dealloc_pd *)body)->pd_handle = handle(H_PD);
		break;
	case IB_USER_VERBS_CMD_CREATE_AH: {
		struct ib_uverbs_create_ah *c = (void *)body;

		c->user_handle = rnd();
		c->pd_handle = handle(H_PD);
		c->attr.is_global = !one_in(6);
		memcpy(c->attr.grh.dgid, R.gid.raw, 16);
		if (one_in(4))
			for (int i = 0; i < 16; i++)
				c->attr.grh.dgid[i] = rnd();
		c->attr.grh.sgid_index = one_in(4) ? below(256) : (uint64_t)R.gid_index;
		c->attr.grh.hop_limit = below(256);
		c->attr.port_num = one_in(6) ? below(256) : PORT;
		c->attr.sl = below(16);
		c->attr.dlid = one_in(4) ? rnd() : 0;
		break;
	}
	case IB_USER_VERBS_CMD_DESTROY_AH:
		((struct ib_uverbs_destroy_ah *)body)->ah_handle = handle(H_AH);
		break;
	case IB_USER_VERBS_CMD_REG_MR: {
		struct ib_uverbs_reg_mr *c = (void *)body;
		uint64_t l;

		c->start = pick_addr(&l, 0);
		c->length = l;
		c->hca_va = one_in(2) ? c->start : rnd();
		c->pd_handle = handle(H_PD);
		c->access_flags = one_in(8) ? (uint32_t)rnd() : (uint32_t)below(16);
		break;
	}
	case IB_USER_VERBS_CMD_DEREG_MR:
		((struct ib_uverbs_dereg_mr *)body)->mr_handle = handle(H_MR);
		break;
	case IB_USER_VERBS_CMD_ALLOC_MW: {
		struct ib_uverbs_alloc_mw *c = (void *)body;

		c->pd_handle = handle(H_PD);
		c->mw_type = below(4);
		break;
	}
	case IB_USER_VERBS_CMD_CREATE_CQ: {
		struct ib_uverbs_create_cq *c = (void *)body;

		c->user_handle = rnd();
		c->cqe = size_field(32768);
		c->comp_vector = one_in(8) ? rnd() : 0;
		c->comp_channel = one_in(4) ? (int32_t)below(64) : -1;
		break;
	}
	case IB_USER_VERBS_CMD_RESIZE_CQ: {
		struct ib_uverbs_resize_cq *c = (void *)body;

		c->cq_handle = handle(H_CQ);
		c->cqe = size_field(32768);
		break;
	}
	case IB_USER_VERBS_CMD_DESTROY_CQ:
		((struct ib_uverbs_destroy_cq *)body)->cq_handle = handle(H_CQ);
		break;
	case IB_USER_VERBS_CMD_POLL_CQ: {
		struct ib_uverbs_poll_cq *c = (void *)body;

		c->cq_handle = handle(H_CQ);
		c->ne = pick_u32(64);
		break;
	}
	case IB_USER_VERBS_CMD_REQ_NOTIFY_CQ: {
		struct ib_uverbs_req_notify_cq *c = (void *)body;

		c->cq_handle = handle(H_CQ);
		c->solicited_only = below(3);
		break;
	}
	case IB_USER_VERBS_CMD_CREATE_QP: {
		struct ib_uverbs_create_qp *c = (void *)body;
		static const uint8_t types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RC,
						 IBV_QPT_UD, 0, 1, 8, 9, 0xff };

		c->user_handle = rnd();
		c->pd_handle = handle(H_PD);
		c->send_cq_handle = handle(H_CQ);
		c->recv_cq_handle = one_in(2) ? c->send_cq_handle : handle(H_CQ);
		c->is_srq = one_in(5);
		c->srq_handle = c->is_srq ? handle(H_SRQ) : (one_in(8) ? rnd() : 0);
		c->max_send_wr = size_field(64);
		c->max_recv_wr = size_field(64);
		c->max_send_sge = size_field(8);
		c->max_recv_sge = size_field(8);
		c->max_inline_data = one_in(4) ? pick_u32(256) : below(257);
		c->sq_sig_all = below(3);
		c->qp_type = types[below(sizeof(types))];
		break;
	}
	case IB_USER_VERBS_CMD_QUERY_QP: {
		struct ib_uverbs_query_qp *c = (void *)body;

		c->qp_handle = handle(H_QP);
		c->attr_mask = rnd();
		break;
	}
	case IB_USER_VERBS_CMD_MODIFY_QP: {
		struct ib_uverbs_modify_qp *c = (void *)body;
		int i = R.nh[H_QP] ? (int)below(R.nh[H_QP]) : -1;

		c->qp_handle = i >= 0 && !one_in(8) ? R.h[H_QP][i] : handle(H_QP);
		fill_dest(&c->dest);
		fill_dest(&c->alt_dest);
		switch (below(5)) {
		case 0:
			c->qp_state = IBV_QPS_INIT;
			c->attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       (one_in(2) ? IBV_QP_ACCESS_FLAGS : IBV_QP_QKEY);
			break;
		case 1:
			c->qp_state = IBV_QPS_RTR;
			c->attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
			break;
		case 2:
			c->qp_state = IBV_QPS_RTS;
			c->attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
			break;
		case 3:
			c->qp_state = below(8);
			c->attr_mask = IBV_QP_STATE;
			break;
		default:
			c->qp_state = below(10);
			c->cur_qp_state = below(10);
			c->attr_mask = rnd();
			break;
		}
		c->port_num = one_in(6) ? below(256) : PORT;
		c->pkey_index = one_in(6) ? rnd() : 0;
		c->qkey = rnd();
		c->qp_access_flags = one_in(4) ? (uint32_t)rnd() : (uint32_t)below(16);
		c->path_mtu = one_in(4) ? below(256) : 1 + below(5);
		c->dest_qp_num = i >= 0 && !one_in(4) ? R.qpn[below(R.nh[H_QP])] : (uint32_t)rnd();
		c->rq_psn = rnd();
		c->sq_psn = rnd();
		c->max_rd_atomic = below(one_in(4) ? 256 : 17);
		c->max_dest_rd_atomic = below(one_in(4) ? 256 : 17);
		c->min_rnr_timer = below(32);
		c->timeout = one_in(4) ? below(256) : 10 + below(10);
		c->retry_cnt = below(one_in(4) ? 256 : 8);
		c->rnr_retry = below(one_in(4) ? 256 : 8);
		c->en_sqd_async_notify = below(2);
		c->path_mig_state = below(4);
		break;
	}
	case IB_USER_VERBS_CMD_DESTROY_QP:
		((struct ib_uverbs_destroy_qp *)body)->qp_handle = handle(H_QP);
		break;
	case IB_USER_VERBS_CMD_POST_SEND:
	case IB_USER_VERBS_CMD_POST_RECV: {
		struct ib_uverbs_post_send *c = (void *)body;

		/* librxe's doorbell is a POST_SEND of no WRs: mostly that */
		c->qp_handle = handle(H_QP);
		c->wr_count = one_in(4) ? pick_u32(4) : 0;
		c->sge_count = one_in(4) ? pick_u32(4) : 0;
		c->wqe_size = one_in(4) ? pick_u32(256) : sizeof(struct ibv_send_wr);
		break;
	}
	case IB_USER_VERBS_CMD_CREATE_SRQ: {
		struct ib_uverbs_create_srq *c = (void *)body;

		c->user_handle = rnd();
		c->pd_handle = handle(H_PD);
		c->max_wr = size_field(64);
		c->max_sge = size_field(8);
		c->srq_limit = one_in(4) ? pick_u32(64) : 0;
		break;
	}
	case IB_USER_VERBS_CMD_MODIFY_SRQ: {
		struct ib_uverbs_modify_srq *c = (void *)body;

		c->srq_handle = handle(H_SRQ);
		c->attr_mask = one_in(4) ? (uint32_t)rnd() : (uint32_t)below(4);
		c->max_wr = size_field(64);
		c->srq_limit = pick_u32(64);
		break;
	}
	case IB_USER_VERBS_CMD_QUERY_SRQ:
	case IB_USER_VERBS_CMD_DESTROY_SRQ:
		((struct ib_uverbs_destroy_srq *)body)->srq_handle = handle(H_SRQ);
		break;
	case IB_USER_VERBS_CMD_POST_SRQ_RECV: {
		struct ib_uverbs_post_srq_recv *c = (void *)body;

		c->srq_handle = handle(H_SRQ);
		c->wr_count = one_in(4) ? pick_u32(4) : 0;
		c->sge_count = pick_u32(4);
		c->wqe_size = pick_u32(64);
		break;
	}
	default:
		for (size_t i = 0; i < len; i++)
			body[i] = rnd();
		break;
	}
}

/* Close a completion channel the kernel handed out, and nothing else. */
static void close_event_fd(int fd)
{
	char path[64], target[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return;
	target[n] = 0;
	if (strstr(target, "infinibandevent"))
		close(fd);
	else
		vlog("CREATE_COMP_CHANNEL returned fd %d, which is %s", fd, target);
}

/* What a successful command created: remember it, map its rings. */
static void harvest(uint32_t cmd, const uint8_t *body, const uint8_t *resp, size_t drv_len)
{
	switch (cmd) {
	case IB_USER_VERBS_CMD_ALLOC_PD:
		keep(H_PD, ((const struct ib_uverbs_alloc_pd_resp *)resp)->pd_handle);
		break;
	case IB_USER_VERBS_CMD_DEALLOC_PD:
		forget_handle(H_PD, ((const struct ib_uverbs_dealloc_pd *)body)->pd_handle);
		break;
	case IB_USER_VERBS_CMD_CREATE_AH:
		keep(H_AH, ((const struct ib_uverbs_create_ah_resp *)resp)->ah_handle);
		break;
	case IB_USER_VERBS_CMD_REG_MR:
		keep(H_MR, ((const struct ib_uverbs_reg_mr_resp *)resp)->mr_handle);
		break;
	case IB_USER_VERBS_CMD_ALLOC_MW:
		keep(H_MW, ((const struct ib_uverbs_alloc_mw_resp *)resp)->mw_handle);
		break;
	case IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL:
		close_event_fd(((const struct ib_uverbs_create_comp_channel_resp *)resp)->fd);
		break;
	case IB_USER_VERBS_CMD_CREATE_CQ:
		keep(H_CQ, ((const struct ib_uverbs_create_cq_resp *)resp)->cq_handle);
		if (drv_len >= sizeof(struct rxe_create_cq_resp)) {
			const struct rxe_create_cq_resp *d = (const void *)(resp + 8);

			map_ring(d->mi.offset, d->mi.size, 0);
		}
		break;
	case IB_USER_VERBS_CMD_CREATE_QP: {
		const struct ib_uverbs_create_qp_resp *r = (const void *)resp;

		keep(H_QP, r->qp_handle);
		R.qpn[R.nh[H_QP] - 1] = r->qpn;
		if (drv_len >= sizeof(struct rxe_create_qp_resp)) {
			const struct rxe_create_qp_resp *d = (const void *)(resp + sizeof(*r));

			map_ring(d->sq_mi.offset, d->sq_mi.size, 1);
			map_ring(d->rq_mi.offset, d->rq_mi.size, 2);
		}
		break;
	}
	case IB_USER_VERBS_CMD_CREATE_SRQ:
		keep(H_SRQ, ((const struct ib_uverbs_create_srq_resp *)resp)->srq_handle);
		if (drv_len >= sizeof(struct rxe_create_srq_resp)) {
			const struct rxe_create_srq_resp *d =
				(const void *)(resp + sizeof(struct ib_uverbs_create_srq_resp));

			map_ring(d->mi.offset, d->mi.size, 2);
		}
		break;
	case IB_USER_VERBS_CMD_DESTROY_CQ:
		forget_handle(H_CQ, ((const struct ib_uverbs_destroy_cq *)body)->cq_handle);
		break;
	case IB_USER_VERBS_CMD_DESTROY_QP:
		forget_handle(H_QP, ((const struct ib_uverbs_destroy_qp *)body)->qp_handle);
		break;
	case IB_USER_VERBS_CMD_DESTROY_SRQ:
		forget_handle(H_SRQ, ((const struct ib_uverbs_destroy_srq *)body)->srq_handle);
		break;
	case IB_USER_VERBS_CMD_DEREG_MR:
		forget_handle(H_MR, ((const struct ib_uverbs_dereg_mr *)body)->mr_handle);
		break;
	case IB_USER_VERBS_CMD_DESTROY_AH:
		forget_handle(H_AH, ((const struct ib_uverbs_destroy_ah *)body)->ah_handle);
		break;
	}
}

void raw_write(void)
{
	static uint8_t buf[8192] __attribute__((aligned(8)));
	struct ib_uverbs_cmd_hdr *hdr;
	const struct wspec *s = NULL;
	size_t drv_in = 0, drv_out = 0, req, resp, len, count;
	uint8_t *body;
	int good = 0, err, at_edge = one_in(10);
	uint64_t rp = 0;
	ssize_t n;

	if (one_in(12)) {
		/* any command number, extended flag included */
		uint32_t cmd = one_in(2) ? below(64) : (uint32_t)rnd();

		if (one_in(3))
			cmd |= IB_USER_VERBS_CMD_FLAG_EXTENDED;
		len = sizeof(*hdr) + below(256);
		hdr = (void *)buf;
		for (size_t i = 0; i < len; i++)
			buf[i] = rnd();
		hdr->command = cmd;
		hdr->in_words = one_in(2) ? len / 4 : (uint16_t)rnd();
		snprintf(g_last, sizeof(g_last), "raw write: command 0x%x, %zu bytes, in_words %u",
			 cmd, len, hdr->in_words);
		n = write(R.fd, buf, len);
		record(C_raw_write, n < 0 ? errno : 0);
		return;
	}
	s = &wspecs[below(NWSPEC)];
	/* Commands need parents: create what is missing, more often than not. */
	{
		static const struct {
			int kind;
			uint32_t cmd;
		} need[] = {
			{ H_PD, IB_USER_VERBS_CMD_ALLOC_PD }, { H_CQ, IB_USER_VERBS_CMD_CREATE_CQ },
			{ H_QP, IB_USER_VERBS_CMD_CREATE_QP }, { H_SRQ, IB_USER_VERBS_CMD_CREATE_SRQ },
			{ H_MR, IB_USER_VERBS_CMD_REG_MR },
		};

		for (size_t k = 0; k < sizeof(need) / sizeof(need[0]); k++) {
			if (R.nh[need[k].kind] > 1 || !one_in(2))
				continue;
			for (size_t j = 0; j < NWSPEC; j++)
				if (wspecs[j].cmd == need[k].cmd)
					s = &wspecs[j];
			break;
		}
	}
	req = s->req;
	resp = s->resp;
	/* Driver data: what rxe expects, too little, too much, a non-zero tail. */
	if (s->drv_req || one_in(4)) {
		static const size_t sizes[] = { 0, 4, 8, 16, 24, 64, 1024 };

		drv_in = one_in(2) ? s->drv_req : sizes[below(sizeof(sizes) / sizeof(sizes[0]))];
	}
	if (s->drv_resp || one_in(6)) {
		switch (below(6)) {
		case 0: drv_out = 0; break;
		case 1: drv_out = s->drv_resp > 8 ? s->drv_resp - 8 : 0; break;
		case 2: drv_out = s->drv_resp > 4 ? s->drv_resp - 4 : 0; break;
		case 3: drv_out = s->drv_resp + 8 * (1 + below(8)); break;
		default: drv_out = s->drv_resp; break;
		}
	}
	len = sizeof(*hdr) + req + drv_in;
	if (len > sizeof(buf))
		len = sizeof(buf);
	body = buf + sizeof(*hdr);
	fill_body(s->cmd, body, req);
	if (drv_in) {
		/* rxe's modify-SRQ request carries a user pointer the kernel writes to */
		if (s->cmd == IB_USER_VERBS_CMD_MODIFY_SRQ && drv_in >= 8) {
			int g;
			uint64_t p = resp_ptr(sizeof(struct mminfo), &g);

			memcpy(body + req, &p, 8);
			memset(body + req + 8, one_in(2) ? 0 : 0xab, drv_in - 8);
		} else {
			for (size_t i = 0; i < drv_in; i++)
				body[req + i] = one_in(3) ? 0 : rnd();
		}
	}
	if (resp) {
		rp = resp_ptr(resp + drv_out, &good);
		memcpy(body, &rp, 8);	/* every command with a response starts with it */
	}
	hdr = (void *)buf;
	hdr->command = s->cmd;
	hdr->in_words = one_in(8) ? words(len) : len / 4;
	hdr->out_words = one_in(8) ? words(resp + drv_out) : (resp + drv_out) / 4;
	count = one_in(12) ? len + (one_in(2) ? 4 : -4) : (size_t)hdr->in_words * 4;
	if (count > sizeof(buf))
		count = sizeof(buf);
	if (at_edge && count <= 4096) {
		/* the command runs into an unmapped page */
		uint8_t *p = g_mem.edge + 4096 - count + (count > 8 ? below(8) : 0);

		if (p + 8 <= g_mem.edge + 4096) {
			memmove(p, buf, g_mem.edge + 4096 - p < (long)count ? (size_t)(g_mem.edge + 4096 - p) : count);
			snprintf(g_last, sizeof(g_last),
				 "raw write: command %u at a page end, in_words %u, out_words %u, %zu bytes",
				 s->cmd, hdr->in_words, hdr->out_words, count);
			n = write(R.fd, p, count);
			record(C_raw_write, n < 0 ? errno : 0);
			return;
		}
	}
	snprintf(g_last, sizeof(g_last),
		 "raw write: command %u, in_words %u, out_words %u, %zu bytes, driver in %zu out %zu, "
		 "response %#llx", s->cmd, hdr->in_words, hdr->out_words, count, drv_in, drv_out,
		 (unsigned long long)rp);
	n = write(R.fd, buf, count);
	err = n < 0 ? errno : 0;
	record(C_raw_write, err);
	if (!err && (good || !resp) && hdr->out_words * 4 == resp + drv_out)
		harvest(s->cmd, body, resp_buf, drv_out);
}

/* ------------------------------------------------------------------ */
/* ioctl()                                                            */
/* ------------------------------------------------------------------ */

void raw_ioctl(void)
{
	static uint8_t buf[4096] __attribute__((aligned(8)));
	static uint8_t data[4][65536] __attribute__((aligned(8)));	/* len is at most 65535 */
	struct ib_uverbs_ioctl_hdr *h = (void *)buf;
	struct ib_uverbs_attr *a = h->attrs;
	int n, structured = one_in(2), err, uhw_out = -1, uhw_good = 0;

	memset(buf, 0, sizeof(buf));
	if (structured) {
		/* CQ_CREATE with random driver attributes (rxe's udata) */
		uint32_t cqe = pick_u32(4096), handle_out = 0;
		uint64_t user = rnd();
		int g;

		uhw_good = 0;
		uhw_out = -1;

		h->object_id = UVERBS_OBJECT_CQ;
		h->method_id = UVERBS_METHOD_CQ_CREATE;
		h->driver_id = one_in(4) ? (uint32_t)below(32) : RDMA_DRIVER_RXE;
		n = 0;
		a[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_CREATE_CQ_HANDLE,
						  .len = one_in(16) ? 4 : 0,
						  .flags = UVERBS_ATTR_F_MANDATORY,
						  .data = handle_out };
		a[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_CREATE_CQ_CQE,
						  .len = sizeof(cqe), .data = cqe };
		a[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_CREATE_CQ_COMP_VECTOR,
						  .len = sizeof(uint32_t),
						  .data = one_in(8) ? (uint32_t)rnd() : 0 };
		a[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_CREATE_CQ_USER_HANDLE,
						  .len = sizeof(user), .data = user };
		a[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_CREATE_CQ_RESP_CQE,
						  .len = sizeof(uint32_t),
						  .data = resp_ptr(4, &g) };
		if (!one_in(3)) {
			uint16_t l = one_in(2) ? sizeof(struct rxe_create_cq_resp) : below(64);

			uhw_out = n;
			a[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_UHW_OUT, .len = l,
							  .data = resp_ptr(l, &uhw_good) };
		}
		if (one_in(3)) {
			uint16_t l = below(64);

			for (int i = 0; i < l && i < 256; i++)
				data[0][i] = one_in(2) ? 0 : rnd();
			a[n++] = (struct ib_uverbs_attr){ .attr_id = UVERBS_ATTR_UHW_IN, .len = l,
							  .data = l <= 8 ? 0 : (uintptr_t)data[0] };
		}
		if (one_in(4))
			a[n++] = (struct ib_uverbs_attr){ .attr_id = below(16), .len = below(16),
							  .flags = below(4), .data = rnd() };
	} else {
		h->object_id = one_in(4) ? (uint16_t)rnd() : below(18);
		h->method_id = one_in(4) ? (uint16_t)rnd() : below(8);
		if (one_in(6)) {
			h->object_id |= UVERBS_UDATA_DRIVER_DATA_FLAG;
			h->method_id |= UVERBS_UDATA_DRIVER_DATA_FLAG;
		}
		h->driver_id = one_in(2) ? RDMA_DRIVER_RXE : (uint32_t)rnd();
		n = below(9);
		for (int i = 0; i < n; i++) {
			uint16_t l = one_in(3) ? below(9) : below(300);

			a[i].attr_id = one_in(4) ? (uint16_t)rnd() :
				       one_in(4) ? (UVERBS_ATTR_UHW_IN + below(2)) : below(16);
			a[i].len = l;
			a[i].flags = below(8);
			a[i].attr_data.reserved = one_in(8) ? rnd() : 0;
			if (l <= 8 && one_in(2)) {
				a[i].data = rnd();
			} else {
				int g;

				for (int k = 0; k < 300; k++)
					data[i & 3][k] = rnd();
				a[i].data = one_in(3) ? resp_ptr(l, &g) : (uintptr_t)data[i & 3];
			}
		}
		if (one_in(8))
			h->reserved1 = rnd();
	}
	h->num_attrs = n;
	h->length = sizeof(*h) + n * sizeof(*a);
	if (one_in(10))
		h->length = one_in(2) ? (uint16_t)rnd() : h->length + 8 * (below(3) - 1);
	snprintf(g_last, sizeof(g_last), "raw ioctl: object %u method %u, %u attributes, length %u",
		 h->object_id, h->method_id, h->num_attrs, h->length);
	err = ioctl(R.fd, RDMA_VERBS_IOCTL, buf) < 0 ? errno : 0;
	record(C_raw_ioctl, err);
	if (!err && structured) {
		/* the kernel wrote the new CQ's handle into the attribute */
		keep(H_CQ, a[0].data);
		if (uhw_out >= 0 && uhw_good && a[uhw_out].len >= sizeof(struct rxe_create_cq_resp)) {
			const struct rxe_create_cq_resp *d = (const void *)resp_buf;

			map_ring(d->mi.offset, d->mi.size, 0);
		}
	}
}

/* ------------------------------------------------------------------ */
/* mmap() and rings                                                   */
/* ------------------------------------------------------------------ */

static void touch(volatile uint8_t *p, size_t len)
{
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i += 4096)
		sum += p[i];
	(void)sum;
}

void raw_mmap(void)
{
	static const size_t lens[] = { 4096, 8192, 65536, 1 << 20, 3 * 4096 };
	uint64_t off;
	size_t len = one_in(5) ? 4096 * (1 + below(64)) : lens[below(sizeof(lens) / sizeof(lens[0]))];
	int prot = one_in(4) ? PROT_READ : PROT_READ | PROT_WRITE;
	void *p;

	if (R.nentry && !one_in(3)) {
		/* an entry the driver handed out: as it is, a page off, or of another size */
		int k = below(R.nentry);

		off = R.entry[k].offset;
		len = R.entry[k].size;
		switch (below(6)) {
		case 0: off += 4096; break;
		case 1: off -= 4096; break;
		case 2: len += 4096; break;
		case 3: len = len > 4096 ? len - 4096 : 8192; break;
		default: break;
		}
	} else {
		off = one_in(3) ? (rnd() & ~0xfffull) : 4096 * below(256);
	}
	snprintf(g_last, sizeof(g_last), "mmap of the context file: offset %#llx, %zu bytes",
		 (unsigned long long)off, len);
	p = mmap(NULL, len, prot, one_in(8) ? MAP_PRIVATE : MAP_SHARED, R.fd, off);
	if (p == MAP_FAILED) {
		record(C_raw_mmap, errno);
		return;
	}
	record(C_raw_mmap, 0);
	/* Every page of a mapping the driver accepted must be there. */
	touch(p, len);
	munmap(p, len);
}

/* Mappings of the uverbs device file in this process (rings of every context). */
static int uverbs_maps(uintptr_t *start, uintptr_t *end, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (!strstr(line, "/dev/infiniband/uverbs") ||
		    sscanf(line, "%lx-%lx", &s, &e) != 2)
			continue;
		start[n] = s;
		end[n] = e;
		n++;
	}
	fclose(f);
	return n;
}

/*
 * Write into a ring the driver shares with user space: its producer or
 * consumer index, or WQEs. The header's geometry (log2_elem_size, index_mask)
 * is left alone. librxe trusts the indices of the rings it uses to lie within
 * index_mask (it does not mask them before addressing), so only the rings of
 * the raw context, which no library uses, get indices out of range.
 */
static uint32_t new_index(uint32_t old, uint32_t mask, int own)
{
	uint32_t v = one_in(2) ? old + 1 + below(8) : one_in(2) ? old - 1 : (uint32_t)rnd();

	return own ? v : v & mask;
}

void ring_scribble(void)
{
	uintptr_t s[128], e[128];
	int n = uverbs_maps(s, e, 128), i, own;
	struct rxe_queue_buf *q;
	size_t len;
	uint32_t v, mask;

	if (!n) {
		record(C_ring_scribble, 0);
		return;
	}
	i = below(n);
	q = (void *)s[i];
	len = e[i] - s[i];
	own = raw_is_own_mapping(s[i]);
	mask = q->index_mask;
	switch (below(6)) {
	case 0:
	case 1:
		v = new_index(q->producer_index, mask, own);
		snprintf(g_last, sizeof(g_last), "ring at %p%s: producer index %u -> %u (mask %#x)",
			 (void *)q, own ? " (raw)" : "", q->producer_index, v, mask);
		__atomic_store_n(&q->producer_index, v, __ATOMIC_RELEASE);
		break;
	case 2:
		v = new_index(q->consumer_index, mask, own);
		snprintf(g_last, sizeof(g_last), "ring at %p%s: consumer index %u -> %u (mask %#x)",
			 (void *)q, own ? " (raw)" : "", q->consumer_index, v, mask);
		__atomic_store_n(&q->consumer_index, v, __ATOMIC_RELEASE);
		break;
	default: {
		size_t hdr = offsetof(struct rxe_queue_buf, data);
		size_t at = hdr + below(len - hdr), k = 1 + below(64);

		if (at + k > len)
			k = len - at;
		snprintf(g_last, sizeof(g_last), "ring at %p%s: %zu random bytes at offset %zu",
			 (void *)q, own ? " (raw)" : "", k, at);
		for (size_t j = 0; j < k; j++)
			((uint8_t *)q)[at + j] = one_in(2) ? rnd() : 0xff * below(2);
		/* sometimes also claim the garbage as posted */
		if (one_in(2))
			__atomic_store_n(&q->producer_index,
					 new_index(q->producer_index, mask, own), __ATOMIC_RELEASE);
		break;
	}
	}
	record(C_ring_scribble, 0);
	/* Ring a raw QP's doorbell, so the driver reads what was written. */
	if (R.nh[H_QP] && one_in(2)) {
		struct {
			struct ib_uverbs_cmd_hdr hdr;
			struct ib_uverbs_post_send cmd;
		} db;
		struct ib_uverbs_post_send_resp r;

		memset(&db, 0, sizeof(db));
		db.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
		db.hdr.in_words = sizeof(db) / 4;
		db.hdr.out_words = sizeof(r) / 4;
		db.cmd.response = (uintptr_t)&r;
		db.cmd.qp_handle = R.h[H_QP][below(R.nh[H_QP])];
		db.cmd.wqe_size = sizeof(struct ibv_send_wr);
		snprintf(g_last, sizeof(g_last), "doorbell (POST_SEND of no WRs) on raw QP handle %u",
			 db.cmd.qp_handle);
		record(C_raw_write, write(R.fd, &db, sizeof(db)) < 0 ? errno : 0);
	}
}
