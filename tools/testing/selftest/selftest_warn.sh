#!/bin/sh
# Harness self-test: a kernel WARNING must fail the run although the script exits 0.
# Loads rrxe_selftest_warn.ko (built by tools/testing/run.sh --selftest), whose
# init calls WARN().
# topology: single
# timeout: 240
# expect: FAIL kernel splat: guest a: [
. "$RRXE_LIB"
run insmod /rrxe/selftest/rrxe_selftest_warn.ko
run rmmod rrxe_selftest_warn
exit 0
