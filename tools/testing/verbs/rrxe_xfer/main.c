// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_xfer: verified RC transfers between two endpoints, connected by rdma_cm.
 *
 * usage: rrxe_xfer -s [-p PORT] [-d DEV] [-T ACK_TIMEOUT] [-t SECONDS] [-v]
 *        rrxe_xfer -c ADDR [-p PORT] [-d DEV] [-b BYTES] [-m MSG_SIZE] [-q DEPTH]
 *                  [-n ATOMICS] [-R ROUNDS] [-S SEED] [-T ACK_TIMEOUT] [-t SECONDS] [-v]
 *                  [-F write|read|send|atomic]
 *
 *   -s            server: accept one connection, verify what the client sends
 *   -c ADDR       client: connect to the server at ADDR (retried until it listens)
 *   -p PORT       rdma_cm port (default 18600)
 *   -d DEV        the RDMA device the connection must use (default: whichever
 *                 rdma_cm picks for the address)
 *   -b BYTES      bytes per phase (default 64M; K, M, G suffixes)
 *   -m MSG_SIZE   bytes per WRITE, READ or SEND (default 1M)
 *   -q DEPTH      work requests in flight (default 8)
 *   -n ATOMICS    fetch-and-adds (default 10000); the compare-and-swap chain has
 *                 ATOMICS/10 links; 0 skips the atomics
 *   -R ROUNDS     repeat all phases ROUNDS times (default 1; 0: until -t runs out,
 *                 which then fails with exit status 4: for teardown tests)
 *   -S SEED       pattern seed (default 1)
 *   -T TIMEOUT    the QP's local ACK timeout exponent, 4.096 us * 2^TIMEOUT (default 14)
 *   -t SECONDS    limit for the whole run; every wait is bounded by it (default 600)
 *   -v            progress and connection details
 *   -F PHASE      inject a fault to prove the checks work (the run must fail):
 *                 write/send flip one byte of the client's buffer after its
 *                 digest was taken, read flips one byte read back before the
 *                 check, atomic makes the first fetch-and-add add 2
 *
 * The client's parameters travel in the connect request's private data; the
 * server's buffer address and rkeys come back in the accept's. Per round:
 *   write   RDMA WRITE of BYTES into the server's buffer; the server checks
 *           every byte and returns a digest, which must equal the client's
 *   read    the server fills its buffer with another pattern; the client reads
 *           BYTES back with RDMA READ and checks every byte
 *   send    SENDs of MSG_SIZE into the server's posted receives; the server
 *           checks every message (length, bytes, order) and returns the count
 *           and a digest of the stream
 *   atomics ATOMICS fetch-and-adds of 1 on a server word that starts at 0: each
 *           must return the number of adds before it (RC executes in order),
 *           the word must end at exactly ATOMICS (read back, and checked by
 *           the server); then a chain of compare-and-swaps, each swapping the
 *           value the previous one stored, with a compare that must fail every
 *           eighth link
 * Control requests and the server's verdicts are SENDs with immediate data.
 * QPs: retry_cnt 7, rnr_retry 7 and the -T ACK timeout, so transfers survive loss.
 *
 * Prints one line per phase (bytes or operations, seconds, rate) and a final
 * "PASS" or "FAIL: reason". Exit status: 0 everything verified, 1 a failure
 * (data, completion error, protocol), 2 usage, 3 the device went away
 * (IBV_EVENT_DEVICE_FATAL or RDMA_CM_EVENT_DEVICE_REMOVAL), 4 time limit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "pattern.h"

enum { EX_OK, EX_FAIL, EX_USAGE, EX_REMOVED, EX_TIME };

#define XFER_MAGIC 0x72787866u
#define XFER_VERSION 1
#define CTRL_SIZE 64
#define CLIENT_SLOTS 4
#define TX_SLOTS 16
#define MAX_BYTES (1ull << 30)

enum { PH_WRITE = 1, PH_READ, PH_SEND, PH_ATOMIC };

enum ctrl_type {
	CT_WRITE_DONE = 1,
	CT_SEND_DONE,
	CT_ATOMIC_BEGIN,
	CT_ATOMIC_DONE,
	CT_BYE,
	CT_REPLY = 0x80,
};

/* Kinds of work requests, in the top byte of wr_id. */
enum { WK_WRITE = 1, WK_READ, WK_SEND, WK_CTRL, WK_FAA, WK_CAS, WK_RECV, WK_PEEK };
#define WR_ID(kind, idx) (((uint64_t)(kind) << 56) | (idx))
#define WR_KIND(id) ((int)((id) >> 56))
#define WR_IDX(id) ((uint64_t)((id) & ((1ull << 56) - 1)))

/* Connect request private data (client to server). */
struct hello {
	uint32_t magic;
	uint16_t version;
	uint16_t depth;
	uint32_t msg;
	uint32_t natomic;
	uint64_t bytes;
	uint64_t seed;
};

/* Accept private data (server to client). */
struct welcome {
	uint32_t magic;
	uint32_t buf_rkey;
	uint64_t buf_addr;
	uint64_t atom_addr;
	uint32_t atom_rkey;
	uint32_t slots;
};

/* Control request and reply, CTRL_SIZE bytes. */
struct ctrl {
	uint32_t magic;
	uint32_t type;
	uint32_t round;
	uint32_t ok;
	uint64_t count;
	uint64_t bad;
	uint64_t first_bad;
	uint64_t digest;
	uint64_t v1;
	uint64_t v2;
};

_Static_assert(sizeof(struct ctrl) == CTRL_SIZE, "control message size");
_Static_assert(sizeof(struct hello) <= 56, "connect private data size");

/* Options. */
static int o_server;
static const char *o_addr;
static const char *o_port = "18600";
static const char *o_dev;
static uint64_t o_bytes = 64ull << 20;
static uint32_t o_msg = 1u << 20;
static uint32_t o_depth = 8;
static uint32_t o_natomic = 10000;
static uint32_t o_rounds = 1;
static uint64_t o_seed = 1;
static uint8_t o_ack_timeout = 14;
static double o_limit = 600;
static int o_verbose;
static const char *o_fault = "";

static const char *g_role = "client";
static double g_start, g_deadline;

