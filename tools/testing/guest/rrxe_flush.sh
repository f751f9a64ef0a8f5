#!/bin/sh
# RDMA FLUSH on rrxe through the stock librxe: the rrxe_verbs "rdma_flush" group. The
# device announces FLUSH (global, persistent) and ATOMIC WRITE in ibv_query_device_ex; an
# RDMA WRITE, then FLUSHes (global) of its range, of the whole MR, of the last byte and of
# 0 bytes at the end complete with IBV_WC_FLUSH; a FLUSH to an MR or a QP without the
# FLUSH right, or past the MR, fails (REM_ACCESS_ERR, REM_INV_REQ_ERR) and changes no
# memory; an MR cannot be registered with FLUSH_PERSISTENT (EINVAL, no pmem). The guest's
# rdma-core 44 has no ibv_wr_flush: the program writes librxe 45's FLUSH WQE itself (see
# tools/testing/verbs/rrxe_verbs/flush.c). The same cases pass on upstream rxe (rxe_flush).
# topology: single
# timeout: 180
. "$RRXE_LIB"

rrxe_verbs_cases rdma_flush
