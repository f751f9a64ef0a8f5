// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_verbs: the "rereg" cases: ibv_rereg_mr of a region's access flags
 * and of its protection domain, seen by RDMA WRITE and READ from QP A into
 * QP B's side (RC; a fresh pair after each refused access, since a remote
 * access error moves both QPs to ERR), and requests the kernel refuses.
 *
 * What rxe offers (rxe_verbs.c, rxe_rereg_user_mr) and rrxe matches: a new
 * PD (IBV_REREG_MR_CHANGE_PD) and new access flags
 * (IBV_REREG_MR_CHANGE_ACCESS), the pages and keys kept (the command
 * reports the same lkey and rkey); a new translation
 * (IBV_REREG_MR_CHANGE_TRANSLATION) is EOPNOTSUPP. ib_core refuses the
 * rest first: no flag or remote write without local write EINVAL, an
 * unknown flag EOPNOTSUPP, write rights on pages pinned read-only EACCES
 * (ib_umem_check_rereg). The driver refuses access flags it does not offer
 * (IBV_ACCESS_ZERO_BASED): EOPNOTSUPP. A refused request changes nothing.
 * The same holds for on-demand paging regions (case rereg_odp).
 *
 * librxe of rdma-core 44 (the guest's) has no rereg_mr, so ibv_rereg_mr
 * never reaches the kernel: the cases issue the uverbs command with
 * ibv_cmd_rereg_mr, the helper libibverbs exports for providers. librxe
 * allocates its regions as a struct verbs_mr, whose first member is the
 * struct ibv_mr, which is what the helper takes.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>
#include <rdma/ib_user_verbs.h>

#include "edge.h"

/* libibverbs' provider helper (IBVERBS_PRIVATE_34), not in the public headers. */
struct rereg_cmd {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_rereg_mr core;
};
int ibv_cmd_rereg_mr(void *vmr, uint32_t flags, void *addr, size_t length, uint64_t hca_va,
		     int access, struct ibv_pd *pd, struct rereg_cmd *cmd, size_t cmd_sz,
		     struct ib_uverbs_rereg_mr_resp *resp, size_t resp_sz);

#define RG_LEN		8192	/* the re-registered region */
#define NO_WRITE	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ)

/* The uverbs REREG_MR command on mr; 0 or an errno value. */
static int rereg(struct ibv_mr *mr, uint32_t flags, int access, struct ibv_pd *pd)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct rereg_cmd cmd;
	int rc;

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	errno = 0;
	rc = ibv_cmd_rereg_mr(mr, flags, mr->addr, mr->length, (uintptr_t)mr->addr, access,
			      pd, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (rc)
		return rc_err(rc);
	/* ibv_rereg_mr does this for its callers. */
	if (flags & IBV_REREG_MR_CHANGE_PD)
		mr->pd = pd;
	return 0;
}

/* rereg must succeed and leave mr's keys as they were. */
static int rereg_ok(struct ibv_mr *mr, uint32_t flags, int access, struct ibv_pd *pd,
		    const char *what)
{
	uint32_t lkey = mr->lkey, rkey = mr->rkey;
	int rc = rereg(mr, flags, access, pd);

	CHECK(!rc, "%s: %s", what, errname(rc));
	CHECK(mr->lkey == lkey && mr->rkey == rkey,
	      "%s: keys 0x%x/0x%x became 0x%x/0x%x", what, lkey, rkey, mr->lkey, mr->rkey);
	vlog("%s: done, lkey 0x%x rkey 0x%x kept", what, lkey, rkey);
	return 0;
}

/* rereg must fail with `want` and leave mr's keys as they were. */
static int rereg_err(struct ibv_mr *mr, uint32_t flags, int access, struct ibv_pd *pd,
		     int want, const char *what)
{
	uint32_t lkey = mr->lkey, rkey = mr->rkey;
	int rc = rereg(mr, flags, access, pd);

	CHECK(rc, "%s: succeeded, expected %s", what, errname(want));
	CHECK(rc == want, "%s: got %s, expected %s", what, errname(rc), errname(want));
	CHECK(mr->lkey == lkey && mr->rkey == rkey, "%s: keys changed", what);
	vlog("%s: %s as expected", what, errname(want));
	return 0;
}

static int pair(struct env *e, struct ibv_pd *pd, struct rc_pair *p)
{
	const struct rc_opts o = {
		.rnr_retry = 7, .retry_cnt = 7, .cqe_b = 4 * DP_BURST, .access_b = DP_ACCESS,
	};

	return rc_pair_opts(e, pd, &o, p);
}

/* A's `op` (WRITE or READ) of `len` bytes from mr's start, through its rkey. */
static void rdma_wr(struct rc_pair *p, struct ibv_send_wr *wr, struct ibv_sge *s,
		    enum ibv_wr_opcode op, uint64_t id, struct ibv_mr *mr, uint32_t len)
{
	send_wr(wr, s, op, id, p->buf_a, len, p->mr_a->lkey);
	wr->wr.rdma.remote_addr = (uintptr_t)mr->addr;
	wr->wr.rdma.rkey = mr->rkey;
}

/*
 * The bytes arrived; for an on-demand paging region (odp) on rxe only
 * logged: rxe 7.3 copies into and out of ODP pages from the page's start
 * whatever the offset (rxe_odp.c, __rxe_odp_mr_copy; see odp.c).
 */
static int arrived(int odp, const uint8_t *got, const uint8_t *want, const char *what)
{
	if (!same(got, want, RG_LEN, what))
		return 0;
	if (!odp || vt_driver() != DRV_RXE)
		return -1;
	vlog("rxe: %s (rxe's ODP copy ignores the page offset; not enforced on rxe)", g_reason);
	g_reason[0] = 0;
	return 0;
}

/*
 * A's `op` (WRITE or READ) of all of mr (an ODP region if odp) works: the
 * bytes arrive.
 */
static int rdma_ok(struct rc_pair *p, struct ibv_mr *mr, int odp, enum ibv_wr_opcode op,
		   uint64_t id, const char *what)
{
	int write = op == IBV_WR_RDMA_WRITE;
	uint8_t *src = write ? p->buf_a : mr->addr, *dst = write ? mr->addr : p->buf_a;
	struct ibv_send_wr wr;
	struct ibv_sge s;

	fill(src, RG_LEN, (unsigned int)id);
	memset(dst, 0, RG_LEN);
	rdma_wr(p, &wr, &s, op, id, mr, RG_LEN);
	if (post_a(p, &wr) ||
	    expect_wc(p->cq_a, what, p->a, id, IBV_WC_SUCCESS,
		      write ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ, write ? -1 : RG_LEN, NULL) ||
	    arrived(odp, dst, src, what))
		return -1;
	vlog("%s: %s", what, write ? "written" : "read");
	return 0;
}

static int write_ok(struct rc_pair *p, struct ibv_mr *mr, int odp, uint64_t id, const char *what)
{
	return rdma_ok(p, mr, odp, IBV_WR_RDMA_WRITE, id, what);
}

static int read_ok(struct rc_pair *p, struct ibv_mr *mr, int odp, uint64_t id, const char *what)
{
	return rdma_ok(p, mr, odp, IBV_WR_RDMA_READ, id, what);
}

/* A WRITE into mr is refused: REM_ACCESS_ERR, mr's bytes unchanged, both QPs in ERR. */
static int write_refused(struct rc_pair *p, struct ibv_mr *mr, uint64_t id, const char *what)
{
	static uint8_t saved[RG_LEN];
	struct ibv_send_wr wr;
	struct ibv_sge s;

	fill(mr->addr, RG_LEN, 55);
	memcpy(saved, mr->addr, RG_LEN);
	fill(p->buf_a, RG_LEN, 56);
	rdma_wr(p, &wr, &s, IBV_WR_RDMA_WRITE, id, mr, RG_LEN);
	if (post_a(p, &wr) ||
	    expect_wc(p->cq_a, what, p->a, id, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE, -1, NULL) ||
	    same(mr->addr, saved, RG_LEN, what))
		return -1;
	QSTATE_W(p->a, IBV_QPS_ERR);
	QSTATE_W(p->b, IBV_QPS_ERR);
	vlog("%s: REM_ACCESS_ERR, memory unchanged", what);
	return 0;
}

/* A region of RG_LEN fresh bytes in pd (with ON_DEMAND: no page of them there yet). */
static int region(struct ibv_pd *pd, int access, struct ibv_mr **mr)
{
	uint8_t *buf;

	if (access & IBV_ACCESS_ON_DEMAND) {
		buf = mmap(NULL, RG_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(buf != MAP_FAILED, "mmap failed");
		track(K_MAP, buf, RG_LEN);
	} else {
		buf = page_buf(RG_LEN);
	}
	CHECK(buf, "mmap failed");
	NEW(*mr, ibv_reg_mr(pd, buf, RG_LEN, access));
	return 0;
}

int t_rereg_access(struct env *e)
{
	struct rc_pair p, q;
	struct ibv_pd *pd;
	struct ibv_mr *mr;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (pair(e, pd, &p) || pair(e, pd, &q) || region(pd, DP_ACCESS, &mr))
		return -1;
	if (write_ok(&p, mr, 0, 700, "WRITE before the rereg") ||
	    rereg_ok(mr, IBV_REREG_MR_CHANGE_ACCESS, NO_WRITE, NULL,
		     "access to LOCAL_WRITE|REMOTE_READ") ||
	    read_ok(&p, mr, 0, 701, "READ without REMOTE_WRITE") ||
	    write_refused(&p, mr, 702, "WRITE without REMOTE_WRITE") ||
	    rereg_ok(mr, IBV_REREG_MR_CHANGE_ACCESS, DP_ACCESS, NULL, "REMOTE_WRITE back") ||
	    write_ok(&q, mr, 0, 703, "WRITE with REMOTE_WRITE back") ||
	    read_ok(&q, mr, 0, 704, "READ with REMOTE_WRITE back"))
		return -1;
	return 0;
}

int t_rereg_pd(struct env *e)
{
	struct ibv_send_wr wr;
	struct ibv_pd *pd1, *pd2;
	struct rc_pair p1, p2;
	struct ibv_mr *mr;
	struct ibv_sge s;

	NEW(pd1, ibv_alloc_pd(e->ctx));
	NEW(pd2, ibv_alloc_pd(e->ctx));
	if (pair(e, pd1, &p1) || pair(e, pd2, &p2) || region(pd1, DP_ACCESS, &mr))
		return -1;
	if (write_ok(&p1, mr, 0, 710, "WRITE in the first PD") ||
	    rereg_ok(mr, IBV_REREG_MR_CHANGE_PD, 0, pd2, "PD to the second") ||
	    write_ok(&p2, mr, 0, 711, "WRITE through a QP of the second PD") ||
	    read_ok(&p2, mr, 0, 712, "READ through a QP of the second PD"))
		return -1;
	/* Its lkey now serves the second PD's QPs locally too. */
	fill(mr->addr, RG_LEN, 713);
	send_wr(&wr, &s, IBV_WR_RDMA_WRITE, 713, mr->addr, RG_LEN, mr->lkey);
	wr.wr.rdma.remote_addr = (uintptr_t)p2.buf_b;
	wr.wr.rdma.rkey = p2.mr_b->rkey;
	if (post_a(&p2, &wr) ||
	    expect_wc(p2.cq_a, "WRITE from it as a local buffer", p2.a, 713, IBV_WC_SUCCESS,
		      IBV_WC_RDMA_WRITE, -1, NULL) ||
	    same(p2.buf_b, mr->addr, RG_LEN, "WRITE from it as a local buffer"))
		return -1;
	if (write_refused(&p1, mr, 714, "WRITE through a QP of the first PD"))
		return -1;
	/* And back: the first PD's QPs (a fresh pair) reach it again. */
	if (pair(e, pd1, &p1) ||
	    rereg_ok(mr, IBV_REREG_MR_CHANGE_PD, 0, pd1, "PD back to the first") ||
	    write_ok(&p1, mr, 0, 715, "WRITE in the first PD again"))
		return -1;
	return 0;
}

int t_rereg_bad(struct env *e)
{
	struct ibv_mr *mr, *ro;
	struct ibv_pd *pd;
	struct rc_pair p;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (pair(e, pd, &p) || region(pd, DP_ACCESS, &mr) ||
	    region(pd, IBV_ACCESS_REMOTE_READ, &ro))
		return -1;
	if (rereg_err(mr, 0, DP_ACCESS, NULL, EINVAL, "no flag") ||
	    rereg_err(mr, 8, DP_ACCESS, NULL, EOPNOTSUPP, "unknown flag 8") ||
	    rereg_err(mr, IBV_REREG_MR_CHANGE_TRANSLATION, DP_ACCESS, NULL, EOPNOTSUPP,
		      "CHANGE_TRANSLATION (same range)") ||
	    rereg_err(mr, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS,
		      NO_WRITE, NULL, EOPNOTSUPP, "CHANGE_TRANSLATION with CHANGE_ACCESS") ||
	    rereg_err(mr, IBV_REREG_MR_CHANGE_ACCESS, IBV_ACCESS_REMOTE_WRITE, NULL, EINVAL,
		      "REMOTE_WRITE without LOCAL_WRITE") ||
	    rereg_err(mr, IBV_REREG_MR_CHANGE_ACCESS,
		      IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ, NULL, EINVAL,
		      "REMOTE_ATOMIC without LOCAL_WRITE") ||
	    rereg_err(mr, IBV_REREG_MR_CHANGE_ACCESS, DP_ACCESS | (1 << 15), NULL, EINVAL,
		      "unknown access bit 1<<15") ||
	    rereg_err(mr, IBV_REREG_MR_CHANGE_ACCESS, DP_ACCESS | IBV_ACCESS_ZERO_BASED, NULL,
		      EOPNOTSUPP, "ZERO_BASED") ||
	    rereg_err(ro, IBV_REREG_MR_CHANGE_ACCESS, IBV_ACCESS_LOCAL_WRITE, NULL, EACCES,
		      "LOCAL_WRITE on pages pinned read-only") ||
	    rereg_err(ro, IBV_REREG_MR_CHANGE_ACCESS, IBV_ACCESS_MW_BIND, NULL, EACCES,
		      "MW_BIND on pages pinned read-only") ||
	    rereg_err(ro, IBV_REREG_MR_CHANGE_ACCESS | IBV_REREG_MR_CHANGE_PD,
		      IBV_ACCESS_LOCAL_WRITE, pd, EACCES, "LOCAL_WRITE and the same PD, read-only"))
		return -1;
	/* Nothing changed: both regions work as registered. */
	if (write_ok(&p, mr, 0, 720, "WRITE after the refusals") ||
	    read_ok(&p, mr, 0, 721, "READ after the refusals") ||
	    read_ok(&p, ro, 0, 722, "READ of the read-only region"))
		return -1;
	/* The same PD: ib_core drops the flag, the driver is asked nothing. */
	if (rereg_ok(mr, IBV_REREG_MR_CHANGE_PD, 0, pd, "PD to its own PD") ||
	    rereg_ok(ro, IBV_REREG_MR_CHANGE_ACCESS, IBV_ACCESS_REMOTE_READ, NULL,
		     "read-only region to its own rights") ||
	    write_ok(&p, mr, 0, 723, "WRITE after the no-op"))
		return -1;
	return 0;
}

int t_rereg_odp(struct env *e)
{
	struct ibv_mr *mr, *ro;
	struct ibv_pd *pd;
	struct rc_pair p, q;

	NEW(pd, ibv_alloc_pd(e->ctx));
	if (pair(e, pd, &p) || pair(e, pd, &q) ||
	    region(pd, DP_ACCESS | IBV_ACCESS_ON_DEMAND, &mr) ||
	    region(pd, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND, &ro))
		return -1;
	if (rereg_ok(mr, IBV_REREG_MR_CHANGE_ACCESS, NO_WRITE | IBV_ACCESS_ON_DEMAND, NULL,
		     "ODP access to LOCAL_WRITE|REMOTE_READ") ||
	    read_ok(&p, mr, 1, 730, "READ of ODP without REMOTE_WRITE") ||
	    write_refused(&p, mr, 731, "WRITE into ODP without REMOTE_WRITE") ||
	    rereg_ok(mr, IBV_REREG_MR_CHANGE_ACCESS, DP_ACCESS | IBV_ACCESS_ON_DEMAND, NULL,
		     "ODP REMOTE_WRITE back") ||
	    write_ok(&q, mr, 1, 732, "WRITE into ODP with REMOTE_WRITE back") ||
	    rereg_err(ro, IBV_REREG_MR_CHANGE_ACCESS,
		      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND, NULL, EACCES,
		      "LOCAL_WRITE on a read-only ODP region") ||
	    read_ok(&q, ro, 1, 733, "READ of the read-only ODP region"))
		return -1;
	return 0;
}
