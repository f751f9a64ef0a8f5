// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_verbs: the control-path cases (no packets): device, PD, MR, CQ, QP,
 * SRQ, AH, user-space ring fast paths, flush, cleanup on close, object churn.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cases.h"

/* ------------------------------------------------------------------ */
/* device                                                             */
/* ------------------------------------------------------------------ */

int t_device(struct env *e)
{
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa, pa2;
	struct ibv_gid_entry ent;
	union ibv_gid g;
	__be16 pkey;

	CHECK(!strcmp(ibv_get_device_name(e->ctx->device), ibv_get_device_name(g_dev)),
	      "context device name %s", ibv_get_device_name(e->ctx->device));

	/* ibv_query_device */
	CHECK(e->dev.phys_port_cnt == 1, "phys_port_cnt %u, expected 1", e->dev.phys_port_cnt);
	CHECK(e->dev.node_guid != 0, "node_guid is 0");
	CHECK(e->dev.max_qp > 0 && e->dev.max_cq > 0 && e->dev.max_mr > 0 &&
	      e->dev.max_pd > 0 && e->dev.max_srq > 0 && e->dev.max_ah > 0,
	      "zero object limits: qp %d cq %d mr %d pd %d srq %d ah %d",
	      e->dev.max_qp, e->dev.max_cq, e->dev.max_mr, e->dev.max_pd,
	      e->dev.max_srq, e->dev.max_ah);
	CHECK(e->dev.max_qp_wr > 0 && e->dev.max_sge > 0 && e->dev.max_cqe > 0 &&
	      e->dev.max_srq_wr > 0 && e->dev.max_srq_sge > 0 && e->dev.max_qp_rd_atom > 0,
	      "zero queue limits: qp_wr %d sge %d cqe %d srq_wr %d srq_sge %d rd_atom %d",
	      e->dev.max_qp_wr, e->dev.max_sge, e->dev.max_cqe,
	      e->dev.max_srq_wr, e->dev.max_srq_sge, e->dev.max_qp_rd_atom);
	CHECK(e->dev.max_mr_size > 0, "max_mr_size 0");
	CHECK(e->dev.device_cap_flags & IBV_DEVICE_SRQ_RESIZE,
	      "device_cap_flags 0x%x lacks SRQ_RESIZE", e->dev.device_cap_flags);
	CHECK(e->dev.atomic_cap != IBV_ATOMIC_NONE, "atomic_cap NONE");
	vlog("max_qp %d max_qp_wr %d max_sge %d max_cqe %d max_srq_wr %d max_srq_sge %d",
	     e->dev.max_qp, e->dev.max_qp_wr, e->dev.max_sge, e->dev.max_cqe,
	     e->dev.max_srq_wr, e->dev.max_srq_sge);

	/* ibv_query_device_ex agrees with ibv_query_device */
	memset(&dx, 0, sizeof(dx));
	OK(ibv_query_device_ex(e->ctx, NULL, &dx));
	CHECK(dx.orig_attr.max_qp == e->dev.max_qp && dx.orig_attr.max_cqe == e->dev.max_cqe &&
	      dx.orig_attr.max_mr_size == e->dev.max_mr_size &&
	      dx.orig_attr.node_guid == e->dev.node_guid &&
	      dx.orig_attr.device_cap_flags == e->dev.device_cap_flags,
	      "ibv_query_device_ex orig_attr differs from ibv_query_device");

	/* ibv_query_port */
	memset(&pa, 0, sizeof(pa));
	OK(ibv_query_port(e->ctx, PORT, &pa));
	CHECK(pa.state == IBV_PORT_ACTIVE, "port state %s", ibv_port_state_str(pa.state));
	CHECK(pa.link_layer == IBV_LINK_LAYER_ETHERNET, "link_layer %u, expected Ethernet",
	      pa.link_layer);
	CHECK(pa.gid_tbl_len > 0, "gid_tbl_len 0");
	CHECK(pa.pkey_tbl_len > 0, "pkey_tbl_len 0");
	CHECK(pa.active_mtu >= IBV_MTU_256 && pa.active_mtu <= pa.max_mtu,
	      "active_mtu %d max_mtu %d", pa.active_mtu, pa.max_mtu);
	ERR(EINVAL, ibv_query_port(e->ctx, 2, &pa2), "ibv_query_port(port 2)");

	/* ibv_query_gid / ibv_query_gid_ex: the RoCE v2 entry */
	OK(ibv_query_gid_ex(e->ctx, PORT, e->gid_index, &ent, 0));
	CHECK(ent.gid_type == IBV_GID_TYPE_ROCE_V2, "GID %d type %u, expected RoCE v2",
	      e->gid_index, ent.gid_type);
	CHECK(ent.port_num == PORT && ent.gid_index == (uint32_t)e->gid_index,
	      "gid entry port %u index %u", ent.port_num, ent.gid_index);
	CHECK(ent.ndev_ifindex != 0, "RoCE v2 GID has no netdev");
	OK(ibv_query_gid(e->ctx, PORT, e->gid_index, &g));
	CHECK(!memcmp(&g, &ent.gid, sizeof(g)), "ibv_query_gid %s differs from ibv_query_gid_ex",
	      gid_str(&g));
	memset(&ent, 0, sizeof(ent));
	CHECK(ibv_query_gid_ex(e->ctx, PORT, pa.gid_tbl_len, &ent, 0) != 0,
	      "ibv_query_gid_ex(index %d = gid_tbl_len) succeeded: %s", pa.gid_tbl_len,
	      gid_str(&ent.gid));
	vlog("RoCE v2 GID[%d] = %s", e->gid_index, gid_str(&e->gid));

	/* ibv_query_pkey */
	OK(ibv_query_pkey(e->ctx, PORT, 0, &pkey));
	CHECK(ntohs(pkey) == 0xffff, "pkey[0] 0x%04x, expected 0xffff", ntohs(pkey));
	CHECK(ibv_query_pkey(e->ctx, PORT, pa.pkey_tbl_len, &pkey) != 0,
	      "ibv_query_pkey(index %d = pkey_tbl_len) succeeded", pa.pkey_tbl_len);
	CHECK(ibv_query_pkey(e->ctx, PORT, 0xffff, &pkey) != 0,
	      "ibv_query_pkey(index 0xffff) succeeded");
	return 0;
}

