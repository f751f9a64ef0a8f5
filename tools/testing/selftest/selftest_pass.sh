#!/bin/sh
# Harness self-test (control): a test that passes.
# topology: single
# timeout: 240
# expect: PASS
. "$RRXE_LIB"
log "nothing to do"
