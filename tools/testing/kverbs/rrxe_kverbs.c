// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_kverbs: the kernel-only side of verbs, driven the way an in-kernel ULP
 * drives it, against the soft-RoCE device bound to a netdev (rrxe or rxe; both
 * register as RDMA_DRIVER_RXE).
 *
 *   insmod rrxe_kverbs.ko netdev=eth0
 *
 * The cases run at load: the module loads if every one passes and fails to
 * load with -EIO otherwise; each case logs one "rrxe_kverbs: PASS|FAIL" line.
 *
 * Inline sends (IB_SEND_INLINE), as SMC-R posts them: two RC QPs of the device,
 * connected to each other through its IPv4 RoCE v2 GID, with a send queue
 * created for 64 bytes of inline data. Inline data comes from buffers that are
 * neither mapped nor registered (the lkey is ignored) and is taken at the
 * post: the sender overwrites its buffers as soon as ib_post_send returns, and
 * the receiver must still see the bytes posted. Cases: SENDs of 0, 1 and 64
 * bytes, one gathered from two SGEs, SEND with immediate, RDMA WRITE into a
 * fast-registered region (bytes around the target untouched), a request one
 * byte over the QP's inline size, which ib_post_send must refuse (the QP then
 * still works), and an inline SEND between two UD QPs (ud=0 leaves it out:
 * for an address handle to the device's own GID, ib_core resolves the MAC to
 * 00:00:00:00:00:00 and upstream rxe never delivers the datagram, inline or
 * not; rrxe sends it through the IP stack, which loops it back).
 *
 * Two cases for rrxe's bound on a QP's backlog (RX_BACKLOG_MAX packets waiting
 * for the QP's run, exec.rs) each replace all of these when asked for (rrxe
 * only): backlog=N sends N datagrams to a UD QP whose run is held up (rrxe
 * drops what the backlog cannot take, counted as rcvd_backlog_full, which the
 * calling script checks; then the QP still receives), and backlog_read=1
 * reads 2 MiB (8,192 PSNs of responses, in local segments of 64) on an RC QP
 * whose run is held until the responder's READ responses have filled its
 * backlog (rrxe refuses the responder more, and it sends them again when the
 * run goes on: the READ completes with the right bytes, and the script checks
 * that nothing was retransmitted).
 */
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>

#define INLINE_SIZE 64
#define BUF_SIZE PAGE_SIZE
#define POLL_MS 5000

static char *netdev = "eth0";
module_param(netdev, charp, 0444);
MODULE_PARM_DESC(netdev, "the netdev whose RDMA device is tested");

static unsigned int backlog;
module_param(backlog, uint, 0444);
MODULE_PARM_DESC(backlog, "only the held-QP case, with this many datagrams (rrxe)");

static bool backlog_read;
module_param(backlog_read, bool, 0444);
MODULE_PARM_DESC(backlog_read, "only the held-requester case, a READ of 2 MiB (rrxe)");

static bool ud = true;
module_param(ud, bool, 0444);
MODULE_PARM_DESC(ud, "also the UD case (upstream rxe loses a kernel UD datagram to its own GID)");

struct end {
	struct ib_cq *cq;
	struct ib_qp *qp;
	void *buf;		/* receive buffer, mapped */
	u64 dma;
	u32 max_inline;		/* inline bytes the QP took */
};

struct ctx {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct end a, b;	/* a sends, b receives */
	struct ib_mr *mr;	/* b's fast-registered region: b.buf */
	struct scatterlist sg;
	bool sg_mapped;
	int sgid;
	union ib_gid gid;
	u8 mac[ETH_ALEN];	/* the netdev's: the GID's own address */
	unsigned int failed, passed;
};

static void result(struct ctx *c, const char *name, int err)
{
	if (err) {
		c->failed++;
		pr_err("rrxe_kverbs: FAIL %s (%d)\n", name, err);
	} else {
		c->passed++;
		pr_info("rrxe_kverbs: PASS %s\n", name);
	}
}

/* The next completion on @cq, within @ms. */
static int poll_within(struct ib_cq *cq, struct ib_wc *wc, unsigned int ms)
{
	unsigned long end = jiffies + msecs_to_jiffies(ms);

	do {
		int n = ib_poll_cq(cq, 1, wc);

		if (n < 0)
			return n;
		if (n == 1)
			return 0;
		usleep_range(20, 100);
	} while (time_before(jiffies, end));
	return -ETIMEDOUT;
}

/* The next completion on @cq, within POLL_MS. */
static int poll_one(struct ib_cq *cq, struct ib_wc *wc)
{
	return poll_within(cq, wc, POLL_MS);
}

/* Waits up to @ms for the completion of @wr_id with status success on @cq. */
static int expect_within(struct ib_cq *cq, u64 wr_id, struct ib_wc *wc, unsigned int ms)
{
	int err = poll_within(cq, wc, ms);

	if (err) {
		pr_err("rrxe_kverbs: no completion for wr_id %llu: %d\n", wr_id, err);
		return err;
	}
	if (wc->status != IB_WC_SUCCESS || wc->wr_id != wr_id) {
		pr_err("rrxe_kverbs: completion wr_id %llu status %s, expected wr_id %llu\n",
		       wc->wr_id, ib_wc_status_msg(wc->status), wr_id);
		return -EIO;
	}
	return 0;
}

