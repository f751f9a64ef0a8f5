// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_verbs group "odp": on-demand paging (IBV_ACCESS_ON_DEMAND) between two
 * RC QPs of the device: A is the requester, B the responder.
 *
 * Every ODP region lies over anonymous memory the program has not touched
 * (fresh mmap), so the driver meets pages that are not there and has to
 * fault them in from its datapath: as the target of RDMA WRITE, READ and
 * atomics, as a local gather buffer of a SEND and a scatter buffer of a
 * receive and of a READ response. ibv_advise_mr prefetches; madvise
 * (MADV_DONTNEED), a new mapping over part of a region, and munmap make the
 * kernel invalidate it, and later accesses must reach the new pages (zeros),
 * never the old.
 *
 * Where rxe differs: rxe 7.3 copies into and out of an ODP region from the
 * start of each page, whatever the offset in the page, and does not advance
 * its side of the copy from page to page (rxe_odp.c, __rxe_odp_mr_copy), so
 * the bytes land elsewhere whenever a packet does not start on a page
 * boundary (every packet but the first of each page at a 1024-byte MTU).
 * On rxe the data checks of copies are logged, not enforced; statuses,
 * atomics and everything else are checked on both.
 *
 * librxe of rdma-core 44 (the guest's) has no advise_mr: ibv_advise_mr fails
 * with EOPNOTSUPP there without asking the kernel, so the cases then issue the
 * same uverbs command through ibv_cmd_advise_mr, the helper libibverbs
 * exports for providers (later librxe calls exactly that).
 *
 * The guest kernel may lack madvise (CONFIG_ADVISE_SYSCALLS): that step is
 * then skipped (logged); the other invalidations still run.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cases.h"

/* libibverbs' provider helper (IBVERBS_PRIVATE_34), not in the public headers. */
int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		      struct ibv_sge *sg_list, uint32_t num_sge);

#define PG		4096
#define ODP_PAGES	16
#define ODP_LEN		(ODP_PAGES * PG)
#define ODP_ACCESS	(DP_ACCESS | IBV_ACCESS_ON_DEMAND)

/* Fresh anonymous memory, not touched (no page is there yet); unmapped after the case. */
static void *fresh(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	track(K_MAP, p, len);
	return p;
}

/* How many pages of [p, p + len) are resident. */
static int resident(void *p, size_t len)
{
	unsigned char v[ODP_PAGES];
	size_t n = len / PG, i;
	int r = 0;

	if (n > ODP_PAGES || mincore(p, len, v))
		return -1;
	for (i = 0; i < n; i++)
		r += v[i] & 1;
	return r;
}

/*
 * Copied data checks: enforced on rrxe, logged on rxe (see the top of the file).
 * `failed` is a data check's result (non-zero: failed, with g_reason set).
 */
static int odp_data_check(int failed)
{
	if (!failed)
		return 0;
	if (vt_driver() != DRV_RXE)
		return -1;
	vlog("rxe: %s (rxe's ODP copy ignores the page offset; not enforced on rxe)", g_reason);
	g_reason[0] = 0;
	return 0;
}

static int odp_same(const uint8_t *got, const uint8_t *want, size_t len, const char *what)
{
	return odp_data_check(same(got, want, len, what));
}

static int odp_untouched(const uint8_t *p, size_t len, uint8_t c, const char *what)
{
	return odp_data_check(untouched(p, len, c, what));
}

/* ibv_advise_mr, or the uverbs command itself where librxe lacks advise_mr. */
static int advise(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		  struct ibv_sge *sge)
{
	int rc = ibv_advise_mr(pd, advice, flags, sge, 1);

	if (rc_err(rc) != EOPNOTSUPP)
		return rc;
	return ibv_cmd_advise_mr(pd, advice, flags, sge, 1);
}

/* A fresh RC pair in a new PD, and an ODP region of B over fresh memory. */
static int odp_pair(struct env *e, struct ibv_pd **pd, struct rc_pair *p, uint8_t **odp,
		    struct ibv_mr **mr)
{
	const struct rc_opts o = {
		.rnr_retry = 7, .retry_cnt = 7, .cqe_b = 4 * DP_BURST, .access_b = DP_ACCESS,
	};