/* A new QP is in RESET and query_qp reports at least the requested caps. */
static int check_caps(struct ibv_qp *qp, const struct ibv_qp_init_attr *req, int has_srq)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	OK(ibv_query_qp(qp, &qa, IBV_QP_CAP | IBV_QP_STATE, &qi));
	CHECK(qa.qp_state == IBV_QPS_RESET, "new QP in state %s", qps(qa.qp_state));
	CHECK(qi.qp_type == req->qp_type, "init_attr qp_type %d", qi.qp_type);
	CHECK(qa.cap.max_send_wr >= req->cap.max_send_wr &&
	      qa.cap.max_send_sge >= req->cap.max_send_sge &&
	      qa.cap.max_inline_data >= req->cap.max_inline_data,
	      "send caps wr %u sge %u inline %u < requested %u %u %u",
	      qa.cap.max_send_wr, qa.cap.max_send_sge, qa.cap.max_inline_data,
	      req->cap.max_send_wr, req->cap.max_send_sge, req->cap.max_inline_data);
	if (!has_srq)
		CHECK(qa.cap.max_recv_wr >= req->cap.max_recv_wr &&
		      qa.cap.max_recv_sge >= req->cap.max_recv_sge,
		      "recv caps wr %u sge %u < requested %u %u",
		      qa.cap.max_recv_wr, qa.cap.max_recv_sge,
		      req->cap.max_recv_wr, req->cap.max_recv_sge);
	CHECK(qi.cap.max_send_wr >= req->cap.max_send_wr, "init_attr send_wr %u",
	      qi.cap.max_send_wr);
	CHECK(qp->qp_num != 0 && qp->qp_num != 1, "qp_num %u", qp->qp_num);
	return 0;
}

#define QP_ALL_ATTRS (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | \
		      IBV_QP_QKEY | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
		      IBV_QP_RQ_PSN | IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | \
		      IBV_QP_MIN_RNR_TIMER | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | \
		      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)

/* Walk one QP RESET->INIT->RTR->RTS->ERR->RESET->INIT, checking query_qp at each step. */
static int walk_qp(struct env *e, struct ibv_qp *qp, enum ibv_qp_type t)
{
	struct ibv_qp_attr a, q;
	struct ibv_qp_init_attr qi;
	int mask;

	QSTATE(qp, IBV_QPS_RESET);
	OK(to_init(qp, t));
	memset(&q, 0, sizeof(q));
	OK(ibv_query_qp(qp, &q, QP_ALL_ATTRS, &qi));
	CHECK(q.qp_state == IBV_QPS_INIT, "after INIT: state %s", qps(q.qp_state));
	CHECK(q.port_num == PORT && q.pkey_index == 0, "INIT: port %u pkey_index %u",
	      q.port_num, q.pkey_index);
	if (t == IBV_QPT_UD)
		CHECK(q.qkey == 0x11111111, "INIT: qkey 0x%x", q.qkey);
	else
		CHECK(q.qp_access_flags & IBV_ACCESS_REMOTE_WRITE, "INIT: access 0x%x",
		      q.qp_access_flags);

	mask = rtr_attr(e, qp, t, &a);
	OK(ibv_modify_qp(qp, &a, mask));
	memset(&q, 0, sizeof(q));
	OK(ibv_query_qp(qp, &q, QP_ALL_ATTRS, &qi));
	CHECK(q.qp_state == IBV_QPS_RTR, "after RTR: state %s", qps(q.qp_state));
	if (t != IBV_QPT_UD) {
		CHECK(q.path_mtu == IBV_MTU_1024, "RTR: path_mtu %d", q.path_mtu);
		CHECK(q.dest_qp_num == qp->qp_num, "RTR: dest_qp_num 0x%x, expected 0x%x",
		      q.dest_qp_num, qp->qp_num);
		CHECK(q.rq_psn == 0x1234, "RTR: rq_psn 0x%x", q.rq_psn);
		CHECK(q.ah_attr.is_global && !memcmp(&q.ah_attr.grh.dgid, &e->gid, 16),
		      "RTR: ah_attr global %d dgid %s", q.ah_attr.is_global,
		      gid_str(&q.ah_attr.grh.dgid));
		CHECK(q.ah_attr.grh.sgid_index == e->gid_index, "RTR: sgid_index %u",
		      q.ah_attr.grh.sgid_index);
		CHECK(q.ah_attr.port_num == PORT, "RTR: ah port %u", q.ah_attr.port_num);
	}
	if (t == IBV_QPT_RC) {
		CHECK(q.max_dest_rd_atomic == 4, "RTR: max_dest_rd_atomic %u", q.max_dest_rd_atomic);
		CHECK(q.min_rnr_timer == 12, "RTR: min_rnr_timer %u", q.min_rnr_timer);
	}

	mask = rts_attr(t, &a);
	OK(ibv_modify_qp(qp, &a, mask));
	memset(&q, 0, sizeof(q));
	OK(ibv_query_qp(qp, &q, QP_ALL_ATTRS, &qi));
	CHECK(q.qp_state == IBV_QPS_RTS, "after RTS: state %s", qps(q.qp_state));
	CHECK(q.sq_psn == 0x4321, "RTS: sq_psn 0x%x", q.sq_psn);
	if (t == IBV_QPT_RC) {
		CHECK(q.timeout == 14 && q.retry_cnt == 7 && q.rnr_retry == 7,
		      "RTS: timeout %u retry_cnt %u rnr_retry %u", q.timeout, q.retry_cnt,
		      q.rnr_retry);
		CHECK(q.max_rd_atomic == 4, "RTS: max_rd_atomic %u", q.max_rd_atomic);
	}

	OK(to_state(qp, IBV_QPS_ERR));
	QSTATE(qp, IBV_QPS_ERR);
	OK(to_state(qp, IBV_QPS_RESET));
	QSTATE(qp, IBV_QPS_RESET);
	/* A reset QP can be brought up again. */
	OK(to_init(qp, t));
	QSTATE(qp, IBV_QPS_INIT);
	return 0;
}