/* Waits up to POLL_MS for the completion of @wr_id with status success on @cq. */
static int expect(struct ib_cq *cq, u64 wr_id, struct ib_wc *wc)
{
	return expect_within(cq, wr_id, wc, POLL_MS);
}

/*
 * A successful receive says how the message came, as rxe's do: with its GRH
 * (the IP header) and the network header type (RoCE v2 over IPv4 here), which
 * ib_core's address resolution from a completion (ib_init_ah_attr_from_wc)
 * reads.
 */
static int check_arrival(const struct ib_wc *wc)
{
	if (!(wc->wc_flags & IB_WC_GRH) || !(wc->wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE) ||
	    wc->network_hdr_type != RDMA_NETWORK_IPV4) {
		pr_err("rrxe_kverbs: receive completion flags %#x, network header type %u: want GRH and IPv4\n",
		       wc->wc_flags, wc->network_hdr_type);
		return -EIO;
	}
	return 0;
}

static void pattern(u8 *p, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (u8)(seed + i * 7);
}

/* The device's first IPv4 RoCE v2 GID. */
static int find_gid(struct ctx *c)
{
	struct ib_port_attr pa;
	int i, err = ib_query_port(c->dev, 1, &pa);

	if (err)
		return err;
	for (i = 0; i < pa.gid_tbl_len; i++) {
		const struct ib_gid_attr *ga = rdma_get_gid_attr(c->dev, 1, i);
		bool v4;

		if (IS_ERR(ga))
			continue;
		v4 = ga->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		     ipv6_addr_v4mapped((struct in6_addr *)ga->gid.raw);
		if (v4) {
			c->gid = ga->gid;
			c->sgid = i;
		}
		rdma_put_gid_attr(ga);
		if (v4)
			return 0;
	}
	return -ENOENT;
}

static int make_end(struct ctx *c, struct end *e)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = 16,
			.max_recv_wr = 16,
			.max_send_sge = 2,
			.max_recv_sge = 1,
			.max_inline_data = INLINE_SIZE,
		},
	};

	e->cq = ib_alloc_cq(c->dev, NULL, 64, 0, IB_POLL_DIRECT);
	if (IS_ERR(e->cq)) {
		int err = PTR_ERR(e->cq);

		e->cq = NULL;
		return err;
	}
	init.send_cq = e->cq;
	init.recv_cq = e->cq;
	e->qp = ib_create_qp(c->pd, &init);
	if (IS_ERR(e->qp)) {
		int err = PTR_ERR(e->qp);

		e->qp = NULL;
		return err;
	}
	if (init.cap.max_inline_data < INLINE_SIZE) {
		pr_err("rrxe_kverbs: QP has %u bytes of inline data, asked for %u\n",
		       init.cap.max_inline_data, INLINE_SIZE);
		return -EINVAL;
	}
	e->max_inline = init.cap.max_inline_data;
	e->buf = kzalloc(BUF_SIZE, GFP_KERNEL);
	if (!e->buf)
		return -ENOMEM;
	e->dma = ib_dma_map_single(c->dev, e->buf, BUF_SIZE, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(c->dev, e->dma)) {
		e->dma = 0;
		return -ENOMEM;
	}
	return 0;
}

static void free_end(struct ctx *c, struct end *e)
{
	if (e->qp)
		ib_destroy_qp(e->qp);
	if (e->cq)
		ib_free_cq(e->cq);
	if (e->dma)
		ib_dma_unmap_single(c->dev, e->dma, BUF_SIZE, DMA_BIDIRECTIONAL);
	kfree(e->buf);
}

/*
 * INIT, RTR and RTS, with @peer as the destination, a path MTU of @mtu,
 * @rd_atomic READs in flight each way and a local ACK timeout of 4.096 us <<
 * @timeout.
 */
static int connect_qp(struct ctx *c, struct ib_qp *qp, u32 peer, enum ib_mtu mtu,
		      u8 rd_atomic, u8 timeout)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
				   IB_ACCESS_REMOTE_READ,
	};
	int err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			       IB_QP_PORT | IB_QP_ACCESS_FLAGS);

	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = mtu;
	attr.dest_qp_num = peer;
	attr.rq_psn = 0;
	attr.max_dest_rd_atomic = rd_atomic;
	attr.min_rnr_timer = 12;
	attr.ah_attr.type = rdma_ah_find_type(c->dev, 1);
	rdma_ah_set_port_num(&attr.ah_attr, 1);
	rdma_ah_set_grh(&attr.ah_attr, &c->gid, 0, c->sgid, 64, 0);
	/* Kernel callers resolve the MAC themselves (rdma_cm does). */
	memcpy(attr.ah_attr.roce.dmac, c->mac, ETH_ALEN);
	err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = timeout;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.sq_psn = 0;
	attr.max_rd_atomic = rd_atomic;
	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

/* Posts on @qp one receive of b's whole buffer (cleared first). */
static int post_recv(struct ctx *c, struct ib_qp *qp, u64 wr_id)
{
	struct ib_sge sge = {
		.addr = c->b.dma,
		.length = BUF_SIZE,
		.lkey = c->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };

	memset(c->b.buf, 0, BUF_SIZE);
	return ib_post_recv(qp, &wr, NULL);
}

/*
 * Posts @wr (inline) on a, overwrites @src (len bytes, what the SGEs point
 * at) at once, and waits for a's completion.
 */
