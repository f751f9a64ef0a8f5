#!/usr/bin/env bash
# Install everything rrxe's build and tests need on a Debian 12 (bookworm) host.
# Idempotent: each step checks first and does nothing when already satisfied.
# Needs root (apt) and the Debian archive / crates.io; says what is missing otherwise.
set -euo pipefail

BINDGEN_VERSION=0.73.2
SUITES_FILE=/etc/apt/sources.list.d/rrxe-backports.sources

log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }

# Host packages: toolchain for a Rust-enabled kernel, QEMU, initramfs tools.
PKGS=(clang-19 lld-19 llvm-19 libclang-19-dev rustc-web rust-web-src
      bc bison flex libelf-dev libssl-dev cpio kmod rsync busybox-static
      rust-web-clippy xz-utils zstd dpkg-dev python3 gcc make libibverbs-dev
      librdmacm-dev linux-perf)
QEMU_PKG=qemu-system-x86

missing=()
for p in "${PKGS[@]}" "$QEMU_PKG"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

need_suites=0
[ -f "$SUITES_FILE" ] || need_suites=1

if [ ${#missing[@]} -gt 0 ] || [ $need_suites = 1 ]; then
    [ "$(id -u)" = 0 ] || die "not root; install as root: ${missing[*]} (and the backports suites in $SUITES_FILE)"
    if [ $need_suites = 1 ]; then
        log "adding bookworm-backports and trixie-backports (NotAutomatic) in $SUITES_FILE"
        cat > "$SUITES_FILE" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    fi
    log "apt-get update"
    apt-get update -qq || die "apt-get update failed: is the Debian archive reachable?"
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing: ${missing[*]}"
        # Everything but QEMU comes from bookworm; QEMU must match the backports qemu-utils.
        rest=()
        for p in "${missing[@]}"; do [ "$p" = "$QEMU_PKG" ] || rest+=("$p"); done
        if [ ${#rest[@]} -gt 0 ]; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${rest[@]}" \
                || die "apt-get install failed for: ${rest[*]}"
        fi
        if printf '%s\n' "${missing[@]}" | grep -qx "$QEMU_PKG"; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                -t bookworm-backports "$QEMU_PKG" || die "apt-get install -t bookworm-backports $QEMU_PKG failed"
        fi
    fi
fi

# bindgen-cli at a pinned version, in cargo's bin directory.
export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v bindgen >/dev/null || [ "$(bindgen --version 2>/dev/null | awk '{print $2}')" != "$BINDGEN_VERSION" ]; then
    command -v cargo >/dev/null || die "cargo not found: install a Rust toolchain (rustup) for host crates"
    log "cargo install bindgen-cli $BINDGEN_VERSION"
    cargo install --quiet --locked bindgen-cli --version "$BINDGEN_VERSION" \
        || die "cargo install bindgen-cli failed: is crates.io reachable?"
fi
# Host-side Rust components used by make check.
if command -v rustup >/dev/null; then
    rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy rustfmt >/dev/null 2>&1 || log "warning: could not add clippy/rustfmt"
fi
log "ok"
