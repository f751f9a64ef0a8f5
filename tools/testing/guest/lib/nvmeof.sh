# Helpers for the NVMe over Fabrics tests (nvme-rdma host, nvmet-rdma target, a brd RAM
# disk as the namespace). Source after common.sh and load the RDMA device first:
#     . "$RRXE_LIB"; . "${RRXE_LIB%/*}/nvmeof.sh"; load_rxe rxe0; nvmf_single
# The host connects by writing an options string to /dev/nvme-fabrics (what nvme-cli
# does), so no extra packages are needed. nvme-rdma registers every I/O buffer it does
# not send inline with a fast-registration MR (REG_MR, ib_map_mr_sg), and the target
# answers with SEND_WITH_INV, so these tests prove a device's fast registration.
#
# Data: four pieces of random data, 64.5 MiB in all, written with O_DIRECT in different
# I/O sizes and offsets, read back with O_DIRECT and compared with cmp:
#   1: 8 MiB in 4 KiB I/Os at 0              2: 24 MiB in 64 KiB I/Os at 8 MiB + 4 KiB
#   3: 32 MiB in 1 MiB I/Os at 40 MiB        4: 512 KiB in 512-byte I/Os at 80 MiB + 512
# rrxe.nvmf_fault=1 (kernel command line, one-guest flow only) overwrites 4 KiB of the
# RAM disk under piece 3 behind the host's back after the write: the read-back must fail.

NVMF_NQN=nqn.2014-08.org.example:rrxe-nvmf-ram0
NVMF_PORT=4420
NVMF_CFG=/sys/kernel/config/nvmet
NVMF_RAM_KB=131072          # brd: 128 MiB
NVMF_PIECES="1 2 3 4"
# Pair tests: TCP ports on eth0 for "target ready" (A listens) and "host done" (A listens).
NVMF_READY_PORT=4431
NVMF_DONE_PORT=4430

# nvmf_piece N: P_BS, P_COUNT, P_OFF (bytes), P_LEN (bytes) and P_NAME of piece N.
nvmf_piece() {
    case $1 in
        1) P_BS=4096 P_COUNT=2048 P_OFF=0 P_NAME=4k ;;
        2) P_BS=65536 P_COUNT=384 P_OFF=$(((8 << 20) + 4096)) P_NAME=64k ;;
        3) P_BS=1048576 P_COUNT=32 P_OFF=$((40 << 20)) P_NAME=1M ;;
        4) P_BS=512 P_COUNT=1024 P_OFF=$(((80 << 20) + 512)) P_NAME=512 ;;
        *) fail "nvmf_piece: no piece $1" ;;
    esac
    P_LEN=$((P_BS * P_COUNT))
}

# nvmf_now: seconds since boot (10 ms resolution).
nvmf_now() { cut -d' ' -f1 /proc/uptime; }

# nvmf_rate BYTES T0 T1: "N.N MB/s" (Debian's busybox dd prints no rate).
nvmf_rate() { awk -v b="$1" -v t0="$2" -v t1="$3" 'BEGIN { t = t1 - t0; if (t < 0.01) t = 0.01; printf "%.1f MB/s", b / t / 1e6 }'; }

# nvmf_secs T0 T1: T1 - T0 in seconds.
nvmf_secs() { awk -v t0="$1" -v t1="$2" 'BEGIN { printf "%.1f", t1 - t0 }'; }

# nvmf_dd_ok FILE COUNT: dd's messages in FILE say that COUNT whole blocks went out.
nvmf_dd_ok() { grep -q "^$2+0 records out" "$1"; }

nvmf_configfs() {
    grep -q ' /sys/kernel/config configfs ' /proc/mounts ||
        run mount -t configfs configfs /sys/kernel/config
}