static int send_inline(struct ctx *c, struct ib_send_wr *wr, u8 *src, size_t len)
{
	const struct ib_send_wr *bad = NULL;
	struct ib_wc wc;
	int err;

	wr->send_flags = IB_SEND_INLINE | IB_SEND_SIGNALED;
	err = ib_post_send(c->a.qp, wr, &bad);
	if (err)
		return err;
	memset(src, 0xee, len);
	return expect(c->a.cq, wr->wr_id, &wc);
}

/* An inline SEND of @len bytes from @nsge SGEs (1 or 2); @imm: with immediate. */
static int case_send(struct ctx *c, size_t len, int nsge, bool imm)
{
	u8 src[INLINE_SIZE], want[INLINE_SIZE];
	size_t first = nsge == 2 ? len / 3 : len;
	struct ib_sge sge[2] = {
		{ .addr = (uintptr_t)src, .length = first, .lkey = 0 },
		{ .addr = (uintptr_t)src + first, .length = len - first, .lkey = 0 },
	};
	struct ib_send_wr wr = {
		.wr_id = 100 + len,
		.sg_list = sge,
		.num_sge = nsge,
		.opcode = imm ? IB_WR_SEND_WITH_IMM : IB_WR_SEND,
		.ex.imm_data = cpu_to_be32(0x5a0000 + len),
	};
	struct ib_wc wc;
	int err;

	pattern(want, len, (u8)len);
	memcpy(src, want, len);
	err = post_recv(c, c->b.qp, 200 + len);
	if (!err)
		err = send_inline(c, &wr, src, len);
	if (!err)
		err = expect(c->b.cq, 200 + len, &wc);
	if (err)
		return err;
	if (wc.byte_len != len || memcmp(c->b.buf, want, len)) {
		pr_err("rrxe_kverbs: received %u bytes%s, sent %zu\n", wc.byte_len,
		       wc.byte_len == len ? " that differ" : "", len);
		return -EIO;
	}
	if (imm != !!(wc.wc_flags & IB_WC_WITH_IMM) ||
	    (imm && wc.ex.imm_data != wr.ex.imm_data)) {
		pr_err("rrxe_kverbs: immediate data wrong (flags %#x)\n", wc.wc_flags);
		return -EIO;
	}
	return check_arrival(&wc);
}

/*
 * Maps @mr over @sg (one entry, DMA-mapped) in pages and registers it with
 * @access by a fast registration posted on @qp, whose completion (@wr_id)
 * comes on @cq.
 */
static int fast_register(struct ib_qp *qp, struct ib_cq *cq, struct ib_mr *mr,
			 struct scatterlist *sg, int access, u64 wr_id)
{
	struct ib_reg_wr reg = {};
	struct ib_wc wc;
	int n, err;

	n = ib_map_mr_sg(mr, sg, 1, NULL, PAGE_SIZE);
	if (n != 1)
		return n < 0 ? n : -EINVAL;
	reg.wr.opcode = IB_WR_REG_MR;
	reg.wr.wr_id = wr_id;
	reg.wr.send_flags = IB_SEND_SIGNALED;
	reg.mr = mr;
	reg.key = mr->rkey;
	reg.access = access;
	err = ib_post_send(qp, &reg.wr, NULL);
	return err ? err : expect(cq, wr_id, &wc);
}

/* Registers b's buffer for remote writes with a fast registration. */
static int register_b(struct ctx *c)
{
	int err;

	c->mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, 1);
	if (IS_ERR(c->mr)) {
		err = PTR_ERR(c->mr);
		c->mr = NULL;
		return err;
	}
	sg_init_one(&c->sg, c->b.buf, BUF_SIZE);
	if (ib_dma_map_sg(c->dev, &c->sg, 1, DMA_BIDIRECTIONAL) != 1)
		return -ENOMEM;
	c->sg_mapped = true;
	ib_update_fast_reg_key(c->mr, 0x42);
	return fast_register(c->b.qp, c->b.cq, c->mr, &c->sg,
			     IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE, 300);
}

/* An inline RDMA WRITE of 48 bytes at offset 100 of b's region. */
static int case_write(struct ctx *c)
{
	enum { OFF = 100, LEN = 48 };
	u8 src[LEN], want[LEN], *dst = c->b.buf;
	struct ib_sge sge = { .addr = (uintptr_t)src, .length = LEN };
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_id = 400,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE,
		},
		.remote_addr = c->mr->iova + OFF,
		.rkey = c->mr->rkey,
	};
	int err, i;

	memset(dst, 0x11, BUF_SIZE);
	pattern(want, LEN, 0x80);
	memcpy(src, want, LEN);
	err = send_inline(c, &wr.wr, src, LEN);
	if (err)
		return err;
	if (memcmp(dst + OFF, want, LEN)) {
		pr_err("rrxe_kverbs: written bytes differ\n");
		return -EIO;
	}
	for (i = 0; i < BUF_SIZE; i++) {
		if ((i < OFF || i >= OFF + LEN) && dst[i] != 0x11) {
			pr_err("rrxe_kverbs: byte %d outside the write changed\n", i);
			return -EIO;
		}
	}
	return 0;
}

