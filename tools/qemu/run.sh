#!/usr/bin/env bash
# Boot one rrxe test guest, or two on one Ethernet segment (--pair), under QEMU/TCG.
#
# usage: tools/qemu/run.sh [options]
#   --test NAME           run /rrxe/tests/NAME.sh in the guest(s) and judge the result
#   --shell               interactive shell on guest A's serial console (this terminal;
#                         Ctrl-A x kills QEMU, `exit` powers the guest off)
#   --pair                two guests, A (192.0.2.1) and B (192.0.2.2), linked by a
#                         point-to-point UDP socket pair on 127.0.0.1
#   --variant normal|debug   kernel variant built by tools/kernel/build.sh (default normal)
#   --kernel KDIR|bzImage    guest A's kernel (default: tools/kernel/build.sh VARIANT)
#   --kernel-b KDIR|bzImage  guest B's kernel (default: same as guest A)
#   --ko FILE / --ko-b FILE  rrxe.ko for guest A / B (default: the repo's build, if any)
#   --tests DIR           another directory of guest test scripts (repeatable)
#   --add SRC=/GUEST/PATH another file for both guests' initrd (repeatable)
#   --timeout SEC         hard limit per guest; QEMU is killed and the run fails (default 300)
#   --smp N, --mem SIZE   guest CPUs / memory (default 2, 1G; env RRXE_SMP, RRXE_MEM)
#   --pcap FILE           dump guest A's network traffic (both directions) to FILE
#   --append ARGS         extra kernel command line (both guests)
#   --append-b ARGS       guest B's extra command line instead (default: --append's),
#                         e.g. --append rrxe.driver=rxe --append-b rrxe.driver=rrxe
#   --log-dir DIR         logs (default $RRXE_OUT/runs/DATE-NAME-PID)
#   --icount              guest time in instructions (QEMU -icount shift=0,sleep=off: 1 ns
#                         per instruction), so what one vCPU does alone takes the same
#                         time in every run, whatever the host does; the vCPUs then take
#                         turns on one host thread (tools/bench/ab.sh)
# Prints "PASS (Ns)" or "FAIL reason" as its last line; exit status 0 only on PASS.
# Networking: -nic none, then only a -netdev socket (udp=/localaddr= on 127.0.0.1) with
# a virtio-net device; a single guest points at an unused loopback port.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export RRXE_OUT=${RRXE_OUT:-$repo/out}

die() { printf 'qemu: ERROR: %s\n' "$*" >&2; echo "FAIL $*"; exit 2; }
log() { printf 'qemu: %s\n' "$*" >&2; }

test_name= shell=0 pair=0 icount=0 variant=normal kernel_a= kernel_b= ko_a= ko_b= timeout=300
smp=${RRXE_SMP:-2} mem=${RRXE_MEM:-1G} pcap= append= append_b=unset log_dir= tests=()
while [ $# -gt 0 ]; do
    case "$1" in
        --test) test_name=$2; shift 2 ;;
        --shell) shell=1; shift ;;
        --pair) pair=1; shift ;;
        --variant) variant=$2; shift 2 ;;
        --kernel) kernel_a=$2; shift 2 ;;
        --kernel-b) kernel_b=$2; shift 2 ;;
        --ko) ko_a=$2; shift 2 ;;
        --ko-b) ko_b=$2; shift 2 ;;
        --tests) tests+=(--tests "$2"); shift 2 ;;
        --add) tests+=(--add "$2"); shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        --smp) smp=$2; shift 2 ;;
        --mem) mem=$2; shift 2 ;;
        --pcap) pcap=$2; shift 2 ;;
        --append) append=$2; shift 2 ;;
        --append-b) append_b=$2; shift 2 ;;
        --log-dir) log_dir=$2; shift 2 ;;
        --icount) icount=1; shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
[ -n "$test_name" ] || [ $shell = 1 ] || die "nothing to do: give --test NAME and/or --shell"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found (run tools/setup.sh)"

# Kernel: a KDIR (bzImage + modinstall tree) or a bare bzImage.
if [ -z "$kernel_a" ]; then
    kernel_a=$("$repo/tools/kernel/build.sh" "$variant") || die "kernel build failed"
fi
[ -n "$kernel_b" ] || kernel_b=$kernel_a
[ -n "$ko_b" ] || ko_b=$ko_a
for k in "$kernel_a" "$kernel_b"; do
    if [ -d "$k" ]; then
        [ -f "$k/arch/x86/boot/bzImage" ] || die "no $k/arch/x86/boot/bzImage"
    else
        [ -f "$k" ] || die "no kernel $k (give a KDIR or a bzImage)"
    fi
