/* SPDX-License-Identifier: GPL-2.0 */
/* rrxe_verbs: the cases (one function each) and the options only they use. */
#ifndef RRXE_VERBS_CASES_H
#define RRXE_VERBS_CASES_H

#include "vt.h"

extern long g_count;	/* -n: objects the "objects" case creates and destroys */

/* control.c */
int t_device(struct env *e);
int t_pd(struct env *e);
int t_mr(struct env *e);
int t_cq(struct env *e);
int t_qp(struct env *e);
int t_srq(struct env *e);
int t_ah(struct env *e);
int t_fastpath(struct env *e);
int t_flush(struct env *e);
int t_cleanup(struct env *e);
int t_objects(struct env *e);

/* datapath.c */
int t_rc_loop(struct env *e);
int t_srq_limit(struct env *e);
int t_rnr(struct env *e);
int t_atomic_write(struct env *e);
int t_cq_overflow(struct env *e);

/* multi_sge.c */
int t_multi_sge(struct env *e);

/* bounds.c */
int t_mr_iova(struct env *e);
int t_sge_end(struct env *e);
int t_sge_zero_len(struct env *e);
int t_sge_max(struct env *e);
int t_sge_cross_end(struct env *e);
int t_sge_cross_2_64(struct env *e);
int t_rdma_range(struct env *e);
int t_atomic_bounds(struct env *e);
int t_ud_mtu(struct env *e);
int t_ud_short_recv(struct env *e);
int t_ud_qkey(struct env *e);
int t_ud_recv_2_64(struct env *e);

/* protection.c */
int t_prot_bad_rkey(struct env *e);
int t_prot_other_pd(struct env *e);
int t_prot_past_end(struct env *e);
int t_prot_mr_no_write(struct env *e);
int t_prot_mr_no_read(struct env *e);
int t_prot_mr_no_atomic(struct env *e);
int t_prot_qp_no_write(struct env *e);
int t_prot_qp_no_read(struct env *e);
int t_prot_qp_no_atomic(struct env *e);
int t_prot_dereg(struct env *e);

/* flush.c */
int t_flush_global(struct env *e);
int t_flush_refused(struct env *e);

/* windows.c */
int t_mw_type1(struct env *e);
int t_mw_range(struct env *e);
int t_mw_type2(struct env *e);
int t_mw_bind_err(struct env *e);

/* odp.c */
int t_odp_caps(struct env *e);
int t_odp_rdma(struct env *e);
int t_odp_local(struct env *e);
int t_odp_prefetch(struct env *e);
int t_odp_invalidate(struct env *e);

/* rereg.c */
int t_rereg_access(struct env *e);
int t_rereg_pd(struct env *e);
int t_rereg_bad(struct env *e);
int t_rereg_odp(struct env *e);

#endif