/* One byte over the inline size: refused at the post; the QP still works. */
static int case_too_long(struct ctx *c)
{
	u32 max = c->a.max_inline;
	u8 *src = kzalloc(max + 1, GFP_KERNEL);
	struct ib_sge sge = { .addr = (uintptr_t)src, .length = max + 1 };
	struct ib_send_wr wr = {
		.wr_id = 500,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_INLINE | IB_SEND_SIGNALED,
	};
	const struct ib_send_wr *bad = NULL;
	int err;

	if (!src)
		return -ENOMEM;
	err = ib_post_send(c->a.qp, &wr, &bad);
	kfree(src);
	if (!err) {
		pr_err("rrxe_kverbs: %u inline bytes posted on a QP of %u\n", max + 1, max);
		return -EIO;
	}
	if (bad != &wr) {
		pr_err("rrxe_kverbs: post failed (%d) without naming the request\n", err);
		return -EIO;
	}
	return case_send(c, 7, 1, false);
}

/*
 * An address handle for the device's own IPv4 RoCE v2 GID. @mac: with the
 * netdev's MAC as the destination, as rdma_cm would resolve it (rrxe then
 * hands the packets from QP to QP inside the device); without, the MAC stays
 * 00:00:00:00:00:00 (rrxe sends them through the IP stack, which loops them
 * back).
 */
static struct ib_ah *make_self_ah(struct ctx *c, bool mac)
{
	struct rdma_ah_attr ah_attr = {};

	ah_attr.type = rdma_ah_find_type(c->dev, 1);
	rdma_ah_set_port_num(&ah_attr, 1);
	rdma_ah_set_grh(&ah_attr, &c->gid, 0, c->sgid, 64, 0);
	if (mac)
		memcpy(ah_attr.roce.dmac, c->mac, ETH_ALEN);
	return rdma_create_ah(c->pd, &ah_attr, RDMA_CREATE_AH_SLEEPABLE);
}

/* A UD QP in RTS with @qkey, on @cq. */
static struct ib_qp *make_ud(struct ctx *c, struct ib_cq *cq, u32 qkey)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_UD,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {
			.max_send_wr = 4,
			.max_recv_wr = 4,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = INLINE_SIZE,
		},
	};
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qkey = qkey,
	};
	struct ib_qp *qp = ib_create_qp(c->pd, &init);
	int err;

	if (IS_ERR(qp))
		return qp;
	err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_QKEY);
	if (!err) {
		attr.qp_state = IB_QPS_RTR;
		err = ib_modify_qp(qp, &attr, IB_QP_STATE);
	}
	if (!err) {
		attr.qp_state = IB_QPS_RTS;
		attr.sq_psn = 0;
		err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN);
	}
	if (err) {
		ib_destroy_qp(qp);
		return ERR_PTR(err);
	}
	return qp;
}

/* Two UD QPs with @qkey, a on @cqa and b on @cqb, and an address handle for
 * the device's own GID (see make_self_ah for @mac). */
struct ud_pair {
	struct ib_qp *qa, *qb;
	struct ib_ah *ah;
};

static int make_ud_pair(struct ctx *c, struct ud_pair *p, struct ib_cq *cqa,
			struct ib_cq *cqb, u32 qkey, bool mac)
{
	p->qa = make_ud(c, cqa, qkey);
	if (IS_ERR(p->qa))
		return PTR_ERR(p->qa);
	p->qb = make_ud(c, cqb, qkey);
	if (IS_ERR(p->qb))
		return PTR_ERR(p->qb);
	p->ah = make_self_ah(c, mac);
	return PTR_ERR_OR_ZERO(p->ah);
}

/* Frees what make_ud_pair made, whether or not it succeeded. */
static void free_ud_pair(struct ud_pair *p)
{
	if (!IS_ERR_OR_NULL(p->ah))
		rdma_destroy_ah(p->ah, RDMA_DESTROY_AH_SLEEPABLE);
	if (!IS_ERR_OR_NULL(p->qb))
		ib_destroy_qp(p->qb);
	if (!IS_ERR_OR_NULL(p->qa))
		ib_destroy_qp(p->qa);
}

/*
 * An inline SEND of 40 bytes between two UD QPs of the device, through an
 * address handle for its own GID: the receive holds the GRH, then the data.
 */
static int case_ud(struct ctx *c)
{
	enum { LEN = 40, QKEY = 0x11223344 };
	struct ud_pair p = {};
	struct ib_cq *cq;
	u8 src[LEN], want[LEN];
	struct ib_sge sge = { .addr = (uintptr_t)src, .length = LEN };
	struct ib_ud_wr wr = {
		.wr = {
			.wr_id = 601,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IB_WR_SEND,
			.send_flags = IB_SEND_INLINE | IB_SEND_SIGNALED,
		},
		.remote_qkey = QKEY,
	};
	struct ib_wc wc;
	int err, got = 0;

	cq = ib_alloc_cq(c->dev, NULL, 16, 0, IB_POLL_DIRECT);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	err = make_ud_pair(c, &p, cq, cq, QKEY, false);
	if (err)
		goto out;
	pattern(want, LEN, 0x33);
	memcpy(src, want, LEN);
	err = post_recv(c, p.qb, 600);
	if (err)
		goto out;
	wr.ah = p.ah;
	wr.remote_qpn = p.qb->qp_num;
	err = ib_post_send(p.qa, &wr.wr, NULL);
	if (err)
		goto out;
	memset(src, 0xee, LEN);
	/* The send's and the receive's completions, in either order. */
	while (got != 3 && !err) {
		err = poll_one(cq, &wc);
		if (err) {
			pr_err("rrxe_kverbs: UD %s completion missing\n",
			       got & 2 ? "receive" : "send");
			break;
		}
		if (wc.status != IB_WC_SUCCESS || (wc.wr_id != 600 && wc.wr_id != 601)) {
			pr_err("rrxe_kverbs: UD completion wr_id %llu status %s\n",
			       wc.wr_id, ib_wc_status_msg(wc.status));
			err = -EIO;
			break;
		}
		got |= wc.wr_id == 600 ? 1 : 2;
		if (wc.wr_id == 600 &&
		    (wc.byte_len != sizeof(struct ib_grh) + LEN ||
		     memcmp((u8 *)c->b.buf + sizeof(struct ib_grh), want, LEN))) {
			pr_err("rrxe_kverbs: UD receive of %u bytes differs\n", wc.byte_len);
			err = -EIO;
		}
		if (wc.wr_id == 600 && !err)
			err = check_arrival(&wc);
	}
out:
	free_ud_pair(&p);
	ib_free_cq(cq);
	return err;
}

