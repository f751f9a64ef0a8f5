#!/bin/sh
# Harness self-test: a hanging test must be killed and fail with "timeout".
# topology: single
# timeout: 20
# expect: FAIL timeout
sleep 1000
