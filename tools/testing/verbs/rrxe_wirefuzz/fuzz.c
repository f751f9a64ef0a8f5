// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_wirefuzz: the packet generator and the thread that sends its packets
 * to the device's own IPv4 address, UDP port 4791, through a raw IP socket.
 *
 * Targets: the live pair A/B (only packets the spec drops, NAKs or answers
 * without touching memory: every packet for them passes safe_for_live()), and
 * QPs of their own in a second context and PD, which may receive anything,
 * valid requests included: V (RC, connected to itself, in RTS), S (RC on an
 * SRQ, connected to itself), U (UD), R, I and T (RC in RESET, INIT and RTR),
 * the GSI QP 1, QPNs next to the live ones, 0 and random ones.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wirefuzz.h"
#include "live.h"
#include "fuzz.h"

#define MARGIN (1u << 16)	/* PSNs this close to a live window count as inside it */
#define FAR_SPAN ((1u << 23) - 2 * MARGIN)
#define F_SIZE (256 * 1024)
#define F_V_RECV 0		/* V: 8 x 4 KiB, then the UC QP: 8 x 4 KiB */
#define F_S_RECV (64 * 1024)	/* 32 x 4 KiB */
#define F_U_RECV (192 * 1024)	/* 32 x 2 KiB */
#define H_SIZE (64 * 1024)	/* MR H: the top of the address space */
#define H_IOVA (0 - (uint64_t)H_SIZE)
#define P_SIZE (16 * 1024)	/* the probe's local memory */
#define P_GUARD 64		/* bytes after a probe's buffer that must stay */
#define X_SIZE 4096		/* MR X: only requests to QP X name it */
#define U_QKEY 0x11111111u
#define GSI_QKEY 0x80010000u
#define FULL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

const char *const class_name[NCLS] = {
	"random", "truncated", "length", "oversized", "opcode", "rkey", "psn", "kill",
	"response", "ud", "qpn", "bad_icrc", "bitflip", "ip", "cnp", "sequence", "probe",
	"foreign", "access",
};

enum tgt { T_A, T_B, T_V, T_S, T_U, T_RESET, T_INIT, T_RTR, T_GSI, T_RAND, T_NEAR, T_ZERO, T_UC, NT };

struct own_qp {
	struct ibv_qp *qp;
	uint32_t epsn, sq;	/* guesses of the expected PSN and the next send PSN */
	int outstanding;
};

struct fz {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	union ibv_gid gid;
	int gid_index;
	uint32_t ip;		/* own IPv4 address, network order */
	uint32_t src;		/* source address put in packets */
	uint32_t stranger;	/* an unassigned address next to ours: nobody's peer */
	struct sockaddr_ll ll;	/* -i: where frames go */
	uint8_t eth[14];	/* -i: the frames' Ethernet header */
	uint8_t *fbuf, *hbuf;
	struct ibv_mr *fmr, *hmr;	/* hmr: iova H_IOVA, so its last byte is at 2^64 - 1 */
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct own_qp v, s;
	struct ibv_qp *u, *r, *i, *t;
	struct ibv_qp *uc;	/* UC, connected to itself (NULL if the device has none) */
	/* the probe: an RC QP whose peer is R (in RESET: it drops everything) */
	struct ibv_qp *pq;
	struct ibv_cq *pcq;
	uint8_t *pbuf;		/* its local memory: nothing else can write it */
	struct ibv_mr *pmr;
	uint32_t p_psn;
	uint8_t *xbuf;		/* MR X: remote write and atomic allowed */
	struct ibv_mr *xmr;
	struct rng rng;
	int sock;
	struct live_view snap;
	struct pkt pk[8];	/* one generated packet or a sequence */
	int npk;
	int kill_den;
};

static struct fz Z;

static double now_s(void);
static int send_checked(int cls, struct pkt *p);
struct fuzz_stats g_fstats;
struct fuzz_opts g_fopts;

/* The last packets sent, printed on failure. */
#define RING 32
static struct {
	uint64_t seq;
	int cls;
	struct pkt p;
} ring[RING];
static uint64_t ring_n;
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------ */
/* Own QPs                                                            */
/* ------------------------------------------------------------------ */

static struct ibv_qp *create_qp(enum ibv_qp_type type, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = type;
	ia.send_cq = ia.recv_cq = Z.cq;
	ia.srq = srq;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = srq ? 0 : 32;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = srq ? 0 : 1;
	ia.sq_sig_all = 1;
	qp = ibv_create_qp(Z.pd, &ia);
	if (!qp)
		fatal("ibv_create_qp(type %d) on the fuzz PD: %s", type, strerror(errno));
	return qp;
}

static void post_recv_slot(struct ibv_qp *qp, struct ibv_srq *srq, uint64_t wr_id, size_t off,
			   uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)Z.fbuf + off, len, Z.fmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;
	int rc = srq ? ibv_post_srq_recv(srq, &wr, &bad) : ibv_post_recv(qp, &wr, &bad);

	if (rc)
		vlog("post_recv (slot %llx): %s", (unsigned long long)wr_id, strerror(rc));
}

/* wr_id: kind in bits 8-15, slot in bits 0-7. */
enum { W_VRECV = 1, W_SRECV, W_URECV, W_VSEND, W_SSEND, W_UCRECV };

static void own_rc(struct own_qp *o, struct ibv_srq *srq, int kind)
{
	uint32_t psn = rng_below(&Z.rng, PSN_MASK + 1);

	o->qp = create_qp(IBV_QPT_RC, srq);
	if (qp_connect(o->qp, &Z.gid, Z.gid_index, o->qp->qp_num, psn, psn, FULL_ACCESS, 12, 7,
		       IBV_QPS_RTS))
		fatal("connecting fuzz target QP: %s", strerror(errno));
	o->epsn = o->sq = psn;
	o->outstanding = 0;
	if (kind == W_VRECV)
		for (int i = 0; i < 8; i++)
			post_recv_slot(o->qp, NULL, W_VRECV << 8 | i, F_V_RECV + i * 4096, 4096);
}