done
resolve_kernel() {  # $1 KDIR|bzImage -> "bzImage KDIR-or-empty"
    if [ -d "$1" ]; then echo "$1/arch/x86/boot/bzImage $1"; else echo "$1 "; fi
}
read -r image_a kdir_a <<< "$(resolve_kernel "$kernel_a")"
read -r image_b kdir_b <<< "$(resolve_kernel "$kernel_b")"

name=${test_name:-shell}
[ -n "$log_dir" ] || log_dir=$RRXE_OUT/runs/$(date +%Y%m%d-%H%M%S)-$name-$$
mkdir -p "$log_dir"
log_dir=$(cd "$log_dir" && pwd)

# Per-guest initrd: cached base + this run's files (needs the guest's own modules).
mk_initrd() {  # guest kdir ko
    local args=(--out "$log_dir/initrd-$1.img" ${tests[@]+"${tests[@]}"})
    [ -n "$2" ] && args+=(--kdir "$2")
    [ -n "$3" ] && args+=(--ko "$3")
    "$repo/tools/initramfs/extra.sh" "${args[@]}" >/dev/null || die "initrd for guest $1 failed"
}
mk_initrd a "$kdir_a" "$ko_a"
guests=(a)
if [ $pair = 1 ]; then
    guests=(a b)
    if [ "$kdir_b" = "$kdir_a" ] && [ "$ko_b" = "$ko_a" ]; then
        cp "$log_dir/initrd-a.img" "$log_dir/initrd-b.img"
    else
        mk_initrd b "$kdir_b" "$ko_b"
    fi
fi
declare -A pid rc
cleanup() {
    # QEMU runs under timeout(1), which has its own process group: an interrupted run
    # must stop its guests itself.
    local p
    for p in "${pid[@]}"; do kill "$p" 2>/dev/null; done
    [ "${RRXE_KEEP_INITRD:-0}" = 1 ] || rm -f "$log_dir"/initrd-*.img
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Two free UDP ports on 127.0.0.1 (the kernel picks them; QEMU binds them right after).
free_ports() {
    python3 - <<'PY'
import socket
s = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))
PY
}

qemu_cmd() {  # guest local_port peer_port -> prints nothing, fills the array "cmd"
    local g=$1 lport=$2 pport=$3 image kargs
    if [ "$g" = a ]; then image=$image_a; else image=$image_b; fi
    kargs="console=ttyS0 printk.time=1 panic=-1 rrxe.role=$g"
    [ -n "$test_name" ] && kargs+=" rrxe.test=$test_name"
    [ $shell = 1 ] && kargs+=" rrxe.shell=1"
    if [ "$g" = b ] && [ "$append_b" != unset ]; then
        [ -n "$append_b" ] && kargs+=" $append_b"
    else
        [ -n "$append" ] && kargs+=" $append"
    fi
    cmd=(qemu-system-x86_64 -name "rrxe-$name-$g" -accel tcg -cpu max -smp "$smp" -m "$mem"
         -kernel "$image" -initrd "$log_dir/initrd-$g.img" -append "$kargs"
         -no-reboot -display none -vga none
         -nic none
         -netdev "socket,id=n0,udp=127.0.0.1:$pport,localaddr=127.0.0.1:$lport"
         -device "virtio-net-pci,netdev=n0,mac=52:54:00:00:00:0$([ "$g" = a ] && echo 1 || echo 2)")
    [ $icount = 1 ] && cmd+=(-icount shift=0,sleep=off)
    if [ "$g" = a ] && [ -n "$pcap" ]; then
        cmd+=(-object "filter-dump,id=f0,netdev=n0,file=$pcap")
    fi
    if [ $shell = 1 ] && [ "$g" = a ]; then
        cmd+=(-chardev "stdio,id=con0,mux=on,signal=off,logfile=$log_dir/guest-a.log" -serial chardev:con0
              -mon chardev=con0,mode=readline)
    elif [ $shell = 1 ]; then
        cmd+=(-chardev "socket,id=con0,path=$log_dir/guest-$g.sock,server=on,wait=off,logfile=$log_dir/guest-$g.log"
              -serial chardev:con0 -monitor none)
    else
        cmd+=(-serial "file:$log_dir/guest-$g.log" -monitor none)
    fi
}

start=$(date +%s.%N)
# A boot that has not reached /init by then has hung: 150 s for a normal
# kernel (it reaches /init in 2-7 s of guest time), 400 s if either guest
# runs a KASAN kernel (23-51 s of guest time in make check, ~230 s once on a
# loaded host). Not scaled with the test's timeout: a hang in a long test
# (rrxe_nvmeof[debug], 2400 s) must not eat half of it before the reboot.
kasan=0
for k in "$kdir_a" "$kdir_b"; do
    if [ -n "$k" ] && grep -qs '^CONFIG_KASAN=y' "$k/.config"; then kasan=1; fi
