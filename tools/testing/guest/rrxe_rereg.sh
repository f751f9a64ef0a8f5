#!/bin/sh
# ibv_rereg_mr on rrxe: the rrxe_verbs "rereg" group (the uverbs command through
# ibv_cmd_rereg_mr, as the stock librxe has no rereg_mr). New access flags without
# REMOTE_WRITE make a remote WRITE fail with REM_ACCESS_ERR (memory unchanged) while READ
# works, and REMOTE_WRITE back makes WRITE work again; a new PD makes the region reachable
# from the new PD's QPs (rkey and lkey) and refused to the old PD's; keys stay the same;
# no flag, CHANGE_TRANSLATION, unknown flags, bad access combinations, ZERO_BASED and write
# rights on read-only pages are refused with rxe's errno and change nothing. The same cases
# pass on upstream rxe (rxe_rereg).
# topology: single
# timeout: 180
. "$RRXE_LIB"

rrxe_verbs_cases rereg
