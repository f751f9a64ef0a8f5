#!/bin/sh
# Harness self-test: a broken test (non-zero exit) must fail the run.
# topology: single
# timeout: 240
# expect: FAIL guest a: FAIL rc=3
exit 3
