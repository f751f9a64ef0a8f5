#!/bin/sh
# Baseline for rrxe_windows: the rrxe_verbs "windows" group (memory windows of type 1 and
# 2: bind, WRITE/READ through them, range and rights refused, SEND_WITH_INV and LOCAL_INV,
# bind errors) against upstream rdma_rxe, so every status the cases expect is rxe's too.
# topology: single
# timeout: 180
. "$RRXE_LIB"

command -v rrxe_verbs >/dev/null || fail "rrxe_verbs not on PATH: run tools/testing/verbs/build.sh"
load_rxe rxe0
gid=$(gid_index rxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
log "+ rrxe_verbs -v -d rxe0 -g $gid windows"
timeout 150 rrxe_verbs -v -d rxe0 -g "$gid" windows || fail "rrxe_verbs windows on rxe rc=$?"