	NEW(*pd, ibv_alloc_pd(e->ctx));
	if (rc_pair_opts(e, *pd, &o, p))
		return -1;
	*odp = fresh(ODP_LEN);
	CHECK(*odp, "mmap failed");
	NEW(*mr, ibv_reg_mr(*pd, *odp, ODP_LEN, ODP_ACCESS));
	CHECK(resident(*odp, ODP_LEN) == 0, "registration faulted pages in");
	return 0;
}

/* A's RDMA op `op` of `len` bytes between local (lkey) and remote (rkey): status `want`. */
static int rdma(struct rc_pair *p, enum ibv_wr_opcode op, uint64_t id, void *local,
		uint32_t len, uint32_t lkey, void *remote, uint32_t rkey,
		enum ibv_wc_status want, const char *what)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	send_wr(&wr, &sge, op, id, local, len, lkey);
	wr.wr.rdma.remote_addr = (uintptr_t)remote;
	wr.wr.rdma.rkey = rkey;
	if (post_a(p, &wr))
		return -1;
	if (want != IBV_WC_SUCCESS)
		return expect_wc(p->cq_a, what, p->a, id, want, 0, -1, NULL);
	return expect_wc(p->cq_a, what, p->a, id, want,
			 op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE, -1, NULL);
}

/* A's atomic `op` on the word at remote: returns the original in *res. */
static int atomic(struct rc_pair *p, enum ibv_wr_opcode op, uint64_t id, uint64_t *res,
		  uint64_t *remote, uint32_t rkey, uint64_t cmp_add, uint64_t swap, const char *what)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	*res = 0xeeeeeeeeeeeeeeeeull;
	send_wr(&wr, &sge, op, id, res, 8, p->mr_a->lkey);
	wr.wr.atomic.remote_addr = (uintptr_t)remote;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	if (post_a(p, &wr))
		return -1;
	return expect_wc(p->cq_a, what, p->a, id, IBV_WC_SUCCESS,
			 op == IBV_WR_ATOMIC_FETCH_AND_ADD ? IBV_WC_FETCH_ADD : IBV_WC_COMP_SWAP,
			 8, NULL);
}

/*
 * The device announces ODP (explicit regions, RC SEND/RECV/WRITE/READ/ATOMIC,
 * UD SEND/RECV); an ODP registration takes no page; implicit ODP (the whole
 * address space) is refused.
 */
int t_odp_caps(struct env *e)
{
	const uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
			    IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC;
	const uint32_t ud = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV;
	struct ibv_device_attr_ex dx;
	struct ibv_mr *mr, *bad;
	struct ibv_pd *pd;
	uint8_t *buf;

	memset(&dx, 0, sizeof(dx));
	OK(ibv_query_device_ex(e->ctx, NULL, &dx));
	vlog("odp general 0x%" PRIx64 " rc 0x%x uc 0x%x ud 0x%x", dx.odp_caps.general_caps,
	     dx.odp_caps.per_transport_caps.rc_odp_caps,
	     dx.odp_caps.per_transport_caps.uc_odp_caps,
	     dx.odp_caps.per_transport_caps.ud_odp_caps);
	CHECK(dx.odp_caps.general_caps & IBV_ODP_SUPPORT, "no IBV_ODP_SUPPORT");
	CHECK(!(dx.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT),
	      "implicit ODP announced");
	CHECK((dx.odp_caps.per_transport_caps.rc_odp_caps & rc) == rc,
	      "rc_odp_caps 0x%x lack 0x%x", dx.odp_caps.per_transport_caps.rc_odp_caps, rc);
	CHECK((dx.odp_caps.per_transport_caps.ud_odp_caps & ud) == ud,
	      "ud_odp_caps 0x%x lack 0x%x", dx.odp_caps.per_transport_caps.ud_odp_caps, ud);

	NEW(pd, ibv_alloc_pd(e->ctx));
	buf = fresh(ODP_LEN);
	CHECK(buf, "mmap failed");
	NEW(mr, ibv_reg_mr(pd, buf, ODP_LEN, ODP_ACCESS));
	CHECK(resident(buf, ODP_LEN) == 0, "ODP registration faulted pages in");
	NEW_ERR(EOPNOTSUPP, bad, ibv_reg_mr(pd, NULL, SIZE_MAX, ODP_ACCESS), "implicit ODP");
	return 0;
}

/*
 * RDMA WRITE, READ and atomics into an ODP region of B whose pages are not
 * there yet; what lands there is what user space then reads, and what was
 * never written reads as zeros.
 */
