#!/bin/sh
# Port counters through `rdma statistic` (iproute2, netlink), as a user reads them:
# every one of upstream rxe's counter names is there, and 200 RC SENDs on rrxe0
# (ibv_rc_pingpong, both ends on this device) move sent_pkts, rcvd_pkts,
# rdma_sends and rdma_recvs by at least 200 each, sent_pkts, rcvd_pkts and
# sent_bytes by at least 200 * 4 packets and 200 * 4096 bytes, and (rrxe's
# own) zero_copy_pkts by at least 800, their full packets, and local_segments
# by at least 200: each message went as one local segment of 4 packets. No
# error counter moves; the same values appear in sysfs.
# topology: single
# timeout: 180
. "$RRXE_LIB"

load_rrxe rrxe0
gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"

# counter NAME FILE: the value of NAME in `rdma statistic show link` output.
counter() {
    awk -v n="$1" '{ for (i = 1; i < NF; i++) if ($i == n) { print $(i + 1); f = 1; exit } }
        END { exit !f }' "$2"
}
rdma statistic show link rrxe0/1 > /tmp/stat0.out || fail "rdma statistic show link rrxe0/1 failed"
log "before: $(cat /tmp/stat0.out)"
for n in sent_pkts rcvd_pkts duplicate_request out_of_seq_request rcvd_rnr_err \
        send_rnr_err rcvd_seq_err ack_deferred retry_exceeded_err retry_rnr_exceeded_err \
        completer_retry_err send_err link_downed rdma_sends rdma_recvs sent_bytes rcvd_bytes \
        rcvd_icrc_err rcvd_hdr_err rcvd_no_qp rcvd_backlog_full out_of_buffer zero_copy_pkts \
        local_segments send_queue_full cwnd_cuts; do
    counter $n /tmp/stat0.out > /dev/null || fail "rdma statistic shows no counter $n"
done

server_client rc timeout 60 ibv_rc_pingpong -d rrxe0 -g "$gid" -n 100 -s 4096
rdma statistic show link rrxe0/1 > /tmp/stat1.out || fail "rdma statistic failed after the traffic"
log "after:  $(cat /tmp/stat1.out)"

# grew NAME MIN: NAME went up by at least MIN.
grew() {
    local a b
    a=$(counter "$1" /tmp/stat0.out); b=$(counter "$1" /tmp/stat1.out)
    [ $((b - a)) -ge "$2" ] || fail "$1 went from $a to $b, expected at least +$2"
    log "$1: +$((b - a))"
}
# Each of the 100 iterations is a SEND each way: 200 messages on this device,
# 4 packets each at ibv_rc_pingpong's MTU of 1024 (a local segment counts as
# the packets it stands for).
grew sent_pkts $((200 * 4))
grew rcvd_pkts $((200 * 4))
grew rdma_sends 200
grew rdma_recvs 200
grew sent_bytes $((200 * 4096))
grew rcvd_bytes $((200 * 4096))
# Both ends are QPs of rrxe0: every full packet (4 per 4096-byte message at
# ibv_rc_pingpong's MTU of 1024) goes with its payload taken from the pages.
grew zero_copy_pkts $((200 * 4))
# ... and each message is one local segment of those 4 packets.
grew local_segments 200
for n in retry_exceeded_err retry_rnr_exceeded_err send_err rcvd_icrc_err rcvd_hdr_err \
        rcvd_backlog_full out_of_buffer send_queue_full cwnd_cuts; do
    [ "$(counter $n /tmp/stat1.out)" = "$(counter $n /tmp/stat0.out)" ] || fail "$n moved"
done
# sysfs reads the same counters (they only grow; nothing runs now).
v=$(counter rdma_sends /tmp/stat1.out)
s=$(cat /sys/class/infiniband/rrxe0/ports/1/hw_counters/rdma_sends)
[ "$s" = "$v" ] || fail "sysfs rdma_sends $s, rdma statistic $v"
log "counters ok"
