#!/bin/sh
# The "protection" and "bounds" cases of the rrxe_verbs program on rrxe0 (baseline:
# rxe_bounds): remote accesses the responder must refuse, and MRs, SGEs, UD messages,
# remote ranges and atomics at the edges of MRs and of the 64-bit address space,
# expecting the IB spec's statuses. ud_recv_2_64 (a UD receive SGE across 2^64) runs
# last: it oopsed rrxe. Every wait in the program is bounded.
# topology: single
# timeout: 240
. "$RRXE_LIB"

command -v rrxe_verbs >/dev/null || fail "rrxe_verbs not on PATH: run tools/testing/verbs/build.sh"
load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
start=$(date +%s)
log "+ rrxe_verbs -v -d rrxe0 -D rrxe -g $gid protection"
timeout 200 rrxe_verbs -v -d rrxe0 -D rrxe -g "$gid" protection
rc1=$?
log "+ rrxe_verbs -v -d rrxe0 -D rrxe -g $gid bounds"
timeout 200 rrxe_verbs -v -d rrxe0 -D rrxe -g "$gid" bounds
rc2=$?
log "protection and bounds took $(($(date +%s) - start)) s"
show_counters rrxe0
dmesg | grep -i rrxe | tail -40 | sed 's/^/  dmesg| /'
[ $rc1 = 0 ] || fail "rrxe_verbs protection rc=$rc1"
[ $rc2 = 0 ] || fail "rrxe_verbs bounds rc=$rc2"
