#!/usr/bin/env bash
# Build rrxe.ko out of tree against the cached test kernel of one variant.
# usage: tools/module.sh [normal|debug] [extra make args, e.g. CLIPPY=1]
# Prints the path of the built module. Each variant builds in its own copy of
# the sources under $RRXE_OUT/module/VARIANT, because the generated RDMA
# bindings depend on the kernel configuration (lockdep, KASAN change layouts).
# With CLIPPY=1 any compiler or clippy warning fails the build.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
variant=${1:-normal}; shift || true
export RRXE_OUT=${RRXE_OUT:-$repo/out}
export PATH="$HOME/.cargo/bin:$PATH"
export LIBCLANG_PATH=/usr/lib/llvm-19/lib
kdir=$("$repo/tools/kernel/build.sh" "$variant")
build="$RRXE_OUT/module/$variant"
mkdir -p "$build"
# Only the module's sources; build products stay in $build between runs.
rsync -a --delete --exclude generated/ --exclude '*.o' --exclude '*.ko' --exclude '*.mod*' \
    --exclude '.*.cmd' --exclude '*.rmeta' --exclude 'modules.order' --exclude 'Module.symvers' \
    --include 'Kbuild' --include 'drivers/***' --include 'rust/' --include 'rust/bindings.rs' \
    --include 'rust/rdma/***' --include 'rust/sync/***' --include 'rust/net/***' \
    --include 'rust/proto/' --include 'rust/proto/src/***' --exclude '*' \
    "$repo/" "$build/"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
make -C "$kdir" M="$build" LLVM=-19 RUSTC=/usr/bin/rustc \
    RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library BINDGEN=bindgen CLIPPY_DRIVER=/usr/bin/clippy-driver \
    -j"$(nproc)" "$@" modules > "$log" 2>&1
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
echo "$build/drivers/infiniband/sw/rrxe/rrxe.ko"