/* The connection and its resources. */
static struct {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id, *id;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int armed, disconnected;
	/* Data buffer: the client's source and sink, the server's target. */
	uint8_t *buf;
	uint64_t buf_len;
	struct ibv_mr *buf_mr;
	/* Receive slots. */
	uint8_t *ring;
	uint32_t slot_size, nslots;
	struct ibv_mr *ring_mr;
	/* Control messages to send. */
	uint8_t *tx;
	struct ibv_mr *tx_mr;
	/* Server: the two atomic target words; client: results, then a read-back area. */
	uint64_t *atom;
	uint32_t atom_words;
	struct ibv_mr *atom_mr;
	/* The peer's. */
	struct welcome peer;
	struct hello params;
} g;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void say(const char *fmt, ...)
{
	va_list ap;

	printf("rrxe_xfer[%s]: ", g_role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void vsay(const char *fmt, ...)
{
	va_list ap;

	if (!o_verbose)
		return;
	printf("rrxe_xfer[%s]: [%.3f] ", g_role, now() - g_start);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* End the run: "FAIL: reason" (or, for EX_REMOVED, what went away). */
static void __attribute__((noreturn, format(printf, 2, 3))) die(int code, const char *fmt, ...)
{
	va_list ap;

	printf("rrxe_xfer[%s]: %s", g_role, code == EX_REMOVED ? "DEVICE GONE: " : "FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (after %.1f s, exit %d)\n", now() - g_start, code);
	fflush(stdout);
	exit(code);
}

static int remaining_ms(void)
{
	double r = g_deadline - now();

	if (r <= 0)
		return 0;
	return r > 1e6 ? 1000000000 : (int)(r * 1000) + 1;
}

static void check_deadline(const char *what)
{
	if (now() >= g_deadline)
		die(EX_TIME, "time limit of %.0f s reached while %s", o_limit, what);
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		die(EX_FAIL, "fcntl(O_NONBLOCK): %s", strerror(errno));
}

/* Read every pending async event; the device's loss ends the run with EX_REMOVED. */
static void drain_async(void)
{
	struct ibv_async_event ev;
	enum ibv_event_type bad = 0;
	int fatal = 0, nbad = 0;

	if (!g.ctx)
		return;
	while (ibv_get_async_event(g.ctx, &ev) == 0) {
		enum ibv_event_type t = ev.event_type;

		ibv_ack_async_event(&ev);
		say("async event: %s", ibv_event_type_str(t));
		switch (t) {
		case IBV_EVENT_DEVICE_FATAL:
			fatal = 1;
			break;
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_CQ_ERR:
		case IBV_EVENT_SRQ_ERR:
		case IBV_EVENT_PATH_MIG_ERR:
			bad = t;
			nbad++;
			break;
		default:
			break;
		}
	}
	if (fatal)
		die(EX_REMOVED, "IBV_EVENT_DEVICE_FATAL on %s", ibv_get_device_name(g.ctx->device));
	if (nbad)
		die(EX_FAIL, "asynchronous error event %s", ibv_event_type_str(bad));
}

/*
 * Handle a connection manager event of the established connection (or of an
 * old attempt's id). Returns 1 if it was consumed here.
 */
static int cm_event_common(struct rdma_cm_event *ev)
{
	if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		say("cm event: %s", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
		die(EX_REMOVED, "RDMA_CM_EVENT_DEVICE_REMOVAL");
	}
	if (ev->id != g.id && ev->id != g.listen_id &&
	    !(ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && g.listen_id && ev->listen_id == g.listen_id)) {
		vsay("cm event %s of an old id ignored", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
		return 1;
	}
	if (ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
		rdma_ack_cm_event(ev);
		return 1;
	}
	return 0;
}

/* Connection manager events while data moves: only a disconnect is expected. */
static void drain_cm(void)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(g.ch, &ev) == 0) {
		if (cm_event_common(ev))
			continue;
		vsay("cm event: %s", rdma_event_str(ev->event));
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
			g.disconnected = 1;
		else
			say("unexpected cm event %s (status %d)", rdma_event_str(ev->event), ev->status);
		rdma_ack_cm_event(ev);
	}
}

/* Sleep until a completion, async or cm event arrives, at most MS milliseconds. */
static void wait_fds(int ms)
{
	struct pollfd p[3];
	struct ibv_cq *cq;
	void *cq_ctx;
	int n = 0;

	p[n++] = (struct pollfd){ .fd = g.ch->fd, .events = POLLIN };
	if (g.ctx)
		p[n++] = (struct pollfd){ .fd = g.ctx->async_fd, .events = POLLIN };
	if (g.cc)
		p[n++] = (struct pollfd){ .fd = g.cc->fd, .events = POLLIN };
	if (poll(p, n, ms) < 0 && errno != EINTR)
		die(EX_FAIL, "poll: %s", strerror(errno));
	drain_async();
	drain_cm();
	while (g.cc && ibv_get_cq_event(g.cc, &cq, &cq_ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		g.armed = 0;
	}
}

/* Wait for the next cm event of the current id (bounded); the caller acks it. */
static struct rdma_cm_event *next_cm_event(const char *what)
{
	struct rdma_cm_event *ev;
	struct pollfd p;

	for (;;) {
		if (rdma_get_cm_event(g.ch, &ev) == 0) {
			if (cm_event_common(ev))
				continue;
			vsay("cm event: %s (status %d)", rdma_event_str(ev->event), ev->status);
			return ev;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			die(EX_FAIL, "rdma_get_cm_event: %s", strerror(errno));
		check_deadline(what);
		p = (struct pollfd){ .fd = g.ch->fd, .events = POLLIN };
		poll(&p, 1, remaining_ms() < 1000 ? remaining_ms() : 1000);
		drain_async();
	}
}

static const char *kind_name(int kind)
{
	static const char *const names[] = {
		[WK_WRITE] = "RDMA WRITE", [WK_READ] = "RDMA READ", [WK_SEND] = "SEND",
		[WK_CTRL] = "control SEND", [WK_FAA] = "fetch-and-add",
		[WK_CAS] = "compare-and-swap", [WK_RECV] = "receive", [WK_PEEK] = "read-back",
	};

	return kind > 0 && kind <= WK_PEEK ? names[kind] : "?";
}

/*
 * Before failing on a verbs error: if the device went away, its DEVICE_FATAL
 * event may be on its way; wait up to a second for it, so the run ends as
 * "device gone" rather than with the error it caused.
 */
static void settle_async(void)
{
	struct pollfd p;

	if (!g.ctx)
		return;
	p = (struct pollfd){ .fd = g.ctx->async_fd, .events = POLLIN };
	poll(&p, 1, 1000);
	drain_async();
}

/* Poll up to MAX completions, waiting (bounded) until there is one; errors end the run. */
static int get_wc(struct ibv_wc *wc, int max, const char *what)
{
	int n, i;

	for (;;) {
		n = ibv_poll_cq(g.cq, max, wc);
		if (n < 0) {
			settle_async();
			die(EX_FAIL, "ibv_poll_cq failed while %s", what);
		}
		if (n > 0)
			break;
		if (g.disconnected) {
			settle_async();
			die(EX_FAIL, "the peer disconnected while %s", what);
		}
		check_deadline(what);
		if (!g.armed) {
			if (ibv_req_notify_cq(g.cq, 0)) {
				settle_async();
				die(EX_FAIL, "ibv_req_notify_cq failed");
			}
			g.armed = 1;
			continue;
		}
		wait_fds(remaining_ms() < 1000 ? remaining_ms() : 1000);
	}
	for (i = 0; i < n; i++) {
		if (wc[i].status == IBV_WC_SUCCESS)
			continue;
		/* A flush after the device went away: say so rather than the flush. */
		settle_async();
		die(EX_FAIL, "%s #%" PRIu64 " completed with %s (vendor_err %u) while %s",
		    kind_name(WR_KIND(wc[i].wr_id)), WR_IDX(wc[i].wr_id),
		    ibv_wc_status_str(wc[i].status), wc[i].vendor_err, what);
	}
	return n;
}

static void post_send_wr(struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int rc = ibv_post_send(g.qp, wr, &bad);

	if (rc) {
		settle_async();
		die(EX_FAIL, "ibv_post_send (%s): %s", kind_name(WR_KIND(wr->wr_id)), strerror(rc));
	}
}

static void post_recv_slot(uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(g.ring + (uint64_t)slot * g.slot_size),
		.length = g.slot_size,
		.lkey = g.ring_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = WR_ID(WK_RECV, slot), .sg_list = &sge, .num_sge = 1 }, *bad;
	int rc = ibv_post_recv(g.qp, &wr, &bad);

	if (rc) {
		settle_async();
		die(EX_FAIL, "ibv_post_recv: %s", strerror(rc));
	}
}

/* One RDMA WRITE/READ or SEND of LEN bytes at buffer offset OFF. */
static void post_data(int kind, uint64_t idx, uint64_t off, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(g.buf + off), .length = len, .lkey = g.buf_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = WR_ID(kind, idx), .sg_list = &sge, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
	};

	switch (kind) {
	case WK_WRITE:
		wr.opcode = IBV_WR_RDMA_WRITE;
		break;
	case WK_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		break;
	default:
		wr.opcode = IBV_WR_SEND;
		break;
	}
	if (kind != WK_SEND) {
		wr.wr.rdma.remote_addr = g.peer.buf_addr + off;
		wr.wr.rdma.rkey = g.peer.buf_rkey;
	}
	post_send_wr(&wr);
}

/* A fetch-and-add (SWAP ignored) or compare-and-swap, result into local atom word SLOT. */
static void post_atomic(int kind, uint64_t idx, uint32_t slot, uint64_t remote_off,
			uint64_t cmp_add, uint64_t swap)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)&g.atom[slot], .length = 8, .lkey = g.atom_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = WR_ID(kind, idx), .sg_list = &sge, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
		.opcode = kind == WK_FAA ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP,
	};

	wr.wr.atomic.remote_addr = g.peer.atom_addr + remote_off;
	wr.wr.atomic.rkey = g.peer.atom_rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	post_send_wr(&wr);
}

