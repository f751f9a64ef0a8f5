#!/bin/sh
# Baseline: NVMe over Fabrics over upstream rdma_rxe on one guest (rxe loops the
# traffic to its own address). nvmet-rdma exports a 128 MiB brd RAM disk on eth0's
# address, nvme-rdma connects to it; 64.5 MiB of random data are written with O_DIRECT
# in 4 KiB, 64 KiB, 1 MiB and 512-byte I/Os, read back and compared, read again after a
# reconnect (four reads in parallel); no command may time out. Then, with the host
# connected and I/O running, `rdma link delete rxe0`: the I/O must fail, the controller
# go away and every module unload (lib/nvmeof.sh).
# topology: single
# timeout: 600
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/nvmeof.sh"

load_rxe rxe0
nvmf_single
nvmf_link_delete_under_io
run timeout 60 modprobe -r rdma_rxe
