# Network namespaces for rxe_netns.sh / rrxe_netns.sh (source after common.sh).
#
# netns_test DRIVER (rxe|rrxe): two namespaces, each joined to the initial one by a
# veth pair whose namespace end is created inside it (so both ends there get the same
# interface index, as indices are per namespace), on documentation networks
# 198.51.100.0/24 and 203.0.113.0/24; a DRIVER device on every veth end, the
# namespaces' ones added from inside (`ip netns exec ... rdma link add`). Then
# ibv_rc_pingpong from the initial namespace to servers in both namespaces at once;
# the namespaces' UDP port 4791 sockets open with their first device and close with
# their last; moving a net device out of its namespace removes its device; deleting a
# namespace removes the devices on both veth ends; a namespace made again carries
# traffic again; in ib_core's exclusive netns mode a device moves to a namespace
# (`rdma dev set DEV netns NS`) and back when it is deleted; the driver unloads.

NS_NETS="198.51.100 203.0.113"

# ns_udp_bound [NS]: is UDP port 4791 bound in namespace NS (default: this one)?
ns_udp_bound() {
    if [ -n "${1:-}" ]; then
        ip netns exec "$1" cat /proc/net/udp /proc/net/udp6
    else
        cat /proc/net/udp /proc/net/udp6
    fi | awk '$2 ~ /:12B7$/ {f=1} END {exit !f}'
}

# ns_udp_free [NS]: UDP port 4791 is not bound in NS (default: this namespace).
ns_udp_free() { ! ns_udp_bound "$@"; }

# ns_dev_there DEV: `rdma link show` lists DEV; ns_dev_gone DEV: it does not.
ns_dev_there() { rdma link show | grep -q "link $1/"; }
ns_dev_gone() { ! ns_dev_there "$1"; }

# ns_pair I NET: namespace nsI, veth vnI (in it, NET.2) and vhI (here, NET.1), a
# DRIVER device on each: ${NS_DRV}_nI (added inside) and ${NS_DRV}_hI.
ns_pair() {
    local i=$1 net=$2
    run ip netns add "ns$i"
    run ip -n "ns$i" link add "vn$i" type veth peer name "vh$i" netns 1
    run ip -n "ns$i" link set lo up
    run ip -n "ns$i" addr add "$net.2/24" dev "vn$i"
    run ip -n "ns$i" link set "vn$i" up
    run ip addr add "$net.1/24" dev "vh$i"
    run ip link set "vh$i" up
    run ip netns exec "ns$i" rdma link add "${NS_DRV}_n$i" type "$NS_DRV" netdev "vn$i"
    run rdma link add "${NS_DRV}_h$i" type "$NS_DRV" netdev "vh$i"
    wait_for 20 rdma_dev_ready "${NS_DRV}_n$i" || fail "${NS_DRV}_n$i port 1 not ACTIVE"
    wait_for 20 rdma_dev_ready "${NS_DRV}_h$i" || fail "${NS_DRV}_h$i port 1 not ACTIVE"
    ns_udp_bound "ns$i" || fail "no UDP 4791 socket in ns$i with a device there"
    log "ns$i: vn$i ifindex $(ip -n "ns$i" -o link show "vn$i" | cut -d: -f1)," \
        "vh$i ifindex $(ip -o link show "vh$i" | cut -d: -f1)"
}

# ns_pingpong_start I NET: ibv_rc_pingpong server in nsI and client here, the client
# in the background (retrying until the server listens); sets NS_SRV and NS_CLI.
ns_pingpong_start() {
    local i=$1 net=$2 gn gh
    gn=$(gid_index "${NS_DRV}_n$i" ipv4 "$net.2") || fail "no RoCE v2 GID for $net.2 on ${NS_DRV}_n$i"
    gh=$(gid_index "${NS_DRV}_h$i" ipv4 "$net.1") || fail "no RoCE v2 GID for $net.1 on ${NS_DRV}_h$i"
    bg_start "pp$i-server" ip netns exec "ns$i" timeout 60 \
        ibv_rc_pingpong -d "${NS_DRV}_n$i" -g "$gn" -s 4096 -n 200
    NS_SRV=$BG_PID
    bg_start "pp$i-client" retry 40 0.5 timeout 60 \
        ibv_rc_pingpong -d "${NS_DRV}_h$i" -g "$gh" -s 4096 -n 200 "$net.2"
    NS_CLI=$BG_PID
}

# ns_pingpong_end I SRV CLI TX0: both sides succeeded and the traffic crossed vhI.
ns_pingpong_end() {
    local i=$1 tx
    bg_wait "$3" "pp$i-client" 90 || fail "ibv_rc_pingpong client to ns$i failed"
    bg_wait "$2" "pp$i-server" 30 || fail "ibv_rc_pingpong server in ns$i failed"
    grep -q "iters in" "/tmp/pp$i-client.out" || fail "client to ns$i printed no result"
    tx=$(( $(cat "/sys/class/net/vh$i/statistics/tx_packets") - $4 ))
    log "ns$i: vh$i sent $tx packets"
    [ "$tx" -ge 200 ] || fail "only $tx packets left vh$i: traffic did not cross the veth"
}