static void post_ctrl(uint32_t tx_slot, const struct ctrl *c)
{
	uint8_t *p = g.tx + (uint64_t)tx_slot * CTRL_SIZE;
	struct ibv_sge sge = { .addr = (uintptr_t)p, .length = CTRL_SIZE, .lkey = g.tx_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = WR_ID(WK_CTRL, tx_slot), .sg_list = &sge, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED, .opcode = IBV_WR_SEND_WITH_IMM,
		.imm_data = htonl(c->type),
	};

	memcpy(p, c, CTRL_SIZE);
	post_send_wr(&wr);
}

static struct ibv_mr *reg(void *p, size_t len, int access, const char *what)
{
	struct ibv_mr *mr = ibv_reg_mr(g.pd, p, len, access);

	if (!mr)
		die(EX_FAIL, "ibv_reg_mr(%s, %zu bytes): %s", what, len, strerror(errno));
	return mr;
}

static void *alloc_zero(size_t len)
{
	void *p;

	if (posix_memalign(&p, 4096, len ? len : 1))
		die(EX_FAIL, "out of memory (%zu bytes)", len);
	memset(p, 0, len);
	return p;
}

/* Device, PD, CQ, QP and memory of the connection on G.ID. */
static void setup_resources(void)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct ibv_qp_init_attr qa;
	const char *name;
	int rw = IBV_ACCESS_LOCAL_WRITE;
	uint32_t send_wr = o_depth + TX_SLOTS + 2;

	g.ctx = g.id->verbs;
	if (!g.ctx)
		die(EX_FAIL, "rdma_cm gave no device for the connection");
	name = ibv_get_device_name(g.ctx->device);
	if (o_dev && strcmp(name, o_dev))
		die(EX_FAIL, "the connection uses device %s, not %s", name, o_dev);
	if (ibv_query_device(g.ctx, &da))
		die(EX_FAIL, "ibv_query_device: %s", strerror(errno));
	if (ibv_query_port(g.ctx, g.id->port_num, &pa))
		die(EX_FAIL, "ibv_query_port: %s", strerror(errno));
	if (g.params.msg > pa.max_msg_sz)
		die(EX_USAGE, "message size %u exceeds the port's max_msg_sz %u", g.params.msg, pa.max_msg_sz);
	vsay("device %s port %u, max_qp_rd_atom %d, max_qp_init_rd_atom %d, active MTU %d",
	     name, g.id->port_num, da.max_qp_rd_atom, da.max_qp_init_rd_atom, 128 << pa.active_mtu);
	set_nonblock(g.ctx->async_fd);

	g.pd = ibv_alloc_pd(g.ctx);
	if (!g.pd)
		die(EX_FAIL, "ibv_alloc_pd: %s", strerror(errno));
	g.cc = ibv_create_comp_channel(g.ctx);
	if (!g.cc)
		die(EX_FAIL, "ibv_create_comp_channel: %s", strerror(errno));
	set_nonblock(g.cc->fd);
	g.cq = ibv_create_cq(g.ctx, (int)(send_wr + g.nslots + 8), NULL, g.cc, 0);
	if (!g.cq)
		die(EX_FAIL, "ibv_create_cq: %s", strerror(errno));
	g.armed = 0;

	g.buf_mr = reg(g.buf, g.buf_len, rw | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, "data");
	g.ring_mr = reg(g.ring, (size_t)g.slot_size * g.nslots, rw, "receive slots");
	g.tx_mr = reg(g.tx, (size_t)CTRL_SIZE * TX_SLOTS, rw, "control");
	g.atom_mr = reg(g.atom, (size_t)g.atom_words * 8,
			rw | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ, "atomics");

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = g.cq;
	qa.recv_cq = g.cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = send_wr;
	qa.cap.max_recv_wr = g.nslots;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(g.id, g.pd, &qa))
		die(EX_FAIL, "rdma_create_qp: %s", strerror(errno));
	g.qp = g.id->qp;
	if (rdma_set_option(g.id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			    &o_ack_timeout, sizeof(o_ack_timeout)))
		die(EX_FAIL, "rdma_set_option(ACK_TIMEOUT): %s", strerror(errno));
	for (uint32_t i = 0; i < g.nslots; i++)
		post_recv_slot(i);
}

/* Undo setup_resources and the id (a failed connection attempt). */
static void teardown_resources(void)
{
	if (g.qp)
		rdma_destroy_qp(g.id);
	g.qp = NULL;
	if (g.atom_mr)
		ibv_dereg_mr(g.atom_mr);
	if (g.tx_mr)
		ibv_dereg_mr(g.tx_mr);
	if (g.ring_mr)
		ibv_dereg_mr(g.ring_mr);
	if (g.buf_mr)
		ibv_dereg_mr(g.buf_mr);
	g.atom_mr = g.tx_mr = g.ring_mr = g.buf_mr = NULL;
	if (g.cq)
		ibv_destroy_cq(g.cq);
	g.cq = NULL;
	if (g.cc)
		ibv_destroy_comp_channel(g.cc);
	g.cc = NULL;
	if (g.pd)
		ibv_dealloc_pd(g.pd);
	g.pd = NULL;
	if (g.id)
		rdma_destroy_id(g.id);
	g.id = NULL;
	g.ctx = NULL;
}

