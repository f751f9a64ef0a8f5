#!/bin/sh
# NVMe over Fabrics over the wire, rrxe on both guests: rxe_pair_nvmeof's steps. Guest
# A's nvmet-rdma exports a RAM disk; guest B's nvme-rdma (fast-registration MRs) writes
# 64.5 MiB with O_DIRECT in mixed I/O sizes, reads back, reconnects, reads again; A
# checks that its RAM disk holds what B wrote (lib/nvmeof.sh).
# topology: pair
# timeout: 900
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/nvmeof.sh"

load_rrxe rrxe0
nvmf_pair
