#!/usr/bin/env bash
# Build the guest test programs into $RRXE_OUT/guest-bin/, which the QEMU runner
# puts on the guest's PATH (/rrxe/bin). Each directory tools/testing/verbs/NAME/
# is one program NAME, made of its *.c files and the shared helpers in lib/
# (lib/*.c, headers in lib/). Dynamically linked against the host's libibverbs
# and librdmacm (Debian bookworm, rdma-core 44, the same as in the guest), so the
# guest's own libibverbs and librxe provider are the ones used.
# Idempotent and fast: a program is rebuilt only when a source is newer.
#
# usage: tools/testing/verbs/build.sh        (needs gcc, libibverbs-dev and
#                                             librdmacm-dev: tools/setup.sh)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out=${RRXE_OUT:-$repo/out}/guest-bin

die() { printf 'verbs: ERROR: %s\n' "$*" >&2; exit 1; }

mkdir -p "$out"
lib=("$here"/lib/*.c)
[ -e "${lib[0]}" ] || lib=()
for dir in "$here"/*/; do
    name=$(basename "$dir")
    [ "$name" = lib ] && continue
    srcs=("$dir"*.c)
    [ -e "${srcs[0]}" ] || continue
    bin=$out/$name
    fresh=1
    [ -x "$bin" ] || fresh=0
    for f in "${srcs[@]}" ${lib[@]+"${lib[@]}"} "$here"/lib/*.h "$dir"*.h "$here/build.sh"; do
        [ -e "$f" ] || continue
        [ "$fresh" = 1 ] && [ "$f" -nt "$bin" ] && fresh=0
    done
    [ "$fresh" = 1 ] && continue
    [ -f /usr/include/infiniband/verbs.h ] || die "libibverbs-dev is not installed (run tools/setup.sh)"
    [ -f /usr/include/rdma/rdma_cma.h ] || die "librdmacm-dev is not installed (run tools/setup.sh)"
    command -v gcc >/dev/null || die "gcc not found (run tools/setup.sh)"
    tmp=$(mktemp "$out/.$name.XXXXXX")
    trap 'rm -f "$tmp"' EXIT
    gcc -std=gnu11 -O2 -g -Wall -Wextra -Werror -I"$here/lib" -o "$tmp" \
        "${srcs[@]}" ${lib[@]+"${lib[@]}"} -libverbs -lrdmacm -lpthread \
        || die "compiling $name failed"
    chmod 755 "$tmp"
    mv -f "$tmp" "$bin"
    trap - EXIT
    printf 'verbs: built %s\n' "$bin" >&2
done
