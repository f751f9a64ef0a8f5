#!/usr/bin/env bash
# Scan guest serial logs for kernel splats.
#
# usage: tools/qemu/splats.sh LOG...   -> prints "LOG:LINENO: line" for each splat line,
#                                         exit 1 if any was found, 0 if none.
#
# The guests boot with printk.time=1, so every kernel console line carries a
# "[    1.234567] " stamp; splat patterns are matched only after such a stamp, which
# keeps test output (perftest prints its own "WARNING" texts) from matching. The one
# user-space pattern is kmemleak's report ("unreferenced object"), which /init cats
# from /sys/kernel/debug/kmemleak.
set -uo pipefail

KERNEL_PATTERNS='BUG:|WARNING:|Oops|KASAN|UBSAN:|possible circular locking|inconsistent lock state|possible recursive locking|suspicious RCU usage|Kernel panic|kernel BUG|hung task|blocked for more than|self-detected stall|RCU stall|detected stalls? on CPU|general protection fault|Unable to handle kernel|Call Trace:|suspected memory leak|refcount_t:|list_(add|del) corruption|panicked at|soft lockup'
STAMP='\[ *[0-9]+\.[0-9]+\]'
USER_PATTERNS='unreferenced object 0x'

found=0
for log in "$@"; do
    [ -f "$log" ] || continue
    # Serial logs may carry CRs and stray control bytes.
    if tr -d '\r' < "$log" | grep -a -n -E "$STAMP.*($KERNEL_PATTERNS)|$USER_PATTERNS" |
        sed "s|^|$log:|"; then
        found=1
    fi
done
exit $found
