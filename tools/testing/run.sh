#!/usr/bin/env bash
# Run guest tests, each in its own fresh QEMU boot (sequentially).
#
# usage: tools/testing/run.sh [--variant normal|debug] [--kernel KDIR] [--kernel-b KDIR]
#                             [--append ARGS] [--selftest] [--shared|--alone]
#                             [--queue FILE] [TEST...]
#   TEST      a script name (rxe_rping), file name or path; default: every
#             tools/testing/guest/*.sh
#   --append ARGS  more kernel command line for every guest of every test, after the
#             test's own (e.g. rrxe.xfer_bytes=64M for the rrxe_xfer tests)
#   --shared / --alone  of the default list, only the tests without / with an
#             "# alone:" header (make check runs the shared ones beside the debug-kernel
#             guests, the others after them, when no other guest shares the host)
#   --queue FILE  take the tests from FILE instead (one name a line), one at a time,
#             each taken off its head under a lock, until it is empty: several runners
#             share one list (make check's debug-kernel guests)
#   --selftest  run the harness self-tests (tools/testing/selftest/*.sh) instead; each
#             declares "# expect: PASS|FAIL <reason prefix>" (or "# expect-VARIANT:"
#             for one kernel variant) and the run succeeds only
#             if every outcome is the expected one (results: $RRXE_OUT/selftest-results.txt)
#
# Test script headers:  # topology: single|pair    # timeout: SECONDS (default 300)
#                       # known-bug: TEXT   an open bug makes it fail: run only by name
#                       # alone: TEXT       timing-sensitive: make check runs it with no
#                       #   other guest on the host (--alone)
#                       # append: ARGS      kernel command line for both guests
#                       # append-b: ARGS    guest B's instead (default: append's), e.g.
#                       #   "# append: rrxe.driver=rrxe" + "# append-b: rrxe.driver=rxe"
#                       # smp: N            N guest CPUs whatever RRXE_SMP says (a test
#                       #   that holds one CPU in the kernel while another works)
# The debug variant (KASAN, lockdep, kmemleak under TCG) multiplies timeouts by
# RRXE_TIMEOUT_SCALE (default 4; 1 for normal).
# Pair tests run the same script in guests A and B ($RRXE_ROLE=a|b); both must pass.
# Prints "PASS name (Ns)" / "FAIL name (reason; log: path)" per test, appends the
# same line to $RRXE_OUT/results.txt, exits 1 if any test failed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export RRXE_OUT=${RRXE_OUT:-$repo/out}
export PATH="$HOME/.cargo/bin:$PATH"

die() { printf 'testing: ERROR: %s\n' "$*" >&2; exit 2; }

variant=normal kernel_a= kernel_b= selftest=0 append= names=() share=all queue=
while [ $# -gt 0 ]; do
    case "$1" in
        --variant) variant=$2; shift 2 ;;
        --kernel) kernel_a=$2; shift 2 ;;
        --kernel-b) kernel_b=$2; shift 2 ;;
        --append) append=$2; shift 2 ;;
        --selftest) selftest=1; shift ;;
        --shared) share=shared; shift ;;
        --alone) share=alone; shift ;;
        --queue) queue=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $1" ;;
        *) names+=("$1"); shift ;;
    esac
done
case "$variant" in
    normal) scale=${RRXE_TIMEOUT_SCALE:-1} ;;
    debug) scale=${RRXE_TIMEOUT_SCALE:-4} ;;
    *) die "unknown variant $variant" ;;
esac

if [ $selftest = 1 ]; then
    test_dir=$here/selftest
    results=$RRXE_OUT/selftest-results.txt
else
    test_dir=$here/guest
    results=$RRXE_OUT/results.txt
fi
mkdir -p "$RRXE_OUT"

