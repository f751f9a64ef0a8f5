#!/bin/sh
# A QP's receive backlog is bounded (RX_BACKLOG_MAX, 4,096 packets of the path MTU
# waiting for the QP's run, exec.rs), through two cases of the rrxe_kverbs test module
# (tools/testing/kverbs/rrxe_kverbs.c) on rrxe0:
# - backlog=5000: a UD QP's run is held (in its completion handler) while another UD
#   QP sends it 5,000 datagrams of 1 KiB. rcvd_backlog_full must grow by exactly
#   5,000 - 4,096 during the flood (the module reads it then; its probes after the
#   flood, sent one at a time until the QP takes a fresh datagram, may find the
#   backlog still full and add a few). The 4,096 that waited find no receive posted
#   when the run goes on: UD drops them, counted as out_of_buffer (4,096, give or
#   take the 256 probes, which post a receive each and may find one taken), not as
#   rcvd_hdr_err, which must not move, nor rcvd_no_qp.
# - backlog_read=1: an RDMA READ of 2 MiB (8,192 PSNs of responses at a path MTU of 256)
#   on an RC QP whose run is held until the responder's READ responses have filled its
#   backlog. Between QPs of one device the responses go as local segments of 16 KiB
#   (64 PSNs each: local_segments grows by 128 at least), which the backlog counts as
#   the PSNs they stand for, so 64 of them fill it. The responder is refused
#   (rcvd_backlog_full grows) and sends again once the run goes on: the READ completes
#   with the right bytes, and nothing was lost or retransmitted (completer_retry_err,
#   rcvd_seq_err, duplicate_request, out_of_seq_request stay).
# Both hold a QP's run on one CPU while the sender runs on another: the guest needs
# two, on the debug kernel too (whose guests have one unless a test asks).
# topology: single
# smp: 2
# timeout: 300
. "$RRXE_LIB"

[ "$(nproc)" -ge 2 ] || fail "needs two CPUs (a held QP run keeps its CPU)"
load_rrxe rrxe0
hw=/sys/class/infiniband/rrxe0/ports/1/hw_counters
c() { cat $hw/$1; }
n=5000 max=4096
full0=$(c rcvd_backlog_full) hdr0=$(c rcvd_hdr_err) noqp0=$(c rcvd_no_qp) oob0=$(c out_of_buffer)
kverbs_cases backlog=$n
flood=$(dmesg | sed -n 's/.*rrxe_kverbs: backlog: .* rcvd_backlog_full +\([0-9]*\)$/\1/p' | tail -1)
full=$(( $(c rcvd_backlog_full) - full0 ))
hdr=$(( $(c rcvd_hdr_err) - hdr0 )) noqp=$(( $(c rcvd_no_qp) - noqp0 ))
oob=$(( $(c out_of_buffer) - oob0 ))
log "of $n datagrams to the held QP: rcvd_backlog_full +$flood during the flood, +$full in all;" \
    "out_of_buffer +$oob, rcvd_hdr_err +$hdr, rcvd_no_qp +$noqp"
[ "$flood" = $((n - max)) ] || fail "rcvd_backlog_full grew by '$flood' during the flood, expected $((n - max))"
[ "$full" -ge "$flood" ] && [ "$full" -le $((flood + 256)) ] ||
    fail "rcvd_backlog_full grew by $full in all, more than the flood and the probes"
[ "$oob" -ge $((max - 256)) ] && [ "$oob" -le $((max + 256)) ] ||
    fail "out_of_buffer grew by $oob, expected the backlog ($max) give or take the probes (256)"
[ "$hdr" = 0 ] || fail "rcvd_hdr_err moved (+$hdr)"
[ "$noqp" = 0 ] || fail "rcvd_no_qp moved"

lossy="completer_retry_err rcvd_seq_err duplicate_request out_of_seq_request"
full0=$(c rcvd_backlog_full) seg0=$(c local_segments)
for k in $lossy; do eval "b_$k=\$(c $k)"; done
kverbs_cases backlog_read=1
full=$(( $(c rcvd_backlog_full) - full0 )) seg=$(( $(c local_segments) - seg0 ))
log "READ responses refused while the requester was held: rcvd_backlog_full +$full;" \
    "local_segments +$seg"
[ "$full" -gt 0 ] || fail "rcvd_backlog_full did not move"
[ "$seg" -ge 128 ] || fail "local_segments grew by $seg: the 2 MiB READ was not answered in 128 segments"
for k in $lossy; do
    eval "d=\$(( \$(c $k) - b_$k ))"
    [ "$d" = 0 ] || fail "$k grew by $d: a refused response was lost"
done
log "backlog bounded"