static void conn_param(struct rdma_conn_param *cp, const void *pdata, uint8_t len,
		       uint8_t resp_res, uint8_t init_depth)
{
	memset(cp, 0, sizeof(*cp));
	cp->private_data = pdata;
	cp->private_data_len = len;
	cp->responder_resources = resp_res;
	cp->initiator_depth = init_depth;
	cp->retry_count = 7;
	cp->rnr_retry_count = 7;
}

static uint8_t cap8(int v)
{
	return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

/* ---------------------------------------------------------------- client */

static char why[160];

/*
 * One step of connection setup: RC is the return of the call that starts it
 * (CALL names it), WANT the event that ends it. Returns NULL on success, else why
 * it failed.
 */
static const char *cm_step(int rc, const char *call, enum rdma_cm_event_type want,
			   const char *what)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type t;
	int st;

	if (rc) {
		snprintf(why, sizeof(why), "%s: %s", call, strerror(errno));
		return why;
	}
	ev = next_cm_event(what);
	t = ev->event;
	st = ev->status;
	rdma_ack_cm_event(ev);
	if (t != want) {
		snprintf(why, sizeof(why), "%s: %s (status %d)", what, rdma_event_str(t), st);
		return why;
	}
	return NULL;
}

/* One connection attempt; returns NULL on success, else why it failed. */
static const char *try_connect(const struct addrinfo *ai)
{
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct ibv_device_attr da;
	enum rdma_cm_event_type t;
	const char *err;
	int st;

	if (rdma_create_id(g.ch, &g.id, NULL, RDMA_PS_TCP))
		die(EX_FAIL, "rdma_create_id: %s", strerror(errno));
	err = cm_step(rdma_resolve_addr(g.id, NULL, ai->ai_addr, 2000), "rdma_resolve_addr",
		      RDMA_CM_EVENT_ADDR_RESOLVED, "resolving the address");
	if (err)
		return err;
	err = cm_step(rdma_resolve_route(g.id, 2000), "rdma_resolve_route",
		      RDMA_CM_EVENT_ROUTE_RESOLVED, "resolving the route");
	if (err)
		return err;
	setup_resources();
	if (ibv_query_device(g.ctx, &da))
		die(EX_FAIL, "ibv_query_device: %s", strerror(errno));
	conn_param(&cp, &g.params, sizeof(g.params), cap8(da.max_qp_rd_atom),
		   cap8(da.max_qp_init_rd_atom));
	if (rdma_connect(g.id, &cp)) {
		snprintf(why, sizeof(why), "rdma_connect: %s", strerror(errno));
		return why;
	}
	ev = next_cm_event("connecting");
	t = ev->event;
	st = ev->status;
	if (t == RDMA_CM_EVENT_ESTABLISHED) {
		if (!ev->param.conn.private_data || ev->param.conn.private_data_len < sizeof(g.peer)) {
			rdma_ack_cm_event(ev);
			die(EX_FAIL, "the server's accept carried no buffer description");
		}
		memcpy(&g.peer, ev->param.conn.private_data, sizeof(g.peer));
		rdma_ack_cm_event(ev);
		if (g.peer.magic != XFER_MAGIC)
			die(EX_FAIL, "the server's accept has a bad magic 0x%x", g.peer.magic);
		return NULL;
	}
	rdma_ack_cm_event(ev);
	snprintf(why, sizeof(why), "connect: %s (status %d)", rdma_event_str(t), st);
	return why;
}

static void client_connect(void)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	const char *why;
	int rc, attempt;

	rc = getaddrinfo(o_addr, o_port, &hints, &ai);
	if (rc)
		die(EX_USAGE, "%s: %s", o_addr, gai_strerror(rc));
	for (attempt = 1;; attempt++) {
		why = try_connect(ai);
		if (!why)
			break;
		teardown_resources();
		if (g_deadline - now() < 2)
			die(EX_TIME, "no connection to %s port %s after %d attempts (last: %s)",
			    o_addr, o_port, attempt, why);
		vsay("attempt %d: %s; again in 1 s", attempt, why);
		if (attempt == 1 || attempt % 10 == 0)
			say("not connected yet (attempt %d: %s), retrying", attempt, why);
		sleep(1);
	}
	freeaddrinfo(ai);
	say("connected to %s port %s on %s after %d attempt%s (%.1f s)", o_addr, o_port,
	    ibv_get_device_name(g.ctx->device), attempt, attempt == 1 ? "" : "s", now() - g_start);
}

/* Send a control request, wait for its completion and the server's reply. */
static struct ctrl ctrl_call(uint32_t type, uint32_t round, uint64_t count, uint64_t digest,
			     uint64_t v1, uint64_t v2, const char *what)
{
	struct ctrl req = {
		.magic = XFER_MAGIC, .type = type, .round = round, .count = count,
		.digest = digest, .v1 = v1, .v2 = v2,
	}, rep;
	struct ibv_wc wc[4];
	int sent = 0, got = 0, n, i;

	post_ctrl(0, &req);
	while (!sent || !got) {
		n = get_wc(wc, 4, what);
		for (i = 0; i < n; i++) {
			int kind = WR_KIND(wc[i].wr_id);
			uint32_t slot = (uint32_t)WR_IDX(wc[i].wr_id);

			if (kind == WK_CTRL) {
				sent = 1;
				continue;
			}
			if (kind != WK_RECV || got)
				die(EX_FAIL, "unexpected %s completion while %s", kind_name(kind), what);
			if (!(wc[i].wc_flags & IBV_WC_WITH_IMM) || wc[i].byte_len != CTRL_SIZE)
				die(EX_FAIL, "the server's reply is not a control message (%u bytes)",
				    wc[i].byte_len);
			memcpy(&rep, g.ring + (uint64_t)slot * g.slot_size, CTRL_SIZE);
			post_recv_slot(slot);
			got = 1;
		}
	}
	if (rep.magic != XFER_MAGIC || rep.type != (type | CT_REPLY) || rep.round != round)
		die(EX_FAIL, "bad reply while %s: magic 0x%x type 0x%x round %u", what, rep.magic,
		    rep.type, rep.round);
	return rep;
}

static void phase_line(const char *name, uint32_t round, uint64_t bytes, double secs)
{
	char r[32] = "";

	if (o_rounds != 1)
		snprintf(r, sizeof(r), " (round %u)", round);
	say("%-7s %12" PRIu64 " bytes %9.3f s %9.3f MB/s%s", name, bytes, secs,
	    secs > 0 ? bytes / secs / 1e6 : 0.0, r);
}