tests=()
if [ -n "$queue" ]; then
    [ -f "$queue" ] || die "no queue file $queue"
    [ ${#names[@]} = 0 ] || die "--queue takes no test names"
    [ $selftest = 0 ] || die "--queue is for guest tests"
elif [ ${#names[@]} = 0 ]; then
    for f in "$test_dir"/*.sh; do
        [ -f "$f" ] || continue
        # A test that shows an open bug runs only when named (it would make
        # every full run red until the bug is fixed); the run says so.
        bug=$(sed -n 's/^# *known-bug: *//p' "$f" | head -1)
        if [ -n "$bug" ]; then
            echo "SKIP $(basename "$f" .sh) (known bug, run it by name: $bug)"
            continue
        fi
        alone=$(sed -n 's/^# *alone: *//p' "$f" | head -1)
        case "$share" in
            shared) [ -z "$alone" ] || continue ;;
            alone) [ -n "$alone" ] || continue ;;
        esac
        tests+=("$f")
    done
else
    for n in "${names[@]}"; do
        n=$(basename "$n" .sh)
        [ -f "$test_dir/$n.sh" ] || die "no test $test_dir/$n.sh"
        tests+=("$test_dir/$n.sh")
    done
fi
[ -n "$queue" ] || [ ${#tests[@]} -gt 0 ] || die "no tests in $test_dir"

if [ -z "$kernel_a" ]; then
    kernel_a=$("$repo/tools/kernel/build.sh" "$variant") || die "kernel build failed"
fi
# Build the base initramfs once up front (its log would otherwise land in the first test).
"$repo/tools/initramfs/build.sh" >/dev/null || die "initramfs build failed"
# Guest test programs (owned by tools/testing/verbs): built into $RRXE_OUT/guest-bin.
"$repo/tools/testing/verbs/build.sh" || die "building tools/testing/verbs failed"

qemu_extra=()
[ -n "$kernel_b" ] && qemu_extra+=(--kernel-b "$kernel_b")
if [ $selftest = 1 ]; then
    # The WARN module for selftest_warn, built out of tree against guest A's kernel.
    kd=$kernel_a; [ -d "$kd" ] || kd=$(cd "$(dirname "$kd")/../../.." && pwd)
    bld=$RRXE_OUT/selftest-build
    rm -rf "$bld"; mkdir -p "$bld"; cp "$here/selftest/warn/"* "$bld/"
    . "$repo/tools/kmake.sh"
    kmake "$kd" "$bld" -s modules >"$bld/build.log" 2>&1 \
        || { cat "$bld/build.log" >&2; die "building the self-test WARN module failed"; }
    qemu_extra+=(--tests "$test_dir")
    for m in "$bld"/*.ko; do qemu_extra+=(--add "$m=/rrxe/selftest/$(basename "$m")"); done
fi

header() {  # file key default
    local v
    v=$(sed -n "s/^# *$2: *//p" "$1" | head -1)
    echo "${v:-$3}"
}

passed=0 failed=0 unexpected=0
mkdir -p "$RRXE_OUT/logs/$variant"
# run_test SCRIPT: one test, in its own boot(s); prints and records its result.
run_test() {
    local t=$1 name topo tmo args karg_a karg_b smp t0 attempt out rc verdict kept secs line
    local reason glog got expect
    name=$(basename "$t" .sh)
    topo=$(header "$t" topology single)
    tmo=$(( $(header "$t" timeout 300) * scale ))
    args=(--test "$name" --timeout "$tmo" --kernel "$kernel_a" --log-dir "$RRXE_OUT/logs/$variant/$name")
    # Kernel command line: the test's headers, then --append.
    karg_a=$(header "$t" append "")
    karg_b=$(header "$t" append-b "$karg_a")
    karg_a=$(echo $karg_a $append)
    karg_b=$(echo $karg_b $append)
    [ -n "$karg_a" ] && args+=(--append "$karg_a")
    [ "$karg_b" != "$karg_a" ] && args+=(--append-b "$karg_b")
    smp=$(header "$t" smp "")
    [ -n "$smp" ] && args+=(--smp "$smp")
    case "$topo" in
        single) ;;
        pair) args+=(--pair) ;;
        *) die "$name: unknown topology '$topo'" ;;
    esac
    echo "RUN  $name ($topo, timeout ${tmo}s)"
    t0=$(date +%s)
    # A splat or a hang during the guest's boot, before the test started, is
    # not the test's result: boot again, at most three boots in all, 5 s apart
    # (the early-boot KASAN splat of Documentation/testing.rst came twice in a
    # row on a loaded host),
    # keeping the earlier boots' logs.
    for attempt in 1 2 3; do
        rm -rf "$RRXE_OUT/logs/$variant/$name"
        out=$("$repo/tools/qemu/run.sh" "${args[@]}" ${qemu_extra[@]+"${qemu_extra[@]}"} 2> "$RRXE_OUT/logs/$variant/$name.stderr")
        rc=$?
        verdict=$(printf '%s\n' "$out" | tail -1)
        case "$verdict" in
            "FAIL boot splat"*|"FAIL boot hang"*) ;;
            *) break ;;
        esac
        [ $attempt = 3 ] && break
        echo "     ${verdict#FAIL }: booting again"
        kept=$RRXE_OUT/logs/$variant/$name.boot-splat
        [ $attempt = 1 ] || kept=$kept-$attempt
        rm -rf "$kept"
        mv "$RRXE_OUT/logs/$variant/$name" "$kept"
        sleep 5
    done
    secs=$(( $(date +%s) - t0 ))
    mkdir -p "$RRXE_OUT/logs/$variant/$name"
    mv "$RRXE_OUT/logs/$variant/$name.stderr" "$RRXE_OUT/logs/$variant/$name/run.stderr"
    if [ $rc = 0 ] && [ "${verdict%% *}" = PASS ]; then
        line="PASS $name (${secs}s)"
        passed=$((passed + 1))
        got=PASS
    else
        reason=${verdict#FAIL }
        [ -n "$reason" ] || reason="runner rc=$rc"
        glog=guest-a.log
        case "$reason" in "guest b"*) glog=guest-b.log ;; esac
        line="FAIL $name ($reason; log: $RRXE_OUT/logs/$variant/$name/$glog)"
        failed=$((failed + 1))
        got="FAIL $reason"
        # Splat lines and other diagnostics from the QEMU runner.
        grep -v -e '^qemu: guest . reached' -e '^initramfs: cached' -e '^kernel: cached' \
            "$RRXE_OUT/logs/$variant/$name/run.stderr" | sed 's/^/    /' | head -20
    fi
    # Name the variant in the results when it is not the default.
    [ "$variant" = normal ] || line=$(printf '%s\n' "$line" | sed "s/^\(PASS\|FAIL\) $name /\1 $name[$variant] /")
    echo "$line"
    echo "$line" >> "$results"
    if [ $selftest = 1 ]; then
        expect=$(header "$t" "expect-$variant" "$(header "$t" expect PASS)")
        case "$got" in
            "$expect"*) echo "     as expected: $expect" ;;
            *) echo "     UNEXPECTED: wanted '$expect'"; unexpected=$((unexpected + 1)) ;;
        esac
    fi
}

# next_queued FILE: prints the first test name of FILE and removes it, under a
# lock (other runners take from the same file); prints nothing once it is empty.
next_queued() {
    flock "$1.lock" sh -c 'head -n 1 "$1" && sed -i 1d "$1"' _ "$1"
}

if [ -n "$queue" ]; then
    while t=$(next_queued "$queue") && [ -n "$t" ]; do
        if [ -f "$test_dir/$t.sh" ]; then
            run_test "$test_dir/$t.sh"
        else
            echo "FAIL $t (no test $test_dir/$t.sh)" | tee -a "$results"
            failed=$((failed + 1))
        fi
    done
else
    for t in "${tests[@]}"; do
        run_test "$t"
    done
fi

if [ $selftest = 1 ]; then
    echo "selftest: $passed passed, $failed failed, $unexpected unexpected outcomes"
    [ $unexpected = 0 ]
    exit
fi
echo "guest-tests: $passed passed, $failed failed"
[ $failed = 0 ]
