#!/usr/bin/env bash
# `make install`: build rrxe.ko for a kernel and install it where modprobe finds
# it, under ROOT/lib/modules/KVER/extra/, with kbuild's modules_install (which
# runs depmod). Then `modprobe rrxe` loads it and the modules it needs
# (udp_tunnel, ip6_udp_tunnel) on that kernel.
#
# usage: tools/install.sh [--kdir KDIR | --variant normal|debug] [--root DIR]
#   --kdir KDIR     a Rust-enabled kernel's build tree (default: the running
#                   kernel's, /lib/modules/$(uname -r)/build)
#   --variant V     the cached test kernel of variant V instead (tools/kernel/build.sh)
#   --root DIR      install under DIR instead of / (INSTALL_MOD_PATH). For a test
#                   kernel DIR is first given that kernel's own modules, so that
#                   depmod resolves rrxe's dependencies as on an installed system.
# Prints the installed module's path.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
die() { printf 'install: ERROR: %s\n' "$*" >&2; exit 1; }

kdir= variant= root=/
while [ $# -gt 0 ]; do
    case "$1" in
        --kdir) kdir=$2; shift 2 ;;
        --variant) variant=$2; shift 2 ;;
        --root) root=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
if [ -n "$variant" ]; then
    kdir=$("$repo/tools/kernel/build.sh" "$variant") || die "kernel build failed"
else
    kdir=${kdir:-/lib/modules/$(uname -r)/build}
    # A cached test kernel builds in its variant's tree (tools/module.sh).
    variant=$(sed -n 's/^variant=//p' "$kdir/rrxe-kernel.info" 2>/dev/null)
    variant=${variant:-custom}
    [ -d "$kdir" ] || die "no kernel build tree at $kdir (install the kernel's headers, or pass --kdir)"
    grep -q '^CONFIG_RUST=y' "$kdir/include/config/auto.conf" 2>/dev/null \
        || die "$kdir is not a Rust-enabled kernel (CONFIG_RUST=y): rrxe cannot be built for it"
fi
kver=$(cat "$kdir/include/config/kernel.release") || die "no kernel.release in $kdir"
mkdir -p "$root"
root=$(cd "$root" && pwd)
# A test kernel's modules, installed as a distribution would have them.
if [ "$root" != / ] && [ -d "$kdir/modinstall/lib/modules/$kver" ]; then
    mkdir -p "$root/lib/modules"
    rsync -a --delete --exclude build --exclude source --exclude extra \
        "$kdir/modinstall/lib/modules/$kver/" "$root/lib/modules/$kver/"
fi
[ "$root" = / ] && root=
RRXE_KDIR=$kdir RRXE_INSTALL_ROOT=${root:-/} "$repo/tools/module.sh" "$variant" > /dev/null \
    || die "building or installing rrxe.ko failed"
# kbuild keeps the module's directory: extra/drivers/infiniband/sw/rrxe/rrxe.ko.
ko=$root/lib/modules/$kver/extra/drivers/infiniband/sw/rrxe/rrxe.ko
[ -f "$ko" ] || die "modules_install did not install $ko"
echo "$ko"