/* A run of OPS work requests of one kind, DEPTH in flight, completing in order. */
struct pipeline {
	int kind;
	uint64_t ops;
	const char *what;
	void (*post)(struct pipeline *p, uint64_t idx);
	void (*done)(struct pipeline *p, uint64_t idx);
	/* Atomics: compare, swap and expected old values (NULL for fetch-and-add). */
	const uint64_t *cmp, *swp, *want;
	uint64_t bad;
};

static void run_pipeline(struct pipeline *p)
{
	uint64_t posted = 0, done = 0;
	struct ibv_wc wc[16];
	int n, i;

	while (done < p->ops) {
		while (posted < p->ops && posted - done < o_depth)
			p->post(p, posted++);
		n = get_wc(wc, 16, p->what);
		for (i = 0; i < n; i++) {
			if (WR_KIND(wc[i].wr_id) != p->kind || WR_IDX(wc[i].wr_id) != done)
				die(EX_FAIL, "completion of %s #%" PRIu64 " while expecting %s #%" PRIu64,
				    kind_name(WR_KIND(wc[i].wr_id)), WR_IDX(wc[i].wr_id),
				    kind_name(p->kind), done);
			p->done(p, done++);
		}
	}
}

static void stream_post(struct pipeline *p, uint64_t idx)
{
	uint64_t off = idx * g.params.msg, left = g.buf_len - off;

	post_data(p->kind, idx, off, left < g.params.msg ? (uint32_t)left : g.params.msg);
}

static void stream_done(struct pipeline *p, uint64_t idx)
{
	uint64_t tenth = p->ops / 10;

	if (tenth && (idx + 1) % tenth == 0)
		vsay("%s: %" PRIu64 "/%" PRIu64 " messages", p->what, idx + 1, p->ops);
}

/* RDMA WRITEs, READs or SENDs of the whole buffer, DEPTH in flight. */
static void run_stream(int kind, const char *what)
{
	struct pipeline p = {
		.kind = kind, .ops = (g.buf_len + g.params.msg - 1) / g.params.msg, .what = what,
		.post = stream_post, .done = stream_done,
	};

	run_pipeline(&p);
}

/*
 * Move the buffer with KIND (RDMA WRITE or SEND), then ask the server (control
 * request TYPE) for its verdict on what it received: every byte right and the
 * same DIGEST as the client's.
 */
static int stream_with_verdict(int kind, const char *name, uint32_t round, uint32_t type,
			       uint64_t count, uint64_t digest)
{
	struct ctrl rep;
	double t0 = now();

	if (!strcmp(o_fault, name))
		g.buf[g.buf_len / 2] ^= 0x10;
	run_stream(kind, kind == WK_WRITE ? "writing" : "sending");
	phase_line(name, round, g.buf_len, now() - t0);
	rep = ctrl_call(type, round, count, digest, 0, 0, "waiting for the server's verdict");
	if (!rep.ok) {
		say("%s verdict: the server found %" PRIu64 " bad bytes, the first at stream offset %"
		    PRIu64 "; %" PRIu64 " messages counted (%" PRIu64 " sent)", name, rep.bad,
		    rep.first_bad, rep.count, count);
		return 0;
	}
	if (rep.digest != digest) {
		say("%s verdict: digest mismatch: server 0x%016" PRIx64 ", client 0x%016" PRIx64,
		    name, rep.digest, digest);
		return 0;
	}
	vsay("%s verified by the server, digest 0x%016" PRIx64, name, digest);
	return 1;
}

static int phase_write(uint32_t round)
{
	pat_fill(g.buf, pat_key(g.params.seed, PH_WRITE, round), 0, g.buf_len);
	return stream_with_verdict(WK_WRITE, "write", round, CT_WRITE_DONE, 0,
				   pat_digest(g.buf, g.buf_len));
}

static int phase_read(uint32_t round)
{
	uint64_t key = pat_key(g.params.seed, PH_READ, round), bad, first = 0;
	uint8_t got = 0, want = 0;
	double t0;

	/* Nothing of the pattern may be there before the READs bring it. */
	memset(g.buf, 0x5a, g.buf_len);
	t0 = now();
	run_stream(WK_READ, "reading");
	phase_line("read", round, g.buf_len, now() - t0);
	if (!strcmp(o_fault, "read"))
		g.buf[g.buf_len / 2] ^= 0x10;
	bad = pat_check(g.buf, key, 0, g.buf_len, &first, &got, &want);
	if (bad) {
		say("read: %" PRIu64 " bad bytes, the first at offset %" PRIu64
		    " (got 0x%02x, expected 0x%02x)", bad, first, got, want);
		return 0;
	}
	vsay("read verified");
	return 1;
}

static int phase_send(uint32_t round)
{
	uint64_t digest = 0, off, len, nmsg = (g.buf_len + g.params.msg - 1) / g.params.msg;

	pat_fill(g.buf, pat_key(g.params.seed, PH_SEND, round), 0, g.buf_len);
	for (off = 0; off < g.buf_len; off += len) {
		len = g.buf_len - off < g.params.msg ? g.buf_len - off : g.params.msg;
		digest = pat_digest_fold(digest, pat_digest(g.buf + off, len));
	}
	return stream_with_verdict(WK_SEND, "send", round, CT_SEND_DONE, nmsg, digest);
}

/* Read the server's two atomic words into local words DEPTH and DEPTH + 1. */
static void read_back_atomics(void)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)&g.atom[o_depth], .length = 16, .lkey = g.atom_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = WR_ID(WK_PEEK, 0), .sg_list = &sge, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED, .opcode = IBV_WR_RDMA_READ,
	};
	struct ibv_wc wc;

	g.atom[o_depth] = g.atom[o_depth + 1] = 0x5a5a5a5a5a5a5a5aull;
	wr.wr.rdma.remote_addr = g.peer.atom_addr;
	wr.wr.rdma.rkey = g.peer.atom_rkey;
	post_send_wr(&wr);
	get_wc(&wc, 1, "reading the atomic words back");
	if (WR_KIND(wc.wr_id) != WK_PEEK)
		die(EX_FAIL, "unexpected %s completion", kind_name(WR_KIND(wc.wr_id)));
}

/* Value of link I of the compare-and-swap chain (link 0 is the initial 0). */
static uint64_t chain_value(uint32_t round, uint64_t i)
{
	return i ? pat_mix(g.params.seed ^ ((uint64_t)round << 40) ^ (i * 0x9e3779b97f4a7c15ULL)) | 1 : 0;
}

static void atomic_post(struct pipeline *p, uint64_t idx)
{
	uint64_t add = idx == 0 && !strcmp(o_fault, "atomic") ? 2 : 1;

	post_atomic(p->kind, idx, (uint32_t)(idx % o_depth), p->cmp ? 8 : 0,
		    p->cmp ? p->cmp[idx] : add, p->cmp ? p->swp[idx] : 0);
}

