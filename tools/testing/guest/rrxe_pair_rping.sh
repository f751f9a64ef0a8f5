#!/bin/sh
# rping over the wire between rrxe on guest A (client) and rrxe on guest B (server),
# 20 pings with data verification (-V); rdma_cm's CM MADs cross the wire on the GSI
# QPs. Checks that eth0 really carried the traffic.
# topology: pair
# timeout: 240
. "$RRXE_LIB"

load_rrxe rrxe0
pair_rping
