#!/usr/bin/env bash
# Build rrxe.ko out of tree against the cached test kernel.
# usage: tools/module.sh [normal|debug] [extra make args, e.g. CLIPPY=1]
# With CLIPPY=1 any compiler or clippy warning fails the build.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
variant=${1:-normal}; shift || true
export PATH="$HOME/.cargo/bin:$PATH"
export LIBCLANG_PATH=/usr/lib/llvm-19/lib
kdir=$("$repo/tools/kernel/build.sh" "$variant")
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
make -C "$kdir" M="$repo" LLVM=-19 RUSTC=/usr/bin/rustc \
    RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library BINDGEN=bindgen CLIPPY_DRIVER=/usr/bin/clippy-driver \
    -j"$(nproc)" "$@" modules 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 0 ] || { echo "module: build failed (rc=$rc)" >&2; exit "$rc"; }
if grep -qE '^(warning|error)(\[|:)' "$log"; then
    echo "module: build printed warnings (the kernel's lints must stay clean):" >&2
    grep -E '^(warning|error)(\[|:)' "$log" | sort | uniq -c >&2
    exit 1
fi
ls -l "$repo/drivers/infiniband/sw/rrxe/rrxe.ko" >&2