static void atomic_done(struct pipeline *p, uint64_t idx)
{
	uint64_t v = g.atom[idx % o_depth], w = p->want ? p->want[idx] : idx;

	if (v == w)
		return;
	if (p->bad < 5)
		say("%s #%" PRIu64 " returned 0x%" PRIx64 ", expected 0x%" PRIx64,
		    kind_name(p->kind), idx, v, w);
	p->bad++;
}

/*
 * Run OPS atomics (fetch-and-add of 1 when CMP is NULL, else compare-and-swap
 * with CMP/SWP), DEPTH in flight; op I must return WANT[I] (fetch-and-add: I, as
 * RC executes them in order). Returns the number of ops that returned something else.
 */
static uint64_t run_atomics(uint64_t ops, const uint64_t *cmp, const uint64_t *swp,
			    const uint64_t *want, const char *what)
{
	struct pipeline p = {
		.kind = cmp ? WK_CAS : WK_FAA, .ops = ops, .what = what,
		.post = atomic_post, .done = atomic_done, .cmp = cmp, .swp = swp, .want = want,
	};

	run_pipeline(&p);
	return p.bad;
}

static int phase_atomics(uint32_t round)
{
	uint64_t n = g.params.natomic, links = n / 10 ? n / 10 : 1, ops = 0, bad, i, fails = 0;
	uint64_t *cmp, *swp, *want, last;
	struct ctrl rep;
	double t0, t;
	int ok = 1;
	char r[32] = "";

	if (o_rounds != 1)
		snprintf(r, sizeof(r), " (round %u)", round);
	rep = ctrl_call(CT_ATOMIC_BEGIN, round, 0, 0, 0, 0, "starting the atomics");
	if (!rep.ok)
		die(EX_FAIL, "the server refused to reset its atomic words");

	t0 = now();
	bad = run_atomics(n, NULL, NULL, NULL, "fetching and adding");
	t = now() - t0;
	read_back_atomics();
	say("fetch-add %7" PRIu64 " ops  %9.3f s %9.1f ops/s, word ends at %" PRIu64 "%s", n, t,
	    t > 0 ? n / t : 0.0, g.atom[o_depth], r);
	if (bad) {
		say("fetch-add: %" PRIu64 " of %" PRIu64 " returned a wrong old value", bad, n);
		ok = 0;
	}
	if (g.atom[o_depth] != n) {
		say("fetch-add: the word is %" PRIu64 " after %" PRIu64 " adds of 1 (not exactly once)",
		    g.atom[o_depth], n);
		ok = 0;
	}

	/* The chain: link i swaps chain_value(i) for chain_value(i + 1); every
	 * eighth link is preceded by a compare that must fail and change nothing. */
	cmp = calloc(links * 2, 8);
	swp = calloc(links * 2, 8);
	want = calloc(links * 2, 8);
	if (!cmp || !swp || !want)
		die(EX_FAIL, "out of memory");
	for (i = 0; i < links; i++) {
		if (i % 8 == 7) {
			cmp[ops] = chain_value(round, i) ^ 0x8000000000000000ull;
			swp[ops] = 0xbadbadbadbadbad0ull;
			want[ops++] = chain_value(round, i);
			fails++;
		}
		cmp[ops] = chain_value(round, i);
		swp[ops] = chain_value(round, i + 1);
		want[ops++] = chain_value(round, i);
	}
	last = chain_value(round, links);
	t0 = now();
	bad = run_atomics(ops, cmp, swp, want, "compare-and-swapping");
	t = now() - t0;
	free(cmp);
	free(swp);
	free(want);
	read_back_atomics();
	say("cmp-swap  %7" PRIu64 " ops  %9.3f s %9.1f ops/s, %" PRIu64 " links, %" PRIu64
	    " failing compares%s", ops, t, t > 0 ? ops / t : 0.0, links, fails, r);
	if (bad) {
		say("cmp-swap: %" PRIu64 " of %" PRIu64 " returned a wrong old value", bad, ops);
		ok = 0;
	}
	if (g.atom[o_depth + 1] != last) {
		say("cmp-swap: the word is 0x%" PRIx64 " at the end of the chain, expected 0x%" PRIx64,
		    g.atom[o_depth + 1], last);
		ok = 0;
	}
	rep = ctrl_call(CT_ATOMIC_DONE, round, 0, 0, n, last, "waiting for the atomics verdict");
	if (!rep.ok) {
		say("atomics verdict: the server's words are %" PRIu64 " and 0x%" PRIx64
		    ", expected %" PRIu64 " and 0x%" PRIx64, rep.v1, rep.v2, n, last);
		ok = 0;
	}
	return ok;
}

static int run_client(void)
{
	uint32_t round;
	struct ctrl rep;
	int ok = 1, i;
	struct rdma_cm_event *ev;

	g.params = (struct hello){
		.magic = XFER_MAGIC, .version = XFER_VERSION, .depth = (uint16_t)o_depth,
		.msg = o_msg, .natomic = o_natomic, .bytes = o_bytes, .seed = o_seed,
	};
	g.buf_len = o_bytes;
	g.buf = alloc_zero(g.buf_len);
	g.slot_size = CTRL_SIZE;
	g.nslots = CLIENT_SLOTS;
	g.ring = alloc_zero((size_t)g.slot_size * g.nslots);
	g.tx = alloc_zero((size_t)CTRL_SIZE * TX_SLOTS);
	g.atom_words = o_depth + 2;
	g.atom = alloc_zero((size_t)g.atom_words * 8);

	client_connect();
	for (round = 0; o_rounds == 0 || round < o_rounds; round++) {
		ok &= phase_write(round);
		ok &= phase_read(round);
		ok &= phase_send(round);
		if (g.params.natomic)
			ok &= phase_atomics(round);
		if (!ok)
			break;
	}
	rep = ctrl_call(CT_BYE, round, ok, 0, 0, 0, "saying goodbye");
	if (!rep.ok && ok) {
		say("the server's final verdict is FAIL");
		ok = 0;
	}
	/* A bounded, orderly disconnect; not part of the verdict. */
	rdma_disconnect(g.id);
	for (i = 0; i < 50 && !g.disconnected; i++) {
		if (rdma_get_cm_event(g.ch, &ev) == 0) {
			if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
				g.disconnected = 1;
			rdma_ack_cm_event(ev);
			continue;
		}
		usleep(100000);
	}
	return ok;
}

/* ---------------------------------------------------------------- server */

static struct {
	uint32_t round;
	uint64_t send_idx, send_bad, send_first_bad, send_digest;
	int all_ok, bye;
	uint32_t tx_next, tx_pending;
} s;

static void reply(const struct ctrl *req, int ok, uint64_t count, uint64_t bad,
		  uint64_t first_bad, uint64_t digest, uint64_t v1, uint64_t v2)
{
	struct ctrl rep = {
		.magic = XFER_MAGIC, .type = req->type | CT_REPLY, .round = req->round,
		.ok = ok, .count = count, .bad = bad, .first_bad = first_bad, .digest = digest,
		.v1 = v1, .v2 = v2,
	};

	/* A reply's buffer stays in use until the client acknowledged it. */
	if (s.tx_pending >= TX_SLOTS)
		die(EX_FAIL, "%u replies still unacknowledged by the client", s.tx_pending);
	post_ctrl(s.tx_next, &rep);
	s.tx_next = (s.tx_next + 1) % TX_SLOTS;
	s.tx_pending++;
	if (!ok)
		s.all_ok = 0;
}

