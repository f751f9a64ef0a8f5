#!/bin/sh
# Create and destroy 10,000 verbs objects (PD, MR, CQ, QP, AH in rotation) on rrxe,
# then close a context that still holds objects of every kind. Meant for the debug
# kernel too (tools/testing/run.sh --variant debug): KASAN, kmemleak and lockdep
# reports fail the test through the splat check. Baseline: rxe_objects.
# topology: single
# timeout: 600
. "$RRXE_LIB"

command -v rrxe_verbs >/dev/null || fail "rrxe_verbs not on PATH: run tools/testing/verbs/build.sh"
load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
rrxe_verbs -v -d rrxe0 -g "$gid" -n 10000 objects cleanup
rc=$?
dmesg | grep -i rrxe | tail -40 | sed 's/^/  dmesg| /'
[ $rc = 0 ] || fail "rrxe_verbs rc=$rc"
