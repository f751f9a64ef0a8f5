#!/bin/sh
# Baseline for rrxe_pair_lossy and interop_lossy, upstream rdma_rxe on both guests:
# rrxe_xfer's verified RC transfers (RDMA WRITE, READ and SEND, fetch-and-adds that
# must count exactly once, a compare-and-swap chain) over a link that loses 10% of
# the packets in each direction and delays, reorders, duplicates and corrupts others
# (netem on both guests' eth0); A is the client of B, then B of A. Sizes and the
# impairments come from the kernel command line (lib/xfer.sh).
# topology: pair
# timeout: 900
# alone: its loss recovery is timed (ACK timeout, 7 retries); beside other guests the host's
# UDP buffers between the two guests may drop bursts on top of netem's 10%
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/xfer.sh"

load_driver
lossy_pair_xfer