/*
 * A tracked 4 KiB buffer and MR, and a receive WR over `nsge` 1 KiB pieces of it
 * (wr->num_sge = 1; the other SGEs are there to exceed a queue's max_sge).
 */
static int recv_setup(struct ibv_pd *pd, struct ibv_sge *sge, int nsge, struct ibv_recv_wr *wr)
{
	struct ibv_mr *mr;
	char *buf;
	int i;

	buf = page_buf(4096);
	CHECK(buf, "mmap failed");
	NEW(mr, ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE));
	for (i = 0; i < nsge; i++) {
		sge[i].addr = (uintptr_t)(buf + i * 1024);
		sge[i].length = 1024;
		sge[i].lkey = mr->lkey;
	}
	memset(wr, 0, sizeof(*wr));
	wr->sg_list = sge;
	wr->num_sge = 1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* pd                                                                 */
/* ------------------------------------------------------------------ */

int t_pd(struct env *e)
{
	struct ibv_pd *pd, *pd2;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia;
	void *buf;

	NEW(pd, ibv_alloc_pd(e->ctx));
	NEW(pd2, ibv_alloc_pd(e->ctx));
	CHECK(pd->handle != pd2->handle, "two PDs share handle %u", pd->handle);
	OK(release(pd2));

	/* A PD in use by an MR cannot go away. */
	buf = page_buf(4096);
	CHECK(buf, "mmap failed");
	NEW(mr, ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE));
	ERR(EBUSY, ibv_dealloc_pd(pd), "ibv_dealloc_pd with a live MR");
	OK(release(mr));

	/* Nor by a QP; a CQ in use by a QP cannot either. */
	NEW(cq, ibv_create_cq(e->ctx, 8, NULL, NULL, 0));
	NEW(qp, make_qp(pd, cq, IBV_QPT_RC, NULL, &ia));
	ERR(EBUSY, ibv_dealloc_pd(pd), "ibv_dealloc_pd with a live QP");
	ERR(EBUSY, ibv_destroy_cq(cq), "ibv_destroy_cq with a live QP");
	OK(release(qp));
	OK(release(cq));
	OK(release(pd));
	return 0;
}

/* ------------------------------------------------------------------ */
/* mr                                                                 */
/* ------------------------------------------------------------------ */

int t_mr(struct env *e)
{
	const size_t len = 64 * 1024;
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	static const int single[] = {
		0, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
	};
	struct ibv_pd *pd;
	struct ibv_mr *mr1, *mr2, *mr3, *tmp;
	uint8_t *buf, *ro;
	void *gone;
	size_t i;

	NEW(pd, ibv_alloc_pd(e->ctx));
	buf = page_buf(len);
	CHECK(buf, "mmap failed");

	NEW(mr1, ibv_reg_mr(pd, buf, len, rw));
	CHECK(mr1->addr == buf && mr1->length == len && mr1->pd == pd,
	      "mr1 addr %p length %zu, expected %p %zu", mr1->addr, mr1->length,
	      (void *)buf, len);
	CHECK(mr1->lkey != 0 && mr1->rkey != 0, "mr1 lkey 0x%x rkey 0x%x", mr1->lkey, mr1->rkey);

	/* A second MR over part of the same pages, at an unaligned offset. */
	NEW(mr2, ibv_reg_mr(pd, buf + 100, 5000, rw));
	CHECK(mr2->lkey != 0 && mr2->rkey != 0, "mr2 lkey 0x%x rkey 0x%x", mr2->lkey, mr2->rkey);
	CHECK(mr2->lkey != mr1->lkey && mr2->rkey != mr1->rkey,
	      "MR keys not distinct: lkey 0x%x/0x%x rkey 0x%x/0x%x",
	      mr1->lkey, mr2->lkey, mr1->rkey, mr2->rkey);
	CHECK(mr2->handle != mr1->handle, "two MRs share handle %u", mr1->handle);

	/* Each access right on its own (remote write/atomic with local write). */
	for (i = 0; i < sizeof(single) / sizeof(single[0]); i++) {
		NEW(mr3, ibv_reg_mr(pd, buf, 4096, single[i]));
		CHECK(mr3->lkey != 0 && mr3->lkey != mr1->lkey && mr3->lkey != mr2->lkey,
		      "access 0x%x: lkey 0x%x", single[i], mr3->lkey);
		OK(release(mr3));
	}

	/* Remote write/atomic require local write (IB spec o10-36.2.1). */
	NEW_ERR(EINVAL, tmp, ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE),
		"REMOTE_WRITE without LOCAL_WRITE");
	NEW_ERR(EINVAL, tmp, ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_ATOMIC),
		"REMOTE_ATOMIC without LOCAL_WRITE");

	/* Memory that is not mapped. */
	gone = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(gone != MAP_FAILED, "mmap failed");
	munmap(gone, 2 * 4096);
	NEW_ERR(EFAULT, tmp, ibv_reg_mr(pd, gone, 2 * 4096, IBV_ACCESS_LOCAL_WRITE),
		"MR over unmapped memory");

	/* Read-only memory: fine without write access, EFAULT with it. */
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(ro != MAP_FAILED, "mmap failed");
	track(K_MAP, ro, 4096);
	NEW(mr3, ibv_reg_mr(pd, ro, 4096, IBV_ACCESS_REMOTE_READ));
	OK(release(mr3));
	NEW_ERR(EFAULT, tmp, ibv_reg_mr(pd, ro, 4096, IBV_ACCESS_LOCAL_WRITE),
		"LOCAL_WRITE MR over read-only memory");

	/* Zero length. */
	NEW_ERR(EINVAL, tmp, ibv_reg_mr(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE), "zero-length MR");
	return 0;
}

