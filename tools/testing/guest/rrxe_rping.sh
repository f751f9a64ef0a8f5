#!/bin/sh
# rping client and server on one guest over rrxe, 20 pings with data verification
# (-V). rdma_cm connects through the CM's MADs on rrxe's GSI QP (kernel verbs, UD), then RC.
# topology: single
# timeout: 180
. "$RRXE_LIB"

load_rrxe rrxe0
single_rping
