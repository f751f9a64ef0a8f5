#!/bin/sh
# Baseline, two guests: rping over the wire between upstream rdma_rxe on guest A
# (client) and guest B (server), 20 pings with data verification (-V). Checks that
# eth0 really carried the traffic. Loads the driver named by rrxe.driver= (default rxe),
# so it doubles as an interop test: tools/qemu/run.sh --pair --test rxe_pair_rping
# --append-b rrxe.driver=rrxe
# topology: pair
# timeout: 240
. "$RRXE_LIB"

load_driver
pair_rping