int t_odp_rdma(struct env *e)
{
	const uint32_t wlen = 3 * PG + 17;
	uint64_t *word, *res;
	struct ibv_pd *pd;
	struct rc_pair p;
	struct ibv_mr *mr;
	uint8_t *odp;

	if (odp_pair(e, &pd, &p, &odp, &mr))
		return -1;
	/* WRITE across four pages, starting inside the first. */
	fill(p.buf_a, DP_BUF, 11);
	if (rdma(&p, IBV_WR_RDMA_WRITE, 1, p.buf_a, wlen, p.mr_a->lkey, odp + 100, mr->rkey,
		 IBV_WC_SUCCESS, "WRITE into ODP pages not there"))
		return -1;
	if (odp_same(odp + 100, p.buf_a, wlen, "ODP region after WRITE") ||
	    odp_untouched(odp, 100, 0, "ODP bytes before the WRITE") ||
	    odp_untouched(odp + 100 + wlen, 5 * PG - 100 - wlen, 0, "ODP bytes after the WRITE"))
		return -1;
	vlog("WRITE of %u bytes into untouched ODP pages: data in place", wlen);

	/* READ pages never touched: zeros; then what user space wrote there. */
	memset(p.buf_a, 0xee, DP_BUF);
	if (rdma(&p, IBV_WR_RDMA_READ, 2, p.buf_a, 2 * PG, p.mr_a->lkey, odp + 8 * PG, mr->rkey,
		 IBV_WC_SUCCESS, "READ of untouched ODP pages") ||
	    untouched(p.buf_a, 2 * PG, 0, "READ of untouched ODP pages"))
		return -1;
	fill(odp + 10 * PG, 2 * PG, 12);
	if (rdma(&p, IBV_WR_RDMA_READ, 3, p.buf_a, 2 * PG, p.mr_a->lkey, odp + 10 * PG,
		 mr->rkey, IBV_WC_SUCCESS, "READ of ODP pages user space wrote") ||
	    odp_same(p.buf_a, odp + 10 * PG, 2 * PG, "READ of ODP pages user space wrote"))
		return -1;
	vlog("READ from ODP: zeros where untouched, user data where written");

	/* Atomics on a word of a page not there yet. */
	word = (uint64_t *)(odp + 14 * PG + 64);
	res = (uint64_t *)(p.buf_a + 1024);
	if (atomic(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, 4, res, word, mr->rkey, 23, 0,
		   "FETCH_AND_ADD on an untouched ODP page"))
		return -1;
	CHECK(*res == 0, "FETCH_AND_ADD returned %" PRIu64 ", expected 0", *res);
	CHECK(*word == 23, "FETCH_AND_ADD left %" PRIu64 ", expected 23", *word);
	if (atomic(&p, IBV_WR_ATOMIC_CMP_AND_SWP, 5, res, word, mr->rkey, 23, 0xabcdef, "CMP_AND_SWP"))
		return -1;
	CHECK(*res == 23, "CMP_AND_SWP returned %" PRIu64 ", expected 23", *res);
	CHECK(*word == 0xabcdef, "CMP_AND_SWP left 0x%" PRIx64 ", expected 0xabcdef", *word);
	vlog("atomics on an untouched ODP page: right results");
	return 0;
}

/*
 * ODP regions as local buffers: A SENDs from an ODP region half of which user
 * space wrote (the rest reads as zeros) into a receive buffer of B in an ODP
 * region not touched; A READs B's memory into an untouched ODP region of its own.
 */
