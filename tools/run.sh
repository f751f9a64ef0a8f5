#!/usr/bin/env bash
# `make run`: build what is missing (kernel, module, guest user space), boot a
# guest with rrxe loaded and show it working. `--shell` gives an interactive
# guest console instead (rrxe.ko is at /rrxe/rrxe.ko; `poweroff -f` to leave).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export RRXE_OUT=${RRXE_OUT:-$repo/out}
variant=${KERNEL_VARIANT:-normal}
start=$(date +%s)
"$repo/tools/kernel/build.sh" "$variant" >/dev/null
"$repo/tools/module.sh" "$variant" >/dev/null
"$repo/tools/testing/verbs/build.sh" >/dev/null
"$repo/tools/initramfs/build.sh" >/dev/null
echo "run: built in $(( $(date +%s) - start ))s; booting a $variant guest" >&2
if [ "${1:-}" = --shell ]; then
    exec "$repo/tools/qemu/run.sh" --variant "$variant" --shell
fi
log_dir="$RRXE_OUT/runs/make-run"
rm -rf "$log_dir"
status=0
"$repo/tools/qemu/run.sh" --variant "$variant" --tests "$repo/tools/demo" --test demo \
    --log-dir "$log_dir" --timeout 300 || status=$?
# The guest's own output, without the kernel's boot messages.
sed -n '/RRXE-TEST: start/,/RRXE-RESULT/p' "$log_dir/guest-a.log" | grep -v '^\[ *[0-9.]*\] ' || true
exit $status
