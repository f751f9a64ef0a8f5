#!/usr/bin/env bash
# Build the per-run initrd for one guest: the cached base initramfs (build.sh) followed
# by a second gzip'd cpio archive with this run's files. Linux unpacks concatenated
# archives in order, later files on top of earlier ones.
#
# usage: tools/initramfs/extra.sh --kdir KDIR --out FILE [--tests DIR]... [--ko FILE]
#                                 [--add SRC=/GUEST/PATH]...
#
# The second archive holds:
#   tools/testing/guest/*.sh        -> /rrxe/tests/        (plus lib/ -> /rrxe/tests/lib/)
#   each --tests DIR's *.sh         -> /rrxe/tests/        (e.g. tools/testing/selftest)
#   rrxe.ko (--ko, default: tools/module.sh's build for the kernel's variant) -> /rrxe/rrxe.ko
#   $KDIR/modinstall/lib/modules/*  -> /lib/modules/       (modprobe rdma_rxe)
#   rrxe.ko again, installed as `make install` does: /lib/modules/KVER/extra/drivers/
#                                      infiniband/sw/rrxe/rrxe.ko, then depmod (modprobe rrxe)
#   $RRXE_OUT/kverbs/VARIANT/rrxe_kverbs.ko -> /rrxe/rrxe_kverbs.ko (tools/testing/kverbs)
#   $RRXE_OUT/guest-bin/*           -> /rrxe/bin/          (first on PATH)
#   each --add SRC=/PATH            -> /PATH               (not under /lib, /bin: use /usr/...)
# Directory entries are written under usr/ only: a "lib" directory entry would replace
# the base image's /lib -> usr/lib symlink.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out_dir=${RRXE_OUT:-$repo/out}

log() { printf 'initramfs: %s\n' "$*" >&2; }
die() { printf 'initramfs: ERROR: %s\n' "$*" >&2; exit 1; }

kdir= out= ko= tests=("$repo/tools/testing/guest") adds=()
while [ $# -gt 0 ]; do
    case "$1" in
        --kdir) kdir=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --tests) tests+=("$2"); shift 2 ;;
        --ko) ko=$2; shift 2 ;;
        --add) adds+=("$2"); shift 2 ;;
        *) die "unknown option $1" ;;
    esac
done
[ -n "$out" ] || die "--out FILE is required"
# tools/module.sh builds each kernel variant's module in its own tree.
kvariant=$(sed -n 's/^variant=//p' "${kdir:-/nonexistent}/rrxe-kernel.info" 2>/dev/null)
default_ko=${RRXE_OUT:-$repo/out}/module/${kvariant:-normal}/drivers/infiniband/sw/rrxe/rrxe.ko
if [ -z "$ko" ] && [ -f "$default_ko" ]; then
    ko=$default_ko
    # The repo's build must be for this guest's kernel (a normal-kernel module in the
    # debug kernel would load and misbehave): kbuild's .cmd file names the build tree.
    cmdf=$(dirname "$default_ko")/.rrxe.ko.cmd
    if [ -n "$kdir" ] && [ -f "$cmdf" ]; then
        kd_real=$(cd "$kdir" && pwd -P)
        if ! grep -qF "$kd_real" "$(dirname "$default_ko")"/.rrxe.o.cmd "$cmdf" 2>/dev/null; then
            log "warning: $default_ko was not built against $kd_real; leaving it out (pass --ko to force)"
            ko=
        fi
    fi
fi

base=$("$here/build.sh")
work=$(mktemp -d "${TMPDIR:-/tmp}/rrxe-extra.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/rrxe/tests/lib" "$work/rrxe/bin"

for d in "${tests[@]}"; do
    [ -d "$d" ] || die "no test directory $d"
    for f in "$d"/*.sh; do [ -f "$f" ] && install -m 0755 "$f" "$work/rrxe/tests/"; done
    if [ -d "$d/lib" ]; then cp -a "$d/lib/." "$work/rrxe/tests/lib/"; fi
done
if [ -n "$ko" ]; then
    [ -f "$ko" ] || die "no module $ko"
    install -m 0644 "$ko" "$work/rrxe/rrxe.ko"
fi
if [ -n "$kdir" ]; then
    if [ -d "$kdir/modinstall/lib/modules" ]; then
        mkdir -p "$work/usr/lib/modules"
        cp -a "$kdir/modinstall/lib/modules/." "$work/usr/lib/modules/"
        # Build-tree links are useless in the guest.
        find "$work/usr/lib/modules" -maxdepth 2 \( -name build -o -name source \) -type l -delete
        # rrxe.ko where `make install` puts it (tools/install.sh: kbuild's
        # modules_install, INSTALL_MOD_DIR=extra), and depmod's index of it.
        kver=$(cat "$kdir/include/config/kernel.release")
        if [ -n "$ko" ] && [ -d "$work/usr/lib/modules/$kver" ]; then
            install -D -m 0644 "$ko" "$work/usr/lib/modules/$kver/extra/drivers/infiniband/sw/rrxe/rrxe.ko"
            depmod -b "$work/usr" "$kver" || die "depmod failed for $kver"
        fi
    else
        log "warning: $kdir/modinstall/lib/modules missing: modprobe will not find rdma_rxe"
    fi
fi
# The kernel verbs test module of the same kernel variant (tools/testing/kverbs).
kverbs=$out_dir/kverbs/${kvariant:-normal}/rrxe_kverbs.ko
[ -f "$kverbs" ] && install -m 0644 "$kverbs" "$work/rrxe/rrxe_kverbs.ko"
if [ -d "$out_dir/guest-bin" ]; then
    cp -a "$out_dir/guest-bin/." "$work/rrxe/bin/"
fi
for a in ${adds[@]+"${adds[@]}"}; do
    src=${a%%=*}; dst=${a#*=}
    [ -e "$src" ] || die "--add: no $src"
    case "$dst" in /lib/*|/bin/*|/sbin/*|/lib64/*) die "--add: $dst would replace a base symlink; use /usr$dst" ;; esac
    mkdir -p "$work$(dirname "$dst")"
    cp -a "$src" "$work$dst"
done

mkdir -p "$(dirname "$out")"
{
    cat "$base"
    (cd "$work" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -1
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "$out"
