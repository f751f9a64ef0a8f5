#!/bin/sh
# Harness self-test (control): a test that passes.
# topology: single
# timeout: 60
# expect: PASS
. "$RRXE_LIB"
log "nothing to do"
