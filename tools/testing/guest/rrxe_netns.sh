#!/bin/sh
# rrxe devices in network namespaces other than the initial one, as rxe has them
# (lib/netns.sh): devices added inside two namespaces over veth pairs, RC traffic
# (ibv_rc_pingpong) to both at once, a per-namespace UDP 4791 socket that follows the
# namespace's devices, devices removed when their net device moves away or their
# namespace is deleted, a namespace made again, and rmmod.
# topology: single
# timeout: 240
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/netns.sh"

netns_test rrxe
