#!/bin/sh
# Baseline of rrxe_kinline: the rrxe_kverbs test module's kernel inline-send cases on
# upstream rdma_rxe.
# topology: single
# timeout: 120
. "$RRXE_LIB"

load_rxe rxe0
kverbs_cases