done
boot_limit=150
[ $kasan = 1 ] && boot_limit=400
boot_limit=${RRXE_BOOT_LIMIT:-$boot_limit}
# Guest B's grace after A is done (seconds). The two guests of a pair test
# usually end within seconds of each other, but B's last steps (an
# `rdma link delete`, an rmmod, then the kmemleak scan, ~40 s on a KASAN
# kernel under TCG) may still run when A ends: 30 s for a normal kernel,
# 180 s with a KASAN kernel (rrxe_pair_vanish[debug] once ran out of 30 s
# on a slow, loaded host). B's own steps have their own timeouts.
b_grace=30
[ $kasan = 1 ] && b_grace=180
for attempt in 1 2 3; do
    read -r port_a port_b <<< "$(free_ports)"
    for g in "${guests[@]}"; do
        if [ "$g" = a ]; then qemu_cmd a "$port_a" "$port_b"; else qemu_cmd b "$port_b" "$port_a"; fi
        clean=("${cmd[@]}")
        printf '%q ' "${clean[@]}" > "$log_dir/qemu-$g.cmd"; echo >> "$log_dir/qemu-$g.cmd"
        : > "$log_dir/guest-$g.log"
        if [ $shell = 1 ] && [ "$g" = a ]; then
            continue  # started in the foreground below
        fi
        if [ $shell = 1 ]; then
            "${clean[@]}" 2> "$log_dir/qemu-$g.stderr" &
        else
            timeout -k 5 "$timeout" "${clean[@]}" 2> "$log_dir/qemu-$g.stderr" < /dev/null &
        fi
        pid[$g]=$!
    done
    [ $shell = 1 ] && break
    sleep 0.5
    if grep -qs 'Address already in use' "$log_dir"/qemu-*.stderr; then
        log "port collision, retrying"
        for g in "${guests[@]}"; do kill "${pid[$g]}" 2>/dev/null; wait "${pid[$g]}" 2>/dev/null; done
        continue
    fi
    break
done

if [ $shell = 1 ]; then
    [ $pair = 1 ] && log "guest B console: socat -,raw,echo=0 UNIX-CONNECT:$log_dir/guest-b.sock (log: $log_dir/guest-b.log)"
    log "guest A console below (Ctrl-A x quits QEMU; Ctrl-A c toggles the monitor); log: $log_dir/guest-a.log"
    qemu_cmd a "$port_a" "$port_b"
    "${cmd[@]}"
    rc[a]=$?
    if [ $pair = 1 ]; then kill "${pid[b]}" 2>/dev/null; wait "${pid[b]}" 2>/dev/null; fi
