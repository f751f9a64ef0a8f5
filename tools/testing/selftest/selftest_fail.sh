#!/bin/sh
# Harness self-test: a broken test (non-zero exit) must fail the run.
# topology: single
# timeout: 60
# expect: FAIL guest a: FAIL rc=3
exit 3
