#!/bin/sh
# Kernel inline sends (IB_SEND_INLINE from an in-kernel caller, as SMC-R posts them) on
# rrxe: the rrxe_kverbs test module's cases (tools/testing/kverbs/rrxe_kverbs.c). Two RC
# QPs with 64 bytes of inline data; SENDs of 0, 1, 64 bytes and from two SGEs, SEND with
# immediate and RDMA WRITE, each from an unregistered buffer the caller overwrites as
# soon as the post returns; a request over the QP's inline size is refused at the post;
# an inline SEND between two UD QPs.
# The same cases pass on upstream rxe (rxe_kinline).
# topology: single
# timeout: 120
. "$RRXE_LIB"

load_rrxe rrxe0
kverbs_cases
