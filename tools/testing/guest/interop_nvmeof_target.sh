#!/bin/sh
# Interop, the other way round: rrxe on guest A is the NVMe over Fabrics target
# (nvmet-rdma: RDMA READ/WRITE to rxe's fast-registered buffers, SEND_WITH_INV), upstream
# rdma_rxe on guest B is the nvme-rdma host: rxe_pair_nvmeof's steps (lib/nvmeof.sh).
# topology: pair
# timeout: 900
# append: rrxe.driver=rrxe
# append-b: rrxe.driver=rxe
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/nvmeof.sh"

load_driver
nvmf_pair