/* The held QP's run: held at most this long (the sender ends it sooner). */
#define HOLD_MS 120000
/* Datagrams of a full 1024-byte path MTU: rrxe hands a packet that large
 * from a QP of the device to the receiving QP's work item. */
#define DGRAM 1024

/* One of the device's port counters, read with its get_hw_stats. */
struct counter {
	struct ib_device *dev;
	struct rdma_hw_stats *st;
	int idx;
};

/* Opens the device's counter @name; 0 or an error. */
static int counter_open(struct ctx *c, struct counter *k, const char *name)
{
	int i;

	k->dev = c->dev;
	k->idx = -1;
	k->st = c->dev->ops.alloc_hw_port_stats ? c->dev->ops.alloc_hw_port_stats(c->dev, 1) : NULL;
	for (i = 0; k->st && i < k->st->num_counters; i++)
		if (!strcmp(k->st->descs[i].name, name))
			k->idx = i;
	if (k->idx < 0) {
		pr_err("rrxe_kverbs: the device has no counter %s\n", name);
		return -ENOENT;
	}
	return 0;
}

/* The counter's value now (allocates nothing: fit for any context). */
static u64 counter_read(struct counter *k)
{
	k->dev->ops.get_hw_stats(k->dev, k->st, 1, k->idx);
	return k->st->value[k->idx];
}

static void counter_close(struct counter *k)
{
	if (k->st)
		rdma_free_hw_stats_struct(k->st);
}

struct hold {
	atomic_t calls;
	atomic_t entered;	/* 1: held, -1: not in a task, -2: one CPU */
	atomic_t release;
	bool expired;
	/* If set, the run is also released once @watch moves from @base ... */
	struct counter *watch;
	u64 base;
	bool moved;
	/* ... or once @progress (the packets the device takes) stands still
	 * for STUCK_MS: the held run is then the one that was to send them (it
	 * ran nested in the sender's run), and the case tries again. */
	struct counter *progress;
	bool stuck;
};

#define STUCK_MS 1000

/*
 * The receiving QP's completion handler, which rrxe calls from the QP's run.
 * The first call holds that run until the sender releases it, so that every
 * datagram sent meanwhile waits for the QP (or until a counter moves, see
 * struct hold). It spins rather than sleeps: the run is in an RCU read-side
 * section, which (without preemptible RCU) keeps its CPU. So only a run in a
 * task, with another CPU for the sender, may be held.
 */
static void hold_run(struct ib_cq *cq, void *ctx)
{
	struct hold *h = ctx;
	unsigned long end = jiffies + msecs_to_jiffies(HOLD_MS), seen_at;
	u64 seen;

	if (atomic_inc_return(&h->calls) != 1)
		return;
	if (!in_task() || num_online_cpus() < 2) {
		atomic_set_release(&h->entered, in_task() ? -2 : -1);
		return;
	}
	atomic_set_release(&h->entered, 1);
	seen = h->progress ? counter_read(h->progress) : 0;
	seen_at = jiffies;
	while (!atomic_read(&h->release)) {
		if (h->progress) {
			u64 now = counter_read(h->progress);

			if (now != seen) {
				seen = now;
				seen_at = jiffies;
			} else if (time_after(jiffies, seen_at + msecs_to_jiffies(STUCK_MS))) {
				h->stuck = true;
				return;
			}
		}
		if (h->watch && counter_read(h->watch) != h->base) {
			h->moved = true;
			/* A little longer: the sender is refused again. */
			mdelay(2);
			return;
		}
		if (time_after(jiffies, end)) {
			h->expired = true;
			return;
		}
		cpu_relax();
	}
}

/*
 * Waits up to POLL_MS for hold_run to hold the run; says why not, naming the
 * completion expected (@what), if it did not.
 */
static int wait_held(struct hold *h, const char *what)
{
	unsigned long end = jiffies + msecs_to_jiffies(POLL_MS);
	const char *why;

	while (!atomic_read_acquire(&h->entered) && time_before(jiffies, end))
		usleep_range(100, 200);
	switch (atomic_read_acquire(&h->entered)) {
	case 1:
		return 0;
	case 0:
		why = "never came";
		break;
	case -1:
		why = "came outside a task";
		break;
	default:
		why = "came with one CPU online: the held run would keep the sender off it";
	}
	pr_err("rrxe_kverbs: %s's completion %s\n", what, why);
	return -EIO;
}

