#!/bin/sh
# Baseline for rrxe_windows: the rrxe_verbs "windows" group (memory windows of type 1 and
# 2: bind, WRITE/READ through them, range and rights refused, SEND_WITH_INV and LOCAL_INV,
# bind errors) against upstream rdma_rxe, so every status the cases expect is rxe's too.
# topology: single
# timeout: 180
. "$RRXE_LIB"

rxe_verbs_cases windows
