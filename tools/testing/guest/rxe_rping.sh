#!/bin/sh
# Baseline: rping client and server on one guest over upstream rdma_rxe (rxe loops
# packets to its own address internally), 20 pings with data verification (-V).
# topology: single
# timeout: 180
. "$RRXE_LIB"

load_rxe rxe0
single_rping