static void server_data_message(const struct ibv_wc *wc, const uint8_t *data)
{
	uint64_t off = s.send_idx * g.params.msg, want_len, bad, first = 0;
	uint8_t got, want;

	if (off >= g.buf_len) {
		if (!s.send_bad)
			s.send_first_bad = off;
		s.send_bad += wc->byte_len ? wc->byte_len : 1;
		say("send: message #%" PRIu64 " is one too many", s.send_idx);
		s.send_idx++;
		return;
	}
	want_len = g.buf_len - off < g.params.msg ? g.buf_len - off : g.params.msg;
	if (wc->opcode != IBV_WC_RECV || wc->byte_len != want_len) {
		if (!s.send_bad)
			s.send_first_bad = off;
		s.send_bad += want_len;
		say("send: message #%" PRIu64 " has opcode %d and %u bytes, expected %" PRIu64,
		    s.send_idx, wc->opcode, wc->byte_len, want_len);
	} else {
		bad = pat_check(data, pat_key(g.params.seed, PH_SEND, s.round), off, want_len,
				&first, &got, &want);
		if (bad) {
			if (!s.send_bad)
				s.send_first_bad = first;
			s.send_bad += bad;
			say("send: message #%" PRIu64 " has %" PRIu64 " bad bytes, the first at offset %"
			    PRIu64 " (got 0x%02x, expected 0x%02x)", s.send_idx, bad, first, got, want);
		}
	}
	s.send_digest = pat_digest_fold(s.send_digest, pat_digest(data, wc->byte_len));
	s.send_idx++;
}

static void server_request(const struct ctrl *req)
{
	uint64_t bad, first = 0, digest, nmsg = (g.buf_len + g.params.msg - 1) / g.params.msg;
	volatile uint64_t *w = g.atom;
	uint8_t got = 0, want = 0;
	int ok;

	if (req->magic != XFER_MAGIC)
		die(EX_FAIL, "control message with a bad magic 0x%x", req->magic);
	s.round = req->round;
	switch (req->type) {
	case CT_WRITE_DONE:
		bad = pat_check(g.buf, pat_key(g.params.seed, PH_WRITE, req->round), 0, g.buf_len,
				&first, &got, &want);
		digest = pat_digest(g.buf, g.buf_len);
		if (bad)
			say("write (round %u): %" PRIu64 " bad bytes, the first at offset %" PRIu64
			    " (got 0x%02x, expected 0x%02x)", req->round, bad, first, got, want);
		else
			say("write (round %u): %" PRIu64 " bytes verified", req->round, g.buf_len);
		/* What the client will read next. */
		pat_fill(g.buf, pat_key(g.params.seed, PH_READ, req->round), 0, g.buf_len);
		s.send_idx = s.send_bad = s.send_first_bad = s.send_digest = 0;
		reply(req, !bad && digest == req->digest, 0, bad, first, digest, got, want);
		break;
	case CT_SEND_DONE:
		ok = !s.send_bad && s.send_idx == nmsg && req->count == nmsg &&
		     s.send_digest == req->digest;
		if (ok)
			say("send (round %u): %" PRIu64 " messages, %" PRIu64 " bytes verified",
			    req->round, s.send_idx, g.buf_len);
		else
			say("send (round %u): %" PRIu64 " messages of %" PRIu64 ", %" PRIu64
			    " bad bytes, digest %s", req->round, s.send_idx, nmsg, s.send_bad,
			    s.send_digest == req->digest ? "equal" : "differs");
		reply(req, ok, s.send_idx, s.send_bad, s.send_first_bad, s.send_digest, 0, 0);
		s.send_idx = s.send_bad = s.send_first_bad = s.send_digest = 0;
		break;
	case CT_ATOMIC_BEGIN:
		w[0] = 0;
		w[1] = 0;
		reply(req, 1, 0, 0, 0, 0, 0, 0);
		break;
	case CT_ATOMIC_DONE:
		ok = w[0] == req->v1 && w[1] == req->v2;
		say("atomics (round %u): counter %" PRIu64 " (expected %" PRIu64 "), chain word 0x%"
		    PRIx64 " (expected 0x%" PRIx64 ")%s", req->round, w[0], req->v1, w[1], req->v2,
		    ok ? "" : ": WRONG");
		reply(req, ok, 0, 0, 0, 0, w[0], w[1]);
		break;
	case CT_BYE:
		if (!req->count)
			s.all_ok = 0;
		reply(req, s.all_ok, 0, 0, 0, 0, 0, 0);
		s.bye = 1;
		break;
	default:
		die(EX_FAIL, "unknown control request %u", req->type);
	}
}

