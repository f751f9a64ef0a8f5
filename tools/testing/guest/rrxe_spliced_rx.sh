#!/bin/sh
# Received packets whose pages their sender may still write: rrxe_splice sends
# RoCE v2 packets over UDP/IPv6 to the guest's own address (2001:db8::1, which
# the kernel delivers through lo), each once copied and once spliced from a
# file's pages by sendfile(). The spliced ones reach rrxe as page fragments
# marked SKBFL_SHARED_FRAG, which rrxe copies before it checks their ICRC
# instead of reading them in place (Documentation/rrxe.rst, "Transmit").
# Every packet has a valid ICRC and names a QP that does not exist: all must
# count as rcvd_no_qp, none as rcvd_icrc_err or rcvd_hdr_err.
# topology: single
# timeout: 120
. "$RRXE_LIB"

command -v rrxe_splice >/dev/null || fail "rrxe_splice not on PATH: run tools/testing/verbs/build.sh"
load_rrxe rrxe0
gid_index rrxe0 ipv6 >/dev/null || fail "no RoCE v2 GID for $RRXE_IP6"
counter() { cat "/sys/class/infiniband/rrxe0/ports/1/hw_counters/$1"; }
n=200
noqp0=$(counter rcvd_no_qp) icrc0=$(counter rcvd_icrc_err) hdr0=$(counter rcvd_hdr_err)
log "+ rrxe_splice $RRXE_IP6 $RRXE_IP6 $n"
rrxe_splice "$RRXE_IP6" "$RRXE_IP6" "$n" | sed 's/^/  rrxe_splice| /'
noqp=$(( $(counter rcvd_no_qp) - noqp0 ))
icrc=$(( $(counter rcvd_icrc_err) - icrc0 ))
hdr=$(( $(counter rcvd_hdr_err) - hdr0 ))
show_counters rrxe0
log "of $((2 * n)) packets: rcvd_no_qp +$noqp, rcvd_icrc_err +$icrc, rcvd_hdr_err +$hdr"
[ "$icrc" = 0 ] && [ "$hdr" = 0 ] || fail "packets dropped as bad ($icrc ICRC, $hdr header)"
[ "$noqp" = $((2 * n)) ] || fail "$noqp of $((2 * n)) packets reached the QP lookup"
log "copied and spliced packets verified alike"
