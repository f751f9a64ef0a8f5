#!/bin/sh
# Harness self-test: a splat while the guest boots stops the guest at once, before the
# test script runs, and the test runner boots again (three boots in all). The splat
# is a stand-in: the kernel prints its command line, which here carries a splat
# pattern after the console's time stamp. The script would sleep for 2 minutes per
# boot; only the stop while booting gives the expected outcome.
# topology: single
# timeout: 300
# append: rrxe.selftest_boot_splat=BUG:
# expect: FAIL boot splat, before the test started (guest a stopped while booting)
. "$RRXE_LIB"
sleep 120
exit 0
