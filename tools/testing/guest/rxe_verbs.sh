#!/bin/sh
# Baseline for rrxe_verbs and rrxe_datapath: every control-verb case of the rrxe_verbs
# program (device, PD, MR, CQ, QP, SRQ, AH, user-space ring fast paths, cleanup on
# close), then its "datapath" cases (RC loopback between two QPs: rc_loop, srq_limit,
# rnr), pass on upstream rdma_rxe through the stock libibverbs/librxe. Proves the
# tests themselves right.
# Needs tools/testing/verbs/build.sh (run by tools/testing/run.sh).
# topology: single
# timeout: 180
. "$RRXE_LIB"

command -v rrxe_verbs >/dev/null || fail "rrxe_verbs not on PATH: run tools/testing/verbs/build.sh"
load_rxe rxe0
gid=$(gid_index rxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
run rrxe_verbs -v -d rxe0 -g "$gid"
run rrxe_verbs -v -d rxe0 -g "$gid" datapath
