#!/bin/sh
# Every control-verb case of the rrxe_verbs program (device, PD, MR, CQ, QP, SRQ, AH,
# user-space ring fast paths, cleanup on close) against rrxe, through the stock
# libibverbs/librxe, with the error numbers upstream rxe gives (baseline: rxe_verbs).
# Needs tools/testing/verbs/build.sh (run by tools/testing/run.sh).
# topology: single
# timeout: 180
. "$RRXE_LIB"

command -v rrxe_verbs >/dev/null || fail "rrxe_verbs not on PATH: run tools/testing/verbs/build.sh"
load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
rrxe_verbs -v -d rrxe0 -g "$gid"
rc=$?
dmesg | grep -i rrxe | tail -40 | sed 's/^/  dmesg| /'
[ $rc = 0 ] || fail "rrxe_verbs rc=$rc"