int t_odp_local(struct env *e)
{
	struct ibv_mr *src_mr, *dst_mr, *rd_mr;
	uint8_t *src, *dst, *rd, *want;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_pd *pd;
	struct rc_pair p;

	if (odp_pair(e, &pd, &p, &dst, &dst_mr))
		return -1;
	src = fresh(ODP_LEN);
	rd = fresh(ODP_LEN);
	want = malloc(ODP_LEN);
	CHECK(src && rd && want, "mmap failed");
	NEW(src_mr, ibv_reg_mr(pd, src, ODP_LEN, ODP_ACCESS));
	NEW(rd_mr, ibv_reg_mr(pd, rd, ODP_LEN, ODP_ACCESS));
	fill(src, 2 * PG, 21);
	memcpy(want, src, 2 * PG);
	memset(want + 2 * PG, 0, 2 * PG);

	if (post_recv_sges(p.b, set_sge(&sge, dst + 300, 4 * PG, dst_mr->lkey), 1, 7))
		goto fail;
	send_wr(&wr, &sge, IBV_WR_SEND, 8, src, 4 * PG, src_mr->lkey);
	if (post_a(&p, &wr) ||
	    expect_wc(p.cq_a, "SEND from ODP", p.a, 8, IBV_WC_SUCCESS, IBV_WC_SEND, -1, NULL) ||
	    expect_wc(p.cq_b, "receive into ODP", p.b, 7, IBV_WC_SUCCESS, IBV_WC_RECV, 4 * PG,
		      NULL) ||
	    odp_same(dst + 300, want, 4 * PG, "ODP receive buffer"))
		goto fail;
	vlog("SEND from a half-touched ODP region into an untouched one: data intact");

	fill(p.buf_b, DP_BUF, 22);
	if (rdma(&p, IBV_WR_RDMA_READ, 9, rd + 5, 3 * PG, rd_mr->lkey, p.buf_b, p.mr_b->rkey,
		 IBV_WC_SUCCESS, "READ into an untouched ODP region") ||
	    odp_same(rd + 5, p.buf_b, 3 * PG, "local ODP READ buffer"))
		goto fail;
	vlog("READ response into an untouched local ODP region: data intact");
	free(want);
	return 0;
fail:
	free(want);
	return -1;
}

/*
 * ibv_advise_mr: PREFETCH_WRITE with IBV_ADVISE_MR_FLAG_FLUSH brings the pages
 * in before it returns; PREFETCH and PREFETCH_NO_FAULT (with and without the
 * flag) succeed; an unknown lkey is EINVAL; the region works afterwards.
 */
int t_odp_prefetch(struct env *e)
{
	struct ibv_sge sge;
	struct ibv_pd *pd;
	struct rc_pair p;
	struct ibv_mr *mr;
	uint8_t *odp;
	int r;

	if (odp_pair(e, &pd, &p, &odp, &mr))
		return -1;
	OK(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH,
			 set_sge(&sge, odp, 4 * PG, mr->lkey)));
	r = resident(odp, ODP_LEN);
	CHECK(r >= 4, "after PREFETCH_WRITE of 4 pages, %d resident", r);
	vlog("PREFETCH_WRITE (flush) of 4 pages: %d resident", r);
	OK(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH,
			 set_sge(&sge, odp + 4 * PG, 4 * PG, mr->lkey)));
	OK(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, IBV_ADVISE_MR_FLAG_FLUSH,
			 set_sge(&sge, odp + 8 * PG, 4 * PG, mr->lkey)));
	OK(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0,
			 set_sge(&sge, odp + 12 * PG, 4 * PG, mr->lkey)));
	ERR(EINVAL, advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH,
				  set_sge(&sge, odp, PG, mr->lkey ^ 0x7f00)),
	    "advise_mr with an unknown lkey");

	fill(p.buf_a, DP_BUF, 31);
	if (rdma(&p, IBV_WR_RDMA_WRITE, 1, p.buf_a, ODP_LEN, p.mr_a->lkey, odp, mr->rkey,
		 IBV_WC_SUCCESS, "WRITE after prefetch") ||
	    odp_same(odp, p.buf_a, ODP_LEN, "ODP region after prefetch and WRITE"))
		return -1;
	return 0;
}

/*
 * Invalidation: after madvise(MADV_DONTNEED) of pages of an ODP region, and
 * after munmap and a new mapping at the same address, the region reaches the
 * new pages (zeros for READ; a WRITE shows in what user space reads), never
 * the old ones. A WRITE to a part left unmapped fails (remote access error).
 */
