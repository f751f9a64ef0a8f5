#!/bin/sh
# NVMe over Fabrics over rrxe on one guest: rxe_nvmeof's steps on rrxe0. nvme-rdma
# registers its I/O buffers with fast-registration MRs (alloc_mr, ib_map_mr_sg,
# IB_WR_REG_MR, LOCAL_INV) and nvmet-rdma answers with SEND_WITH_INV: 64.5 MiB written
# with O_DIRECT in 4 KiB, 64 KiB, 1 MiB and 512-byte I/Os, read back and compared, read
# again after a reconnect (four reads in parallel); no command may time out. Then
# `rdma link delete rrxe0` under a connected host with I/O running: the I/O must fail,
# the controller go away, nothing hang or splat, every module unload (lib/nvmeof.sh).
# topology: single
# timeout: 600
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/nvmeof.sh"

load_rrxe rrxe0
nvmf_single
nvmf_link_delete_under_io
run timeout 60 rmmod rrxe
