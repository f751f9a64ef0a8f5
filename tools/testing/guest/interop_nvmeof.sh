#!/bin/sh
# Interop: NVMe over Fabrics between upstream rdma_rxe on guest A (nvmet-rdma target,
# RDMA READ/WRITE to B's fast-registered buffers, SEND_WITH_INV) and rrxe on guest B
# (nvme-rdma host: fast-registration MRs, remote invalidation): rxe_pair_nvmeof's
# steps; A checks that its RAM disk holds what B wrote (lib/nvmeof.sh).
# topology: pair
# timeout: 900
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/nvmeof.sh"

load_interop
nvmf_pair
