#!/bin/sh
# Baseline for rrxe_flush: the rrxe_verbs "rdma_flush" group (FLUSH capabilities, FLUSH of
# a range, of the whole MR and of 0 bytes, FLUSH refused without the MR's or QP's right or
# past the MR, FLUSH_PERSISTENT registration refused) against upstream rdma_rxe, so every
# status the cases expect is rxe's too.
# topology: single
# timeout: 180
. "$RRXE_LIB"

command -v rrxe_verbs >/dev/null || fail "rrxe_verbs not on PATH: run tools/testing/verbs/build.sh"
load_rxe rxe0
gid=$(gid_index rxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
log "+ rrxe_verbs -v -d rxe0 -g $gid rdma_flush"
timeout 150 rrxe_verbs -v -d rxe0 -g "$gid" rdma_flush || fail "rrxe_verbs rdma_flush on rxe rc=$?"
