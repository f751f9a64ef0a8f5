#!/bin/sh
# Baseline for rrxe_odp: the rrxe_verbs "odp" group (ODP caps, faults on WRITE/READ/atomics/
# SEND/receive into untouched pages, ibv_advise_mr, invalidation by MADV_DONTNEED and
# munmap), ibv_devinfo's ODP caps and perftest's ib_write_bw/ib_read_bw/ib_send_bw --odp
# (RC, SRQ, UD) against upstream rdma_rxe, so everything rrxe_odp expects is rxe's too.
# topology: single
# timeout: 420
. "$RRXE_LIB"

rxe_verbs_cases odp
odp_perftest rxe0
