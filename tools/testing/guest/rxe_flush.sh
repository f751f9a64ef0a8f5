#!/bin/sh
# Baseline for rrxe_flush: the rrxe_verbs "rdma_flush" group (FLUSH capabilities, FLUSH of
# a range, of the whole MR and of 0 bytes, FLUSH refused without the MR's or QP's right or
# past the MR, FLUSH_PERSISTENT registration refused) against upstream rdma_rxe, so every
# status the cases expect is rxe's too.
# topology: single
# timeout: 180
. "$RRXE_LIB"

rxe_verbs_cases rdma_flush