# nvmf_target_up ADDR: a 128 MiB RAM disk exported as namespace 1 of subsystem
# $NVMF_NQN (any host) on an nvmet RDMA port at ADDR:$NVMF_PORT (IPv4).
nvmf_target_up() {
    local addr=$1 s p
    modprobe brd rd_nr=1 rd_size=$NVMF_RAM_KB || fail "modprobe brd failed"
    wait_for 10 test -b /dev/ram0 || fail "no /dev/ram0 after modprobe brd"
    modprobe nvmet-rdma || fail "modprobe nvmet-rdma failed"
    nvmf_configfs
    [ -d "$NVMF_CFG" ] || fail "no $NVMF_CFG (nvmet loaded?)"
    s=$NVMF_CFG/subsystems/$NVMF_NQN
    p=$NVMF_CFG/ports/1
    mkdir "$s" || fail "mkdir $s"
    echo 1 > "$s/attr_allow_any_host" || fail "attr_allow_any_host"
    mkdir "$s/namespaces/1" || fail "mkdir namespace 1"
    echo -n /dev/ram0 > "$s/namespaces/1/device_path" || fail "namespace device_path"
    echo 1 > "$s/namespaces/1/enable" || fail "enabling namespace 1 (/dev/ram0)"
    mkdir "$p" || fail "mkdir $p"
    echo rdma > "$p/addr_trtype"
    echo ipv4 > "$p/addr_adrfam"
    echo "$addr" > "$p/addr_traddr"
    echo "$NVMF_PORT" > "$p/addr_trsvcid" || fail "configuring port 1"
    # Linking the subsystem enables the port: nvmet-rdma binds and listens here.
    ln -s "$s" "$p/subsystems/$NVMF_NQN" || fail "enabling RDMA port $addr:$NVMF_PORT (see the kernel log)"
    log "target: $NVMF_NQN ns 1 = /dev/ram0 ($((NVMF_RAM_KB / 1024)) MiB) on rdma $addr:$NVMF_PORT"
}

# nvmf_target_down: undo nvmf_target_up and unload nvmet-rdma, nvmet and brd.
nvmf_target_down() {
    local s=$NVMF_CFG/subsystems/$NVMF_NQN p=$NVMF_CFG/ports/1
    if [ -d "$p" ]; then
        rm -f "$p/subsystems/$NVMF_NQN" || fail "unlinking the subsystem from port 1"
        rmdir "$p" || fail "rmdir $p"
    fi
    if [ -d "$s" ]; then
        echo 0 > "$s/namespaces/1/enable"
        rmdir "$s/namespaces/1" || fail "rmdir namespace 1"
        rmdir "$s" || fail "rmdir $s"
    fi
    timeout 60 modprobe -r nvmet-rdma nvmet || fail "modprobe -r nvmet-rdma nvmet failed"
    timeout 60 modprobe -r brd || fail "modprobe -r brd failed"
    ! lsmod | grep -qE '^(nvmet|nvmet_rdma|brd) ' || fail "target modules still loaded: $(lsmod | grep -E '^(nvmet|brd)' | cut -d' ' -f1 | tr '\n' ' ')"
    log "target: torn down, nvmet-rdma, nvmet and brd unloaded"
}

# nvmf_host_unload: unload nvme-rdma and the NVMe core once no controller is left.
nvmf_host_unload() {
    timeout 60 modprobe -r nvme-rdma || fail "modprobe -r nvme-rdma failed"
    ! lsmod | grep -qE '^nvme_(core|fabrics|rdma) ' || fail "host modules still loaded: $(lsmod | grep -E '^nvme_' | cut -d' ' -f1 | tr '\n' ' ')"
    log "host: nvme-rdma, nvme-fabrics and nvme-core unloaded"
}

