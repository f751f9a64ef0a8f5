# Sourced by tools/bench/run.sh and tools/bench/ab.sh (--profile): fills the array
# perf_add with tools/qemu/run.sh --add arguments that put the host's perf (Debian's
# linux-perf) and its libraries into the guest under /rrxe/perf, where the guest
# scripts' $PERF (tools/bench/guest/lib/rounds.sh) finds them. The glibc the
# initramfs copies from the host is perf's too, so those are left out.
perf_add=()
perf=$(command -v perf) || die "--profile needs perf on the host (apt-get install linux-perf)"
perf_add+=(--add "$perf=/rrxe/perf/perf")
while read -r lib; do
    case "$(basename "$lib")" in ld-linux*|libc.so*|libm.so*|libgcc_s*) continue ;; esac
    perf_add+=(--add "$(readlink -f "$lib")=/rrxe/perf/lib/$(basename "$lib")")
done < <(ldd "$perf" | awk '$3 ~ /^\// {print $3}')