/* Sends DGRAM bytes of a's buffer, signaled, from @p's a to its b and waits
 * for the send's completion on @cq. */
static int send_dgram(struct ctx *c, struct ud_pair *p, struct ib_cq *cq, u32 qkey, u64 wr_id)
{
	struct ib_sge sge = {
		.addr = c->a.dma,
		.length = DGRAM,
		.lkey = c->pd->local_dma_lkey,
	};
	struct ib_ud_wr wr = {
		.wr = {
			.wr_id = wr_id,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IB_WR_SEND,
			.send_flags = IB_SEND_SIGNALED,
		},
		.ah = p->ah,
		.remote_qpn = p->qb->qp_num,
		.remote_qkey = qkey,
	};
	struct ib_wc wc;
	int err = ib_post_send(p->qa, &wr.wr, NULL);

	return err ?: expect(cq, wr_id, &wc);
}

/*
 * @n datagrams to a UD QP whose run is held (by its completion handler, see
 * hold_run) after its first datagram. Then the run goes on, and the QP must
 * still take a datagram: receives are posted one at a time, each with a
 * datagram of its own, until one gets the datagram sent with it rather than
 * a stale one from the backlog or an earlier probe.
 */
static int case_backlog(struct ctx *c, unsigned int n)
{
	enum { QKEY = 0x55667788, TRIES = 256 };
	struct ib_cq_init_attr cattr = { .cqe = 16 };
	struct ud_pair p = {};
	struct ib_cq *cqa, *cqb;
	struct counter full = {};
	struct hold h = {};
	u64 before, dropped;
	unsigned int i;
	struct ib_wc wc;
	int err;

	cqa = ib_alloc_cq(c->dev, NULL, 16, 0, IB_POLL_DIRECT);
	if (IS_ERR(cqa))
		return PTR_ERR(cqa);
	cqb = ib_create_cq(c->dev, hold_run, NULL, &h, &cattr);
	if (IS_ERR(cqb)) {
		ib_free_cq(cqa);
		return PTR_ERR(cqb);
	}
	/* The datagrams go from QP to QP inside the device. */
	err = make_ud_pair(c, &p, cqa, cqb, QKEY, true);
	if (!err)
		err = counter_open(c, &full, "rcvd_backlog_full");
	if (err)
		goto out;
	err = post_recv(c, p.qb, 700);
	if (!err)
		err = ib_req_notify_cq(cqb, IB_CQ_NEXT_COMP);
	pattern(c->a.buf, DGRAM, 0x10);
	if (!err)
		err = send_dgram(c, &p, cqa, QKEY, 1);
	if (err)
		goto out;
	err = wait_held(&h, "backlog: the first datagram");
	if (err)
		goto out;
	before = counter_read(&full);
	for (i = 0; i < n && !err; i++)
		err = send_dgram(c, &p, cqa, QKEY, 2 + i);
	/* What the flood dropped (probes sent before the run drains add more). */
	dropped = counter_read(&full) - before;
	atomic_set(&h.release, 1);
	if (err) {
		pr_err("rrxe_kverbs: backlog: datagram %u of %u failed (%d)\n", i, n, err);
		goto out;
	}
	if (h.expired) {
		pr_err("rrxe_kverbs: backlog: the run was held for %u ms only, not through the flood\n",
		       HOLD_MS);
		err = -ETIME;
		goto out;
	}
	pr_info("rrxe_kverbs: backlog: %u datagrams sent to the held QP, rcvd_backlog_full +%llu\n",
		n, dropped);
	err = expect(cqb, 700, &wc);
	/*
	 * The QP goes on: a fresh datagram reaches a receive posted now. Each
	 * probe has bytes of its own, and only the one just sent ends the loop:
	 * the backlog is then empty (an earlier probe taken instead means later
	 * ones still wait, and would find the QP destroyed: rcvd_no_qp).
	 */
	pattern(c->a.buf, DGRAM, 0x77);
	for (i = 0; i < TRIES && !err; i++) {
		/* The probe's number in its first bytes. */
		memcpy(c->a.buf, &i, sizeof(i));
		err = post_recv(c, p.qb, 800 + i);
		if (!err)
			err = send_dgram(c, &p, cqa, QKEY, 900 + i);
		if (!err)
			err = expect(cqb, 800 + i, &wc);
		if (!err && wc.byte_len == sizeof(struct ib_grh) + DGRAM &&
		    !memcmp((u8 *)c->b.buf + sizeof(struct ib_grh), c->a.buf, DGRAM))
			break;
		/* A datagram from the backlog took it: let the run drain more. */
		msleep(10);
	}
	if (!err && i == TRIES) {
		pr_err("rrxe_kverbs: backlog: %u receives after the flood got no fresh datagram\n",
		       TRIES);
		err = -EIO;
	}
	if (!err)
		pr_info("rrxe_kverbs: backlog: the QP received again (receive %u after the flood)\n",
			i + 1);
out:
	atomic_set(&h.release, 1);
	counter_close(&full);
	free_ud_pair(&p);
	ib_destroy_cq(cqb);
	ib_free_cq(cqa);
	return err;
}

#define READ_LEN SZ_2M

