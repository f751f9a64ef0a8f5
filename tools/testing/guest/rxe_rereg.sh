#!/bin/sh
# Baseline for rrxe_rereg: the rrxe_verbs "rereg" group (ibv_rereg_mr of access flags and
# PD seen by remote WRITE/READ, keys kept, refused requests and their errno) against
# upstream rdma_rxe, so every status and errno the cases expect is rxe's too.
# topology: single
# timeout: 180
. "$RRXE_LIB"

rxe_verbs_cases rereg
