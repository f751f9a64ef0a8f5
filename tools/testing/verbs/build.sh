#!/usr/bin/env bash
# Build the guest verbs test program (rrxe_verbs) into $RRXE_OUT/guest-bin/, which the
# QEMU runner puts on the guest's PATH (/rrxe/bin). Dynamically linked against the
# host's libibverbs (Debian bookworm, rdma-core 44, the same as in the guest), so
# the guest's own libibverbs and librxe provider are the ones used.
# Idempotent and fast: does nothing when the binary is newer than its sources.
#
# usage: tools/testing/verbs/build.sh        (needs gcc and libibverbs-dev: tools/setup.sh)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out=${RRXE_OUT:-$repo/out}/guest-bin
bin=$out/rrxe_verbs
src=$here/rrxe_verbs.c

die() { printf 'verbs: ERROR: %s\n' "$*" >&2; exit 1; }

if [ -x "$bin" ] && [ "$bin" -nt "$src" ] && [ "$bin" -nt "$here/build.sh" ]; then
    exit 0
fi
[ -f /usr/include/infiniband/verbs.h ] || die "libibverbs-dev is not installed (run tools/setup.sh)"
command -v gcc >/dev/null || die "gcc not found (run tools/setup.sh)"
mkdir -p "$out"
tmp=$(mktemp "$out/.rrxe_verbs.XXXXXX")
trap 'rm -f "$tmp"' EXIT
gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -o "$tmp" "$src" -libverbs \
    || die "compiling $src failed"
chmod 755 "$tmp"
mv -f "$tmp" "$bin"
trap - EXIT
printf 'verbs: built %s\n' "$bin" >&2