/* An RC QP with room for two READs, on @cq, or an error pointer. */
static struct ib_qp *make_rc(struct ctx *c, struct ib_cq *cq)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {
			.max_send_wr = 4,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};

	return ib_create_qp(c->pd, &init);
}

/*
 * Two READs from b's region into a's buffer, posted together on an RC pair of
 * their own with a path MTU of 256: one of 8 bytes, then one of 2 MiB (8,192
 * PSNs of responses, which rrxe sends as 128 local segments of 64 PSNs). The
 * small one's completion holds the requester's run (hold_run), after the run
 * has sent both requests, until the responder,
 * streaming the large READ's responses into the requester's backlog, has been
 * refused one (rcvd_backlog_full moved). The run then goes on, and the READ
 * must complete with b's bytes.
 */
static int case_backlog_read(struct ctx *c)
{
	enum { SMALL = 8 };
	struct ib_cq_init_attr cattr = { .cqe = 16 };
	struct ib_qp *qa = NULL, *qb = NULL;
	struct ib_cq *cqa = NULL, *cqb;
	struct ib_mr *mr = NULL;
	struct scatterlist sg;
	bool sg_mapped = false;
	u8 *src = NULL, *dst = NULL;
	u64 dst_dma = 0;
	struct counter full = {}, pkts = {};
	struct hold h = { .watch = &full, .progress = &pkts };
	struct ib_sge sges[2];
	struct ib_rdma_wr wr[2];
	struct ib_wc wc;
	int i, err;

	cqb = ib_alloc_cq(c->dev, NULL, 16, 0, IB_POLL_DIRECT);
	if (IS_ERR(cqb))
		return PTR_ERR(cqb);
	cqa = ib_create_cq(c->dev, hold_run, NULL, &h, &cattr);
	if (IS_ERR(cqa)) {
		err = PTR_ERR(cqa);
		cqa = NULL;
		goto out;
	}
	qa = make_rc(c, cqa);
	qb = IS_ERR(qa) ? NULL : make_rc(c, cqb);
	err = IS_ERR(qa) ? PTR_ERR(qa) : IS_ERR(qb) ? PTR_ERR(qb) : 0;
	/* A local ACK timeout of 4.3 s: the hold must not look like a loss. */
	if (!err)
		err = connect_qp(c, qa, qb->qp_num, IB_MTU_256, 2, 20);
	if (!err)
		err = connect_qp(c, qb, qa->qp_num, IB_MTU_256, 2, 20);
	if (err)
		goto out;
	src = kmalloc(READ_LEN, GFP_KERNEL);
	dst = kzalloc(READ_LEN + SMALL, GFP_KERNEL);
	if (!src || !dst) {
		err = -ENOMEM;
		goto out;
	}
	pattern(src, READ_LEN, 0x5a);
	dst_dma = ib_dma_map_single(c->dev, dst, READ_LEN + SMALL, DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(c->dev, dst_dma)) {
		dst_dma = 0;
		err = -ENOMEM;
		goto out;
	}
	/* b's region, readable from a: a fast registration of src. */
	mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, READ_LEN / PAGE_SIZE);
	if (IS_ERR(mr)) {
		err = PTR_ERR(mr);
		mr = NULL;
		goto out;
	}
	sg_init_one(&sg, src, READ_LEN);
	if (ib_dma_map_sg(c->dev, &sg, 1, DMA_TO_DEVICE) != 1) {
		err = -ENOMEM;
		goto out;
	}
	sg_mapped = true;
	err = fast_register(qb, cqb, mr, &sg, IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ, 1000);
	if (err)
		goto out;
	err = counter_open(c, &full, "rcvd_backlog_full");
	if (!err)
		err = counter_open(c, &pkts, "rcvd_pkts");
	if (err)
		goto out;
	h.base = counter_read(&full);
	/* Let b's run that completed the registration end: the small READ's
	 * request should find b idle, so that b answers it nested in a's run,
	 * and the hold is in a's own run (see hold_run for the other case). */
	msleep(50);
	err = ib_req_notify_cq(cqa, IB_CQ_NEXT_COMP);
	if (err)
		goto out;
	/* The small READ lands after the large one's bytes in dst. */
	for (i = 0; i < 2; i++) {
		sges[i] = (struct ib_sge) {
			.addr = dst_dma + (i ? 0 : READ_LEN),
			.length = i ? READ_LEN : SMALL,
			.lkey = c->pd->local_dma_lkey,
		};
		wr[i] = (struct ib_rdma_wr) {
			.wr = {
				.wr_id = 1100 + i,
				.next = i ? NULL : &wr[1].wr,
				.sg_list = &sges[i],
				.num_sge = 1,
				.opcode = IB_WR_RDMA_READ,
				.send_flags = IB_SEND_SIGNALED,
			},
			.remote_addr = mr->iova,
			.rkey = mr->rkey,
		};
	}
	err = ib_post_send(qa, &wr[0].wr, NULL);
	if (err)
		goto out;
	err = wait_held(&h, "backlog_read: the small READ");
	if (err)
		goto out;
	/* The responses take a while on a debug kernel under emulation. */
	for (i = 0; i < 2 && !err; i++)
		err = expect_within(cqa, 1100 + i, &wc, 120000);
	if (err)
		goto out;
	if (!h.moved && h.stuck) {
		pr_info("rrxe_kverbs: backlog_read: the hold stopped the responder (the run held was nested in the responder's): again\n");
		err = -EAGAIN;
		goto out;
	}
	if (!h.moved) {
		pr_err("rrxe_kverbs: backlog_read: the run was let go before any response was refused (%s)\n",
		       h.expired ? "held too long" : "released");
		err = -EIO;
		goto out;
	}
	if (memcmp(dst, src, READ_LEN) || memcmp(dst + READ_LEN, src, SMALL)) {
		pr_err("rrxe_kverbs: backlog_read: the READ bytes differ\n");
		err = -EIO;
		goto out;
	}
	pr_info("rrxe_kverbs: backlog_read: %u bytes read, the responder refused while the requester was held\n",
		READ_LEN);