else
    # Boot watchdog: a guest that has not reached /init after $boot_limit s has
    # hung in its boot (seen under TCG on a loaded host: the console stops at
    # about 1 s of uptime). Stop the guests and say so: the test runner boots
    # again, as after a boot splat.
    # A splat while a guest boots (before /init, so before any rrxe code ran:
    # the early-boot KASAN report of Documentation/testing.rst) makes the boot
    # worthless: stop the guests at once rather than after the whole test, which
    # the verdict below would fail anyway; the test runner then boots again.
    boot_hang= boot_splat=
    while kill -0 "${pid[a]}" 2>/dev/null; do
        waiting=
        for g in "${guests[@]}"; do
            grep -aqs 'RRXE-INIT: reached /init' "$log_dir/guest-$g.log" || waiting="$waiting $g"
        done
        [ -z "$waiting" ] && break
        for g in $waiting; do
            "$here/splats.sh" "$log_dir/guest-$g.log" > /dev/null || boot_splat="$boot_splat $g"
        done
        if [ -n "$boot_splat" ]; then
            boot_splat=${boot_splat# }
            for g in "${guests[@]}"; do kill "${pid[$g]}" 2>/dev/null; done
            break
        fi
        if [ "$(echo "$(date +%s.%N) - $start > $boot_limit" | bc)" = 1 ]; then
            boot_hang=${waiting# }
            for g in "${guests[@]}"; do kill "${pid[$g]}" 2>/dev/null; done
            break
        fi
        sleep 0.5
    done
    if [ $pair = 1 ]; then
        # If guest B is gone without passing, A (typically waiting for B's server) is
        # stopped after a grace period instead of running into its timeout.
        b_gone=0
        while kill -0 "${pid[a]}" 2>/dev/null; do
            if ! kill -0 "${pid[b]}" 2>/dev/null &&
                ! tr -d '\r' < "$log_dir/guest-b.log" | grep -aq 'RRXE-RESULT: PASS'; then
                b_gone=$((b_gone + 1))
                if [ $b_gone -ge 30 ]; then
                    log "guest b ended without passing: stopping guest a"
                    kill "${pid[a]}" 2>/dev/null
                    rc[a]=126
                    break
                fi
            fi
            sleep 0.5
        done
    fi
    wait "${pid[a]}"; r=$?; [ "${rc[a]:-}" = 126 ] || rc[a]=$r
    if [ $pair = 1 ]; then
        # Guest B gets a grace period after A is done, then it is stopped.
        for _ in $(seq 1 $((b_grace * 2))); do kill -0 "${pid[b]}" 2>/dev/null || break; sleep 0.5; done
        if kill -0 "${pid[b]}" 2>/dev/null; then
            kill "${pid[b]}" 2>/dev/null
            rc[b]=125
        fi
        wait "${pid[b]}"; r=$?; [ "${rc[b]:-}" = 125 ] || rc[b]=$r
    fi
fi
secs=$(echo "$(date +%s.%N) - $start" | bc | xargs printf '%.1f')

# Verdict: every guest must print "RRXE-RESULT: PASS", and no log may hold a splat.
reasons=()
for g in "${guests[@]}"; do
    glog=$log_dir/guest-$g.log
    boot=$(tr -d '\r' < "$glog" | sed -n 's/.*RRXE-INIT: reached \/init at \([0-9.]*\) s.*/\1/p' | head -1)
    [ -n "$boot" ] && log "guest $g reached /init at ${boot}s guest uptime"
    [ $shell = 1 ] && continue
    result=$(tr -d '\r' < "$glog" | grep -a -o 'RRXE-RESULT: .*' | tail -1)
    if [ "${rc[$g]}" = 124 ] || [ "${rc[$g]}" = 137 ]; then
        reasons+=("timeout after ${timeout}s (guest $g)")
    elif [ "${rc[$g]}" = 126 ]; then
        late="guest $g stopped 15s after guest b ended without passing"
    elif [ "${rc[$g]}" = 125 ]; then
        reasons+=("guest $g still running after guest a finished")
    elif [ -z "$result" ]; then
        reasons+=("guest $g printed no result (qemu rc=${rc[$g]}: $(tail -c 300 "$log_dir/qemu-$g.stderr" 2>/dev/null | tr '\n' ' '))")
    elif [ "$result" != "RRXE-RESULT: PASS" ]; then
        # The script's own "FAIL: why" (lib/common.sh fail), so the one summary line
        # says what went wrong where only that line is kept (a CI report).
        why=$(tr -d '\r' < "$glog" | sed -n 's/^\[[^]]*\] FAIL: //p' | tail -1 | cut -c1-200)
        reasons+=("guest $g: ${result#RRXE-RESULT: }${why:+: $why}")
    fi
done
[ -n "${late:-}" ] && reasons+=("$late")
if [ -n "${boot_hang:-}" ]; then
    reasons=("boot hang, before the test started: guest $boot_hang did not reach /init in ${boot_limit}s" "${reasons[@]}")
fi
logs=(); for g in "${guests[@]}"; do logs+=("$log_dir/guest-$g.log"); done
if splats=$("$here/splats.sh" "${logs[@]}"); then :; else
    printf '%s\n' "$splats" >&2
    first=$(printf '%s\n' "$splats" | head -1 | sed 's/^[^:]*\/guest-\([ab]\)\.log:[0-9]*:/guest \1: /' | cut -c1-160)
    # A splat before the test script started (before any rrxe code ran) is the
    # boot's, not the test's: say so first, so that the test runner can boot
    # again once (tools/testing/run.sh).
    during=0
    while IFS=: read -r slog sline _; do
        start=$(tr -d '\r' < "$slog" | grep -a -n 'RRXE-TEST: start' | head -1 | cut -d: -f1)
        if [ -n "$start" ] && [ "$sline" -gt "$start" ]; then during=1; fi
    done <<< "$splats"
    if [ $during = 0 ]; then
        stopped=
        [ -n "${boot_splat:-}" ] && stopped=" (guest $boot_splat stopped while booting)"
        reasons=("boot splat, before the test started$stopped: $first" "${reasons[@]}")
    else
        reasons+=("kernel splat: $first")
    fi
fi
[ $shell = 1 ] && exit 0
if [ ${#reasons[@]} = 0 ]; then
    echo "PASS (${secs}s)"
    exit 0
fi
printf 'FAIL %s' "${reasons[0]}"; for r in "${reasons[@]:1}"; do printf '; %s' "$r"; done; echo
exit 1
