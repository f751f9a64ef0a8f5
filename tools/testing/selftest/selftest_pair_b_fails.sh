#!/bin/sh
# Harness self-test: in a pair test, guest B failing fails the run though A passes.
# topology: pair
# timeout: 240
# expect: FAIL guest b: FAIL rc=4
[ "$RRXE_ROLE" = b ] && exit 4
exit 0