out:
	atomic_set(&h.release, 1);
	if (!IS_ERR_OR_NULL(qb))
		ib_destroy_qp(qb);
	if (!IS_ERR_OR_NULL(qa))
		ib_destroy_qp(qa);
	if (mr)
		ib_dereg_mr(mr);
	if (sg_mapped)
		ib_dma_unmap_sg(c->dev, &sg, 1, DMA_TO_DEVICE);
	if (dst_dma)
		ib_dma_unmap_single(c->dev, dst_dma, READ_LEN + SMALL, DMA_FROM_DEVICE);
	kfree(dst);
	kfree(src);
	counter_close(&pkts);
	counter_close(&full);
	if (cqa)
		ib_destroy_cq(cqa);
	ib_free_cq(cqb);
	return err;
}

static int setup(struct ctx *c)
{
	int err;

	c->pd = ib_alloc_pd(c->dev, 0);
	if (IS_ERR(c->pd)) {
		err = PTR_ERR(c->pd);
		c->pd = NULL;
		return err;
	}
	err = find_gid(c);
	if (!err)
		err = make_end(c, &c->a);
	if (!err)
		err = make_end(c, &c->b);
	if (!err)
		err = connect_qp(c, c->a.qp, c->b.qp->qp_num, IB_MTU_1024, 1, 14);
	if (!err)
		err = connect_qp(c, c->b.qp, c->a.qp->qp_num, IB_MTU_1024, 1, 14);
	return err;
}

static void teardown(struct ctx *c)
{
	free_end(c, &c->a);
	if (c->mr)
		ib_dereg_mr(c->mr);
	if (c->sg_mapped)
		ib_dma_unmap_sg(c->dev, &c->sg, 1, DMA_BIDIRECTIONAL);
	free_end(c, &c->b);
	if (c->pd)
		ib_dealloc_pd(c->pd);
}

static int run_cases(struct ib_device *dev, const u8 *mac)
{
	struct ctx *c = kzalloc(sizeof(*c), GFP_KERNEL);
	int err;

	if (!c)
		return -ENOMEM;
	c->dev = dev;
	ether_addr_copy(c->mac, mac);
	err = setup(c);
	result(c, "setup (two RC QPs with 64 bytes of inline data)", err);
	if (!err && backlog) {
		result(c, "datagrams to a UD QP whose run is held", case_backlog(c, backlog));
	} else if (!err && backlog_read) {
		int tries = 0;

		do
			err = case_backlog_read(c);
		while (err == -EAGAIN && ++tries < 3);
		result(c, "READ responses for an RC QP whose run is held", err);
	} else if (!err) {
		result(c, "inline SEND of 0 bytes", case_send(c, 0, 1, false));
		result(c, "inline SEND of 1 byte", case_send(c, 1, 1, false));
		result(c, "inline SEND of 64 bytes", case_send(c, INLINE_SIZE, 1, false));
		result(c, "inline SEND of 50 bytes from 2 SGEs", case_send(c, 50, 2, false));
		result(c, "inline SEND with immediate", case_send(c, 12, 1, true));
		err = register_b(c);
		result(c, "fast registration of the target region", err);
		if (!err)
			result(c, "inline RDMA WRITE", case_write(c));
		result(c, "inline request over the QP's size", case_too_long(c));
		if (ud)
			result(c, "inline UD SEND", case_ud(c));
	}
	teardown(c);
	pr_info("rrxe_kverbs: %u passed, %u failed on %s\n", c->passed, c->failed,
		dev_name(&dev->dev));
	err = c->failed ? -EIO : 0;
	kfree(c);
	return err;
}

static int __init rrxe_kverbs_init(void)
{
	struct net_device *ndev = dev_get_by_name(&init_net, netdev);
	struct ib_device *dev;
	u8 mac[ETH_ALEN];
	int err;

	if (!ndev) {
		pr_err("rrxe_kverbs: no netdev %s\n", netdev);
		return -ENODEV;
	}
	dev = ib_device_get_by_netdev(ndev, RDMA_DRIVER_RXE);
	ether_addr_copy(mac, ndev->dev_addr);
	dev_put(ndev);
	if (!dev) {
		pr_err("rrxe_kverbs: no soft-RoCE device on %s\n", netdev);
		return -ENODEV;
	}
	err = run_cases(dev, mac);
	ib_device_put(dev);
	return err;
}

static void __exit rrxe_kverbs_exit(void)
{
}

module_init(rrxe_kverbs_init);
module_exit(rrxe_kverbs_exit);
MODULE_DESCRIPTION("Kernel verbs tests for soft-RoCE devices (rrxe, rxe)");
MODULE_LICENSE("GPL");
