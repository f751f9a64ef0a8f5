#!/bin/sh
# On-demand paging on rrxe through the stock librxe. The rrxe_verbs "odp" group: ODP caps in
# ibv_query_device_ex, an ODP registration that takes no page, implicit ODP refused; RDMA
# WRITE, READ and atomics into pages not there yet, SEND from and receive/READ into untouched
# ODP regions, data checked; ibv_advise_mr prefetch (sync and async); MADV_DONTNEED and
# munmap+mmap of part of a region (invalidation: the new pages are reached, never the old).
# Then ibv_devinfo -v must show the ODP caps, and perftest's ib_write_bw, ib_read_bw and
# ib_send_bw (RC, RC with an SRQ, UD) run with --odp (their buffers registered with
# IBV_ACCESS_ON_DEMAND; perftest quits if the device lacks ODP). The same runs pass on
# upstream rxe (rxe_odp).
# topology: single
# timeout: 420
. "$RRXE_LIB"

rrxe_verbs_cases odp
odp_perftest rrxe0
