# Helpers for rrxe guest test scripts (busybox sh). Source it first:
#     . "$RRXE_LIB"          (/rrxe/tests/lib/common.sh)
# Environment set by /init: RRXE_ROLE (a|b), RRXE_IP4/RRXE_PEER_IP4 (192.0.2.1/.2),
# RRXE_IP6/RRXE_PEER_IP6 (2001:db8::1/::2), RRXE_NETDEV (eth0), RRXE_TEST,
# RRXE_DRIVER (rxe|rrxe, from rrxe.driver=).
# A test passes by exiting 0; anything else (or `fail`) fails it.

RRXE_NETDEV=${RRXE_NETDEV:-eth0}

# Debian's busybox-static runs its own applets before anything on PATH (standalone
# shell): ip and tc must be iproute2's, called by path.
ip() { /usr/bin/ip "$@"; }
tc() { /usr/sbin/tc "$@"; }
# kmod's module tools, as on a Debian system (busybox's applets differ).
modprobe() { /usr/sbin/modprobe "$@"; }
insmod() { /usr/sbin/insmod "$@"; }
rmmod() { /usr/sbin/rmmod "$@"; }
lsmod() { /usr/sbin/lsmod "$@"; }

log() { echo "[$RRXE_TEST/$RRXE_ROLE] $*"; }

# fail MSG: print the reason and end the test with exit status 1.
fail() { echo "[$RRXE_TEST/$RRXE_ROLE] FAIL: $*"; exit 1; }

# run CMD...: log and run a command; fail the test if it fails.
run() { log "+ $*"; "$@" || fail "command failed (rc=$?): $*"; }

# retry TRIES DELAY CMD...: run CMD until it succeeds, at most TRIES times.
retry() {
    local tries=$1 delay=$2 i=1
    shift 2
    while :; do
        "$@" && return 0
        [ "$i" -ge "$tries" ] && return 1
        i=$((i + 1)); sleep "$delay"
    done
}

# wait_for SECONDS CMD...: poll CMD every 0.2 s until it succeeds or SECONDS pass.
wait_for() {
    local secs=$1 n=0
    shift
    while ! "$@" 2>/dev/null; do
        n=$((n + 1))
        [ "$n" -ge $((secs * 5)) ] && return 1
        sleep 0.2
    done
}

# port_listening PORT: is a local TCP socket listening on PORT (IPv4 or IPv6)?
port_listening() {
    local hex
    hex=$(printf '%04X' "$1")
    cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" {f=1} END {exit !f}'
}

# wait_for_port PORT [SECONDS]: wait until a local TCP listener is on PORT.
wait_for_port() { wait_for "${2:-30}" port_listening "$1" || fail "nothing listens on TCP port $1 after ${2:-30}s"; }

# Pair tests sync by retrying the client: a one-shot RDMA server (rping -s, perftest,
# ibv_*_pingpong) is not there yet until the peer has booted and loaded its driver, and
# the client's connect fails fast meanwhile. Example (guest A):
#     retry 30 1 rping -c -a "$RRXE_PEER_IP4" -C 10 -V -v
# wait_for_peer_ping [SECONDS]: wait until the peer guest answers ICMP on eth0.
wait_for_peer_ping() { wait_for "${1:-60}" ping -c 1 -W 1 "$RRXE_PEER_IP4" >/dev/null || fail "peer $RRXE_PEER_IP4 unreachable"; }

# rdma_dev_ready DEV: the device exists and port 1 is ACTIVE.
rdma_dev_ready() { grep -q ACTIVE "/sys/class/infiniband/$1/ports/1/state" 2>/dev/null; }

# load_rxe [DEV]: upstream soft-RoCE (rdma_rxe) on eth0 as DEV (default rxe0).
load_rxe() {
    local dev=${1:-rxe0}
    run modprobe rdma_rxe
    run rdma link add "$dev" type rxe netdev "$RRXE_NETDEV"
    wait_for 20 rdma_dev_ready "$dev" || fail "$dev port 1 not ACTIVE"
    RRXE_DEV=$dev
    log "$dev ready"
}

