#!/usr/bin/env bash
# A/B of two builds of rrxe in instruction time: what a doorbell, a local READ and a local atomic
# cost with the tree's rrxe.ko against BASE.ko, in one guest boot under
# tools/qemu/run.sh --icount, where guest time counts instructions (1 us = 1,000).
# rrxe_floor's iterations run on one vCPU alone (a local READ is served inside its
# doorbell), so each run's t_typical is the same from run to run and from host to
# host whatever else the host does: a difference of a few instructions per iteration
# shows. It does not compare with rxe (whose work runs on the other vCPU, which
# under --icount takes turns with the first) and is not `make bench`.
#
# usage: tools/bench/ab.sh BASE.ko [--rounds R] [--iters N] [--profile N] [--log-dir DIR]
#   BASE.ko     the build to compare with, e.g. one of an earlier commit:
#               git stash; tools/module.sh normal; cp out/module/normal/drivers/infiniband/sw/rrxe/rrxe.ko /tmp/base.ko; git stash pop
#               (not the rrxe.ko a CLIPPY=1 build leaves: that is other code)
#   --rounds R  rounds, each running both builds in turn (default 3)
#   --iters N   iterations per run (default 5000)
#   --profile N then run each mode of the tree's build N times as long under perf
#               (the host's, copied in): where its instructions go, per symbol, self
#               and with what it calls (profile.txt in the log directory)
# Prints, per rrxe_floor mode, the median t_typical of each build in guest
# instructions and the difference; exit status 0 when every run succeeded.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export RRXE_OUT=${RRXE_OUT:-$repo/out}
die() { echo "ab: ERROR: $*" >&2; exit 2; }

[ $# -ge 1 ] || die "usage: tools/bench/ab.sh BASE.ko [--rounds R] [--iters N] [--profile N] [--log-dir DIR]"
base=$1; shift
[ -f "$base" ] || die "no such module: $base"
base=$(cd "$(dirname "$base")" && pwd)/$(basename "$base")
rounds=3 iters=5000 profile=0 log_dir=
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --iters) iters=$2; shift 2 ;;
        --profile) profile=$2; shift 2 ;;
        --log-dir) log_dir=$2; shift 2 ;;
        *) die "unknown option $1" ;;
    esac
done
[[ $rounds =~ ^[1-9][0-9]*$ && $iters =~ ^[1-9][0-9]*$ ]] || die "--rounds and --iters want positive numbers"
[[ $profile =~ ^[0-9]+$ ]] || die "--profile wants a number"
perf_add=()
[ "$profile" = 0 ] || . "$here/perf_guest.sh"
[ -n "$log_dir" ] || log_dir=$RRXE_OUT/bench/ab-$(date +%Y%m%d-%H%M%S)
mkdir -p "$log_dir" || die "cannot make $log_dir"

kdir=$("$repo/tools/kernel/build.sh" normal 2> "$log_dir/build.log") || die "kernel build failed ($log_dir/build.log)"
ko=$("$repo/tools/module.sh" normal 2>> "$log_dir/build.log") || die "rrxe.ko build failed ($log_dir/build.log)"
"$repo/tools/initramfs/build.sh" >/dev/null 2>> "$log_dir/build.log" || die "initramfs build failed ($log_dir/build.log)"
"$repo/tools/testing/verbs/build.sh" >/dev/null 2>> "$log_dir/build.log" || die "building the guest programs failed ($log_dir/build.log)"

verdict=$("$repo/tools/qemu/run.sh" --icount --kernel "$kdir" --ko "$ko" --smp 2 \
    --add "$base=/rrxe/base.ko" ${perf_add[@]+"${perf_add[@]}"} --tests "$here/guest" --test floor_ab \
    --append "rrxe.ab.rounds=$rounds rrxe.ab.iters=$iters rrxe.ab.profile=$profile" \
    --timeout $((300 + 120 * rounds + 60 * profile)) --log-dir "$log_dir" 2> "$log_dir/run.stderr" | tail -1)
tr -d '\r' < "$log_dir/guest-a.log" | grep -a '^AB-RUN ' > "$log_dir/results.txt"

echo "rrxe.ko of the tree against $base, instruction time (QEMU -icount), $rounds rounds of $iters iterations"
awk '
    $5 == "FAILED" { failed++; next }
    { v[$4, $3, ++n[$4, $3]] = $5 * 1000 }
    function median(m, b,   k, i, j, t, a) {
        k = n[m, b]
        for (i = 1; i <= k; i++) a[i] = v[m, b, i]
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    END {
        printf "%-10s %14s %14s %10s %8s\n", "mode", "base [insns]", "new [insns]", "new-base", "%"
        split("uverbs doorbell read atomic", order)
        for (o = 1; o <= 4; o++) {
            m = order[o]
            if (!n[m, "base"] || !n[m, "new"]) continue
            b = median(m, "base"); w = median(m, "new")
            printf "%-10s %14.0f %14.0f %+10.0f %+7.1f%%\n", m, b, w, w - b, 100 * (w - b) / b
        }
        if (failed) { printf "%d runs FAILED (see the log)\n", failed; exit 1 }
    }' "$log_dir/results.txt"
rc=$?
if [ "$profile" != 0 ]; then
    tr -d '\r' < "$log_dir/guest-a.log" | sed -n 's/^AB-PROFILE //p' > "$log_dir/profile.txt"
    echo "profile of the tree's build (% of guest instructions): $log_dir/profile.txt"
fi
echo "log: $log_dir (guest: $verdict)"
[ "${verdict%% *}" = PASS ] && [ $rc = 0 ]
