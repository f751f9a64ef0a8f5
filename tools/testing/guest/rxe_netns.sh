#!/bin/sh
# Baseline of rrxe_netns: the same namespace steps (lib/netns.sh) with upstream
# rdma_rxe.
# topology: single
# timeout: 240
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/netns.sh"

netns_test rxe
