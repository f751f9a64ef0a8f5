#!/bin/sh
# Harness self-test: `fail` from lib/common.sh must fail the run.
# topology: single
# timeout: 240
# expect: FAIL guest a: FAIL rc=1
. "$RRXE_LIB"
fail "deliberate failure"
