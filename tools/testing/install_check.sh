#!/usr/bin/env bash
# `make check` step module-install: `make install` for a test kernel into a
# scratch root (seeded with that kernel's modules, as an installed system has
# them) must put rrxe.ko under extra/ and leave depmod's index naming its
# dependencies and the "rdma-link-rrxe" alias that `rdma link add` loads it by.
# The guest test rrxe_load then loads it that way.
# usage: tools/testing/install_check.sh [normal|debug]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
export RRXE_OUT=${RRXE_OUT:-$repo/out}
root=$RRXE_OUT/install-root
rm -rf "$root"
make -C "$repo" --no-print-directory install KDIR="$("$repo/tools/kernel/build.sh" "${1:-normal}")" \
    INSTALL_MOD_PATH="$root"
kver=$(ls "$root/lib/modules")
moddir=$root/lib/modules/$kver
echo "installed: $(cd "$moddir" && find extra -name rrxe.ko)"
dep=$(grep '^extra/.*/rrxe\.ko:' "$moddir/modules.dep") || { echo "rrxe.ko is not in modules.dep"; exit 1; }
echo "modules.dep: $dep"
for m in udp_tunnel ip6_udp_tunnel; do
    case "$dep" in *"/$m.ko"*) ;; *) echo "modules.dep: rrxe does not depend on $m"; exit 1 ;; esac
done
grep -qx 'alias rdma-link-rrxe rrxe' "$moddir/modules.alias" || { echo "no rdma-link-rrxe alias"; exit 1; }
echo "alias rdma-link-rrxe rrxe: ok"