static int run_server(void)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct ibv_device_attr da;
	struct welcome wel;
	struct ibv_wc wc[16];
	uint8_t init_depth, resp_res;
	int n, i;

	sin6.sin6_port = htons((uint16_t)atoi(o_port));
	if (rdma_create_id(g.ch, &g.listen_id, NULL, RDMA_PS_TCP))
		die(EX_FAIL, "rdma_create_id: %s", strerror(errno));
	if (rdma_bind_addr(g.listen_id, (struct sockaddr *)&sin6))
		die(EX_FAIL, "rdma_bind_addr(port %s): %s", o_port, strerror(errno));
	if (rdma_listen(g.listen_id, 4))
		die(EX_FAIL, "rdma_listen: %s", strerror(errno));
	say("listening on port %s", o_port);

	for (;;) {
		ev = next_cm_event("waiting for a client");
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			break;
		say("ignoring cm event %s while listening", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
	}
	g.id = ev->id;
	memset(&g.params, 0, sizeof(g.params));
	if (ev->param.conn.private_data && ev->param.conn.private_data_len >= sizeof(g.params))
		memcpy(&g.params, ev->param.conn.private_data, sizeof(g.params));
	init_depth = ev->param.conn.responder_resources;
	resp_res = ev->param.conn.initiator_depth;
	rdma_ack_cm_event(ev);
	if (g.params.magic != XFER_MAGIC || g.params.version != XFER_VERSION)
		die(EX_FAIL, "the connect request is not from rrxe_xfer version %d", XFER_VERSION);
	if (!g.params.bytes || g.params.bytes > MAX_BYTES || !g.params.msg || !g.params.depth)
		die(EX_FAIL, "the client asks for %" PRIu64 " bytes in messages of %u, depth %u",
		    g.params.bytes, g.params.msg, g.params.depth);
	o_depth = g.params.depth;
	g.buf_len = g.params.bytes;
	g.buf = alloc_zero(g.buf_len);
	g.slot_size = g.params.msg > CTRL_SIZE ? g.params.msg : CTRL_SIZE;
	g.nslots = 2 * o_depth + 4;
	g.ring = alloc_zero((size_t)g.slot_size * g.nslots);
	g.tx = alloc_zero((size_t)CTRL_SIZE * TX_SLOTS);
	g.atom_words = 2;
	g.atom = alloc_zero(4096);
	say("connect request: %" PRIu64 " bytes per phase in messages of %u, depth %u, %u atomics",
	    g.params.bytes, g.params.msg, g.params.depth, g.params.natomic);
	setup_resources();
	if (ibv_query_device(g.ctx, &da))
		die(EX_FAIL, "ibv_query_device: %s", strerror(errno));
	if (resp_res > da.max_qp_rd_atom)
		resp_res = cap8(da.max_qp_rd_atom);
	if (init_depth > da.max_qp_init_rd_atom)
		init_depth = cap8(da.max_qp_init_rd_atom);
	wel = (struct welcome){
		.magic = XFER_MAGIC, .buf_rkey = g.buf_mr->rkey, .buf_addr = (uintptr_t)g.buf,
		.atom_addr = (uintptr_t)g.atom, .atom_rkey = g.atom_mr->rkey, .slots = g.nslots,
	};
	conn_param(&cp, &wel, sizeof(wel), resp_res, init_depth);
	if (rdma_accept(g.id, &cp))
		die(EX_FAIL, "rdma_accept: %s", strerror(errno));
	ev = next_cm_event("accepting");
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED)
		die(EX_FAIL, "accept: %s (status %d)", rdma_event_str(ev->event), ev->status);
	rdma_ack_cm_event(ev);
	say("connected on %s (%.1f s)", ibv_get_device_name(g.ctx->device), now() - g_start);

	s.all_ok = 1;
	while (!s.bye) {
		n = get_wc(wc, 16, "serving the client");
		for (i = 0; i < n; i++) {
			int kind = WR_KIND(wc[i].wr_id);
			uint32_t slot = (uint32_t)WR_IDX(wc[i].wr_id);
			uint8_t *data = g.ring + (uint64_t)slot * g.slot_size;
			struct ctrl req;

			if (kind == WK_CTRL) {
				s.tx_pending--;
				continue;
			}
			if (kind != WK_RECV)
				die(EX_FAIL, "unexpected %s completion", kind_name(kind));
			if (!(wc[i].wc_flags & IBV_WC_WITH_IMM)) {
				server_data_message(&wc[i], data);
				post_recv_slot(slot);
				continue;
			}
			if (wc[i].byte_len != CTRL_SIZE ||
			    ntohl(wc[i].imm_data) != ((struct ctrl *)data)->type)
				die(EX_FAIL, "malformed control message (%u bytes, imm 0x%x)",
				    wc[i].byte_len, ntohl(wc[i].imm_data));
			memcpy(&req, data, CTRL_SIZE);
			post_recv_slot(slot);
			server_request(&req);
		}
	}
	/*
	 * The client disconnects once it has the final verdict. Not part of the
	 * verdict, so the reply's own completion is not awaited: the client may be
	 * gone before its acknowledgement arrived. A bounded wait.
	 */
	for (i = 0; i < 100 && !g.disconnected; i++)
		wait_fds(100);
	if (!g.disconnected)
		rdma_disconnect(g.id);
	return s.all_ok;
}

/* ---------------------------------------------------------------- main */

static uint64_t parse_size(const char *s, const char *opt)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K':
		v <<= 10;
		end++;
		break;
	case 'm': case 'M':
		v <<= 20;
		end++;
		break;
	case 'g': case 'G':
		v <<= 30;
		end++;
		break;
	}
	if (*end || s == end) {
		fprintf(stderr, "rrxe_xfer: bad value '%s' for %s\n", s, opt);
		exit(EX_USAGE);
	}
	return v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rrxe_xfer -s [-p PORT] [-d DEV] [-T ACK_TIMEOUT] [-t SECONDS] [-v]\n"
		"       rrxe_xfer -c ADDR [-p PORT] [-d DEV] [-b BYTES] [-m MSG_SIZE] [-q DEPTH]\n"
		"                 [-n ATOMICS] [-R ROUNDS] [-S SEED] [-T ACK_TIMEOUT] [-t SECONDS] [-v]\n"
		"                 [-F write|read|send|atomic]\n");
	exit(EX_USAGE);
}

int main(int argc, char **argv)
{
	int c, ok;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "sc:p:d:b:m:q:n:R:S:T:t:vF:h")) != -1) {
		switch (c) {
		case 's': o_server = 1; break;
		case 'c': o_addr = optarg; break;
		case 'p': o_port = optarg; break;
		case 'd': o_dev = optarg; break;
		case 'b': o_bytes = parse_size(optarg, "-b"); break;
		case 'm': o_msg = (uint32_t)parse_size(optarg, "-m"); break;
		case 'q': o_depth = (uint32_t)parse_size(optarg, "-q"); break;
		case 'n': o_natomic = (uint32_t)parse_size(optarg, "-n"); break;
		case 'R': o_rounds = (uint32_t)parse_size(optarg, "-R"); break;
		case 'S': o_seed = parse_size(optarg, "-S"); break;
		case 'T': o_ack_timeout = (uint8_t)parse_size(optarg, "-T"); break;
		case 't': o_limit = (double)parse_size(optarg, "-t"); break;
		case 'v': o_verbose = 1; break;
		case 'F': o_fault = optarg; break;
		default: usage();
		}
	}
	if (optind != argc || o_server == !!o_addr)
		usage();
	if (!o_server && (!o_bytes || o_bytes > MAX_BYTES || !o_msg || !o_depth ||
			  o_depth > 1024 || o_ack_timeout > 31 || o_limit <= 0)) {
		fprintf(stderr, "rrxe_xfer: need 0 < BYTES <= 1G, MSG_SIZE > 0, 0 < DEPTH <= 1024, "
			"ACK_TIMEOUT <= 31, SECONDS > 0\n");
		return EX_USAGE;
	}
	if (*o_fault && strcmp(o_fault, "write") && strcmp(o_fault, "read") &&
	    strcmp(o_fault, "send") && strcmp(o_fault, "atomic"))
		usage();
	g_role = o_server ? "server" : "client";
	g_start = now();
	g_deadline = g_start + o_limit;

	g.ch = rdma_create_event_channel();
	if (!g.ch)
		die(EX_FAIL, "rdma_create_event_channel: %s", strerror(errno));
	set_nonblock(g.ch->fd);

	ok = o_server ? run_server() : run_client();
	teardown_resources();
	if (g.listen_id)
		rdma_destroy_id(g.listen_id);
	rdma_destroy_event_channel(g.ch);
	if (!ok) {
		say("FAIL: verification failed (%.1f s)", now() - g_start);
		return EX_FAIL;
	}
	if (o_server)
		say("PASS: everything the client sent was verified (%.1f s)", now() - g_start);
	else
		say("PASS: %u round%s of %" PRIu64 " bytes written, read and sent, %u fetch-adds "
		    "and the compare-and-swap chain, all verified (%.1f s)", o_rounds,
		    o_rounds == 1 ? "" : "s", o_bytes, o_natomic, now() - g_start);
	return EX_OK;
}
