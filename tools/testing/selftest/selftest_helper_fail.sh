#!/bin/sh
# Harness self-test: `fail` from lib/common.sh must fail the run, and the
# verdict line must say why (a CI report keeps only that line).
# topology: single
# timeout: 240
# expect: FAIL guest a: FAIL rc=1: deliberate failure
. "$RRXE_LIB"
fail "deliberate failure"