# load_rrxe [DEV]: this project's driver (/rrxe/rrxe.ko) on eth0 as DEV (default rrxe0).
load_rrxe() {
    local dev=${1:-rrxe0}
    [ -f /rrxe/rrxe.ko ] || fail "/rrxe/rrxe.ko is not in this initramfs (module not built?)"
    # Installed and indexed as `make install` does (tools/initramfs/extra.sh):
    # modprobe loads udp_tunnel and ip6_udp_tunnel first.
    run modprobe rrxe
    run rdma link add "$dev" type rrxe netdev "$RRXE_NETDEV"
    wait_for 20 rdma_dev_ready "$dev" || fail "$dev port 1 not ACTIVE"
    RRXE_DEV=$dev
    log "$dev ready"
}

# load_driver: the driver named by rrxe.driver= on the kernel command line ($RRXE_DRIVER:
# rxe, the default, or rrxe) as rxe0 / rrxe0; sets RRXE_DEV. For tests meant to run in
# several driver combinations (tools/qemu/run.sh --append / --append-b).
load_driver() {
    case "${RRXE_DRIVER:-rxe}" in
        rxe) load_rxe rxe0 ;;
        rrxe) load_rrxe rrxe0 ;;
        *) fail "unknown rrxe.driver=$RRXE_DRIVER" ;;
    esac
}

# load_interop: the interoperability pair: upstream rxe (rxe0) on guest A, rrxe (rrxe0)
# on guest B; sets RRXE_DEV.
load_interop() {
    if [ "$RRXE_ROLE" = a ]; then
        load_rxe rxe0
    else
        load_rrxe rrxe0
    fi
}

