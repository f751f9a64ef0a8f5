#!/bin/sh
# Baseline, two guests: NVMe over Fabrics over the wire, upstream rdma_rxe on both.
# Guest A exports a 128 MiB brd RAM disk with nvmet-rdma; guest B connects with
# nvme-rdma, writes 64.5 MiB of random data with O_DIRECT in 4 KiB, 64 KiB, 1 MiB and
# 512-byte I/Os, reads it back and compares, reconnects and reads again (four reads in
# parallel), and reports the data's SHA-256 sums to A over TCP; A checks its RAM disk
# against them (lib/nvmeof.sh). Loads the driver named by rrxe.driver= (default rxe),
# so it runs other combinations too, e.g. --append-b rrxe.driver=rrxe.
# topology: pair
# timeout: 900
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/nvmeof.sh"

load_driver
nvmf_pair
