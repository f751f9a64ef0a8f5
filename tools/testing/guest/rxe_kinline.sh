#!/bin/sh
# Baseline of rrxe_kinline: the rrxe_kverbs test module's kernel inline-send cases on
# upstream rdma_rxe, but the UD one (ud=0: rxe never delivers a kernel UD datagram to
# its own GID, inline or not; see rrxe_kverbs.c).
# topology: single
# timeout: 120
. "$RRXE_LIB"

load_rxe rxe0
kverbs_cases ud=0