# rrxe_verbs_cases CASE|GROUP...: rrxe as rrxe0, then the rrxe_verbs program's cases or
# groups named (150 s at most) on its IPv4 RoCE v2 GID; shows the port counters and rrxe's
# kernel messages, and fails if a case failed.
rrxe_verbs_cases() {
    local gid rc
    command -v rrxe_verbs >/dev/null || fail "rrxe_verbs not on PATH: run tools/testing/verbs/build.sh"
    load_rrxe rrxe0
    gid=$(gid_index rrxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
    log "+ rrxe_verbs -v -d rrxe0 -g $gid $*"
    timeout 150 rrxe_verbs -v -d rrxe0 -g "$gid" "$@"
    rc=$?
    show_counters rrxe0
    dmesg | grep -i rrxe | tail -40 | sed 's/^/  dmesg| /'
    [ $rc = 0 ] || fail "rrxe_verbs $* rc=$rc"
}

# rxe_verbs_cases CASE|GROUP...: the baseline of rrxe_verbs_cases: upstream rdma_rxe as
# rxe0, then the same cases or groups (150 s at most) on its IPv4 RoCE v2 GID; fails if a
# case failed.
rxe_verbs_cases() {
    local gid
    command -v rrxe_verbs >/dev/null || fail "rrxe_verbs not on PATH: run tools/testing/verbs/build.sh"
    load_rxe rxe0
    gid=$(gid_index rxe0 ipv4) || fail "no RoCE v2 IPv4 GID"
    log "+ rrxe_verbs -v -d rxe0 -g $gid $*"
    timeout 150 rrxe_verbs -v -d rxe0 -g "$gid" "$@" || fail "rrxe_verbs $* on rxe rc=$?"
}

# gid_index DEV [ipv4|ipv6] [IPV4]: print the GID table index of the RoCE v2 GID for
# eth0's IPv4 (default) or global IPv6 address, or for address IPV4. Waits up to 10 s
# for the GID table.
gid_index() {
    local dev=$1 fam=${2:-ipv4} want n
    if [ "$fam" = ipv4 ]; then
        # IPv4-mapped IPv6: ::ffff:a.b.c.d
        want=$(echo "${3:-$RRXE_IP4}" | awk -F. '{printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4}')
    else
        want=$(echo "$RRXE_IP6" | awk -F: '{printf "2001:0db8:0000:0000:0000:0000:0000:%04x", ("0x" $NF) + 0}')
    fi
    for _ in $(seq 1 50); do
        for f in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
            n=${f##*/}
            [ "$(cat "$f" 2>/dev/null)" = "$want" ] || continue
            [ "$(cat /sys/class/infiniband/"$dev"/ports/1/gid_attrs/types/"$n" 2>/dev/null)" = "RoCE v2" ] || continue
            echo "$n"
            return 0
        done
        sleep 0.2
    done
    log "no RoCE v2 GID $want on $dev; table:"
    for f in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
        n=${f##*/}
        echo "  $n $(cat "$f" 2>/dev/null) $(cat /sys/class/infiniband/"$dev"/ports/1/gid_attrs/types/"$n" 2>/dev/null)"
    done | grep -v ' 0000:0000:0000:0000:0000:0000:0000:0000'
    return 1
}

# bg_start NAME CMD...: run CMD in the background, output to /tmp/NAME.out; sets BG_PID.
bg_start() {
    local name=$1
    shift
    log "+ $* &  (output: /tmp/$name.out)"
    "$@" > "/tmp/$name.out" 2>&1 &
    BG_PID=$!
}

# bg_wait PID NAME [SECONDS]: wait for a background command, print its output, return its rc
# (killed after SECONDS, default 60, rc 124).
bg_wait() {
    local pid=$1 name=$2 secs=${3:-60} n=0 rc
    while kill -0 "$pid" 2>/dev/null; do
        n=$((n + 1))
        if [ "$n" -ge $((secs * 5)) ]; then
            log "$name still running after ${secs}s: killing it"
            kill "$pid" 2>/dev/null; sleep 0.5; kill -9 "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            sed "s/^/  $name| /" "/tmp/$name.out"
            return 124
        fi
        sleep 0.2
    done
    wait "$pid"; rc=$?
    sed "s/^/  $name| /" "/tmp/$name.out"
    return $rc
}

# retry_connect TRIES NAME CMD...: run a client whose peer's server may not listen yet
# (output in /tmp/NAME.out, printed afterwards), again a second later while it fails with
# "Couldn't connect" (ibv_*_pingpong's message for a refused or failed TCP connect), at
# most TRIES times. A client that connected and then failed is not run again, so give
# CMD a `timeout` and a device that never completes its work fails the test in bounded
# time. Returns CMD's exit status.
retry_connect() {
    local tries=$1 name=$2 i=1 rc
    shift 2
    log "+ $*  (output: /tmp/$name.out)"
    while :; do
        "$@" > "/tmp/$name.out" 2>&1
        rc=$?
        [ $rc = 0 ] && break
        grep -q "Couldn't connect" "/tmp/$name.out" || break
        [ "$i" -ge "$tries" ] && break
        i=$((i + 1)); sleep 1
    done
    sed "s/^/  $name| /" "/tmp/$name.out"
    return $rc
}

# check_perftest FILE: a perftest report must be present and every number in its
# result rows finite and non-zero.
check_perftest() {
    local f=$1
    grep -q "Can't produce a report" "$f" && fail "perftest: Can't produce a report"
    grep -qwE 'inf|-inf|nan|-nan' "$f" && fail "perftest printed inf/nan: $(grep -wE 'inf|-inf|nan|-nan' "$f" | head -1)"
    # Result rows: lines that consist only of numbers, under the "#bytes" header.
    awk '/#bytes/ {hdr=1; next} hdr && /^ *-+ *$/ {hdr=0} hdr && NF >= 3 && $1 ~ /^[0-9]+$/ {
            rows++; for (i = 1; i <= NF; i++) { if ($i !~ /^[0-9.]+$/) bad = bad " " $i; else if ($i + 0 == 0) zero = zero " col" i } }
         END { if (!rows) { print "no result rows"; exit 1 } if (bad) { print "non-numeric:" bad; exit 1 } if (zero) { print "zero values:" zero; exit 1 } }' "$f" \
        || fail "perftest report check failed (see output above)"
}

# server_client NAME CMD [ARG...]: the usual one-guest pattern for tools with a TCP
# rendezvous on port 18515 (ibv_*_pingpong, perftest): start "CMD ARG..." as the server
# in the background, wait for its listener, run "CMD ARG... $RRXE_IP4" as the client,
# then collect the server. Fails the test if either side fails. Outputs are kept in
# /tmp/NAME-client.out and /tmp/NAME-server.out.
# perftest measures the CPU clock before it starts (its report's unit); when the
# guest's vCPU is descheduled during that measurement it says "Correlation
# coefficient r^2: ... < 0.9" and reports 0 for every rate although the transfer
# ran. Such a run is no result: both sides run again (at most three runs).
server_client() {
    local name=$1 srv rc run
    shift
    for run in 1 2 3; do
        bg_start "$name-server" "$@"
        srv=$BG_PID
        wait_for_port 18515 30
        log "+ $* $RRXE_IP4"
        retry 5 1 "$@" "$RRXE_IP4" > "/tmp/$name-client.out" 2>&1
        rc=$?
        sed "s/^/  $name-client| /" "/tmp/$name-client.out"
        [ $rc = 0 ] || fail "$name client rc=$rc"
        bg_wait "$srv" "$name-server" 60 || fail "$name server failed"
        grep -q '^Correlation coefficient r^2' "/tmp/$name-client.out" || return 0
        log "$name: perftest could not measure the CPU clock (run $run of 3)"
    done
}

# odp_perftest DEV: ibv_devinfo -v must show DEV's ODP caps (ODP_SUPPORT, RC
# SEND/RECV/WRITE/READ/ATOMIC), then perftest's ib_write_bw, ib_read_bw and ib_send_bw run
# with --odp (buffers registered with IBV_ACCESS_ON_DEMAND; perftest quits if the device
# lacks ODP), 200 iterations of 64 KiB each, then ib_send_bw --odp with an SRQ and over UD
# (1 KiB); fails on a failed run or a bad report.
odp_perftest() {
    local dev=$1 gid tool cap
    gid=$(gid_index "$dev" ipv4) || fail "no RoCE v2 IPv4 GID"
    ibv_devinfo -v -d "$dev" > /tmp/devinfo.out 2>&1 || fail "ibv_devinfo -v -d $dev failed"
    awk '/general_odp_caps/ {on=1} /xrc_odp_caps/ {on=0} on' /tmp/devinfo.out | sed 's/^/  devinfo| /'
    awk '/general_odp_caps/ {on=1; next} on && /_odp_caps/ {on=0} on' /tmp/devinfo.out \
        | grep -qw ODP_SUPPORT || fail "ibv_devinfo: general_odp_caps lack ODP_SUPPORT"
    for cap in SUPPORT_SEND SUPPORT_RECV SUPPORT_WRITE SUPPORT_READ SUPPORT_ATOMIC; do
        awk '/rc_odp_caps/ {on=1; next} on && /_odp_caps/ {on=0} on' /tmp/devinfo.out \
            | grep -qw "$cap" || fail "ibv_devinfo: rc_odp_caps lack $cap"
    done
    for tool in ib_write_bw ib_read_bw ib_send_bw; do
        server_client "$tool" timeout 120 "$tool" -d "$dev" -x "$gid" -F -s 65536 -n 200 \
            --odp --report_gbits
        check_perftest "/tmp/$tool-client.out"
        log "$tool --odp: $(awk '/#bytes/ {getline; print}' "/tmp/$tool-client.out")"
    done
    # Receives from an SRQ, and UD (one MTU per message).
    server_client send_srq timeout 120 ib_send_bw -d "$dev" -x "$gid" -F -s 65536 -n 200 \
        --use-srq --odp --report_gbits
    check_perftest /tmp/send_srq-client.out
    server_client send_ud timeout 120 ib_send_bw -d "$dev" -x "$gid" -F -c UD -s 1024 -n 200 \
        --odp --report_gbits
    check_perftest /tmp/send_ud-client.out
    log "ib_send_bw --use-srq --odp: $(awk '/#bytes/ {getline; print}' /tmp/send_srq-client.out)"
    log "ib_send_bw -c UD --odp: $(awk '/#bytes/ {getline; print}' /tmp/send_ud-client.out)"
}

# counters DEV: "NAME VALUE" for each of DEV's port 1 hw_counters.
counters() {
    local f
    for f in /sys/class/infiniband/"$1"/ports/1/hw_counters/*; do
        [ -f "$f" ] && echo "${f##*/} $(cat "$f" 2>/dev/null)"
    done
}

# hw_counter NAME [DEV]: the value of one of the device's port 1 hw_counters.
hw_counter() {
    cat "/sys/class/infiniband/${2:-$RRXE_DEV}/ports/1/hw_counters/$1"
}

# show_counters [DEV]: print the device's non-zero hw_counters (retries, drops ...).
show_counters() {
    counters "${1:-$RRXE_DEV}" | awk '$2 != "0" { print "  counter " $1 " = " $2 }'
}

# pair_rping: the two-guest rping over eth0 with the driver each guest already loaded:
# guest B serves, guest A is the client; 20 pings with data verification (-V); fails
# unless eth0 sent at least 40 packets (the traffic really crossed the wire).
pair_rping() {
    local tx0 tx rc n
    tx0=$(cat /sys/class/net/eth0/statistics/tx_packets)
    if [ "$RRXE_ROLE" = b ]; then
        run timeout 150 rping -s -a "$RRXE_IP4" -C 20 -S 1024 -V -v
    else
        wait_for_peer_ping 60
        retry 60 1 rping -c -a "$RRXE_PEER_IP4" -C 20 -S 1024 -V -v > /tmp/rping-client.out 2>&1
        rc=$?
        sed 's/^/  rping-client| /' /tmp/rping-client.out
        [ $rc = 0 ] || fail "rping client rc=$rc"
        n=$(grep -c 'ping data:' /tmp/rping-client.out)
        [ "$n" -ge 20 ] || fail "client printed $n ping lines, expected 20"
    fi
    tx=$(( $(cat /sys/class/net/eth0/statistics/tx_packets) - tx0 ))
    log "eth0 sent $tx packets during the test"
    [ "$tx" -ge 40 ] || fail "only $tx packets left eth0: traffic did not cross the wire"
}

# single_rping: rping server and client on this guest over $RRXE_DEV's address, 20
# pings with data verification (-V); every side under a timeout.
single_rping() {
    local srv rc n
    bg_start rping-server timeout 60 rping -s -a "$RRXE_IP4" -C 20 -S 1024 -V -v
    srv=$BG_PID
    retry 20 0.5 timeout 60 rping -c -a "$RRXE_IP4" -C 20 -S 1024 -V -v > /tmp/rping-client.out 2>&1
    rc=$?
    # The pings' data (1 KiB each) only when something failed.
    [ $rc = 0 ] || { sed 's/^/  rping-client| /' /tmp/rping-client.out; fail "rping client rc=$rc"; }
    bg_wait "$srv" rping-server 30 > /tmp/rping-server.log ||
        { cat /tmp/rping-server.log; fail "rping server failed"; }
    n=$(grep -c 'ping data:' /tmp/rping-client.out)
    [ "$n" -ge 20 ] || fail "client printed $n ping lines, expected 20"
    log "rping: $n verified pings"
}

# kernel_arg NAME DEFAULT: the value of NAME=VALUE on the kernel command line (e.g.
# tools/qemu/run.sh --append "rrxe.fuzz_count=1000000"), else DEFAULT.
kernel_arg() {
    local arg
    for arg in $(cat /proc/cmdline); do
        case "$arg" in "$1"=*) echo "${arg#*=}"; return 0 ;; esac
    done
    echo "$2"
}

