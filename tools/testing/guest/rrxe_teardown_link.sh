#!/bin/sh
# Teardown under load, one guest: rrxe_xfer pairs (verified WRITE/READ/SEND/atomics,
# repeated) and an ib_write_bw pair run over rrxe0, looped back on eth0's address,
# while `rdma link delete rrxe0` removes the device; then `rdma link add` re-creates
# it and the traffic restarts; rrxe.teardown_cycles= cycles (default 10). Every
# rrxe_xfer must end with an error exit or IBV_EVENT_DEVICE_FATAL, nothing may hang or
# splat (the harness reads the console for KASAN, lockdep, kmemleak ...), and the
# re-created device must carry a verified transfer; rrxe unloads at the end.
# topology: single
# timeout: 600
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/xfer.sh"

load_rrxe rrxe0
teardown_under_load td_link_delete td_link_add
run timeout 60 rmmod rrxe
