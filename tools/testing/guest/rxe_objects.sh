#!/bin/sh
# Baseline for rrxe_objects: create and destroy 10,000 verbs objects (PD, MR, CQ, QP,
# AH in rotation) on upstream rdma_rxe. Under the debug kernel
# (tools/testing/run.sh --variant debug) KASAN/kmemleak/lockdep watch the churn.
# topology: single
# timeout: 600
. "$RRXE_LIB"

command -v rrxe_verbs >/dev/null || fail "rrxe_verbs not on PATH: run tools/testing/verbs/build.sh"
load_rxe rxe0
gid=$(gid_index rxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
run rrxe_verbs -v -d rxe0 -g "$gid" -n 10000 objects cleanup