netns_test() {
    local s1 c1 s2 c2 t1 t2
    NS_DRV=$1
    case "$NS_DRV" in
        rxe) run modprobe rdma_rxe ;;
        rrxe) run modprobe rrxe ;;
        *) fail "unknown driver $NS_DRV" ;;
    esac
    log "rdma system: $(rdma system show 2>&1)"
    ns_udp_bound && fail "UDP 4791 bound before any device"
    ns_pair 1 198.51.100
    ns_pair 2 203.0.113
    ns_udp_bound || fail "no UDP 4791 socket in the initial namespace"
    log "rdma link show in ns1:"
    ip netns exec ns1 rdma link show | sed 's/^/  ns1| /'

    # Traffic to both namespaces at the same time.
    t1=$(cat /sys/class/net/vh1/statistics/tx_packets)
    t2=$(cat /sys/class/net/vh2/statistics/tx_packets)
    ns_pingpong_start 1 198.51.100; s1=$NS_SRV c1=$NS_CLI
    ns_pingpong_start 2 203.0.113; s2=$NS_SRV c2=$NS_CLI
    ns_pingpong_end 1 "$s1" "$c1" "$t1"
    ns_pingpong_end 2 "$s2" "$c2" "$t2"

    # A net device leaving its namespace takes its device along; the namespace's
    # last device gone, its socket closes.
    run ip -n ns2 link set vn2 netns 1
    wait_for 20 ns_dev_gone "${NS_DRV}_n2" || fail "${NS_DRV}_n2 still there after vn2 left ns2"
    wait_for 20 ns_udp_free ns2 ||
        fail "ns2 still has a UDP 4791 socket without a device"

    # Deleting a namespace deletes its veth pair and so both devices on it.
    run ip netns del ns1
    wait_for 30 ns_dev_gone "${NS_DRV}_n1" || fail "${NS_DRV}_n1 still there after ns1 was deleted"
    wait_for 30 ns_dev_gone "${NS_DRV}_h1" || fail "${NS_DRV}_h1 still there after ns1 was deleted"
    run ip netns del ns2
    rdma link show | sed 's/^/  rdma| /'

    # A namespace made again (maybe at the same address) carries traffic again.
    ns_pair 1 198.51.100
    t1=$(cat /sys/class/net/vh1/statistics/tx_packets)
    ns_pingpong_start 1 198.51.100
    ns_pingpong_end 1 "$NS_SRV" "$NS_CLI" "$t1"
    run ip netns del ns1
    wait_for 30 ns_dev_gone "${NS_DRV}_n1" || fail "${NS_DRV}_n1 still there after ns1 was deleted"
    wait_for 30 ns_dev_gone "${NS_DRV}_h1" || fail "${NS_DRV}_h1 still there after ns1 was deleted"

    # vn2 moved here and kept its peer vh2, whose device is the last one.
    run rdma link delete "${NS_DRV}_h2"
    wait_for 20 ns_dev_gone "${NS_DRV}_h2" || fail "${NS_DRV}_h2 still there"
    rdma link show | grep "link ${NS_DRV}_" && fail "devices left over"
    wait_for 20 ns_udp_free ||
        fail "UDP 4791 still bound with no device left"

    # Exclusive mode: an RDMA device moves to a namespace (`rdma dev set`), is seen
    # only there, and comes back when the namespace is deleted (ib_core enables it
    # again each time).
    run rdma system set netns exclusive
    run ip netns add ns3
    run ip link set vn2 up
    run rdma link add "${NS_DRV}_x" type "$NS_DRV" netdev vn2
    wait_for 20 rdma_dev_ready "${NS_DRV}_x" || fail "${NS_DRV}_x port 1 not ACTIVE"
    run rdma dev set "${NS_DRV}_x" netns ns3
    ip netns exec ns3 rdma link show | grep -q "link ${NS_DRV}_x/" || fail "${NS_DRV}_x not in ns3"
    ns_dev_gone "${NS_DRV}_x" || fail "${NS_DRV}_x still seen outside ns3"
    # ib_core's clients open the port again in ns3 (the MAD layer's GSI QP, QP1);
    # rxe 7.3 fails to create it there ("Couldn't create ib_mad QP1").
    ip netns exec ns3 rdma res show qp link "${NS_DRV}_x/1" > /tmp/ns3-qp.out 2>&1
    sed 's/^/  ns3-qp| /' /tmp/ns3-qp.out
    [ "$NS_DRV" = rxe ] || grep -q "lqpn 1 " /tmp/ns3-qp.out || fail "no GSI QP on ${NS_DRV}_x in ns3"
    run ip netns del ns3
    wait_for 30 ns_dev_there "${NS_DRV}_x" ||
        fail "${NS_DRV}_x not back after ns3 was deleted"
    run rdma link delete "${NS_DRV}_x"
    run rdma system set netns shared
    case "$NS_DRV" in
        rxe) run timeout 60 rmmod rdma_rxe ;;
        rrxe) run timeout 60 rmmod rrxe ;;
    esac
    log "namespaces: done"
}
