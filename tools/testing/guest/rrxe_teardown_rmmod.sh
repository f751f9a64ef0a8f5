#!/bin/sh
# Teardown under load, one guest: rrxe_xfer pairs (verified WRITE/READ/SEND/atomics,
# repeated) and an ib_write_bw pair run over rrxe0, looped back on eth0's address,
# while `rmmod rrxe` takes the module and its device away; then modprobe and
# `rdma link add` bring it back and the traffic restarts; rrxe.teardown_cycles=
# cycles (default 10). Every rrxe_xfer must end with an error exit or
# IBV_EVENT_DEVICE_FATAL, nothing may hang or splat, and the device of the last load
# must carry a verified transfer.
# topology: single
# timeout: 600
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/xfer.sh"

load_rrxe rrxe0
teardown_under_load td_rmmod td_modprobe
run timeout 60 rmmod rrxe
