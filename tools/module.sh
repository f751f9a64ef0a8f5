#!/usr/bin/env bash
# Build rrxe.ko out of tree against the cached test kernel of one variant, or
# against any Rust-enabled kernel build tree named by RRXE_KDIR (variant
# "custom"; tools/install.sh uses it for the running kernel).
# usage: tools/module.sh [normal|debug|custom] [extra make args, e.g. CLIPPY=1]
# Prints the path of the built module. Each variant builds in its own copy of
# the sources under $RRXE_OUT/module/VARIANT, because the generated RDMA
# bindings depend on the kernel configuration (lockdep, KASAN change layouts).
# With CLIPPY=1 any compiler or clippy warning fails the build.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
variant=${1:-normal}; shift || true
export RRXE_OUT=${RRXE_OUT:-$repo/out}
export PATH="$HOME/.cargo/bin:$PATH"
. "$repo/tools/kmake.sh"
if [ "$variant" = custom ]; then
    kdir=${RRXE_KDIR:?variant custom needs RRXE_KDIR, a kernel build tree}
    [ -f "$kdir/Makefile" ] || { echo "module: $kdir is not a kernel build tree" >&2; exit 1; }
else
    kdir=$("$repo/tools/kernel/build.sh" "$variant")
fi
build="$RRXE_OUT/module/$variant"
mkdir -p "$build"
# Only the module's sources; build products stay in $build between runs.
rsync -a --delete --exclude generated/ --exclude '*.o' --exclude '*.ko' --exclude '*.mod*' \
    --exclude '.*.cmd' --exclude '*.rmeta' --exclude 'modules.order' --exclude 'Module.symvers' \
    --include 'Kbuild' --include 'drivers/***' --include 'rust/' --include 'rust/bindings.rs' \
    --include 'rust/shared_bytes.rs' \
    --include 'rust/rdma/***' --include 'rust/sync/***' --include 'rust/net/***' \
    --include 'rust/proto/' --include 'rust/proto/src/***' --exclude '*' \
    "$repo/" "$build/"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
kmake "$kdir" "$build" -j"$(nproc)" "$@" modules > "$log" 2>&1
rc=$?
set -e
# Show paths relative to the repo, not the build copy.
sed "s|$build/||g" "$log" >&2
[ "$rc" = 0 ] || { echo "module: build failed (rc=$rc)" >&2; exit "$rc"; }
if grep -qE '^(warning|error)(\[|:)' "$log"; then
    echo "module: build printed warnings (the kernel's lints must stay clean):" >&2
    grep -E '^(warning|error)(\[|:)' "$log" | sort | uniq -c >&2
    exit 1
fi
# RRXE_INSTALL_ROOT (tools/install.sh): kbuild's modules_install into
# ROOT/lib/modules/KVER/extra, then depmod over ROOT ("/" for this system).
if [ -n "${RRXE_INSTALL_ROOT:-}" ]; then
    root=${RRXE_INSTALL_ROOT%/}
    kmake "$kdir" "$build" INSTALL_MOD_DIR=extra ${root:+INSTALL_MOD_PATH="$root"} modules_install >&2 \
        || { echo "module: modules_install failed" >&2; exit 1; }
fi
echo "$build/drivers/infiniband/sw/rrxe/rrxe.ko"