/* ------------------------------------------------------------------ */
/* cq                                                                 */
/* ------------------------------------------------------------------ */

/* CPUs in /sys/devices/system/cpu/possible ("0-1", "0,2-3"); -1 if unreadable. */
static int possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	int a, b, n = 0;
	char sep;

	if (!f)
		return -1;
	while (fscanf(f, "%d", &a) == 1) {
		b = a;
		sep = (char)fgetc(f);
		if (sep == '-') {
			if (fscanf(f, "%d", &b) != 1)
				break;
			sep = (char)fgetc(f);
		}
		n += b - a + 1;
		if (sep != ',')
			break;
	}
	fclose(f);
	return n ? n : -1;
}

int t_cq(struct env *e)
{
	struct ibv_cq *cq1, *cq100, *cqmax, *tmp, *chcq, *ev_cq;
	struct ibv_comp_channel *ch;
	struct ibv_wc wc[4];
	void *ev_ctx;
	int n;

	NEW(cq1, ibv_create_cq(e->ctx, 1, NULL, NULL, 0));
	CHECK(cq1->cqe >= 1, "cqe=1: got %d", cq1->cqe);
	NEW(cq100, ibv_create_cq(e->ctx, 100, (void *)0x1234, NULL, 0));
	CHECK(cq100->cqe >= 100, "cqe=100: got %d", cq100->cqe);
	CHECK(cq100->cq_context == (void *)0x1234, "cq_context not kept");
	NEW(cqmax, ibv_create_cq(e->ctx, e->dev.max_cqe, NULL, NULL, 0));
	CHECK(cqmax->cqe >= e->dev.max_cqe, "cqe=max_cqe %d: got %d", e->dev.max_cqe, cqmax->cqe);
	OK(release(cqmax));

	NEW_ERR(EINVAL, tmp, ibv_create_cq(e->ctx, e->dev.max_cqe + 1, NULL, NULL, 0),
		"cqe = max_cqe + 1");
	NEW_ERR(EINVAL, tmp, ibv_create_cq(e->ctx, 0, NULL, NULL, 0), "cqe = 0");
	/* One completion vector per possible CPU, as rxe: the last one works. */
	n = possible_cpus();
	CHECK(e->ctx->num_comp_vectors == n, "num_comp_vectors %d, %d possible CPUs",
	      e->ctx->num_comp_vectors, n);
	NEW(tmp, ibv_create_cq(e->ctx, 1, NULL, NULL, e->ctx->num_comp_vectors - 1));
	OK(release(tmp));
	NEW_ERR(EINVAL, tmp, ibv_create_cq(e->ctx, 1, NULL, NULL, e->ctx->num_comp_vectors),
		"comp_vector = num_comp_vectors");

	/* Empty CQs poll empty (librxe reads the ring in user space). */
	n = ibv_poll_cq(cq100, 4, wc);
	CHECK(n == 0, "poll on an empty CQ returned %d", n);

	/* Resize bigger, then smaller. */
	OK(ibv_resize_cq(cq100, 500));
	CHECK(cq100->cqe >= 500, "resize to 500: cqe %d", cq100->cqe);
	n = ibv_poll_cq(cq100, 4, wc);
	CHECK(n == 0, "poll after resize returned %d", n);
	OK(ibv_resize_cq(cq100, 10));
	CHECK(cq100->cqe >= 10, "resize to 10: cqe %d", cq100->cqe);
	n = ibv_poll_cq(cq100, 4, wc);
	CHECK(n == 0, "poll after resize returned %d", n);
	ERR(EINVAL, ibv_resize_cq(cq100, e->dev.max_cqe + 1), "resize to max_cqe + 1");
	CHECK(cq100->cqe >= 10, "failed resize changed cqe to %d", cq100->cqe);
	n = ibv_poll_cq(cq100, 4, wc);
	CHECK(n == 0, "poll after a failed resize returned %d", n);

	OK(ibv_req_notify_cq(cq1, 0));
	OK(ibv_req_notify_cq(cq1, 1));

	/* Completion channel: armed, no traffic, so no event. */
	NEW(ch, ibv_create_comp_channel(e->ctx));
	NEW(chcq, ibv_create_cq(e->ctx, 16, NULL, ch, 0));
	CHECK(chcq->channel == ch, "cq->channel not set");
	OK(ibv_req_notify_cq(chcq, 0));
	n = channel_ready(ch, 300);
	CHECK(n == 0, "poll() on the completion channel: %d with no traffic", n);
	CHECK(set_nonblock(ch->fd) == 0, "fcntl O_NONBLOCK failed");
	errno = 0;
	n = ibv_get_cq_event(ch, &ev_cq, &ev_ctx);
	CHECK(n != 0, "ibv_get_cq_event returned an event with no traffic");
	CHECK(errno == EAGAIN, "ibv_get_cq_event: %s, expected EAGAIN", errname(errno));
	ERR(EBUSY, ibv_destroy_comp_channel(ch), "destroy a channel with a CQ on it");
	OK(release(chcq));
	OK(release(ch));
	return 0;
}