static void setup_ud(void)
{
	struct ibv_qp_attr a;

	Z.u = create_qp(IBV_QPT_UD, NULL);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = PORT;
	a.qkey = U_QKEY;
	if (ibv_modify_qp(Z.u, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		fatal("UD QP to INIT: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(Z.u, &a, IBV_QP_STATE))
		fatal("UD QP to RTR: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(Z.u, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		fatal("UD QP to RTS: %s", strerror(errno));
	for (int i = 0; i < 32; i++)
		post_recv_slot(Z.u, NULL, W_URECV << 8 | i, F_U_RECV + i * 2048, 2048);
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int ok = f && fgets(buf, len, f);

	if (f)
		fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static void parse_mac(const char *s, uint8_t *mac)
{
	unsigned int m[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
		fatal("bad MAC address %s", s);
	for (int i = 0; i < 6; i++)
		mac[i] = m[i];
}

/*
 * -i IFACE: frames go out of IFACE to the MAC of the device's own netdev (the
 * peer of a veth pair), so they arrive on that netdev rather than on lo.
 * Upstream rxe finds its device by the netdev a packet arrived on and drops
 * everything that came through lo, as packets to the own address do.
 */
static void open_packet_socket(int gid_index)
{
	char path[256], ndev[64], mac[64];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/gid_attrs/ndevs/%d",
		 g_fopts.dev_name, PORT, gid_index);
	if (read_line(path, ndev, sizeof(ndev)))
		fatal("%s: cannot read the GID's netdev", path);
	snprintf(path, sizeof(path), "/sys/class/net/%s/address", ndev);
	if (read_line(path, mac, sizeof(mac)))
		fatal("%s: cannot read", path);
	parse_mac(mac, Z.eth);
	snprintf(path, sizeof(path), "/sys/class/net/%s/address", g_fopts.iface);
	if (read_line(path, mac, sizeof(mac)))
		fatal("%s: cannot read", path);
	parse_mac(mac, Z.eth + 6);
	Z.eth[12] = ETH_P_IP >> 8;
	Z.eth[13] = ETH_P_IP & 0xff;
	Z.sock = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP));
	if (Z.sock < 0)
		return;
	memset(&Z.ll, 0, sizeof(Z.ll));
	Z.ll.sll_family = AF_PACKET;
	Z.ll.sll_protocol = htons(ETH_P_IP);
	Z.ll.sll_ifindex = if_nametoindex(g_fopts.iface);
	if (!Z.ll.sll_ifindex)
		fatal("no interface %s", g_fopts.iface);
	/* send only: nothing is ever read from this socket */
	shutdown(Z.sock, SHUT_RD);
	printf("injecting frames on %s to %s (%s's netdev)\n", g_fopts.iface, ndev,
	       g_fopts.dev_name);
}

/* A UC QP connected to itself, with receives posted in F (V's slots are shared). */
static void setup_uc(void)
{
	struct ibv_qp_init_attr ia;
	uint32_t psn = rng_below(&Z.rng, PSN_MASK + 1);

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_UC;
	ia.send_cq = ia.recv_cq = Z.cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	Z.uc = ibv_create_qp(Z.pd, &ia);
	if (!Z.uc) {
		printf("note: no UC QP (%s): UC opcodes go to V instead\n", strerror(errno));
		return;
	}
	if (qp_connect(Z.uc, &Z.gid, Z.gid_index, Z.uc->qp_num, psn, psn,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 12, 7, IBV_QPS_RTS)) {
		printf("note: UC QP to RTS failed (%s): UC opcodes go to V instead\n",
		       strerror(errno));
		ibv_destroy_qp(Z.uc);
		Z.uc = NULL;
		return;
	}
	for (int i = 0; i < 8; i++)
		post_recv_slot(Z.uc, NULL, W_UCRECV << 8 | i, F_V_RECV + (8 + i) * 4096, 4096);
}

/* A fresh probe QP: RC, to the RESET QP, ACK timeout 16 (0.27 s), two retries. */
static void probe_qp(void)
{
	struct ibv_qp_init_attr ia;

	if (Z.pq && ibv_destroy_qp(Z.pq))
		fatal("ibv_destroy_qp (probe): %s", strerror(errno));
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.send_cq = ia.recv_cq = Z.pcq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.sq_sig_all = 1;
	Z.pq = ibv_create_qp(Z.pd, &ia);
	if (!Z.pq)
		fatal("ibv_create_qp (probe): %s", strerror(errno));
	Z.p_psn = rng_below(&Z.rng, PSN_MASK + 1);
	if (qp_connect(Z.pq, &Z.gid, Z.gid_index, Z.r->qp_num, Z.p_psn, Z.p_psn, 0, 16, 2,
		       IBV_QPS_RTS))
		fatal("connecting the probe QP: %s", strerror(errno));
}

void fuzz_setup(struct ibv_context *ctx, const union ibv_gid *gid, int gid_index, uint64_t seed)
{
	struct ibv_srq_init_attr sa;

	memset(&Z, 0, sizeof(Z));
	Z.ctx = ctx;
	Z.gid = *gid;
	Z.gid_index = gid_index;
	memcpy(&Z.ip, gid->raw + 12, 4);
	rng_seed(&Z.rng, seed);
	Z.kill_den = g_fopts.kill_den;
	Z.src = g_fopts.src_ip ? g_fopts.src_ip : Z.ip;
	Z.stranger = Z.ip ^ htonl(0x80);
	if (g_fopts.iface)
		open_packet_socket(gid_index);
	else
		Z.sock = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (Z.sock < 0)
		fatal("raw socket: %s (run as root)", strerror(errno));
	Z.pd = ibv_alloc_pd(ctx);
	if (!Z.pd)
		fatal("ibv_alloc_pd (fuzz): %s", strerror(errno));
	Z.fbuf = aligned_alloc(4096, F_SIZE);
	if (!Z.fbuf)
		fatal("out of memory");
	memset(Z.fbuf, 0x5a, F_SIZE);
	Z.fmr = ibv_reg_mr(Z.pd, Z.fbuf, F_SIZE, FULL_ACCESS);
	Z.hbuf = aligned_alloc(4096, H_SIZE);
	if (!Z.hbuf)
		fatal("out of memory");
	memset(Z.hbuf, 0xa7, H_SIZE);
	Z.hmr = ibv_reg_mr_iova(Z.pd, Z.hbuf, H_SIZE, H_IOVA, FULL_ACCESS);
	if (!Z.hmr)
		printf("note: ibv_reg_mr_iova at iova %#llx failed (%s): no MR at the top of the "
		       "address space\n", (unsigned long long)H_IOVA, strerror(errno));
	Z.cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	if (!Z.fmr || !Z.cq)
		fatal("fuzz MR/CQ: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 64;
	sa.attr.max_sge = 1;
	Z.srq = ibv_create_srq(Z.pd, &sa);
	if (!Z.srq)
		fatal("ibv_create_srq: %s", strerror(errno));
	for (int i = 0; i < 32; i++)
		post_recv_slot(NULL, Z.srq, W_SRECV << 8 | i, F_S_RECV + i * 4096, 4096);
	own_rc(&Z.v, NULL, W_VRECV);
	own_rc(&Z.s, Z.srq, W_SRECV);
	setup_ud();
	Z.r = create_qp(IBV_QPT_RC, NULL);
	Z.i = create_qp(IBV_QPT_RC, NULL);
	if (qp_connect(Z.i, gid, gid_index, 0, 0, 0, FULL_ACCESS, 12, 7, IBV_QPS_INIT))
		fatal("QP to INIT: %s", strerror(errno));
	Z.t = create_qp(IBV_QPT_RC, NULL);
	if (qp_connect(Z.t, gid, gid_index, Z.t->qp_num, 0, 0, FULL_ACCESS, 12, 7, IBV_QPS_RTR))
		fatal("QP to RTR: %s", strerror(errno));
	setup_uc();
	Z.xbuf = aligned_alloc(4096, X_SIZE);
	if (!Z.xbuf)
		fatal("out of memory");
	Z.xmr = ibv_reg_mr(Z.pd, Z.xbuf, X_SIZE, FULL_ACCESS);
	if (!Z.xmr)
		fatal("MR X: %s", strerror(errno));
	Z.pcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	Z.pbuf = aligned_alloc(4096, P_SIZE);
	if (!Z.pcq || !Z.pbuf)
		fatal("probe CQ: %s", strerror(errno));
	Z.pmr = ibv_reg_mr(Z.pd, Z.pbuf, P_SIZE, IBV_ACCESS_LOCAL_WRITE);
	if (!Z.pmr)
		fatal("probe MR: %s", strerror(errno));
	probe_qp();
	vlog("fuzz targets: V 0x%x (PSN 0x%06x) S 0x%x (PSN 0x%06x) U 0x%x RESET 0x%x INIT 0x%x "
	     "RTR 0x%x; MR F rkey 0x%x at %p, MR H rkey 0x%x", Z.v.qp->qp_num, Z.v.epsn,
	     Z.s.qp->qp_num, Z.s.epsn, Z.u->qp_num, Z.r->qp_num, Z.i->qp_num, Z.t->qp_num,
	     Z.fmr->rkey, (void *)Z.fbuf, Z.hmr ? Z.hmr->rkey : 0);
}

static int state_of(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

/* Reap completions of the own QPs and give receives back. */
static void reap(void)
{
	struct ibv_wc wc[32];
	int n;

	while ((n = ibv_poll_cq(Z.cq, 32, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			unsigned int kind = (wc[i].wr_id >> 8) & 0xff, slot = wc[i].wr_id & 0xff;

			g_fstats.own_wc++;
			if (wc[i].status == IBV_WC_SUCCESS)
				g_fstats.own_wc_ok++;
			switch (kind) {
			case W_VRECV:
				if (wc[i].qp_num == Z.v.qp->qp_num && wc[i].status == IBV_WC_SUCCESS)
					post_recv_slot(Z.v.qp, NULL, wc[i].wr_id,
						       F_V_RECV + slot * 4096, 4096);
				break;
			case W_SRECV:
				post_recv_slot(NULL, Z.srq, wc[i].wr_id, F_S_RECV + slot * 4096, 4096);
				break;
			case W_URECV:
				post_recv_slot(Z.u, NULL, wc[i].wr_id, F_U_RECV + slot * 2048, 2048);
				break;
			case W_UCRECV:
				if (Z.uc && wc[i].qp_num == Z.uc->qp_num &&
				    wc[i].status == IBV_WC_SUCCESS)
					post_recv_slot(Z.uc, NULL, wc[i].wr_id,
						       F_V_RECV + (8 + slot) * 4096, 4096);
				break;
			case W_VSEND:
				if (wc[i].qp_num == Z.v.qp->qp_num && Z.v.outstanding)
					Z.v.outstanding--;
				break;
			}
		}
	}
}

static void recycle(struct own_qp *o, struct ibv_srq *srq, int kind)
{
	if (state_of(o->qp) != IBV_QPS_ERR)
		return;
	reap();
	if (ibv_destroy_qp(o->qp))
		fatal("ibv_destroy_qp (fuzz target): %s", strerror(errno));
	reap();
	own_rc(o, srq, kind);
	g_fstats.recycled++;
}

static uint32_t npk(uint32_t len)
{
	return len ? (len + LIVE_MTU - 1) / LIVE_MTU : 1;
}

/* V talks to itself now and then, so its completer has work that responses can hit. */
static void v_traffic(void)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	uint32_t len = rng_below(&Z.rng, 8192);

	if (Z.v.outstanding >= 4)
		return;
	memset(&wr, 0, sizeof(wr));
	if (Z.hmr && rng_chance(&Z.rng, 1, 2)) {
		/* local and remote addresses near 2^64 (the last byte, often) */
		len = rng_below(&Z.rng, 4 * LIVE_MTU);
		sge = (struct ibv_sge){ H_IOVA + rng_below(&Z.rng, H_SIZE - len + 1), len,
					Z.hmr->lkey };
		wr.wr.rdma.remote_addr = rng_chance(&Z.rng, 1, 2) ? 0 - (uint64_t)len :
					 H_IOVA + rng_below(&Z.rng, H_SIZE - len + 1);
		wr.wr.rdma.rkey = Z.hmr->rkey;
	} else {
		sge = (struct ibv_sge){ (uintptr_t)Z.fbuf + rng_below(&Z.rng, F_SIZE - len), len,
					Z.fmr->lkey };
		wr.wr.rdma.remote_addr = (uintptr_t)Z.fbuf + rng_below(&Z.rng, F_SIZE - len);
		wr.wr.rdma.rkey = Z.fmr->rkey;
	}
	wr.wr_id = W_VSEND << 8;
	wr.sg_list = &sge;
	wr.num_sge = len ? 1 : 0;
	wr.opcode = rng_chance(&Z.rng, 1, 2) ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
	if (wr.opcode == IBV_WR_RDMA_READ && !len)
		return;
	if (ibv_post_send(Z.v.qp, &wr, &bad))
		return;
	Z.v.outstanding++;
	Z.v.sq = (Z.v.sq + npk(len)) & PSN_MASK;
	Z.v.epsn = (Z.v.epsn + npk(len)) & PSN_MASK;
}

/* ------------------------------------------------------------------ */
/* Safety: what may be sent to the live pair                          */
/* ------------------------------------------------------------------ */

static uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | p[1] << 8 | p[2];
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static uint64_t get64b(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* Is psn within margin of the window [lo, hi] (24-bit arithmetic)? */
static int psn_near(uint32_t psn, uint32_t lo, uint32_t hi)
{
	uint32_t start = (lo - MARGIN) & PSN_MASK;
	uint32_t span = ((hi - lo) & PSN_MASK) + 2 * MARGIN;

	return ((psn - start) & PSN_MASK) <= span;
}

/* Does [va, va + len) lie inside a live MR for which rkey is valid? */
static int hits_live_mr(const struct live_view *v, uint32_t rkey, uint64_t va, uint64_t len)
{
	for (int i = 0; i < 2; i++) {
		const struct mr_view *m = &v->mr[i];

		if (rkey != m->rkey || !len || len > m->len)
			continue;
		if (va >= m->addr && va - m->addr <= m->len - len)
			return 1;
	}
	return 0;
}

/*
 * Whether a packet (as the receiver will see it: `len` bytes) may go to the
 * device given the live pair `v`: anything not aimed at A or B may; at A or B,
 * only packets that a correct device drops, NAKs or answers without touching
 * memory or moving a PSN. *kill is 1 for a request within the responder's
 * PSN window: a NAK for it fails the pair (legitimately); 2 if such a request
 * comes from a source address other than the pair's (its peer is itself), which
 * the pair must drop (rxe's check_addr does).
 */
int safe_for_live(const uint8_t *b, size_t len, int bad_icrc, const struct live_view *v,
		  int *kill)
{
	const uint8_t *t = b + BTH_OFF;
	size_t avail;
	uint32_t qpn, psn, lo, hi;
	unsigned int m;
	int is_a, is_b, zone;
	uint8_t op;

	*kill = 0;
	if (bad_icrc || len < BTH_OFF + BTH_LEN)
		return 1;
	avail = len - BTH_OFF;	/* (the ICRC may be taken for header bytes by a sloppy parser) */
	qpn = get24(t + 5);
	psn = get24(t + 9);
	is_a = v->qpn_a && qpn == v->qpn_a;
	is_b = v->qpn_b && qpn == v->qpn_b;
	if (!is_a && !is_b)
		return 1;
	op = t[0];
	m = op_mask(op);
	if ((op >> 5) != 0 || !(m & H_KNOWN))
		return 1;	/* not an RC opcode: dropped */
	if (m & H_RESP) {
		/* Responses: never near the requester's window (B's is empty). */
		if (is_a)
			return !psn_near(psn, v->a_lo, v->a_hi);
		return !psn_near(psn, v->b_sq, v->b_sq);
	}
	lo = is_b ? v->a_lo : v->b_sq;
	hi = is_b ? v->a_hi : v->b_sq;
	zone = psn_near(psn, lo, hi);
	if (m & (H_RETH | H_ATOMIC)) {
		size_t off = op_ext_off(op, m & H_RETH ? H_RETH : H_ATOMIC);
		uint64_t va, dlen;
		uint32_t rkey;

		if (avail < off + 16)
			return !zone;
		va = get64b(t + off);
		rkey = get32(t + off + 8);
		dlen = (m & H_RETH) ? get32(t + off + 12) : 8;
		if (hits_live_mr(v, rkey, va, dlen))
			return 0;	/* a valid request into live memory, whatever its PSN */
		if (!zone)
			return 1;
		if (!dlen)
			return 0;	/* zero-length RDMA needs no valid R_Key */
		/* from an address that is not the pair's own: a device must drop it */
		*kill = memcmp(b + 12, b + 16, 4) ? 2 : 1;
		return 1;
	}
	/* SENDs, WRITE MIDDLE/LAST: valid whenever a message is in progress. */
	return !zone;
}

/* ------------------------------------------------------------------ */
/* Field choices                                                      */
/* ------------------------------------------------------------------ */

static uint32_t rnd24(void)
{
	return rng_below(&Z.rng, PSN_MASK + 1);
}

static uint32_t far_from(uint32_t lo, uint32_t hi, int old_only)
{
	uint32_t d = MARGIN + rng_below(&Z.rng, FAR_SPAN);

	if (old_only || rng_chance(&Z.rng, 1, 2))
		return (lo - d) & PSN_MASK;
	return (hi + d) & PSN_MASK;
}

/* An index in [0, n) drawn with the weights w. */
static int weighted(const unsigned char *w, int n)
{
	unsigned int total = 0, x;

	for (int i = 0; i < n; i++)
		total += w[i];
	x = rng_below(&Z.rng, total);
	for (int i = 0; i < n; i++) {
		if (x < w[i])
			return i;
		x -= w[i];
	}
	return n - 1;
}

static enum tgt pick_target(void)
{
	static const unsigned char w[NT] = {
		[T_A] = 12, [T_B] = 18, [T_V] = 20, [T_S] = 10, [T_U] = 8, [T_RESET] = 3,
		[T_INIT] = 3, [T_RTR] = 3, [T_GSI] = 4, [T_RAND] = 8, [T_NEAR] = 6, [T_ZERO] = 2,
		[T_UC] = 4,
	};

	return weighted(w, NT);
}

static uint32_t qpn_of(enum tgt t)
{
	switch (t) {
	case T_A: return Z.snap.qpn_a;
	case T_B: return Z.snap.qpn_b;
	case T_V: return Z.v.qp->qp_num;
	case T_S: return Z.s.qp->qp_num;
	case T_U: return Z.u->qp_num;
	case T_RESET: return Z.r->qp_num;
	case T_INIT: return Z.i->qp_num;
	case T_RTR: return Z.t->qp_num;
	case T_UC: return Z.uc ? Z.uc->qp_num : Z.v.qp->qp_num;
	case T_GSI: return 1;
	case T_NEAR: {
		uint32_t base = rng_chance(&Z.rng, 1, 2) ? Z.snap.qpn_a : Z.v.qp->qp_num;

		return (base + (rng_chance(&Z.rng, 1, 2) ? 1 : -1) * (1 + rng_below(&Z.rng, 4))) &
		       PSN_MASK;
	}
	case T_ZERO: return 0;
	default: return rnd24();
	}
}

/* A PSN for a packet to target t; zone: inside the live responder window. */
static uint32_t pick_psn(enum tgt t, int resp, int zone)
{
	const struct live_view *v = &Z.snap;
	struct own_qp *o = t == T_V ? &Z.v : t == T_S ? &Z.s : NULL;

	switch (t) {
	case T_A:
		if (resp)
			return far_from(v->a_lo, v->a_hi, 1);
		return zone ? v->b_sq : far_from(v->b_sq, v->b_sq, 0);
	case T_B:
		if (resp)
			return far_from(v->b_sq, v->b_sq, 0);
		if (zone)
			return (v->a_lo + rng_below(&Z.rng, ((v->a_hi - v->a_lo) & PSN_MASK) + 1)) &
			       PSN_MASK;
		return far_from(v->a_lo, v->a_hi, 0);
	case T_V:
	case T_S:
		if (rng_chance(&Z.rng, 1, 8))
			return rnd24();
		if (resp)
			return (o->sq - rng_below(&Z.rng, 10)) & PSN_MASK;
		return (o->epsn + rng_below(&Z.rng, 5) - 2) & PSN_MASK;
	default:
		return rnd24();
	}
}

/* An R_Key and a range: live keys out of range, the fuzz MR (another PD for A/B), junk. */
static void pick_rdma(enum tgt t, uint32_t *rkey, uint64_t *va, uint32_t *dlen, int atomic)
{
	const struct live_view *v = &Z.snap;
	uint64_t base, size;
	unsigned int k = rng_below(&Z.rng, 10);
	uint32_t len;

	switch (rng_below(&Z.rng, 10)) {
	case 0: len = 0; break;
	case 1: len = 1; break;
	case 2: len = LIVE_MTU; break;
	case 3: len = 0x80000000u; break;
	case 4: len = 0xffffffffu - rng_below(&Z.rng, 16); break;
	case 5: len = rng_below(&Z.rng, 65536); break;
	case 6: len = F_SIZE + rng_below(&Z.rng, 2); break;
	default: len = 1 + rng_below(&Z.rng, LIVE_MTU); break;
	}
	if (atomic)
		len = 8;
	if ((t == T_V || t == T_S) && rng_chance(&Z.rng, 1, 2)) {
		/* a valid request for the fuzz target's own MRs: F, or H at the top */
		int h = Z.hmr && rng_chance(&Z.rng, 1, 2);
		uint64_t base = h ? H_IOVA : (uintptr_t)Z.fbuf, size = h ? H_SIZE : F_SIZE;

		if (len > size)
			len = rng_below(&Z.rng, size);
		*rkey = h ? Z.hmr->rkey : Z.fmr->rkey;
		*va = h && rng_chance(&Z.rng, 1, 3) ? 0 - (uint64_t)len :
		      base + rng_below(&Z.rng, size - len + 1);
		if (atomic)
			*va &= ~7ull;
		*dlen = len;
		return;
	}
	if (k < 3) {
		const struct mr_view *m = &v->mr[rng_below(&Z.rng, 2)];

		*rkey = m->rkey;
		base = m->addr;
		size = m->len;
	} else if (k < 6 || !Z.hmr) {
		*rkey = Z.fmr->rkey;
		base = (uintptr_t)Z.fbuf;
		size = F_SIZE;
	} else if (k < 7) {
		*rkey = Z.hmr->rkey;	/* extremes around 2^64 with a valid key */
		base = H_IOVA;
		size = H_SIZE;
	} else if (k == 7) {
		*rkey = v->mr[rng_below(&Z.rng, 2)].rkey ^ (1u << rng_below(&Z.rng, 32));
		base = v->mr[0].addr;
		size = v->mr[0].len;
	} else if (k == 8) {
		*rkey = rng_chance(&Z.rng, 1, 2) ? 0 : 0xffffffffu;
		base = rng_next(&Z.rng);
		size = 4096;
	} else {
		*rkey = rng_next(&Z.rng);
		base = v->mr[1].addr;
		size = v->mr[1].len;
	}
	switch (rng_below(&Z.rng, 14)) {
	case 0: *va = 0; break;
	case 1: *va = UINT64_MAX - rng_below(&Z.rng, 4); break;
	case 2: *va = (uint64_t)0 - len; break;	/* ends exactly at 2^64 */
	case 3: *va = (uint64_t)0 - rng_below(&Z.rng, 8192); break;
	case 4: *va = base - 1 - rng_below(&Z.rng, 64); break;
	case 5: *va = base + size - len + 1 + rng_below(&Z.rng, 64); break;
	case 6: *va = base + size; break;
	case 7: *va = base + ((uint64_t)1 << (32 + rng_below(&Z.rng, 31))); break;
	case 8: *va = rng_next(&Z.rng); break;
	default:	/* inside the region: valid only with the region's own key */
		*va = base + (len < size ? rng_below(&Z.rng, size - len + 1) : 0);
		break;
	}
	if (atomic && rng_chance(&Z.rng, 3, 4))
		*va &= ~7ull;
	*dlen = len;
}

static void base_hdrs(struct hdrs *h, uint8_t op, enum tgt t, uint32_t psn)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->pad = -1;
	h->pkey = rng_chance(&Z.rng, 1, 40) ? rng_below(&Z.rng, 0x10000) : 0xffff;
	h->fb = rng_chance(&Z.rng, 1, 8) ? rng_below(&Z.rng, 256) : 0;
	h->se = rng_chance(&Z.rng, 1, 8);
	h->mig = rng_chance(&Z.rng, 1, 16);
	h->tver = rng_chance(&Z.rng, 1, 40) ? 1 + rng_below(&Z.rng, 15) : 0;
	h->qpn = qpn_of(t);
	h->ack_req = rng_chance(&Z.rng, 1, 2);
	h->psn = psn;
	h->syndrome = rng_below(&Z.rng, 256);
	h->msn = rnd24();
	h->swap_add = rng_next(&Z.rng);
	h->compare = rng_next(&Z.rng);
	h->orig = rng_next(&Z.rng);
	h->imm = rng_next(&Z.rng);
	h->ieth = rng_chance(&Z.rng, 1, 2) ? Z.fmr->rkey : (uint32_t)rng_next(&Z.rng);
	h->qkey = t == T_U && rng_chance(&Z.rng, 1, 2) ? U_QKEY :
		  t == T_GSI && rng_chance(&Z.rng, 3, 4) ? GSI_QKEY : (uint32_t)rng_next(&Z.rng);
	h->src_qpn = rng_chance(&Z.rng, 1, 2) ? Z.v.qp->qp_num : rnd24();
	pick_rdma(t, &h->rkey, &h->va, &h->dlen, (op & 0x1f) == 0x13 || (op & 0x1f) == 0x14);
}

/* A payload length that fits the opcode (0 where none is carried). */
static size_t fit_len(uint8_t op, const struct hdrs *h)
{
	unsigned int m = op_mask(op);

	if (!(m & H_PAYLOAD))
		return 0;
	if ((m & H_RETH) && (m & H_LAST) && h->dlen <= LIVE_MTU && rng_chance(&Z.rng, 3, 4))
		return h->dlen;
	if (!(m & H_LAST))
		return LIVE_MTU;	/* FIRST and MIDDLE packets carry a full MTU */
	return rng_below(&Z.rng, LIVE_MTU + 1);
}

/* ------------------------------------------------------------------ */
/* Classes                                                            */
/* ------------------------------------------------------------------ */

static const uint8_t req_ops[] = {
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
	0x0c, 0x13, 0x14, 0x16, 0x17,
};
static const uint8_t rdma_ops[] = { 0x06, 0x0a, 0x0b, 0x0c, 0x13, 0x14 };
static const uint8_t resp_ops[] = { 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12 };

#define PICK(a) ((a)[rng_below(&Z.rng, sizeof(a))])

static void build(struct pkt *p, const struct hdrs *h, size_t plen)
{
	pkt_build(p, &Z.rng, h, NULL, plen, Z.src, Z.ip);
}

/* A well-formed packet of a random kind: the base of several classes. */
static void gen_wellformed(struct pkt *p, int zone)
{
	enum tgt t = pick_target();
	struct hdrs h;
	uint8_t op;
	int resp = 0;

	if (t == T_UC && rng_chance(&Z.rng, 3, 4)) {
		op = 0x20 + rng_below(&Z.rng, 12);	/* UC SENDs and WRITEs */
		base_hdrs(&h, op, t, rnd24());
		if (rng_chance(&Z.rng, 1, 2)) {
			h.rkey = Z.fmr->rkey;
			h.va = (uintptr_t)Z.fbuf + rng_below(&Z.rng, F_SIZE - 2 * LIVE_MTU);
			h.dlen = rng_below(&Z.rng, 2 * LIVE_MTU);
		}
		build(p, &h, fit_len(op, &h));
		return;
	}
	switch (rng_below(&Z.rng, 5)) {
	case 0: op = PICK(rdma_ops); break;
	case 1: op = PICK(resp_ops); resp = 1; break;
	case 2: op = t == T_U || t == T_GSI ? OP_UD_SEND_ONLY + rng_below(&Z.rng, 2) :
		     PICK(req_ops);
		break;
	default: op = PICK(req_ops); break;
	}
	base_hdrs(&h, op, t, pick_psn(t, resp, zone));
	build(p, &h, fit_len(op, &h));
}

static void c_random(struct pkt *p)
{
	size_t n = rng_below(&Z.rng, 1200);

	rng_bytes(&Z.rng, p->b + BTH_OFF, n);
	if (n >= BTH_LEN && rng_chance(&Z.rng, 1, 2)) {
		uint32_t q = qpn_of(pick_target());

		p->b[BTH_OFF + 5] = q >> 16;
		p->b[BTH_OFF + 6] = q >> 8;
		p->b[BTH_OFF + 7] = q;
	}
	pkt_ip_udp(p, &Z.rng, n, Z.src, Z.ip);
	p->bad_icrc = 0;
	pkt_seal(p);
}

static void c_truncated(struct pkt *p)
{
	size_t hl, keep;

	gen_wellformed(p, 0);
	hl = op_hdr_len(p->b[BTH_OFF]);
	keep = rng_below(&Z.rng, hl + ICRC_LEN);
	pkt_ip_udp(p, &Z.rng, keep, Z.src, Z.ip);
	pkt_seal(p);
}

static void c_length(struct pkt *p)
{
	enum tgt t = pick_target();
	struct hdrs h;
	uint8_t op = PICK(req_ops);
	size_t plen, n;

	base_hdrs(&h, op, t, pick_psn(t, 0, 0));
	switch (rng_below(&Z.rng, 5)) {
	case 0:		/* pad count that does not match */
		plen = fit_len(op, &h);
		h.pad = (((-plen) & 3) + 1 + rng_below(&Z.rng, 3)) & 3;
		build(p, &h, plen);
		break;
	case 1:		/* payload plus pad not a multiple of four */
		build(p, &h, fit_len(op, &h));
		n = 1 + rng_below(&Z.rng, 3);
		rng_bytes(&Z.rng, p->b + p->len, n);
		pkt_ip_udp(p, &Z.rng, p->len - IP_LEN - UDP_LEN + n, Z.src, Z.ip);
		pkt_seal(p);
		break;
	case 2:		/* payload on an opcode that carries none */
		op = PICK(((const uint8_t[]){ 0x0c, 0x11, 0x12, 0x13, 0x14 }));
		base_hdrs(&h, op, t, pick_psn(t, op == 0x11 || op == 0x12, 0));
		build(p, &h, 0);
		n = 4 * (1 + rng_below(&Z.rng, 16));
		memmove(p->b + p->len - ICRC_LEN + n, p->b + p->len - ICRC_LEN, ICRC_LEN);
		rng_bytes(&Z.rng, p->b + p->len - ICRC_LEN, n);
		pkt_ip_udp(p, &Z.rng, p->len - IP_LEN - UDP_LEN + n, Z.src, Z.ip);
		pkt_seal(p);
		break;
	case 3:		/* a pad count larger than the payload */
		h.pad = 3;
		build(p, &h, rng_below(&Z.rng, 3));
		break;
	default:	/* DMA length and payload disagree */
		op = PICK(((const uint8_t[]){ 0x06, 0x0a, 0x0b }));
		base_hdrs(&h, op, t, pick_psn(t, 0, 0));
		plen = rng_below(&Z.rng, LIVE_MTU + 1);
		h.dlen = plen + (rng_chance(&Z.rng, 1, 2) ? 1 + rng_below(&Z.rng, 8) :
				 -(uint32_t)(1 + rng_below(&Z.rng, 8)));
		build(p, &h, plen);
		break;
	}
}

static void c_oversized(struct pkt *p)
{
	enum tgt t = pick_target();
	struct hdrs h;
	uint8_t op = rng_chance(&Z.rng, 3, 4) ? PICK(req_ops) : PICK(resp_ops);
	size_t plen;

	if ((t == T_U || t == T_GSI) && rng_chance(&Z.rng, 1, 2))
		op = OP_UD_SEND_ONLY;
	base_hdrs(&h, op, t, pick_psn(t, (op_mask(op) & H_RESP) != 0, 0));
	plen = rng_chance(&Z.rng, 1, 2) ? LIVE_MTU + 1 + rng_below(&Z.rng, 4096 - LIVE_MTU) :
					  4097 + rng_below(&Z.rng, 4000);
	if (rng_chance(&Z.rng, 1, 2))
		h.dlen = plen;
	build(p, &h, plen);
}

static void c_opcode(struct pkt *p)
{
	static unsigned int next;
	enum tgt t = pick_target();
	struct hdrs h;
	uint8_t op = rng_chance(&Z.rng, 1, 2) ? next++ & 0xff : rng_below(&Z.rng, 256);
	unsigned int m = op_mask(op);
	size_t plen;

	base_hdrs(&h, op, t, pick_psn(t, (m & H_RESP) != 0, 0));
	if (m & H_KNOWN)
		plen = fit_len(op, &h);
	else
		plen = rng_below(&Z.rng, 4) ? 4 * rng_below(&Z.rng, 20) : rng_below(&Z.rng, 1100);
	build(p, &h, plen);
}

static void c_rkey(struct pkt *p)
{
	enum tgt t = pick_target();
	struct hdrs h;
	uint8_t op = PICK(rdma_ops);

	base_hdrs(&h, op, t, pick_psn(t, 0, 0));
	build(p, &h, fit_len(op, &h));
}

static void c_psn(struct pkt *p)
{
	static const enum tgt tg[] = { T_A, T_B, T_B, T_V, T_S, T_RTR };
	enum tgt t = tg[rng_below(&Z.rng, sizeof(tg) / sizeof(tg[0]))];
	struct hdrs h;
	uint8_t op = PICK(req_ops);

	base_hdrs(&h, op, t, pick_psn(t, 0, 0));
	if (rng_chance(&Z.rng, 1, 4))
		h.psn = rnd24();
	build(p, &h, fit_len(op, &h));
}

/* Invalid requests inside the live window: a NAK must fail the pair, cleanly. */
static void c_kill(struct pkt *p)
{
	enum tgt t = rng_chance(&Z.rng, 1, 4) ? T_A : T_B;
	static const uint8_t ops[] = { 0x06, 0x0a, 0x0b, 0x0c, 0x13, 0x14 };
	struct hdrs h;
	uint8_t op = PICK(ops);

	base_hdrs(&h, op, t, pick_psn(t, 0, 1));
	h.pkey = 0xffff;
	h.tver = 0;
	if (!h.dlen)
		h.dlen = 1 + rng_below(&Z.rng, LIVE_MTU);
	build(p, &h, fit_len(op, &h));
}

/*
 * The same from an address that is not the pair's: a device must drop it, so
 * the pair must not fail. A connection gets either kind, never both, so that
 * a failure can be put down to the right one.
 */
static void c_foreign(struct pkt *p)
{
	uint32_t own = Z.src;

	Z.src = Z.stranger;
	c_kill(p);
	Z.src = own;
}

static void c_response(struct pkt *p)
{
	static const enum tgt tg[] = { T_A, T_A, T_B, T_V, T_V, T_S, T_RTR, T_RAND };
	enum tgt t = tg[rng_below(&Z.rng, sizeof(tg) / sizeof(tg[0]))];
	struct hdrs h;
	uint8_t op = PICK(resp_ops);
	static const uint8_t syn[] = { 0x00, 0x1f, 0x0f, 0x20, 0x3f, 0x60, 0x61, 0x62, 0x63,
				       0x64, 0x65, 0x7f, 0x40, 0x80, 0xff };

	base_hdrs(&h, op, t, pick_psn(t, 1, 0));
	if (rng_chance(&Z.rng, 3, 4))
		h.syndrome = PICK(syn);
	if (t == T_V && rng_chance(&Z.rng, 1, 2))
		h.msn = rng_below(&Z.rng, 16);
	build(p, &h, fit_len(op, &h));
}

static void c_ud(struct pkt *p)
{
	enum tgt t;
	struct hdrs h;
	uint8_t op;
	size_t plen;

	switch (rng_below(&Z.rng, 5)) {
	case 0:	/* a MAD for the GSI QP */
		t = T_GSI;
		op = OP_UD_SEND_ONLY;
		base_hdrs(&h, op, t, rnd24());
		h.qkey = GSI_QKEY;
		build(p, &h, 256);
		{
			uint8_t *mad = p->b + BTH_OFF + op_hdr_len(op);
			static const uint8_t cls[] = { 0x01, 0x03, 0x04, 0x06, 0x07, 0x09, 0x0a,
						       0x10, 0x21, 0x30, 0x81, 0xff };

			mad[0] = rng_chance(&Z.rng, 7, 8) ? 1 : rng_below(&Z.rng, 256);
			mad[1] = PICK(cls);
			mad[2] = rng_chance(&Z.rng, 3, 4) ? (mad[1] == 0x07 ? 2 : 1) :
							    rng_below(&Z.rng, 256);
			mad[3] = rng_below(&Z.rng, 256);	/* method */
			if (rng_chance(&Z.rng, 1, 2)) {
				/* CM REQ/REP/RTU/REJ/DREQ ... attribute ids */
				mad[16] = 0;
				mad[17] = 0x10 + rng_below(&Z.rng, 0x1a);
			}
			pkt_seal(p);
		}
		return;
	case 1:	/* RC/UC opcodes at the UD QP */
		t = T_U;
		op = rng_chance(&Z.rng, 1, 2) ? PICK(req_ops) : 0x20 + rng_below(&Z.rng, 12);
		break;
	case 2:	/* UD opcodes at RC QPs */
		t = pick_target();
		op = OP_UD_SEND_ONLY + rng_below(&Z.rng, 2);
		break;
	default:	/* the UD QP with the right and wrong Q_Keys */
		t = T_U;
		op = OP_UD_SEND_ONLY + rng_below(&Z.rng, 2);
		break;
	}
	base_hdrs(&h, op, t, rnd24());
	plen = rng_chance(&Z.rng, 7, 8) ? rng_below(&Z.rng, LIVE_MTU + 1) :
					  LIVE_MTU + 1 + rng_below(&Z.rng, 3000);
	build(p, &h, plen);
}

static void c_qpn(struct pkt *p)
{
	static const enum tgt tg[] = { T_RESET, T_INIT, T_RTR, T_RAND, T_NEAR, T_ZERO, T_GSI };
	uint32_t q = qpn_of(tg[rng_below(&Z.rng, sizeof(tg) / sizeof(tg[0]))]);

	gen_wellformed(p, 0);
	p->b[BTH_OFF + 5] = q >> 16;
	p->b[BTH_OFF + 6] = q >> 8;
	p->b[BTH_OFF + 7] = q;
	pkt_seal(p);
}

static void c_bad_icrc(struct pkt *p)
{
	gen_wellformed(p, rng_chance(&Z.rng, 1, 2));
	p->b[p->len - 1 - rng_below(&Z.rng, 4)] ^= 1 + rng_below(&Z.rng, 255);
	p->bad_icrc = 1;
}

static void c_bitflip(struct pkt *p)
{
	int n = 1 + rng_below(&Z.rng, 8);

	gen_wellformed(p, 0);
	for (int i = 0; i < n; i++) {
		size_t pos;

		if (rng_chance(&Z.rng, 1, 10)) {
			/* TOS, ID, TTL, UDP source port, length or checksum */
			static const uint8_t hdr_pos[] = { 1, 4, 5, 8, 20, 21, 24, 25, 26, 27 };

			pos = PICK(hdr_pos);
		} else {
			pos = BTH_OFF + rng_below(&Z.rng, p->len - BTH_OFF - ICRC_LEN);
		}
		p->b[pos] ^= 1 << rng_below(&Z.rng, 8);
	}
	pkt_seal(p);
}

/* IP level: two fragments, or a UDP length shorter than the IP packet. */
static void c_ip(struct pkt *p)
{
	gen_wellformed(p, 0);
	if (rng_chance(&Z.rng, 1, 2) && p->len > IP_LEN + 16) {
		p->b[6] = 0;	/* reassembled: no DF, offset 0 */
		p->b[7] = 0;
		pkt_seal(p);
		p->frag = 1;
		return;
	}
	{
		size_t udp_len = p->len - IP_LEN, cut = 1 + rng_below(&Z.rng, 64);
		size_t eff;

		if (cut > udp_len - UDP_LEN)
			cut = udp_len - UDP_LEN;
		eff = p->len - cut;
		/* the receiver sees `eff` bytes; the IP header still says p->len */
		p->b[24] = (udp_len - cut) >> 8;
		p->b[25] = udp_len - cut;
		if (eff >= BTH_OFF + ICRC_LEN)
			roce_icrc(p->b, eff, p->b + eff - ICRC_LEN);
		p->eff_len = eff;
	}
}

static void c_cnp(struct pkt *p)
{
	enum tgt t = pick_target();
	struct hdrs h;

	base_hdrs(&h, OP_CNP, t, rnd24());
	h.fb = 0x40;	/* BECN */
	build(p, &h, 16);
}

/* A multi-packet message to V or S: FIRST, MIDDLE..., LAST with consecutive PSNs. */
static int c_sequence(void)
{
	enum tgt t = rng_chance(&Z.rng, 2, 3) ? T_V : T_S;
	struct own_qp *o = t == T_V ? &Z.v : &Z.s;
	int write = t == T_V && rng_chance(&Z.rng, 1, 2);
	int n = 2 + rng_below(&Z.rng, 5);
	uint32_t psn = pick_psn(t, 0, 0), last_len = 1 + rng_below(&Z.rng, LIVE_MTU);
	struct hdrs h;

	for (int i = 0; i < n; i++) {
		uint8_t op;

		if (write)
			op = i == 0 ? OP_RC_WRITE_FIRST : i == n - 1 ? OP_RC_WRITE_LAST : OP_RC_WRITE_MIDDLE;
		else
			op = i == 0 ? OP_RC_SEND_FIRST : i == n - 1 ? OP_RC_SEND_LAST : OP_RC_SEND_MIDDLE;
		if (rng_chance(&Z.rng, 1, 16))	/* out of order */
			op = PICK(req_ops);
		base_hdrs(&h, op, t, (psn + i) & PSN_MASK);
		h.pkey = 0xffff;
		h.tver = 0;
		h.dlen = (n - 1) * LIVE_MTU + last_len;
		if (Z.hmr && (psn & 1)) {
			h.rkey = Z.hmr->rkey;
			h.va = 0 - (uint64_t)h.dlen;	/* ends at 2^64 */
		} else {
			h.rkey = Z.fmr->rkey;
			h.va = (uintptr_t)Z.fbuf + rng_below(&Z.rng, F_SIZE - h.dlen);
		}
		build(&Z.pk[i], &h, i == n - 1 ? last_len : LIVE_MTU);
	}
	(void)o;
	return n;
}

/*
 * Self-test (-U): a valid RDMA WRITE into A's own MR at the PSN A's responder
 * expects (B never sends requests, so it is exactly b_sq). A correct device
 * executes it; the live traffic's comparison of A's buffer must then fail.
 */
static void c_unsafe(struct pkt *p)
{
	const struct mr_view *m = &Z.snap.mr[0];
	struct hdrs h;

	base_hdrs(&h, OP_RC_WRITE_ONLY, T_A, Z.snap.b_sq);
	h.pkey = 0xffff;
	h.tver = 0;
	h.fb = 0;
	h.rkey = m->rkey;
	h.dlen = 64;
	h.va = m->addr + 8 * rng_below(&Z.rng, (m->len - 64) / 8);
	build(p, &h, 64);
}

/*
 * The probe: P posts one RDMA READ (or FETCH_AND_ADD) that only the fuzzer
 * answers, at exactly the PSN P expects. A correct response stream must
 * complete the WR with exactly its data; an invalid one (an opcode out of
 * sequence, a READ response whose AETH is no ACK, an atomic ACK for a READ, a
 * response longer than asked for) must not complete it successfully.
 * Either way nothing beyond the WR's buffer may change.
 */
enum { PR_READ, PR_ATOMIC, PR_MIDDLE_FIRST, PR_LAST_FIRST, PR_NAK_AETH, PR_ATOMIC_FOR_READ,
       PR_TOO_LONG, PR_KINDS };
static const char *const probe_name[PR_KINDS] = {
	"a correct READ response", "a correct atomic ACK", "READ_RESPONSE_MIDDLE first",
	"READ_RESPONSE_LAST first", "a READ response with a NAK/reserved AETH",
	"an ATOMIC_ACKNOWLEDGE for a READ", "a READ_RESPONSE_ONLY longer than the READ",
};

/* Build the response packets for the probe into Z.pk; returns how many. */
static int probe_packets(int kind, uint32_t psn, uint32_t len, const uint8_t *data, uint64_t orig)
{
	uint32_t n = len ? (len + LIVE_MTU - 1) / LIVE_MTU : 1, off = 0;
	static const uint8_t bad_syn[] = { 0x20, 0x60, 0x61, 0x62, 0x63, 0x64, 0x40, 0x5f, 0x80, 0xe0 };
	struct hdrs h;

	if (kind == PR_READ) {
		for (uint32_t i = 0; i < n; i++) {
			uint32_t plen = i + 1 < n ? LIVE_MTU : len - off;
			uint8_t op = n == 1 ? OP_RC_READ_RESP_ONLY : i == 0 ? OP_RC_READ_RESP_FIRST :
				     i + 1 == n ? OP_RC_READ_RESP_LAST : OP_RC_READ_RESP_MIDDLE;

			base_hdrs(&h, op, T_RAND, (psn + i) & PSN_MASK);
			h.qpn = Z.pq->qp_num;
			h.pkey = 0xffff;
			h.tver = h.mig = h.se = 0;
			h.fb = 0;
			h.syndrome = 0x1f;	/* ACK */
			pkt_build(&Z.pk[i], &Z.rng, &h, data + off, plen, Z.src, Z.ip);
			off += plen;
		}
		return n;
	}
	memset(&h, 0, sizeof(h));
	switch (kind) {
	case PR_ATOMIC:
		base_hdrs(&h, OP_RC_ATOMIC_ACK, T_RAND, psn);
		h.syndrome = 0x1f;
		h.orig = orig;
		break;
	case PR_MIDDLE_FIRST:
		base_hdrs(&h, OP_RC_READ_RESP_MIDDLE, T_RAND, psn);
		break;
	case PR_LAST_FIRST:
		base_hdrs(&h, OP_RC_READ_RESP_LAST, T_RAND, psn);
		h.syndrome = 0x1f;
		break;
	case PR_NAK_AETH:
		base_hdrs(&h, n == 1 ? OP_RC_READ_RESP_ONLY : OP_RC_READ_RESP_FIRST, T_RAND, psn);
		h.syndrome = bad_syn[rng_below(&Z.rng, sizeof(bad_syn))];
		break;
	case PR_ATOMIC_FOR_READ:
		base_hdrs(&h, OP_RC_ATOMIC_ACK, T_RAND, psn);
		h.syndrome = 0x1f;
		break;
	default:	/* PR_TOO_LONG */
		base_hdrs(&h, OP_RC_READ_RESP_ONLY, T_RAND, psn);
		h.syndrome = 0x1f;
		break;
	}
	h.qpn = Z.pq->qp_num;
	h.pkey = 0xffff;
	h.tver = h.mig = h.se = 0;
	h.fb = 0;
	pkt_build(&Z.pk[0], &Z.rng, &h, data,
		  kind == PR_TOO_LONG ? len + 4 * (1 + rng_below(&Z.rng, 8)) :
		  kind == PR_ATOMIC || kind == PR_ATOMIC_FOR_READ ? 0 : LIVE_MTU, Z.src, Z.ip);
	return 1;
}

/* A probe went wrong: counted, the first kept, reported (and failed) at the end. */
static int probe_kind;	/* of the probe in progress */

static void __attribute__((format(printf, 1, 2))) probe_violation(const char *fmt, ...)
{
	va_list ap;

	g_fstats.probe_kind_bad[probe_kind]++;
	if (g_fstats.probe_violations++)
		return;
	va_start(ap, fmt);
	vsnprintf(g_fstats.first_probe, sizeof(g_fstats.first_probe), fmt, ap);
	va_end(ap);
}

/*
 * The probe in flight. The fuzzer does not wait for its completion: it goes on
 * sending other packets (none of them to P, see busy_target()) and checks the
 * completion when it comes (probe_poll), at the latest before the next probe.
 */
static struct {
	int active;
	int kind, atomic;
	uint32_t len;
	size_t off;
	uint64_t orig;
	double t0;
	char what[160];
	uint8_t data[3 * LIVE_MTU + 64];
} PR;

static void probe_finish(const struct ibv_wc *wcp)
{
	struct ibv_wc wc = *wcp;
	const char *what = PR.what;
	size_t off = PR.off;
	uint32_t len = PR.len;
	int kind = PR.kind, atomic = PR.atomic;

	PR.active = 0;
	probe_kind = kind;
	for (size_t i = 0; i < P_SIZE; i++) {
		if (i >= off && i < off + len)
			continue;
		if (Z.pbuf[i] != 0x6b) {
			probe_violation("%s: byte %zu of the probe's memory changed, outside the "
					"WR's %zu..%zu", what, i, off, off + len - 1);
			break;
		}
	}
	if (kind == PR_READ || kind == PR_ATOMIC) {
		g_fstats.probe_valid++;
		if (wc.status == IBV_WC_RETRY_EXC_ERR) {
			/* the retries ran out before the answer was handled (a slow machine) */
			g_fstats.probe_timeouts++;
		} else if (wc.status != IBV_WC_SUCCESS) {
			probe_violation("%s: completed with %s", what, ibv_wc_status_str(wc.status));
		} else if (atomic ? memcmp(Z.pbuf + off, &PR.orig, 8) :
			   memcmp(Z.pbuf + off, PR.data, len)) {
			probe_violation("%s: completed, but the data in memory differ", what);
		} else {
			g_fstats.probe_valid_ok++;
		}
	} else {
		g_fstats.probe_invalid++;
		if (wc.status == IBV_WC_SUCCESS)
			probe_violation("%s: completed successfully", what);
	}
	vlog("%s: %s", what, ibv_wc_status_str(wc.status));
	if (wc.status != IBV_WC_SUCCESS)
		probe_qp();	/* in ERR now */
}

/* Check the probe in flight, if any; with `wait`, until it completed (20 s at most). */
static void probe_poll(int wait)
{
	struct ibv_wc wc;

	while (PR.active) {
		int n = ibv_poll_cq(Z.pcq, 1, &wc);

		if (n < 0)
			fatal("ibv_poll_cq (probe) failed");
		if (n > 0) {
			probe_finish(&wc);
			return;
		}
		if (now_s() - PR.t0 > 20)
			fatal("%s: no completion in 20 s", PR.what);
		if (!wait)
			return;
		usleep(500);
	}
}

static void c_probe(void)
{
	int kind, atomic, n;
	uint32_t len, psn;
	size_t off;
	uint64_t orig;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;

	probe_poll(1);	/* one probe at a time */
	kind = rng_below(&Z.rng, PR_KINDS);
	orig = rng_next(&Z.rng);
	if (rng_chance(&Z.rng, 1, 2))
		kind = PR_READ;	/* as many correct ones as broken ones */
	atomic = kind == PR_ATOMIC;
	len = atomic ? 8 : kind == PR_LAST_FIRST ? LIVE_MTU + 1 + rng_below(&Z.rng, 2 * LIVE_MTU) :
	      kind == PR_TOO_LONG ? 1 + rng_below(&Z.rng, LIVE_MTU - 32) :
	      1 + rng_below(&Z.rng, 3 * LIVE_MTU);
	off = atomic ? 8 * rng_below(&Z.rng, (P_SIZE - 8 - P_GUARD) / 8) :
	      rng_below(&Z.rng, P_SIZE - len - P_GUARD);
	rng_bytes(&Z.rng, PR.data, sizeof(PR.data));
	memset(Z.pbuf, 0x6b, P_SIZE);
	memset(&wr, 0, sizeof(wr));
	sge = (struct ibv_sge){ (uintptr_t)Z.pbuf + off, len, Z.pmr->lkey };
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = atomic ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = 0x10000;	/* nobody answers for real */
	wr.wr.rdma.rkey = 0x1234;
	if (atomic) {
		wr.wr.atomic.remote_addr = 0x10000;
		wr.wr.atomic.rkey = 0x1234;
		wr.wr.atomic.compare_add = 1;
	}
	psn = Z.p_psn;
	PR.active = 1;
	PR.kind = kind;
	PR.atomic = atomic;
	PR.len = len;
	PR.off = off;
	PR.orig = orig;
	snprintf(PR.what, sizeof(PR.what), "probe: %s %s of %u bytes answered with %s",
		 atomic ? "FETCH_AND_ADD" : "RDMA READ", "at PSN", len, probe_name[kind]);
	if (ibv_post_send(Z.pq, &wr, &bad))
		fatal("ibv_post_send (probe): %s", strerror(errno));
	PR.t0 = now_s();
	Z.p_psn = (Z.p_psn + (atomic ? 1 : npk(len))) & PSN_MASK;
	n = probe_packets(kind, psn, len, PR.data, orig);
	probe_kind = kind;
	g_fstats.probe_kind_sent[kind]++;
	pthread_mutex_lock(&g_live.lock);
	Z.snap = g_live;
	for (int i = 0; i < n; i++)
		send_checked(C_PROBE, &Z.pk[i]);
	pthread_mutex_unlock(&g_live.lock);
}

/*
 * QP access flags: a fresh RC QP X, connected to itself, whose access flags
 * leave out REMOTE_WRITE (or REMOTE_ATOMIC), gets one valid RDMA WRITE (or
 * atomic) at its expected PSN into MR X, which allows it. The QP must NAK it
 * (Remote Access Error) and MR X must not change.
 */
/*
 * The access check in flight (X exists): like the probe, the fuzzer goes on
 * with other packets (none to X or naming MR X, see busy_target()) until X is
 * in ERR or half a second passed, and then checks MR X.
 */
static struct {
	struct ibv_qp *x;
	int atomic;
	uint8_t op;
	uint32_t len;
	uint64_t off;
	double t0, polled;
} XA;

/* Check the access check in flight, if any; with `wait`, until it is done. */
static void access_poll(int wait)
{
	while (XA.x) {
		double t = now_s();
		int err;

		if (t - XA.polled < 0.002) {	/* ibv_query_qp is a system call */
			if (!wait)
				return;
			usleep(2000);
			continue;
		}
		XA.polled = t;
		/* a correct device NAKs it and X enters ERR; give it some time either way */
		err = state_of(XA.x) == IBV_QPS_ERR;
		if (!err && t - XA.t0 < 0.5) {
			if (!wait)
				return;
			continue;
		}
		g_fstats.access_checks++;
		for (size_t i = 0; i < X_SIZE; i++) {
			if (Z.xbuf[i] == 0x3c)
				continue;
			if (!g_fstats.access_violations++)
				snprintf(g_fstats.first_access, sizeof(g_fstats.first_access),
					 "%s of %u bytes at offset %llu reached MR X through QP X, "
					 "whose access flags (%s) do not allow it (byte %zu changed; "
					 "X %s)",
					 XA.atomic ? (XA.op == OP_RC_FETCH_ADD ? "a FETCH_ADD" :
						      "a CMP_SWAP") : "an RDMA WRITE",
					 XA.atomic ? 8 : XA.len, (unsigned long long)XA.off,
					 XA.atomic ? "REMOTE_WRITE|REMOTE_READ" :
					 "REMOTE_READ|REMOTE_ATOMIC", i,
					 state_of(XA.x) == IBV_QPS_ERR ? "in ERR" : "not in ERR");
			break;
		}
		reap();
		if (ibv_destroy_qp(XA.x))
			fatal("ibv_destroy_qp (access check): %s", strerror(errno));
		XA.x = NULL;
		reap();
	}
}

static void c_access(void)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp *x;
	struct hdrs h;
	uint32_t psn = rng_below(&Z.rng, PSN_MASK + 1), len = 1 + rng_below(&Z.rng, 256);
	int atomic = rng_chance(&Z.rng, 1, 3);
	int access = atomic ? IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ :
			      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	uint8_t op = atomic ? (rng_chance(&Z.rng, 1, 2) ? OP_RC_FETCH_ADD : OP_RC_CMP_SWAP) :
			      OP_RC_WRITE_ONLY;
	uint64_t off = atomic ? 8 * rng_below(&Z.rng, X_SIZE / 8) :
			      rng_below(&Z.rng, X_SIZE - len + 1);

	access_poll(1);	/* one at a time: MR X is shared */
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.send_cq = ia.recv_cq = Z.cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	x = ibv_create_qp(Z.pd, &ia);
	if (!x)
		fatal("ibv_create_qp (access check): %s", strerror(errno));
	if (qp_connect(x, &Z.gid, Z.gid_index, x->qp_num, psn, psn, access, 12, 7, IBV_QPS_RTS))
		fatal("connecting QP X: %s", strerror(errno));
	memset(Z.xbuf, 0x3c, X_SIZE);
	base_hdrs(&h, op, T_RAND, psn);
	h.qpn = x->qp_num;
	h.pkey = 0xffff;
	h.tver = h.mig = h.fb = 0;
	h.rkey = Z.xmr->rkey;
	h.va = (uintptr_t)Z.xbuf + off;
	h.dlen = atomic ? 8 : len;
	h.compare = 0x3c3c3c3c3c3c3c3cull;	/* matches: a CMP_SWAP would swap */
	pkt_build(&Z.pk[0], &Z.rng, &h, NULL, atomic ? 0 : len, Z.src, Z.ip);
	XA.x = x;
	XA.atomic = atomic;
	XA.op = op;
	XA.len = len;
	XA.off = off;
	pthread_mutex_lock(&g_live.lock);
	Z.snap = g_live;
	send_checked(C_ACCESS, &Z.pk[0]);
	pthread_mutex_unlock(&g_live.lock);
	XA.t0 = now_s();
	XA.polled = 0;
}

/*
 * While a probe or an access check is in flight, no other packet may reach P
 * or X, or name MR X (a V or S request with its R_Key could write it): such a
 * packet would change the outcome the check judges. Such packets are not sent
 * (counted as "busy") and the class generates another.
 */
static int busy_target(const struct pkt *p)
{
	const uint8_t *t = p->b + BTH_OFF;
	uint32_t qpn;
	unsigned int m;

	if (p->len < BTH_OFF + BTH_LEN)
		return 0;
	qpn = get24(t + 5);
	if (PR.active && qpn == Z.pq->qp_num)
		return 1;
	if (!XA.x)
		return 0;
	if (qpn == XA.x->qp_num)
		return 1;
	m = op_mask(t[0]);
	if (m & (H_RETH | H_ATOMIC)) {
		size_t off = op_ext_off(t[0], m & H_RETH ? H_RETH : H_ATOMIC);

		if (p->len >= BTH_OFF + off + 12 && get32(t + off + 8) == Z.xmr->rkey)
			return 1;
	}
	return 0;
}

void fuzz_print_probes(FILE *f)
{
	for (int k = 0; k < PR_KINDS; k++)
		if (g_fstats.probe_kind_sent[k])
			fprintf(f, "probes answered with %s: %llu, went wrong %llu\n", probe_name[k],
				(unsigned long long)g_fstats.probe_kind_sent[k],
				(unsigned long long)g_fstats.probe_kind_bad[k]);
}

static int pick_class(void)
{
	static const unsigned char w[NCLS] = {
		[C_RANDOM] = 3, [C_TRUNCATED] = 8, [C_LENGTH] = 7, [C_OVERSIZED] = 4,
		[C_OPCODE] = 14, [C_RKEY] = 14, [C_PSN] = 8, [C_KILL] = 0, [C_RESPONSE] = 11,
		[C_UD] = 9, [C_QPN] = 5, [C_BAD_ICRC] = 5, [C_BITFLIP] = 10, [C_IP] = 2,
		[C_CNP] = 1, [C_SEQUENCE] = 3, [C_PROBE] = 0, [C_ACCESS] = 0,
	};

	if (Z.kill_den && rng_chance(&Z.rng, 1, Z.kill_den)) {
		/* one kind per connection (see c_foreign) */
		if (Z.snap.kills)
			return C_KILL;
		if (Z.snap.foreign)
			return C_FOREIGN;
		return rng_chance(&Z.rng, 1, 2) ? C_KILL : C_FOREIGN;
	}
	return weighted(w, NCLS);
}

/* Generate one packet (or a sequence) of class c into Z.pk; returns how many. */
static int generate(int c)
{
	struct pkt *p = &Z.pk[0];

	p->len = 0;
	p->bad_icrc = p->frag = 0;
	p->eff_len = 0;
	switch (c) {
	case C_RANDOM: c_random(p); break;
	case C_TRUNCATED: c_truncated(p); break;
	case C_LENGTH: c_length(p); break;
	case C_OVERSIZED: c_oversized(p); break;
	case C_OPCODE: c_opcode(p); break;
	case C_RKEY: c_rkey(p); break;
	case C_PSN: c_psn(p); break;
	case C_KILL: c_kill(p); break;
	case C_FOREIGN: c_foreign(p); break;
	case C_RESPONSE: c_response(p); break;
	case C_UD: c_ud(p); break;
	case C_QPN: c_qpn(p); break;
	case C_BAD_ICRC: c_bad_icrc(p); break;
	case C_BITFLIP: c_bitflip(p); break;
	case C_IP: c_ip(p); break;
	case C_CNP: c_cnp(p); break;
	case C_SEQUENCE:
		for (int i = 0; i < 8; i++)
			Z.pk[i].eff_len = Z.pk[i].frag = Z.pk[i].bad_icrc = 0;
		return c_sequence();
	}
	return 1;
}

/* ------------------------------------------------------------------ */
/* Sending                                                            */
/* ------------------------------------------------------------------ */

/* One IP packet (with its own tot_len and fragment fields) onto the wire. */
static void xmit(uint8_t *b, size_t len)
{
	static uint8_t frame[14 + PKT_MAX];
	struct sockaddr_in sin = { .sin_family = AF_INET };
	const void *buf = b;
	const struct sockaddr *to = (const struct sockaddr *)&sin;
	socklen_t tolen = sizeof(sin);
	size_t n = len;
	uint16_t sum;

	b[2] = len >> 8;	/* the kernel sets these for a raw IP socket, */
	b[3] = len;		/* a packet socket sends what it is given */
	sum = ip_checksum(b);
	b[10] = sum >> 8;
	b[11] = sum;
	memcpy(&sin.sin_addr, &Z.ip, 4);
	if (g_fopts.iface) {
		memcpy(frame, Z.eth, 14);
		memcpy(frame + 14, b, len);
		buf = frame;
		n = len + 14;
		to = (const struct sockaddr *)&Z.ll;
		tolen = sizeof(Z.ll);
	}
	while (sendto(Z.sock, buf, n, 0, to, tolen) < 0) {
		if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) {
			g_fstats.send_retries++;
			usleep(100);
			continue;
		}
		g_fstats.send_errors++;
		vlog("sendto (%zu bytes): %s", len, strerror(errno));
		return;
	}
}

static void send_pkt(struct pkt *p)
{
	if (!p->frag) {
		xmit(p->b, p->len);
		return;
	}
	/* Two fragments; the second sometimes first. */
	{
		size_t plen = p->len - IP_LEN;
		size_t k = 8 * (1 + rng_below(&Z.rng, (plen - 1) / 8));
		static uint8_t f1[PKT_MAX], f2[PKT_MAX];
		size_t l1 = IP_LEN + k, l2 = IP_LEN + plen - k;

		memcpy(f1, p->b, l1);
		f1[6] = 0x20;	/* MF, offset 0 */
		f1[7] = 0;
		memcpy(f2, p->b, IP_LEN);
		memcpy(f2 + IP_LEN, p->b + IP_LEN + k, plen - k);
		f2[6] = (k / 8) >> 8;
		f2[7] = (k / 8) & 0xff;
		if (rng_chance(&Z.rng, 1, 3)) {
			xmit(f2, l2);
			xmit(f1, l1);
		} else {
			xmit(f1, l1);
			xmit(f2, l2);
		}
	}
}

static void remember(int cls, const struct pkt *p)
{
	pthread_mutex_lock(&ring_lock);
	ring[ring_n % RING].seq = g_fstats.sent;
	ring[ring_n % RING].cls = cls;
	/* the packet's own bytes only, not the whole PKT_MAX buffer */
	memcpy(ring[ring_n % RING].p.b, p->b, p->len < PKT_MAX ? p->len : PKT_MAX);
	ring[ring_n % RING].p.len = p->len;
	ring[ring_n % RING].p.bad_icrc = p->bad_icrc;
	ring[ring_n % RING].p.frag = p->frag;
	ring[ring_n % RING].p.eff_len = p->eff_len;
	ring_n++;
	pthread_mutex_unlock(&ring_lock);
}

void fuzz_dump_recent(FILE *f)
{
	pthread_mutex_lock(&ring_lock);
	fprintf(f, "last %d packets sent (sequence number, class, IP packet as sent):\n",
		(int)(ring_n < RING ? ring_n : RING));
	for (uint64_t i = ring_n > RING ? ring_n - RING : 0; i < ring_n; i++) {
		const struct pkt *p = &ring[i % RING].p;

		fprintf(f, "  %llu %s%s%s %zu bytes: ", (unsigned long long)ring[i % RING].seq,
			ring[i % RING].cls >= 0 ? class_name[ring[i % RING].cls] :
			ring[i % RING].cls == -2 ? "UNSAFE (-U)" : "replay",
			p->frag ? " (as 2 fragments)" : "", p->bad_icrc ? " (bad ICRC)" : "", p->len);
		/* headers and some payload; -L logs whole packets */
		for (size_t k = 0; k < p->len && k < 160; k++)
			fprintf(f, "%02x", p->b[k]);
		fputs(p->len > 160 ? "...\n" : "\n", f);
	}
	pthread_mutex_unlock(&ring_lock);
}

static void housekeeping(void)
{
	reap();
	recycle(&Z.v, NULL, W_VRECV);
	recycle(&Z.s, Z.srq, W_SRECV);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void pace(double t0)
{
	if (g_fopts.rate > 0) {
		double due = t0 + (double)g_fstats.sent / g_fopts.rate, now = now_s();

		if (due > now)
			usleep((useconds_t)((due - now) * 1e6));
	} else if (!(g_fstats.sent % 16)) {
		sched_yield();
	}
}

/* A request at the expected PSN of V or S moves our guess of it along. */
static void track_own(const struct pkt *p)
{
	const uint8_t *t = p->b + BTH_OFF;
	struct own_qp *o;
	uint32_t qpn;

	if (p->len < BTH_OFF + BTH_LEN || p->bad_icrc || !(op_mask(t[0]) & H_REQ) || t[0] >> 5)
		return;
	qpn = get24(t + 5);
	o = qpn == Z.v.qp->qp_num ? &Z.v : qpn == Z.s.qp->qp_num ? &Z.s : NULL;
	if (o && get24(t + 9) == o->epsn)
		o->epsn = (o->epsn + 1) & PSN_MASK;
}

/* Send one packet under the live lock, after the safety check. */
static int send_checked(int cls, struct pkt *p)
{
	int kill = 0;
	size_t eff = p->eff_len ? p->eff_len : p->len;

	if (!safe_for_live(p->b, eff, p->bad_icrc, &Z.snap, &kill))
		return -1;
	if (kill == 1)
		g_live.kills++;
	else if (kill == 2)
		g_live.foreign++;
	if (g_fopts.log)
		fprintf(g_fopts.log, "%llu %.6f %s%s ", (unsigned long long)g_fstats.sent, now_s(),
			cls >= 0 ? class_name[cls] : "replay", p->frag ? "+frag" : "");
	if (g_fopts.log) {
		pkt_hex(g_fopts.log, p);
		fputc('\n', g_fopts.log);
	}
	remember(cls, p);
	send_pkt(p);
	track_own(p);
	g_fstats.sent++;
	if (kill == 1)
		g_fstats.kills++;
	else if (kill == 2)
		g_fstats.foreign++;
	if (cls >= 0)
		g_fstats.per_class[cls]++;
	return 0;
}

void *fuzz_thread(void *arg)
{
	double t0 = now_s();

	(void)arg;
	while (g_fstats.sent < g_fopts.count && !g_fopts.stop) {
		int c = pick_class(), n, tries = 0;

		if (g_fopts.seconds > 0 && !(g_fstats.sent % 256) && now_s() - t0 > g_fopts.seconds) {
			g_fstats.time_limited = 1;
			break;
		}

		if (!(g_fstats.sent % 64))
			housekeeping();
		probe_poll(0);
		access_poll(0);
		if (!(g_fstats.sent % 97) && state_of(Z.v.qp) == IBV_QPS_RTS)
			v_traffic();
		if (g_fopts.probe_den && rng_chance(&Z.rng, 1, g_fopts.probe_den)) {
			/* a probe of the requester, or of the responder's access checks */
			if (rng_chance(&Z.rng, 1, 3))
				c_access();
			else
				c_probe();
			continue;
		}
		pthread_mutex_lock(&g_live.lock);
		Z.snap = g_live;
		if (g_fopts.unsafe && Z.snap.qpn_a && rng_chance(&Z.rng, 1, 500)) {
			c_unsafe(&Z.pk[0]);
			remember(-2, &Z.pk[0]);
			send_pkt(&Z.pk[0]);
			pthread_mutex_unlock(&g_live.lock);
			continue;
		}
		for (;;) {
			int unsafe = 0;

			n = generate(c);
			for (int i = 0; i < n; i++) {
				int k;
				size_t eff = Z.pk[i].eff_len ? Z.pk[i].eff_len : Z.pk[i].len;

				if (!safe_for_live(Z.pk[i].b, eff, Z.pk[i].bad_icrc, &Z.snap, &k))
					unsafe = 1;
				else if (!unsafe && busy_target(&Z.pk[i]))
					unsafe = 2;
			}
			if (!unsafe)
				break;
			if (unsafe == 2)
				g_fstats.busy++;
			else
				g_fstats.rejected++;
			if (++tries > 50)
				fatal("class %s: 50 packets in a row unsafe for the live pair "
				      "(or for a probe in flight)", class_name[c]);
		}
		for (int i = 0; i < n; i++)
			send_checked(c, &Z.pk[i]);
		pthread_mutex_unlock(&g_live.lock);
		pace(t0);
	}
	probe_poll(1);
	access_poll(1);
	housekeeping();
	g_fstats.seconds = now_s() - t0;
	g_fstats.done = 1;
	return NULL;
}

/* Replay: the packets of a log (-L) or any file of hex lines, in order. */
void *replay_thread(void *arg)
{
	FILE *f = arg;
	char *line = NULL;
	size_t cap = 0;
	double t0 = now_s();
	static struct pkt p;

	while (!g_fopts.stop && getline(&line, &cap, f) > 0) {
		char *hex = strrchr(line, ' ');
		size_t len;

		hex = hex ? hex + 1 : line;
		if (line[0] == '#' || hex_parse(hex, p.b, sizeof(p.b), &len) || len < IP_LEN)
			continue;
		p.len = len;
		p.frag = strstr(line, "+frag") != NULL;
		p.bad_icrc = 0;
		p.eff_len = 0;
		pthread_mutex_lock(&g_live.lock);
		Z.snap = g_live;
		if (send_checked(-1, &p))
			g_fstats.rejected++;
		pthread_mutex_unlock(&g_live.lock);
		pace(t0);
		if (!(g_fstats.sent % 64))
			housekeeping();
	}
	free(line);
	g_fstats.seconds = now_s() - t0;
	g_fstats.done = 1;
	return NULL;
}
