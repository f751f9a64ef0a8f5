# Sourced by the benchmark guest scripts (installed as /rrxe/tests/lib/rounds.sh).
#
# bench_rounds: one uncounted warm-up slot per driver when WARMUP=1, then ROUNDS
# rounds that call the script's own `slot ROUND DRIVER` for rxe and rrxe, the
# order alternating (rxe,rrxe | rrxe,rxe | ...) so that neither driver always
# runs first.
bench_rounds() {
    if [ "$WARMUP" = 1 ]; then
        for drv in rxe rrxe; do slot 0 $drv; done
    fi
    r=1
    while [ $r -le "$ROUNDS" ]; do
        if [ $((r % 2)) = 1 ]; then order="rxe rrxe"; else order="rrxe rxe"; fi
        for drv in $order; do slot $r $drv; done
        r=$((r + 1))
    done
}

# perf as tools/bench/run.sh --profile puts it in the guest.
PERF="env LD_LIBRARY_PATH=/rrxe/perf/lib /rrxe/perf/perf"

# profile DRIVER TEST FILE: the top of a perf recording, by symbol and by DSO, as
# "BENCH-PROFILE DRIVER TEST dso|sym|mod ..." lines.
profile() {
    $PERF report -i "$3" --stdio --sort dso --percent-limit 1 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -15 | sed "s/^/BENCH-PROFILE $1 $2 dso /"
    # By process and DSO: which process (the client, whose system calls run
    # rrxe; the server, spinning on its CQ; the kernel's workers) spent what.
    $PERF report -i "$3" --stdio --sort pid,dso --percent-limit 1 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -20 | sed "s/^/BENCH-PROFILE $1 $2 pid /"
    $PERF report -i "$3" --stdio --sort sym --percent-limit 0.8 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -40 | sed "s/^/BENCH-PROFILE $1 $2 sym /"
    # The driver module's own symbols, as shares of its samples.
    local mod=rrxe
    [ "$1" = rxe ] && mod=rdma_rxe
    $PERF report -i "$3" --stdio --dsos "[$mod]" --sort sym --percentage relative --percent-limit 0.5 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -30 | sed "s/^/BENCH-PROFILE $1 $2 mod /"
}