# nvmf_connect ADDR: connect to $NVMF_NQN at ADDR:$NVMF_PORT over RDMA; sets NVMF_CTRL
# (nvmeN) and NVMF_DISK (/dev/nvmeNn1) and checks the namespace's size.
nvmf_connect() {
    local addr=$1 opts reply rc inst sz
    modprobe nvme-rdma || fail "modprobe nvme-rdma failed"
    [ -c /dev/nvme-fabrics ] || fail "no /dev/nvme-fabrics"
    # ctrl_loss_tmo bounds a broken transport (the default retries for 10 minutes);
    # nvmf_check_dmesg judges any error recovery.
    opts="transport=rdma,traddr=$addr,trsvcid=$NVMF_PORT,nqn=$NVMF_NQN,ctrl_loss_tmo=30,reconnect_delay=2"
    # As nvme-cli: one write of the options, then read back "instance=N,cntlid=M".
    exec 3<> /dev/nvme-fabrics || fail "cannot open /dev/nvme-fabrics"
    printf '%s' "$opts" >&3
    rc=$?
    read -r reply <&3
    exec 3>&-
    [ $rc = 0 ] || { log "connect options: $opts"; return 1; }
    inst=$(echo "$reply" | sed -n 's/^instance=\([0-9]*\),.*/\1/p')
    [ -n "$inst" ] || fail "connected but /dev/nvme-fabrics answered '$reply'"
    NVMF_CTRL=nvme$inst
    NVMF_DISK=/dev/nvme${inst}n1
    wait_for 30 test -b "$NVMF_DISK" || fail "no $NVMF_DISK 30 s after connecting ($NVMF_CTRL)"
    [ "$(cat /sys/class/nvme/$NVMF_CTRL/transport)" = rdma ] || fail "$NVMF_CTRL is not an RDMA controller"
    [ "$(cat /sys/class/nvme/$NVMF_CTRL/subsysnqn)" = "$NVMF_NQN" ] || fail "$NVMF_CTRL: wrong subsystem"
    sz=$(( $(cat /sys/block/${NVMF_DISK#/dev/}/size) * 512 ))
    [ "$sz" = $((NVMF_RAM_KB * 1024)) ] || fail "$NVMF_DISK has $sz bytes, expected $((NVMF_RAM_KB * 1024))"
    [ "$(cat /sys/block/${NVMF_DISK#/dev/}/queue/logical_block_size)" = 512 ] ||
        fail "$NVMF_DISK: logical block size $(cat /sys/block/${NVMF_DISK#/dev/}/queue/logical_block_size), the 512-byte piece needs 512"
    log "host: connected $NVMF_CTRL to $addr:$NVMF_PORT ($(cat /sys/class/nvme/$NVMF_CTRL/queue_count) queues), $NVMF_DISK $((sz >> 20)) MiB"
}

# nvmf_connect_retry ADDR: nvmf_connect, up to 5 times 2 s apart (the target may be
# enabling its port).
nvmf_connect_retry() {
    local i
    for i in 1 2 3 4 5; do
        nvmf_connect "$1" && return 0
        log "host: connect attempt $i to $1 failed"
        sleep 2
    done
    fail "cannot connect to $NVMF_NQN at $1:$NVMF_PORT"
}

# nvmf_disconnect: delete the controller and wait until it is gone.
nvmf_disconnect() {
    echo 1 > "/sys/class/nvme/$NVMF_CTRL/delete_controller" || fail "delete_controller on $NVMF_CTRL"
    wait_for 60 sh -c "! test -e /sys/class/nvme/$NVMF_CTRL" || fail "$NVMF_CTRL still there 60 s after delete_controller"
    log "host: disconnected $NVMF_CTRL"
}

# nvmf_make_data: the reference pieces /tmp/nvmf.ref.N from /dev/urandom, and their
# SHA-256 sums in NVMF_SUMS ("sum1 sum2 ...").
nvmf_make_data() {
    local n
    NVMF_SUMS=
    for n in $NVMF_PIECES; do
        nvmf_piece "$n"
        dd if=/dev/urandom of=/tmp/nvmf.ref.$n bs=$P_BS count=$P_COUNT iflag=fullblock 2> /tmp/nvmf.dd || fail "making random data"
        [ "$(stat -c %s /tmp/nvmf.ref.$n)" = "$P_LEN" ] || fail "/tmp/nvmf.ref.$n has the wrong size"
        NVMF_SUMS="$NVMF_SUMS $(sha256sum < /tmp/nvmf.ref.$n | cut -c1-64)"
    done
    NVMF_SUMS=${NVMF_SUMS# }
}

# nvmf_write DISK: write every piece with O_DIRECT, each in its own I/O size; one log
# line with the rate of each piece.
nvmf_write() {
    local disk=$1 n t0 t1 ta line= total=0
    ta=$(nvmf_now)
    for n in $NVMF_PIECES; do
        nvmf_piece "$n"
        t0=$(nvmf_now)
        timeout 900 dd if=/tmp/nvmf.ref.$n of="$disk" bs=$P_BS count=$P_COUNT seek=$P_OFF \
            oflag=direct,seek_bytes conv=notrunc 2> /tmp/nvmf.dd.$n && nvmf_dd_ok /tmp/nvmf.dd.$n $P_COUNT ||
            { sed 's/^/  dd| /' /tmp/nvmf.dd.$n; fail "writing piece $n ($P_NAME I/Os) to $disk failed"; }
        t1=$(nvmf_now)
        line="$line, $P_NAME $(nvmf_rate $P_LEN $t0 $t1)"
        total=$((total + P_LEN))
    done
    log "write: $((total >> 10)) KiB with O_DIRECT in $(nvmf_secs $ta $t1) s${line}"
}

# nvmf_read_piece DISK N: read piece N back with O_DIRECT and compare it (cmp) with its
# reference. dd's and cmp's messages go to /tmp/nvmf.rd.N, the start and end times to
# /tmp/nvmf.t.N.
nvmf_read_piece() {
    local disk=$1 n=$2 rc t0
    nvmf_piece "$n"
    t0=$(nvmf_now)
    timeout 900 dd if="$disk" bs=$P_BS count=$P_COUNT skip=$P_OFF iflag=direct,skip_bytes \
        2> /tmp/nvmf.rd.$n | cmp - /tmp/nvmf.ref.$n > /tmp/nvmf.cmp.$n 2>&1
    rc=$?
    echo "$t0 $(nvmf_now)" > /tmp/nvmf.t.$n
    cat /tmp/nvmf.cmp.$n >> /tmp/nvmf.rd.$n
    nvmf_dd_ok /tmp/nvmf.rd.$n $P_COUNT || return 1
    return $rc
}

# nvmf_verify DISK WHAT [parallel]: read every piece back and compare; one log line.
# With "parallel" the four reads run at once (more commands in flight).
nvmf_verify() {
    local disk=$1 what=$2 mode=${3:-serial} n ta tb pids= line= bad= total=0
    ta=$(nvmf_now)
    for n in $NVMF_PIECES; do
        if [ "$mode" = parallel ]; then
            (nvmf_read_piece "$disk" "$n"; echo $? > /tmp/nvmf.rc.$n) &
            pids="$pids $!"
        else
            nvmf_read_piece "$disk" "$n"; echo $? > /tmp/nvmf.rc.$n
        fi
    done
    [ -z "$pids" ] || wait $pids
    tb=$(nvmf_now)
    for n in $NVMF_PIECES; do
        nvmf_piece "$n"
        total=$((total + P_LEN))
        line="$line, $P_NAME $(nvmf_rate $P_LEN $(cat /tmp/nvmf.t.$n))"
        if [ "$(cat /tmp/nvmf.rc.$n)" != 0 ]; then
            sed "s/^/  piece $n ($P_NAME at byte $P_OFF)| /" /tmp/nvmf.rd.$n
            bad="$bad $n"
        fi
    done
    [ -z "$bad" ] || fail "$what: pieces$bad failed or read back different data (above)"
    log "$what: $((total >> 10)) KiB with O_DIRECT ($mode), equal, in $(nvmf_secs $ta $tb) s${line}"
}

# nvmf_check_dmesg: no NVMe command timed out and no controller went into error
# recovery (nvme-rdma reconnects and retries, so a transport that fails QPs would pass
# the data checks otherwise). One exception: a host on upstream rxe may recover from
# errors (not time out): rxe's requester, rewound by a retransmission, executes the
# REG_MR work requests behind the retried WQE a second time, REG_MR on a valid MR fails
# (IB_WC_LOC_QP_OP_ERR), the QP goes to ERR and every WQE, that one too, is flushed
# ("SEND for CQE ... failed with status WR flushed"). Documentation/testing.rst.
nvmf_check_dmesg() {
    local n
    dmesg | grep -E 'nvme nvme[0-9]+: (I/O tag .* timeout|starting error recovery|Reconnecting in|Failed reconnect)' > /tmp/nvmf.err
    [ -s /tmp/nvmf.err ] || return 0
    n=$(grep -c 'starting error recovery' /tmp/nvmf.err)
    case "$RRXE_DEV" in
        rxe*)
            if ! grep -qE 'timeout|Failed reconnect' /tmp/nvmf.err; then
                log "note: $n error recoveries on upstream rxe, tolerated (rxe re-executes REG_MR after a retransmission: testing.rst)"
                return 0
            fi ;;
    esac
    sed 's/^/  dmesg| /' /tmp/nvmf.err | head -20
    show_counters "$RRXE_DEV"
    fail "the NVMe host timed out or recovered from errors ($n error recoveries, above)"
}

# nvmf_fault_ram: with rrxe.nvmf_fault=1, overwrite 4 KiB of the RAM disk inside piece 3
# (target side) so that the host's read-back must fail.
nvmf_fault_ram() {
    [ "$(kernel_arg rrxe.nvmf_fault 0)" = 1 ] || return 0
    nvmf_piece 3
    dd if=/dev/urandom of=/dev/ram0 bs=4096 count=1 seek=$(((P_OFF >> 12) + 1000)) oflag=direct conv=notrunc 2>/dev/null ||
        fail "fault injection: writing /dev/ram0 failed"
    log "fault: overwrote 4 KiB of /dev/ram0 at byte $((P_OFF + (1000 << 12))) (piece 3); the read-back must fail"
}

# nvmf_single: the one-guest test over $RRXE_DEV (loaded by the caller): target on
# this guest's eth0 address, host connected to it (the device loops the traffic back),
# write, read back, disconnect, reconnect, read back again (four reads in parallel),
# disconnect. The host module is loaded first, so the target's ib_client is removed
# first at a device removal. The target stays up for nvmf_link_delete_under_io, which
# ends the test: disabling the port while its listener lives would take
# nvmet_config_sem and then a handler_mutex, and with a connect command that nvmet-rdma
# ran from its CM handler before, lockdep reports that order (with rxe as well; see
# Documentation/testing.rst) and checks nothing for the rest of the boot.
nvmf_single() {
    modprobe nvme-rdma || fail "modprobe nvme-rdma failed"
    nvmf_target_up "$RRXE_IP4"
    nvmf_make_data
    nvmf_connect_retry "$RRXE_IP4"
    nvmf_write "$NVMF_DISK"
    nvmf_fault_ram
    nvmf_verify "$NVMF_DISK" read
    nvmf_disconnect
    nvmf_connect_retry "$RRXE_IP4"
    nvmf_verify "$NVMF_DISK" "read after reconnect" parallel
    nvmf_disconnect
    nvmf_check_dmesg
    show_counters "$RRXE_DEV"
}

# nvmf_io_loop DISK SECONDS: write and read back piece 2 until something fails or
# SECONDS pass; exit status 0 only if it ran out of time without an error. Progress
# in /tmp/nvmf.loop.
nvmf_io_loop() {
    local disk=$1 end i=0
    end=$(( $(cut -d. -f1 /proc/uptime) + $2 ))
    nvmf_piece 2
    while [ "$(cut -d. -f1 /proc/uptime)" -lt "$end" ]; do
        i=$((i + 1))
        echo "round $i" >> /tmp/nvmf.loop
        dd if=/tmp/nvmf.ref.2 of="$disk" bs=$P_BS count=$P_COUNT seek=$P_OFF oflag=direct,seek_bytes conv=notrunc 2> /tmp/nvmf.lw ||
            { cat /tmp/nvmf.lw >> /tmp/nvmf.loop; return 1; }
        nvmf_read_piece "$disk" 2 || { cat /tmp/nvmf.rd.2 >> /tmp/nvmf.loop; return 2; }
    done
    return 0
}

# nvmf_link_delete_under_io: the host connected over $RRXE_DEV, I/O running (the host
# module loaded before the target's, so the target's ib_client is removed first and the
# host sees its queues fail), then `rdma link delete $RRXE_DEV`. The deletion must
# return, the I/O must fail, the controller must go away; nothing may hang or splat
# (the harness checks the console). Then the target configuration is removed (the
# port's listener went with the device) and every NVMe module and brd unloads. The
# target of nvmf_single is used if it is still up.
nvmf_link_delete_under_io() {
    local dev=$RRXE_DEV pid n rc t0
    modprobe nvme-rdma || fail "modprobe nvme-rdma failed"
    [ -d "$NVMF_CFG/ports/1" ] || nvmf_target_up "$RRXE_IP4"
    [ -f /tmp/nvmf.ref.2 ] || nvmf_make_data
    nvmf_connect_retry "$RRXE_IP4"
    : > /tmp/nvmf.loop
    nvmf_io_loop "$NVMF_DISK" 1200 &
    pid=$!
    # Until the loop is in its second round (a write and a verified read are done).
    wait_for 600 grep -q 'round 2' /tmp/nvmf.loop || { kill $pid; sed 's/^/  io| /' /tmp/nvmf.loop; fail "no I/O round completed in 600 s"; }
    sleep 1
    t0=$(nvmf_now)
    log "link delete: rdma link delete $dev under I/O ($NVMF_CTRL connected)"
    timeout 120 rdma link delete "$dev" || fail "rdma link delete $dev failed or hung (rc=$?)"
    log "link delete: returned after $(nvmf_secs $t0 $(nvmf_now)) s"
    n=0
    while kill -0 $pid 2>/dev/null; do
        n=$((n + 1))
        [ $n -ge 600 ] && { kill $pid; fail "I/O still running 120 s after the device was deleted"; }
        sleep 0.2
    done
    wait $pid
    rc=$?
    [ $rc != 0 ] || fail "the I/O loop ran out its time without an error: the device's deletion went unnoticed"
    log "link delete: I/O failed (rc=$rc) after $(grep -c '^round' /tmp/nvmf.loop) rounds: $(grep -v -e '^round' -e 'records' -e ' copied' /tmp/nvmf.loop | head -2 | tr '\n' ' ')"
    wait_for 60 sh -c "! test -e /sys/class/nvme/$NVMF_CTRL" || fail "$NVMF_CTRL still there 60 s after its device was deleted"
    [ ! -e "/sys/class/infiniband/$dev" ] || fail "$dev still in /sys/class/infiniband"
    log "link delete: $NVMF_CTRL gone; host said: $(dmesg | grep -E "nvme nvme[0-9]+:" | tail -3 | sed 's/^\[[^]]*\] //' | tr '\n' '|')"
    nvmf_host_unload
    nvmf_target_down
}

# --- pair: target on guest A, host on guest B -------------------------------------

# nvmf_pair: guest A exports the RAM disk on its eth0 address and waits; guest B
# connects over the wire, writes, reads back, disconnects, reconnects, reads back in
# parallel and disconnects, then reports its status and the pieces' SHA-256 sums to A
# over TCP. A checks that its RAM disk holds exactly those pieces (the data really
# crossed the wire) and fails if B failed. Both unload everything.
nvmf_pair() {
    if [ "$RRXE_ROLE" = a ]; then
        nvmf_pair_target
    else
        nvmf_pair_host
    fi
}

nvmf_pair_target() {
    local msg rc n sum bad=
    nvmf_target_up "$RRXE_IP4"
    rm -f /tmp/nvmf.done
    # Listen for B's report first, then tell B that the target is up.
    timeout 7200 nc -l -p $NVMF_DONE_PORT > /tmp/nvmf.done &
    NVMF_DONE_PID=$!
    timeout 3600 nc -l -p $NVMF_READY_PORT < /dev/null > /dev/null &
    log "target: waiting for guest B's report on TCP port $NVMF_DONE_PORT"
    wait $NVMF_DONE_PID
    msg=$(cat /tmp/nvmf.done)
    [ -n "$msg" ] || fail "no report from guest B"
    log "target: guest B reports: ${msg%% *}"
    show_counters "$RRXE_DEV"
    rc=$(echo "$msg" | sed -n 's/^rc=\([0-9]*\).*/\1/p')
    [ "$rc" = 0 ] || fail "guest B (host) failed: $msg"
    set -- ${msg#rc=0}
    for n in $NVMF_PIECES; do
        nvmf_piece "$n"
        sum=$(timeout 120 dd if=/dev/ram0 bs=$P_BS count=$P_COUNT skip=$P_OFF iflag=direct,skip_bytes 2>/dev/null | sha256sum | cut -c1-64)
        [ "$sum" = "$1" ] || bad="$bad $n"
        shift
    done
    [ -z "$bad" ] || fail "target: /dev/ram0 does not hold what guest B wrote: pieces$bad"
    log "target: /dev/ram0 holds the 4 pieces guest B wrote (SHA-256 equal)"
    nvmf_target_down
}

# The EXIT trap of guest B: report the exit status (and on success the sums) to A.
nvmf_pair_report() {
    local rc=$1 msg
    msg="rc=$rc"
    [ "$rc" = 0 ] && msg="rc=0 $NVMF_SUMS"
    retry 30 1 sh -c "echo '$msg' | nc -w 5 $RRXE_PEER_IP4 $NVMF_DONE_PORT" ||
        log "could not report to guest A"
}

nvmf_pair_host() {
    local rx0 tx0 rx tx
    trap 'nvmf_pair_report $?' EXIT
    nvmf_make_data
    wait_for_peer_ping 120
    wait_for 900 nc -w 2 "$RRXE_PEER_IP4" $NVMF_READY_PORT < /dev/null || fail "guest A's target not ready after 900 s"
    rx0=$(cat /sys/class/net/eth0/statistics/rx_bytes)
    tx0=$(cat /sys/class/net/eth0/statistics/tx_bytes)
    nvmf_connect_retry "$RRXE_PEER_IP4"
    nvmf_write "$NVMF_DISK"
    nvmf_verify "$NVMF_DISK" read
    nvmf_disconnect
    nvmf_connect_retry "$RRXE_PEER_IP4"
    nvmf_verify "$NVMF_DISK" "read after reconnect" parallel
    nvmf_disconnect
    rx=$(( ($(cat /sys/class/net/eth0/statistics/rx_bytes) - rx0) >> 20 ))
    tx=$(( ($(cat /sys/class/net/eth0/statistics/tx_bytes) - tx0) >> 20 ))
    log "host: eth0 received $rx MiB and sent $tx MiB"
    [ "$tx" -ge 64 ] && [ "$rx" -ge 128 ] || fail "too little traffic on eth0 for 64 MiB out and 128 MiB in"
    nvmf_check_dmesg
    nvmf_host_unload
    show_counters "$RRXE_DEV"
}
