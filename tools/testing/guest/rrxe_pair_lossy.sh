#!/bin/sh
# rrxe on both guests: rrxe_xfer's verified RC transfers (RDMA WRITE, READ and SEND,
# fetch-and-adds that must count exactly once, a compare-and-swap chain) over a link
# that loses 10% of the packets in each direction and delays, reorders, duplicates
# and corrupts others (netem on both guests' eth0); A is the client of B, then B of
# A. Baseline: rxe_pair_lossy. Sizes and impairments: lib/xfer.sh.
# topology: pair
# append: rrxe.driver=rrxe
# timeout: 900
# alone: its loss recovery is timed (ACK timeout, 7 retries); beside other guests the host's
# UDP buffers between the two guests may drop bursts on top of netem's 10%
. "$RRXE_LIB"
. "${RRXE_LIB%/*}/xfer.sh"

load_driver
lossy_pair_xfer
# The congestion window: a loss cuts it (the first one from its maximum, 256 packets),
# but it sits near its floor of 8 packets on a link this lossy, and a loss at the
# floor changes nothing and is no cut. So there are cuts, and fewer than the
# retransmissions (completer_retry_err) this guest's requesters started. The last
# check needs enough of them for the floor to be reached and hit: from 256, five cuts
# bring the window to 8, and it grows back between losses; this test's transfers
# start about 600.
cuts=$(hw_counter cwnd_cuts) retries=$(hw_counter completer_retry_err)
log "cwnd_cuts $cuts, completer_retry_err $retries"
[ "$retries" -gt 0 ] || fail "no retransmission on a lossy link"
[ "$cuts" -gt 0 ] || fail "$retries retransmissions, but the congestion window was never cut"
[ "$retries" -lt 50 ] || [ "$cuts" -lt "$retries" ] ||
    fail "cwnd_cuts ($cuts) counts every retransmission ($retries), not only the cuts"