/* ------------------------------------------------------------------ */
/* qp                                                                 */
/* ------------------------------------------------------------------ */

int t_qp(struct env *e)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	static const char *const tname[] = { "RC", "UC", "UD" };
	struct ibv_pd *pd;
	struct ibv_cq *cq, *cq2;
	struct ibv_qp *qp[3], *tmp;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int i, mask;

	NEW(pd, ibv_alloc_pd(e->ctx));
	NEW(cq, ibv_create_cq(e->ctx, 64, NULL, NULL, 0));

	for (i = 0; i < 3; i++) {
		NEW(qp[i], make_qp(pd, cq, types[i], NULL, &ia));
		if (check_caps(qp[i], &ia, 0)) {
			prefix_reason(tname[i]);
			return -1;
		}
		CHECK(i == 0 || qp[i]->qp_num != qp[i - 1]->qp_num, "QPs share qp_num");
	}
	for (i = 0; i < 3; i++) {
		if (walk_qp(e, qp[i], types[i])) {
			prefix_reason(tname[i]);
			return -1;
		}
	}

	/* Separate send and receive CQs; no inline data. */
	NEW(cq2, ibv_create_cq(e->ctx, 8, NULL, NULL, 0));
	qp_init_attr(cq, IBV_QPT_RC, NULL, &ia);
	ia.recv_cq = cq2;
	ia.cap.max_inline_data = 0;
	NEW(tmp, ibv_create_qp(pd, &ia));
	CHECK(tmp->send_cq == cq && tmp->recv_cq == cq2, "send_cq/recv_cq not kept");
	OK(release(tmp));

	/* Creation limits. */
	qp_init_attr(cq, IBV_QPT_RC, NULL, &ia);
	ia.cap.max_send_wr = e->dev.max_qp_wr + 1;
	NEW_ERR(EINVAL, tmp, ibv_create_qp(pd, &ia), "max_send_wr = max_qp_wr + 1");
	qp_init_attr(cq, IBV_QPT_RC, NULL, &ia);
	ia.cap.max_recv_wr = e->dev.max_qp_wr + 1;
	NEW_ERR(EINVAL, tmp, ibv_create_qp(pd, &ia), "max_recv_wr = max_qp_wr + 1");
	qp_init_attr(cq, IBV_QPT_RC, NULL, &ia);
	ia.cap.max_send_sge = e->dev.max_sge + 1;
	NEW_ERR(EINVAL, tmp, ibv_create_qp(pd, &ia), "max_send_sge = max_sge + 1");
	qp_init_attr(cq, IBV_QPT_RC, NULL, &ia);
	ia.cap.max_recv_sge = e->dev.max_sge + 1;
	NEW_ERR(EINVAL, tmp, ibv_create_qp(pd, &ia), "max_recv_sge = max_sge + 1");
	qp_init_attr(cq, IBV_QPT_RC, NULL, &ia);
	ia.cap.max_inline_data = 1 << 20;
	NEW_ERR(EINVAL, tmp, ibv_create_qp(pd, &ia), "max_inline_data = 1 MiB");

	/* Illegal transitions on RC (qp[0] is reused: reset it). */
	OK(to_state(qp[0], IBV_QPS_RESET));
	mask = rts_attr(IBV_QPT_RC, &a);
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, mask), "RC RESET->RTS");
	QSTATE(qp[0], IBV_QPS_RESET);
	mask = rtr_attr(e, qp[0], IBV_QPT_RC, &a);
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, mask), "RC RESET->RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = PORT;
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, IBV_QP_STATE | IBV_QP_PORT),
	    "RC RESET->INIT without PKEY_INDEX and ACCESS_FLAGS");
	QSTATE(qp[0], IBV_QPS_RESET);
	a.port_num = 2;
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX |
				  IBV_QP_ACCESS_FLAGS), "RC RESET->INIT with port 2");
	QSTATE(qp[0], IBV_QPS_RESET);
	OK(to_init(qp[0], IBV_QPT_RC));
	mask = rts_attr(IBV_QPT_RC, &a);
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, mask), "RC INIT->RTS (skipping RTR)");
	QSTATE(qp[0], IBV_QPS_INIT);
	mask = rtr_attr(e, qp[0], IBV_QPT_RC, &a);
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, mask & ~IBV_QP_DEST_QPN),
	    "RC INIT->RTR without DEST_QPN");
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, mask & ~IBV_QP_AV), "RC INIT->RTR without AV");
	ERR(EINVAL, ibv_modify_qp(qp[0], &a,
				  mask & ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)),
	    "RC INIT->RTR without MAX_DEST_RD_ATOMIC/MIN_RNR_TIMER");
	QSTATE(qp[0], IBV_QPS_INIT);
	OK(ibv_modify_qp(qp[0], &a, mask));
	mask = rts_attr(IBV_QPT_RC, &a);
	a.max_rd_atomic = e->dev.max_qp_rd_atom + 1;
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, mask),
	    "RC RTR->RTS with max_rd_atomic > max_qp_rd_atom");
	QSTATE(qp[0], IBV_QPS_RTR);
	mask = rts_attr(IBV_QPT_RC, &a);
	ERR(EINVAL, ibv_modify_qp(qp[0], &a, mask & ~IBV_QP_SQ_PSN), "RC RTR->RTS without SQ_PSN");
	QSTATE(qp[0], IBV_QPS_RTR);
	/* UD: INIT needs a Q_Key. */
	OK(to_state(qp[2], IBV_QPS_RESET));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = PORT;
	ERR(EINVAL, ibv_modify_qp(qp[2], &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX),
	    "UD RESET->INIT without QKEY");
	QSTATE(qp[2], IBV_QPS_RESET);
	return 0;
}

