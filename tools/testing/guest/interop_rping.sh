#!/bin/sh
# Interop: rping over the wire between upstream rdma_rxe on guest A (client) and rrxe
# on guest B (server), 20 pings with data verification (-V). The CM's MADs (UD on the
# GSI QPs) and the RC traffic must both agree with rxe's wire format.
# topology: pair
# timeout: 240
. "$RRXE_LIB"

load_interop
pair_rping
