#!/usr/bin/env bash
# `make check`: every test of rrxe, each step recorded as one PASS/FAIL line in
# $RRXE_OUT/results.txt; ends with "N passed, N failed" and exits non-zero on
# any failure.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export RRXE_OUT=${RRXE_OUT:-$repo/out}
export PATH="$HOME/.cargo/bin:$PATH"
variant=${KERNEL_VARIANT:-normal}
# Guest tests that also run on the debug kernel (KASAN, lockdep, kmemleak), in
# this order, and the longest of them, which waits until the normal-kernel tests
# are done and then heads the queue (see Documentation/testing.rst).
DEBUG_TESTS="rrxe_objects rrxe_lifecycle rrxe_verbs rrxe_datapath rrxe_bounds rrxe_rc_pingpong rrxe_rping rrxe_pair_vanish
    rrxe_verbsfuzz rrxe_wirefuzz rrxe_teardown_link rrxe_teardown_rmmod rrxe_netns rrxe_odp rrxe_windows
    rrxe_flush rrxe_rereg rrxe_kinline rrxe_backlog"
DEBUG_LONGEST=rrxe_nvmeof
mkdir -p "$RRXE_OUT/check"
results="$RRXE_OUT/results.txt"
: > "$results"
start=$(date +%s)

# step NAME COMMAND...: run a step, keep its output, record its result.
step() {
    local name=$1; shift
    local log="$RRXE_OUT/check/$name.log" t0=$(date +%s)
    echo "=== $name: $*"
    if "$@" > "$log" 2>&1; then
        echo "PASS $name ($(( $(date +%s) - t0 ))s)" | tee -a "$results"
    else
        tail -n 40 "$log"
        echo "FAIL $name ($(( $(date +%s) - t0 ))s; log: $log)" | tee -a "$results"
        return 1
    fi
}

# no_warnings LOG...: a module build printed no warning (rustc, clippy,
# objtool): objtool's "falls through to next function", for one, means it
# did not know a function never returns and checked the code after it.
no_warnings() {
    ! grep -H 'warning:' "$@"
}

step setup tools/setup.sh || { echo "setup failed: nothing else can run"; }
if grep -q '^PASS setup' "$results"; then
    step host-fmt cargo fmt --all --check
    # The module's Rust (driver, rust/rdma) under the same settings; the crate
    # root pulls in every file by path. `make fmt` fixes what this finds.
    step module-fmt rustfmt --check drivers/infiniband/sw/rrxe/rrxe_main.rs
    step host-clippy cargo clippy --workspace --all-targets -- -D warnings
    step host-test cargo test --workspace
    # Show cargo's own test summary lines in the main output.
    grep -E '^test result:' "$RRXE_OUT/check/host-test.log" || true
    # Kernels, modules and the guest's user space first; then the guest tests
    # on the normal kernel and the robustness tests on the debug kernel run
    # side by side, one vCPU per guest (the debug tests are CPU-bound, most
    # others wait on timers and the network).
    debug=0
    [ "${RRXE_SKIP_DEBUG:-0}" != 1 ] && [ "$variant" != debug ] && debug=1
    if step kernel tools/kernel/build.sh "$variant" \
        && step module-clippy tools/module.sh "$variant" CLIPPY=1 \
        && step module-install tools/testing/install_check.sh "$variant" \
        && step verbs-program tools/testing/verbs/build.sh \
        && step kverbs-module tools/testing/kverbs/build.sh "$variant" \
        && step initramfs tools/initramfs/build.sh; then
        step module-warnings no_warnings "$RRXE_OUT/check/module-clippy.log" "$RRXE_OUT/check/module-install.log"
        if [ $debug = 1 ] && ! { step kernel-debug tools/kernel/build.sh debug \
            && step module-debug-clippy tools/module.sh debug CLIPPY=1 \
            && step kverbs-debug tools/testing/kverbs/build.sh debug; }; then
            echo "FAIL guest-tests[debug] (debug kernel or module did not build)" | tee -a "$results"
            debug=0
        fi
        if [ $debug = 1 ]; then
            step module-debug-warnings no_warnings "$RRXE_OUT/check/module-debug-clippy.log"
            # The debug-kernel tests, taken one at a time from a queue: one
            # runner from now on, beside the normal-kernel guests, and a second
            # one once those are done, on the CPU they leave free.
            debug_queue="$RRXE_OUT/check/debug-queue"
            printf '%s\n' $DEBUG_TESTS > "$debug_queue"
            RRXE_SMP=1 tools/testing/run.sh --variant debug --queue "$debug_queue" \
                > "$RRXE_OUT/check/guest-debug.log" 2>&1 &
            debug_pids=$!
        fi
        # The harness must be able to fail: a failing script and a kernel
        # WARNING have to be judged FAIL, the verdict must carry the script's
        # reason, and a splat while booting must stop the boot at once (all
        # self-tests: run.sh --selftest).
        step harness-selftest tools/testing/run.sh --selftest selftest_fail selftest_helper_fail \
            selftest_warn selftest_boot_splat
        # Guest tests append their own PASS/FAIL lines to $results. Those marked
        # "# alone:" (lossy links between two guests, whose loss recovery is
        # timed) run last, when no debug-kernel guest shares the host.
        RRXE_SMP=$([ $debug = 1 ] && echo 1 || echo 2) tools/testing/run.sh --variant "$variant" --shared || true
        if [ $debug = 1 ]; then
            # The longest debug test goes to the head of the queue, for the
            # second runner to start with, so that it does not run beside the
            # two-guest tests, nor last, with one core idle.
            flock "$debug_queue.lock" sh -c 'printf "%s\n" "$2" | cat - "$1" > "$1.new" && mv "$1.new" "$1"' \
                _ "$debug_queue" "$DEBUG_LONGEST"
            RRXE_SMP=1 tools/testing/run.sh --variant debug --queue "$debug_queue" \
                > "$RRXE_OUT/check/guest-debug-2.log" 2>&1 &
            debug_pids+=" $!"
            wait $debug_pids || true
            echo "=== guest tests on the debug kernel"
            cat "$RRXE_OUT/check/guest-debug.log" "$RRXE_OUT/check/guest-debug-2.log"
        fi
        echo "=== guest tests that run alone"
        tools/testing/run.sh --variant "$variant" --alone || true
    else
        echo "FAIL guest-tests (kernel, module or initramfs did not build)" | tee -a "$results"
    fi
fi

passed=$(grep -c '^PASS' "$results")
failed=$(grep -c '^FAIL' "$results")
echo "make check took $(( $(date +%s) - start ))s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