/* ------------------------------------------------------------------ */
/* srq                                                                */
/* ------------------------------------------------------------------ */

int t_srq(struct env *e)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq, *tmp;
	struct ibv_qp *qp;
	struct ibv_srq_init_attr si;
	struct ibv_srq_attr sa;
	struct ibv_qp_init_attr ia, qi;
	struct ibv_qp_attr qa;
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	int i, r;

	NEW(pd, ibv_alloc_pd(e->ctx));
	NEW(cq, ibv_create_cq(e->ctx, 64, NULL, NULL, 0));

	memset(&si, 0, sizeof(si));
	si.attr.max_wr = 64;
	si.attr.max_sge = 2;
	NEW(srq, ibv_create_srq(pd, &si));
	CHECK(si.attr.max_wr >= 64 && si.attr.max_sge >= 2, "create returned max_wr %u max_sge %u",
	      si.attr.max_wr, si.attr.max_sge);
	memset(&sa, 0, sizeof(sa));
	OK(ibv_query_srq(srq, &sa));
	CHECK(sa.max_wr >= 64 && sa.max_sge >= 2, "query: max_wr %u max_sge %u", sa.max_wr, sa.max_sge);
	CHECK(sa.srq_limit == 0, "query: srq_limit %u, expected 0", sa.srq_limit);

	/* Arm the limit. */
	memset(&sa, 0, sizeof(sa));
	sa.srq_limit = 10;
	OK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT));
	OK(ibv_query_srq(srq, &sa));
	CHECK(sa.srq_limit == 10, "srq_limit %u after arming 10", sa.srq_limit);
	sa.srq_limit = e->dev.max_srq_wr + 1u;
	ERR(EINVAL, ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), "srq_limit > max_srq_wr");
	sa.srq_limit = 100000;
	ERR(EINVAL, ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), "srq_limit 100000 > SRQ size");

	/* Resize (IB_DEVICE_SRQ_RESIZE). */
	memset(&sa, 0, sizeof(sa));
	sa.max_wr = 256;
	OK(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR));
	OK(ibv_query_srq(srq, &sa));
	CHECK(sa.max_wr >= 256, "max_wr %u after resize to 256", sa.max_wr);
	CHECK(sa.srq_limit == 10, "srq_limit %u after resize, expected 10", sa.srq_limit);
	sa.max_wr = e->dev.max_srq_wr + 1u;
	ERR(EINVAL, ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), "resize to max_srq_wr + 1");
	sa.max_wr = 5;
	ERR(EINVAL, ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), "resize below the armed limit");
	OK(ibv_query_srq(srq, &sa));
	CHECK(sa.max_wr >= 256, "max_wr %u after a failed resize", sa.max_wr);

	/* post_srq_recv goes to the user-space ring: at least max_wr fit. */
	if (recv_setup(pd, &sge, 1, &wr))
		return -1;
	for (i = 0, r = 0; i < 100000 && !r; i++) {
		wr.wr_id = i;
		r = ibv_post_srq_recv(srq, &wr, &bad);
	}
	CHECK(r != 0, "the SRQ never filled up");
	CHECK(i - 1 >= 256, "SRQ full after %d WRs, max_wr 256", i - 1);
	vlog("SRQ took %d WRs (max_wr 256): %s when full", i - 1, errname(rc_err(r)));

	/* A QP on the SRQ keeps the SRQ alive. */
	NEW(qp, make_qp(pd, cq, IBV_QPT_RC, srq, &ia));
	CHECK(qp->srq == srq, "qp->srq not set");
	OK(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qi));
	CHECK(qi.srq == srq, "query_qp init_attr.srq not set");
	ERR(EBUSY, ibv_destroy_srq(srq), "destroy an SRQ with a QP on it");
	OK(release(qp));

	/* Creation limits. */
	memset(&si, 0, sizeof(si));
	si.attr.max_wr = e->dev.max_srq_wr + 1u;
	si.attr.max_sge = 1;
	NEW_ERR(EINVAL, tmp, ibv_create_srq(pd, &si), "max_wr = max_srq_wr + 1");
	si.attr.max_wr = 16;
	si.attr.max_sge = e->dev.max_srq_sge + 1u;
	NEW_ERR(EINVAL, tmp, ibv_create_srq(pd, &si), "max_sge = max_srq_sge + 1");
	return 0;
}

/* ------------------------------------------------------------------ */
/* ah                                                                 */
/* ------------------------------------------------------------------ */

