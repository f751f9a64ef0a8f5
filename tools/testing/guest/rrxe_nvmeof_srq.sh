#!/bin/sh
# NVMe over Fabrics over rrxe with the target on shared receive queues: nvmet-rdma
# loaded with use_srq=1 creates kernel SRQs on rrxe0 (one per completion vector) and
# posts its command buffers with ib_post_srq_recv; every queue pair of the target takes
# its receives from them. The SRQs must show in `rdma resource show srq`, and 64.5 MiB
# written with O_DIRECT in mixed I/O sizes must read back equal (lib/nvmeof.sh).
# topology: single
# timeout: 600
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/nvmeof.sh"

load_rrxe rrxe0
run modprobe nvmet-rdma use_srq=1
[ "$(cat /sys/module/nvmet_rdma/parameters/use_srq)" = Y ] || fail "nvmet-rdma did not take use_srq=1"
nvmf_target_up "$RRXE_IP4"
nvmf_make_data
nvmf_connect_retry "$RRXE_IP4"
rdma resource show srq dev rrxe0 > /tmp/srqs.out 2>&1
sed 's/^/  srq| /' /tmp/srqs.out | head -8
n=$(grep -c 'srqn' /tmp/srqs.out)
[ "$n" -ge 1 ] || fail "the target made no SRQ on rrxe0"
log "target: $n SRQs on rrxe0"
nvmf_write "$NVMF_DISK"
nvmf_verify "$NVMF_DISK" read
nvmf_disconnect
nvmf_check_dmesg
nvmf_host_unload
nvmf_target_down
show_counters rrxe0
run timeout 60 rmmod rrxe
