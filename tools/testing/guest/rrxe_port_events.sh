#!/bin/sh
# The port follows its net device, as rxe's does: `ip link set eth0 down` makes port 1
# DOWN and raises IBV_EVENT_PORT_ERR (seen by the stock ibv_asyncwatch), `up` makes it
# ACTIVE again with IBV_EVENT_PORT_ACTIVE, and RC traffic runs again afterwards. The
# active MTU follows eth0's MTU (NETDEV_CHANGEMTU): 1500 gives 1024, 9000 gives 4096,
# and ibv_rc_pingpong --chk runs at each, with the packet counts of each path MTU.
# topology: single
# timeout: 240
. "$RRXE_LIB"

port_state() { cat /sys/class/infiniband/rrxe0/ports/1/state; }
is_state() { case "$(port_state)" in *"$1"*) return 0 ;; esac; return 1; }
active_mtu() { ibv_devinfo -d rrxe0 | sed -n 's/^[[:space:]]*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p'; }
sent_pkts() { cat /sys/class/infiniband/rrxe0/ports/1/hw_counters/sent_pkts; }

# pingpong MTU: 100 round trips of 16 KiB SENDs at path MTU MTU; PP_SENT is set
# to the packets rrxe0 sent for them.
pingpong() {
    local before gid
    gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
    before=$(sent_pkts)
    server_client "pp$1" timeout 60 ibv_rc_pingpong -d rrxe0 -g "$gid" -m "$1" -n 100 -s 16384 -c
    grep -q '100 iters' "/tmp/pp$1-client.out" || fail "MTU $1: client did not complete 100 iterations"
    PP_SENT=$(( $(sent_pkts) - before ))
}

load_rrxe rrxe0
bg_start asyncwatch ibv_asyncwatch -d rrxe0
watch=$BG_PID
wait_for 10 grep -q 'async event FD' /tmp/asyncwatch.out || fail "ibv_asyncwatch did not start"

run ip link set eth0 down
wait_for 10 is_state DOWN || fail "port 1 is '$(port_state)' with eth0 down"
wait_for 10 grep -q 'PORT_ERR' /tmp/asyncwatch.out || fail "no IBV_EVENT_PORT_ERR for eth0 down"
log "eth0 down: port 1 $(port_state), event $(grep PORT_ERR /tmp/asyncwatch.out)"
run ip link set eth0 up
wait_for 20 is_state ACTIVE || fail "port 1 is '$(port_state)' after eth0 up"
wait_for 10 grep -q 'PORT_ACTIVE' /tmp/asyncwatch.out || fail "no IBV_EVENT_PORT_ACTIVE for eth0 up"
log "eth0 up: port 1 $(port_state), event $(grep PORT_ACTIVE /tmp/asyncwatch.out)"
wait_for 20 gid_index rrxe0 ipv4 >/dev/null || fail "no IPv4 GID after eth0 up"

run ip link set eth0 mtu 1500
wait_for 10 test "$(active_mtu)" = 1024 || fail "active_mtu $(active_mtu) at netdev MTU 1500, not 1024"
pingpong 1024
p1024=$PP_SENT
run ip link set eth0 mtu 9000
wait_for 10 test "$(active_mtu)" = 4096 || fail "active_mtu $(active_mtu) at netdev MTU 9000, not 4096"
pingpong 4096
p4096=$PP_SENT
log "packets sent for 100 round trips of 16 KiB: $p1024 at MTU 1024, $p4096 at MTU 4096"
# 16 data packets a message at 1024 against 4 at 4096, ACKs alike in both.
[ "$p1024" -gt $((p4096 * 2)) ] || fail "MTU 1024 did not take more packets than MTU 4096"
run ip link set eth0 mtu 1500

kill "$watch" 2>/dev/null
wait "$watch" 2>/dev/null
sed 's/^/  asyncwatch| /' /tmp/asyncwatch.out
log "PASS"