int t_ah(struct env *e)
{
	struct ibv_pd *pd;
	struct ibv_ah *ah, *ah2, *tmp;
	struct ibv_ah_attr aa;
	struct ibv_gid_entry ent;
	int i, n = 0;

	NEW(pd, ibv_alloc_pd(e->ctx));
	self_ah_attr(e, &aa);
	NEW(ah, ibv_create_ah(pd, &aa));
	CHECK(ah->pd == pd, "ah->pd not set");
	NEW(ah2, ibv_create_ah(pd, &aa));
	CHECK(ah2->handle != ah->handle, "two AHs share handle %u", ah->handle);
	ERR(EBUSY, ibv_dealloc_pd(pd), "ibv_dealloc_pd with a live AH");
	OK(release(ah2));

	/* One AH from every RoCE v2 GID to itself (IPv4-mapped, IPv6, link-local). */
	for (i = 0; i < e->port.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(e->ctx, PORT, i, &ent, 0) ||
		    ent.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		self_ah_attr(e, &aa);
		aa.grh.sgid_index = i;
		aa.grh.dgid = ent.gid;
		errno = 0;
		tmp = ibv_create_ah(pd, &aa);
		CHECK(tmp, "AH from RoCE v2 GID[%d] %s: %s", i, gid_str(&ent.gid), errname(errno));
		track(K_AH, tmp, 0);
		OK(release(tmp));
		n++;
	}
	vlog("AHs from %d RoCE v2 GIDs", n);

	self_ah_attr(e, &aa);
	aa.grh.sgid_index = e->port.gid_tbl_len;
	NEW_ERR(EINVAL, tmp, ibv_create_ah(pd, &aa), "sgid_index = gid_tbl_len");
	self_ah_attr(e, &aa);
	aa.port_num = 2;
	NEW_ERR(EINVAL, tmp, ibv_create_ah(pd, &aa), "AH on port 2");
	return 0;
}

/* ------------------------------------------------------------------ */
/* fastpath: librxe's user-space rings without traffic                */
/* ------------------------------------------------------------------ */

int t_fastpath(struct env *e)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia;
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge[3];
	struct ibv_wc wc[8];
	int i, n, r;

	NEW(pd, ibv_alloc_pd(e->ctx));
	NEW(cq, ibv_create_cq(e->ctx, 64, NULL, NULL, 0));
	NEW(qp, make_qp(pd, cq, IBV_QPT_RC, NULL, &ia));
	OK(to_init(qp, IBV_QPT_RC));
	if (recv_setup(pd, sge, 3, &wr))
		return -1;
	wr.wr_id = 1;
	bad = NULL;
	OK(ibv_post_recv(qp, &wr, &bad));
	CHECK(bad == NULL, "bad_wr set on success");

	n = ibv_poll_cq(cq, 8, wc);
	CHECK(n == 0, "poll on an idle CQ returned %d", n);

	/* More SGEs than the RQ was created with. */
	wr.num_sge = 3;
	bad = NULL;
	r = ibv_post_recv(qp, &wr, &bad);
	CHECK(r != 0, "post_recv with 3 SGEs on a 2-SGE RQ succeeded");
	CHECK(bad == &wr, "bad_wr not set on failure");

	/* Fill the RQ: at least max_recv_wr (16) fit, then it reports full. */
	wr.num_sge = 1;
	for (i = 1, r = 0; i < 100000 && !r; i++) {
		wr.wr_id = i + 1;
		r = ibv_post_recv(qp, &wr, &bad);
	}
	CHECK(r != 0, "the RQ never filled up");
	CHECK(i - 1 >= 16, "RQ full after %d WRs, requested 16", i - 1);
	vlog("RQ took %d WRs (requested 16): %s when full", i - 1, errname(rc_err(r)));

	n = ibv_poll_cq(cq, 8, wc);
	CHECK(n == 0, "poll returned %d with nothing sent", n);
	return 0;
}

/* ------------------------------------------------------------------ */
/* flush: a QP moved to ERR flushes its posted receives to the CQ     */
/* ------------------------------------------------------------------ */

int t_flush(struct env *e)
{
	const int nrecv = 5;
	struct ibv_pd *pd;
	struct ibv_cq *cq, *ev_cq;
	struct ibv_comp_channel *ch;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia;
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc[16];
	void *ev_ctx;
	int i, n, got = 0, tries;

	NEW(pd, ibv_alloc_pd(e->ctx));
	NEW(ch, ibv_create_comp_channel(e->ctx));
	NEW(cq, ibv_create_cq(e->ctx, 32, (void *)0xc0ffee, ch, 0));
	NEW(qp, make_qp(pd, cq, IBV_QPT_RC, NULL, &ia));
	OK(to_init(qp, IBV_QPT_RC));
	if (recv_setup(pd, &sge, 1, &wr))
		return -1;
	for (i = 0; i < nrecv; i++) {
		wr.wr_id = 100 + i;
		OK(ibv_post_recv(qp, &wr, &bad));
	}
	OK(ibv_req_notify_cq(cq, 0));
	CHECK(channel_ready(ch, 100) == 0, "completion event before anything happened");

	OK(to_state(qp, IBV_QPS_ERR));

	/* The flushed receives raise a completion event... */
	n = channel_ready(ch, 5000);
	CHECK(n == 1, "no completion event within 5 s of moving the QP to ERR");
	OK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx));
	ibv_ack_cq_events(ev_cq, 1);	/* before any check: destroy_cq waits for acks */
	CHECK(ev_cq == cq && ev_ctx == (void *)0xc0ffee, "event for cq %p ctx %p",
	      (void *)ev_cq, ev_ctx);

	/* ...and complete in order with IBV_WC_WR_FLUSH_ERR. */
	for (tries = 0; got < nrecv && tries < 50; tries++) {
		n = ibv_poll_cq(cq, 16, wc);
		CHECK(n >= 0, "poll_cq returned %d", n);
		for (i = 0; i < n; i++, got++) {
			CHECK(got < nrecv, "more than %d completions", nrecv);
			CHECK(wc[i].wr_id == (uint64_t)(100 + got), "completion %d: wr_id %" PRIu64,
			      got, wc[i].wr_id);
			CHECK(wc[i].status == IBV_WC_WR_FLUSH_ERR, "completion %d: status %s", got,
			      ibv_wc_status_str(wc[i].status));
			CHECK(wc[i].qp_num == qp->qp_num, "completion %d: qp_num 0x%x", got,
			      wc[i].qp_num);
		}
		if (got < nrecv)
			usleep(100 * 1000);
	}
	CHECK(got == nrecv, "%d of %d receives flushed", got, nrecv);
	n = ibv_poll_cq(cq, 16, wc);
	CHECK(n == 0, "poll after the flush returned %d", n);
	return 0;
}