# kverbs_cases [PARAM=VALUE...]: the kernel verbs test module (/rrxe/rrxe_kverbs.ko, built by
# tools/testing/kverbs/build.sh) against the soft-RoCE device on eth0, loaded by the
# caller. Its cases run at load: insmod fails unless every one passes (insmod, not
# modprobe: it is a test artifact, not installed, and its one dependency, ib_core, is
# loaded with the driver). Shows its lines; the module is unloaded again.
kverbs_cases() {
    local rc
    [ -f /rrxe/rrxe_kverbs.ko ] || fail "/rrxe/rrxe_kverbs.ko is not in this initramfs (run tools/testing/kverbs/build.sh)"
    log "+ insmod /rrxe/rrxe_kverbs.ko netdev=$RRXE_NETDEV $*"
    insmod /rrxe/rrxe_kverbs.ko netdev="$RRXE_NETDEV" "$@"
    rc=$?
    dmesg | grep 'rrxe_kverbs:' | sed 's/^/  /'
    [ $rc = 0 ] || fail "rrxe_kverbs cases failed (insmod rc=$rc)"
    dmesg | grep -q 'rrxe_kverbs: [1-9][0-9]* passed, 0 failed' || fail "rrxe_kverbs reported no result"
    run rmmod rrxe_kverbs
}
