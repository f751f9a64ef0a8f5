#!/usr/bin/env bash
# Fetch Debian's linux-source-7.3 and build a Rust-enabled test kernel with LLVM.
# Output directory is cached outside the repo, keyed by kernel package version,
# config fragments and toolchain versions; a warm call only prints the path.
#
# usage: tools/kernel/build.sh [normal|debug]   -> prints the kernel build directory
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
variant=${1:-normal}
cache=${RRXE_CACHE:-$HOME/.cache/rrxe}
series=linux-source-7.3
export PATH="$HOME/.cargo/bin:$PATH"
export LIBCLANG_PATH=/usr/lib/llvm-19/lib

log() { printf 'kernel: %s\n' "$*" >&2; }
die() { printf 'kernel: ERROR: %s\n' "$*" >&2; exit 1; }

fragments=("$here/rrxe.config")
case "$variant" in
    normal) fragments+=("$here/normal.config") ;;
    debug) fragments+=("$here/debug.config") ;;
    *) die "unknown variant '$variant' (normal|debug)" ;;
esac

# 1. Kernel source: one pinned series from trixie-backports; the exact version is logged.
mkdir -p "$cache/src"
version=$(apt-cache policy "$series" 2>/dev/null | awk '/Candidate:/ {print $2}')
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
    # Fall back to a source tree already unpacked in the cache.
    version=$(ls "$cache/src" 2>/dev/null | sed -n "s/^$series-//p" | sort -V | tail -1)
    [ -n "$version" ] || die "$series is not in the apt lists (is trixie-backports configured? run tools/setup.sh)"
fi
src="$cache/src/$series-$version"
if [ ! -f "$src/.unpacked" ]; then
    log "fetching $series $version"
    tmp=$(mktemp -d "$cache/src/tmp.XXXX")
    (cd "$tmp" && apt-get download -qq "$series=$version") || die "apt-get download $series=$version failed"
    dpkg-deb -x "$tmp"/*.deb "$tmp/deb"
    rm -rf "$src"; mkdir -p "$src"
    tar -C "$src" --strip-components=1 -xJf "$tmp"/deb/usr/src/$series.tar.xz
    rm -rf "$tmp"
    touch "$src/.unpacked"
fi

# 2. Cache key.
MAKEVARS=(LLVM=-19 RUSTC=/usr/bin/rustc RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library BINDGEN=bindgen)
key=$( { echo "$version"; cat "${fragments[@]}"; /usr/bin/rustc --version; clang-19 --version | head -1;
         bindgen --version; echo "${MAKEVARS[*]}"; } | sha256sum | cut -c1-16)
out="$cache/kernel/$variant-$version-$key"
install_modules() {
    # modules_install for the guest (rdma_rxe.ko and its dependencies).
    if [ ! -f "$out/modinstall/.done" ]; then
        rm -rf "$out/modinstall"
        make -s -C "$src" O="$out" "${MAKEVARS[@]}" INSTALL_MOD_PATH="$out/modinstall" \
            INSTALL_MOD_STRIP=1 DEPMOD=/sbin/depmod modules_install
        touch "$out/modinstall/.done"
    fi
}
if [ -f "$out/.built" ]; then
    install_modules
    log "cached: $out"
    echo "$out"; exit 0
fi

# 3. Configure and build, one build per output directory at a time.
mkdir -p "$cache/kernel"
exec 9> "$out.lock"
flock 9
if [ -f "$out/.built" ]; then
    install_modules
    log "cached (built meanwhile): $out"
    echo "$out"; exit 0
fi
log "building $variant kernel $version into $out (cold build: ~11 min on 2 cores)"
mkdir -p "$out"
{ echo "version=$version"; echo "variant=$variant"; echo "key=$key"; } > "$out/rrxe-kernel.info"
make -s -C "$src" O="$out" "${MAKEVARS[@]}" tinyconfig >/dev/null
"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "${fragments[@]}" >/dev/null
make -s -C "$src" O="$out" "${MAKEVARS[@]}" olddefconfig
# Every option of the fragments must have survived olddefconfig.
for f in "${fragments[@]}"; do
    grep -E '^CONFIG_[A-Z0-9_]+=' "$f" | while IFS= read -r line; do
        opt=${line%%=*}; val=${line#*=}
        if [ "$val" = n ]; then
            ! grep -q "^$opt=" "$out/.config" || die "$opt should be off in $out/.config"
        else
            grep -qx "$line" "$out/.config" || die "$line did not survive olddefconfig (got: $(grep "^$opt=" "$out/.config" || echo unset))"
        fi
    done
done
make -s -C "$src" O="$out" "${MAKEVARS[@]}" -j"$(( $(nproc) + 1 ))" bzImage modules
touch "$out/.built"
install_modules
log "built $out"
echo "$out"
