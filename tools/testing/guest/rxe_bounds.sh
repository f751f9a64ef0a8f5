#!/bin/sh
# Baseline for rrxe_bounds: the "protection" cases of the rrxe_verbs program (remote
# WRITE/READ/atomics the responder must refuse: wrong rkey, another PD's rkey, past the
# MR's end, MR or QP without the access right, deregistered MR) and its "bounds" cases
# (MRs at IOVA 0 and at the top of the address space, SGEs touching or crossing an MR's
# end and 2^64, zero-length and max_sge SGEs, UD MTU, short receive and Q_Key, remote
# ranges and atomics at the MR's edges) pass on upstream rdma_rxe through the stock
# libibverbs/librxe. Where rxe differs from the IB spec the cases accept rxe's answer on
# rxe only (see bounds.c and protection.c). Every wait in the program is bounded.
# topology: single
# timeout: 240
. "$RRXE_LIB"

command -v rrxe_verbs >/dev/null || fail "rrxe_verbs not on PATH: run tools/testing/verbs/build.sh"
load_rxe rxe0
gid=$(gid_index rxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
start=$(date +%s)
run timeout 200 rrxe_verbs -v -d rxe0 -D rxe -g "$gid" protection
run timeout 200 rrxe_verbs -v -d rxe0 -D rxe -g "$gid" bounds
log "protection and bounds took $(($(date +%s) - start)) s"
