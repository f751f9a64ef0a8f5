#!/usr/bin/env bash
# Build the test module rrxe_kverbs.ko (kernel verbs cases, see rrxe_kverbs.c)
# against the cached test kernel of one variant, into $RRXE_OUT/kverbs/VARIANT.
# tools/initramfs/extra.sh puts it in the guest as /rrxe/rrxe_kverbs.ko.
# usage: tools/testing/kverbs/build.sh [normal|debug]
# Prints the path of the built module; any compiler warning fails the build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
variant=${1:-normal}
export RRXE_OUT=${RRXE_OUT:-$repo/out}
kdir=$("$repo/tools/kernel/build.sh" "$variant")
build="$RRXE_OUT/kverbs/$variant"
mkdir -p "$build"
cp "$here/Kbuild" "$here/rrxe_kverbs.c" "$build/"
. "$repo/tools/kmake.sh"
log="$build/build.log"
if ! kmake "$kdir" "$build" W=1 modules > "$log" 2>&1; then
    sed "s|$build/||g" "$log" >&2
    echo "kverbs: build failed" >&2
    exit 1
fi
if grep -q 'warning:' "$log"; then
    sed "s|$build/||g" "$log" >&2
    echo "kverbs: build printed warnings" >&2
    exit 1
fi
echo "$build/rrxe_kverbs.ko"
