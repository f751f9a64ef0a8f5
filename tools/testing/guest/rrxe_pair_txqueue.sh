#!/bin/sh
# rrxe on both guests: rrxe_xfer's verified RC transfers (RDMA WRITE, READ and SEND,
# fetch-and-adds, a compare-and-swap chain; 64 KiB messages, 8 deep) over a link whose
# transmit queue is short: netem on both guests' eth0 takes 8 packets and sends them at
# 20 Mbit/s (rrxe.txq_netem=), and refuses the rest of every burst (NET_XMIT_DROP). A
# connected QP whose packet the queue refused pauses and sends it again (requests on
# the client, READ responses and ACKs on the server), so on each guest: every transfer
# verifies, send_queue_full counts the refusals, and (almost) nothing is retransmitted.
# Before the pause, each refused packet was lost and recovered by a sequence NAK or an
# ACK timeout: hundreds of retransmissions per transfer.
# topology: pair
# timeout: 600
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/xfer.sh"

# lib/xfer.sh's netem_on reads this default.
XFER_NETEM_DEFAULT=$(kernel_arg rrxe.txq_netem rate,20mbit,limit,8)
load_rrxe rrxe0
lossy_pair_xfer

full=$(hw_counter send_queue_full) retries=$(hw_counter completer_retry_err) naks=$(hw_counter rcvd_seq_err)
log "send_queue_full=$full completer_retry_err=$retries rcvd_seq_err=$naks" \
    "retry_exceeded_err=$(hw_counter retry_exceeded_err)"
queue_refused
[ "$(hw_counter retry_exceeded_err)" = 0 ] || fail "a request ran out of retries"
# A pause costs no retransmission; allow two for a guest stalled by host load past an
# ACK timeout (67 ms).
[ "$retries" -le 2 ] || fail "$retries retransmissions (completer_retry_err) for $full refusals"
log "the full queue refused $full packets and cost $retries retransmissions"
