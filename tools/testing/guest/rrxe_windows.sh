#!/bin/sh
# Memory windows on rrxe through the stock librxe: the rrxe_verbs "windows" group. Type 1
# windows bound with ibv_bind_mw and type 2 with IBV_WR_BIND_MW, RDMA WRITE and READ from
# another QP through them; accesses before or past a window, or without its right, fail
# with REM_ACCESS_ERR and leave memory unchanged; a rebind or a bind of length 0 kills the
# old key; SEND_WITH_INV (the receive reports the key) and LOCAL_INV end a type 2 window;
# binds over a region without MW_BIND or past its end fail with MW_BIND_ERR; a bound window
# can be deallocated. The same cases pass on upstream rxe (rxe_windows).
# topology: single
# timeout: 180
. "$RRXE_LIB"

rrxe_verbs_cases windows
