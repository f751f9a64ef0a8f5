#!/bin/sh
# Interop over a bad link: rrxe on guest A, upstream rdma_rxe on guest B, rrxe_xfer's
# verified RC transfers (RDMA WRITE, READ and SEND, fetch-and-adds that must count
# exactly once, a compare-and-swap chain) with netem on both guests' eth0 (10% loss
# each way, delay, reordering, duplicates, corruption). A is the client of B, then B
# of A, so each driver is requester and responder against the other's
# retransmissions. Baseline: rxe_pair_lossy. Sizes and impairments: lib/xfer.sh.
# topology: pair
# append: rrxe.driver=rrxe
# append-b: rrxe.driver=rxe
# timeout: 900
# alone: its loss recovery is timed (ACK timeout, 7 retries); beside other guests the host's
# UDP buffers between the two guests may drop bursts on top of netem's 10%
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/xfer.sh"

load_driver
lossy_pair_xfer