/* ------------------------------------------------------------------ */
/* cleanup: closing a context with live objects frees them            */
/* ------------------------------------------------------------------ */

int t_cleanup(struct env *e)
{
	struct env e2;
	struct ibv_pd *pd;
	struct ibv_qp_init_attr ia;
	struct ibv_srq_init_attr si;
	struct ibv_ah_attr aa;
	struct ibv_comp_channel *ch[4];
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	void *buf;
	int i, rc = -1;

	/* Everything is left for ibv_close_device (in a second, untracked context). */
	if (env_open(&e2)) {
		prefix_reason("second context");
		env_close(&e2);
		return -1;
	}
	memset(ch, 0, sizeof(ch));
	buf = page_buf(8192);
	if (!buf) {
		snprintf(g_reason, sizeof(g_reason), "mmap failed");
		goto out;
	}
	self_ah_attr(e, &aa);
	for (i = 0; i < 4; i++) {
		memset(&si, 0, sizeof(si));
		si.attr.max_wr = 16;
		si.attr.max_sge = 1;
		ch[i] = ibv_create_comp_channel(e2.ctx);
		if (!(pd = ibv_alloc_pd(e2.ctx)) ||
		    !ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ) ||
		    !ch[i] ||
		    !(cq = ibv_create_cq(e2.ctx, 32, NULL, ch[i], 0)) ||
		    ibv_req_notify_cq(cq, 0) ||
		    !(srq = ibv_create_srq(pd, &si)) ||
		    !(qp = make_qp(pd, cq, IBV_QPT_RC, NULL, &ia)) || to_init(qp, IBV_QPT_RC) ||
		    !make_qp(pd, cq, IBV_QPT_RC, srq, &ia) ||
		    !(qp = make_qp(pd, cq, IBV_QPT_UD, NULL, &ia)) || to_init(qp, IBV_QPT_UD) ||
		    !ibv_create_ah(pd, &aa)) {
			snprintf(g_reason, sizeof(g_reason), "creating objects, round %d: %s", i,
				 errname(errno));
			goto out;
		}
	}
	rc = 0;
out:
	if (ibv_close_device(e2.ctx)) {
		snprintf(g_reason, sizeof(g_reason), "ibv_close_device with live objects: %s",
			 errname(errno));
		rc = -1;
	}
	/*
	 * The channels outlive the context. libibverbs still counts the CQs the
	 * kernel freed on close (ibv_destroy_comp_channel says EBUSY), so close the
	 * event files themselves: the kernel must cope with them going last.
	 */
	for (i = 0; i < 4; i++)
		if (ch[i] && close(ch[i]->fd) && !rc) {
			snprintf(g_reason, sizeof(g_reason), "close(channel fd) after close: %s",
				 errname(errno));
			rc = -1;
		}
	return rc;
}

/* ------------------------------------------------------------------ */
/* objects: create/destroy churn (run under KASAN/kmemleak/lockdep)   */
/* ------------------------------------------------------------------ */

int t_objects(struct env *e)
{
	struct ibv_pd *pd, *p;
	struct ibv_cq *cq, *c;
	struct ibv_mr *m;
	struct ibv_qp *q;
	struct ibv_ah *a;
	struct ibv_qp_init_attr ia;
	struct ibv_ah_attr aa;
	struct timespec t0, t1;
	char *buf;
	long i;

	NEW(pd, ibv_alloc_pd(e->ctx));
	NEW(cq, ibv_create_cq(e->ctx, 16, NULL, NULL, 0));
	buf = page_buf(3 * 4096);
	CHECK(buf, "mmap failed");
	self_ah_attr(e, &aa);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < g_count; i++) {
		errno = 0;
		switch (i % 5) {
		case 0:
			p = ibv_alloc_pd(e->ctx);
			CHECK(p, "object %ld: alloc PD: %s", i, errname(errno));
			OK(ibv_dealloc_pd(p));
			break;
		case 1:
			m = ibv_reg_mr(pd, buf + (i % 7) * 8, 2 * 4096,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
			CHECK(m, "object %ld: reg MR: %s", i, errname(errno));
			OK(ibv_dereg_mr(m));
			break;
		case 2:
			c = ibv_create_cq(e->ctx, 1 + (int)(i % 300), NULL, NULL, 0);
			CHECK(c, "object %ld: create CQ: %s", i, errname(errno));
			OK(ibv_destroy_cq(c));
			break;
		case 3:
			q = make_qp(pd, cq, (i / 5) % 2 ? IBV_QPT_UD : IBV_QPT_RC, NULL, &ia);
			CHECK(q, "object %ld: create QP: %s", i, errname(errno));
			OK(ibv_destroy_qp(q));
			break;
		case 4:
			a = ibv_create_ah(pd, &aa);
			CHECK(a, "object %ld: create AH: %s", i, errname(errno));
			OK(ibv_destroy_ah(a));
			break;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	vlog("%ld objects in %.1f s", g_count,
	     (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
