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