int t_odp_invalidate(struct env *e)
{
	struct ibv_pd *pd;
	struct rc_pair p;
	struct ibv_mr *mr;
	uint8_t *odp;
	void *again;

	if (odp_pair(e, &pd, &p, &odp, &mr))
		return -1;
	fill(p.buf_a, DP_BUF, 41);
	if (rdma(&p, IBV_WR_RDMA_WRITE, 1, p.buf_a, ODP_LEN, p.mr_a->lkey, odp, mr->rkey,
		 IBV_WC_SUCCESS, "WRITE of the whole ODP region") ||
	    odp_same(odp, p.buf_a, ODP_LEN, "ODP region after WRITE"))
		return -1;

	/* Discard pages 4..7: zeros for user space and for READ. */
	if (madvise(odp + 4 * PG, 4 * PG, MADV_DONTNEED)) {
		CHECK(errno == ENOSYS, "madvise: %s", errname(errno));
		vlog("no madvise in this kernel: MADV_DONTNEED step skipped");
		goto remap;
	}
	memset(p.buf_a, 0xee, DP_BUF);
	if (rdma(&p, IBV_WR_RDMA_READ, 2, p.buf_a, 6 * PG, p.mr_a->lkey, odp + 3 * PG, mr->rkey,
		 IBV_WC_SUCCESS, "READ after MADV_DONTNEED") ||
	    untouched(p.buf_a + PG, 4 * PG, 0, "READ of discarded ODP pages") ||
	    odp_same(p.buf_a + 5 * PG, odp + 8 * PG, PG, "READ of a kept ODP page"))
		return -1;
	fill(p.buf_a, DP_BUF, 42);
	if (rdma(&p, IBV_WR_RDMA_WRITE, 3, p.buf_a, 4 * PG, p.mr_a->lkey, odp + 4 * PG, mr->rkey,
		 IBV_WC_SUCCESS, "WRITE after MADV_DONTNEED") ||
	    odp_same(odp + 4 * PG, p.buf_a, 4 * PG, "discarded ODP pages after WRITE"))
		return -1;
	vlog("MADV_DONTNEED: READ saw zeros, WRITE reached the new pages");

remap:
	/* A new mapping over live pages 0..3 (no munmap first). */
	again = mmap(odp, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		     -1, 0);
	CHECK(again == odp, "mmap MAP_FIXED failed");
	memset(p.buf_a, 0xee, DP_BUF);
	if (rdma(&p, IBV_WR_RDMA_READ, 7, p.buf_a, 4 * PG, p.mr_a->lkey, odp, mr->rkey,
		 IBV_WC_SUCCESS, "READ after mmap over the region") ||
	    untouched(p.buf_a, 4 * PG, 0, "READ of replaced ODP pages"))
		return -1;
	fill(p.buf_a, DP_BUF, 44);
	if (rdma(&p, IBV_WR_RDMA_WRITE, 8, p.buf_a, 4 * PG, p.mr_a->lkey, odp, mr->rkey,
		 IBV_WC_SUCCESS, "WRITE after mmap over the region") ||
	    odp_same(odp, p.buf_a, 4 * PG, "replaced ODP pages after WRITE"))
		return -1;
	vlog("mmap over live pages: READ saw zeros, WRITE reached the new pages");

	/* Unmap pages 8..11 and map fresh memory there. */
	CHECK(!munmap(odp + 8 * PG, 4 * PG), "munmap: %s", errname(errno));
	again = mmap(odp + 8 * PG, 4 * PG, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK(again == odp + 8 * PG, "mmap MAP_FIXED failed");
	memset(p.buf_a, 0xee, DP_BUF);
	if (rdma(&p, IBV_WR_RDMA_READ, 4, p.buf_a, 4 * PG, p.mr_a->lkey, odp + 8 * PG, mr->rkey,
		 IBV_WC_SUCCESS, "READ after munmap and mmap") ||
	    untouched(p.buf_a, 4 * PG, 0, "READ of remapped ODP pages"))
		return -1;
	fill(p.buf_a, DP_BUF, 43);
	if (rdma(&p, IBV_WR_RDMA_WRITE, 5, p.buf_a, 4 * PG, p.mr_a->lkey, odp + 8 * PG, mr->rkey,
		 IBV_WC_SUCCESS, "WRITE after munmap and mmap") ||
	    odp_same(odp + 8 * PG, p.buf_a, 4 * PG, "remapped ODP pages after WRITE"))
		return -1;
	vlog("munmap + mmap: READ saw zeros, WRITE reached the new pages");

	/* Pages 12..15 unmapped for good: the WRITE cannot be placed. */
	CHECK(!munmap(odp + 12 * PG, 4 * PG), "munmap: %s", errname(errno));
	if (rdma(&p, IBV_WR_RDMA_WRITE, 6, p.buf_a, PG, p.mr_a->lkey, odp + 12 * PG, mr->rkey,
		 IBV_WC_REM_ACCESS_ERR, "WRITE to unmapped ODP pages"))
		return -1;
	vlog("WRITE to unmapped ODP pages: remote access error");
	return 0;
}
