#!/usr/bin/env bash
# Build (or reuse) the cached base initramfs for rrxe test guests.
#
# usage: tools/initramfs/build.sh        -> prints the path of base-<key>.cpio.gz
#
# Contents: Debian bookworm user space for RDMA tests (rdma-core, perftest, iproute2 ...)
# extracted from .debs with `apt-get download` + `dpkg-deb -x` (nothing is installed on
# the host), the library closure that `ldd` finds (pulled from .debs too, except glibc
# and libgcc_s, which are copied from the host), busybox-static for the shell, and the
# /init in this directory. The cache key covers the package versions, the host
# glibc/libgcc/busybox versions and this directory's scripts.
# Per-run files (tests, modules, rrxe.ko) go into a second archive: see extra.sh.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${RRXE_CACHE:-$HOME/.cache/rrxe}
arch=x86_64-linux-gnu

log() { printf 'initramfs: %s\n' "$*" >&2; }
die() { printf 'initramfs: ERROR: %s\n' "$*" >&2; exit 1; }

# Packages named in the platform notes; their further library deps are found by ldd.
PKGS=(ibverbs-utils rdmacm-utils perftest libibverbs1 librdmacm1 ibverbs-providers rdma-core
      libnl-3-200 libnl-route-3-200 libibumad3 libpci3 iproute2
      libmnl0 libelf1 libbpf1 libcap2 libxtables12 libbsd0 libmd0 libdb5.3 libtirpc3
      libgssapi-krb5-2 kmod)
# Copied from the host rather than from .debs: they must match the host's ldd/loader.
HOST_PKGS=(libc6 libgcc-s1 busybox-static)

for t in apt-get apt-cache dpkg-deb dpkg-query cpio gzip ldd od; do
    command -v "$t" >/dev/null || die "$t not found (run tools/setup.sh)"
done
[ -x /bin/busybox ] || die "/bin/busybox missing: install busybox-static (tools/setup.sh)"

# 1. Cache key: candidate versions of the .debs, host package versions, our scripts.
versions=$(apt-cache policy "${PKGS[@]}" 2>/dev/null | awk '/^[^ ]/ {p=$1} /Candidate:/ {print p, $2}')
for p in "${PKGS[@]}"; do
    v=$(printf '%s\n' "$versions" | awk -v p="$p:" '$1==p {print $2}')
    [ -n "$v" ] && [ "$v" != "(none)" ] || die "package $p has no candidate version (apt-get update?)"
done
hostv=$(dpkg-query -W -f='${Package} ${Version}\n' "${HOST_PKGS[@]}")
key=$( { printf '%s\n' "$versions" "$hostv"; cat "$here/build.sh" "$here/init"; } | sha256sum | cut -c1-16)
outdir="$cache/initramfs"
out="$outdir/base-$key.cpio.gz"
if [ -f "$out" ]; then
    log "cached: $out"
    echo "$out"; exit 0
fi

log "building base initramfs $key"
t0=$(date +%s)
mkdir -p "$outdir" "$cache/debs"
work=$(mktemp -d "$outdir/tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage="$work/root"
mkdir -p "$stage"/usr/{bin,sbin,lib/$arch,lib64} "$stage"/{etc,proc,sys,dev,tmp,run,root,mnt,rrxe/tests,rrxe/bin,var/tmp}
# Merged-/usr layout, as on the host.
for d in bin sbin lib lib64; do ln -s "usr/$d" "$stage/$d"; done
manifest="$work/manifest"
: > "$manifest"

# The cached .deb of package $1 at version $2, if any.
cached_deb() {
    local f
    for f in "$cache/debs/${1}_"*.deb; do
        [ -f "$f" ] || continue
        if [ "$(dpkg-deb -f "$f" Package)" = "$1" ] && [ "$(dpkg-deb -f "$f" Version)" = "$2" ]; then
            echo "$f"; return 0
        fi
    done
    return 0
}
# Download a package (cached in $cache/debs) and merge it into the stage.
fetch_and_merge() {
    local pkg=$1 ver deb
    ver=$(apt-cache policy "$pkg" | awk '/Candidate:/ {print $2}')
    [ -n "$ver" ] && [ "$ver" != "(none)" ] || die "no candidate for $pkg"
    deb=$(cached_deb "$pkg" "$ver")
    if [ -z "$deb" ]; then
        (cd "$cache/debs" && apt-get download -qq "$pkg=$ver" 2>/dev/null) \
            || die "apt-get download $pkg=$ver failed"
        deb=$(cached_deb "$pkg" "$ver")
        [ -n "$deb" ] || die "downloaded $pkg but cannot find its .deb"
    fi
    rm -rf "$work/x"; mkdir "$work/x"
    dpkg-deb -x "$deb" "$work/x"
    (cd "$work/x" && tar cf - .) | (cd "$stage" && tar xf - --keep-directory-symlink)
    echo "$pkg $ver deb" >> "$manifest"
}
for p in "${PKGS[@]}"; do fetch_and_merge "$p"; done

# busybox for the shell and the usual tools; real binaries win over applets (ip, tc).
cp /bin/busybox "$stage/usr/bin/busybox"
/bin/busybox --list-full | while read -r app; do
    name=${app##*/}; dir=${app%/*}
    case "$dir" in bin|usr/bin) dst=usr/bin ;; *) dst=usr/sbin ;; esac
    [ -e "$stage/usr/bin/$name" ] || [ -e "$stage/usr/sbin/$name" ] || ln -s /usr/bin/busybox "$stage/$dst/$name"
done
echo "busybox-static $(dpkg-query -W -f='${Version}' busybox-static) host" >> "$manifest"

# 2. Library closure by ldd. Libraries outside the stage come from .debs (found with
# dpkg -S on the host), except glibc and libgcc_s, which are copied from the host.
host_copy() {  # host path -> same path (resolved) in the stage, plus the symlink name
    local src=$1 base real
    base=$(basename "$src"); real=$(readlink -f "$src")
    cp -n "$real" "$stage/usr/lib/$arch/"
    [ "$(basename "$real")" = "$base" ] || ln -sf "$(basename "$real")" "$stage/usr/lib/$arch/$base"
}
libdirs() { find "$stage" -xtype f -name '*.so*' -printf '%h\n' | sort -u | paste -sd: ; }
: > "$work/checked"
for round in 1 2 3 4 5 6; do
    ldp=$(libdirs)
    # Only files not looked at in an earlier round: older ones were already satisfied.
    find "$stage/usr" -type f \( -perm -u+x -o -name '*.so*' \) | LC_ALL=C sort > "$work/all"
    LC_ALL=C comm -23 "$work/all" "$work/checked" > "$work/new"
    cp "$work/all" "$work/checked"
    need=$(while read -r f; do if [ "$(head -c4 "$f" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then echo "$f"; fi; done < "$work/new" |
           while read -r f; do LD_LIBRARY_PATH=$ldp ldd "$f" 2>/dev/null || true; done |
           awk -v s="$stage" '/not found/ {print "MISSING", $1; next}
                               /=>/ && index($3, s) != 1 && $3 ~ /^\// {print $3}' | sort -u)
    [ -n "$need" ] || break
    if printf '%s\n' "$need" | grep -q '^MISSING'; then
        die "libraries not found on the host or in the packages: $(printf '%s\n' "$need" | awk '/^MISSING/ {print $2}' | sort -u | tr '\n' ' ')"
    fi
    pkgs=()
    while read -r lib; do
        owner=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null || true)
        owner=${owner%%:*}
        case "$owner" in
            libc6|libgcc-s1) host_copy "$lib" ;;
            "") die "cannot tell which package owns $lib" ;;
            *) pkgs+=("$owner") ;;
        esac
    done <<< "$need"
    for p in $(printf '%s\n' "${pkgs[@]}" | sort -u); do
        [ -n "$p" ] || continue
        grep -q "^$p " "$manifest" && die "$p is merged but ldd still resolves its library on the host"
        log "ldd closure: adding $p"
        fetch_and_merge "$p"
    done
done
# The dynamic loader at its ABI path, and libgcc_s (dlopened by glibc for pthread_exit).
host_copy /lib64/ld-linux-x86-64.so.2
ln -sf "../lib/$arch/ld-linux-x86-64.so.2" "$stage/usr/lib64/ld-linux-x86-64.so.2"
host_copy "/lib/$arch/libgcc_s.so.1"
echo "libc6 $(dpkg-query -W -f='${Version}' libc6:amd64) host" >> "$manifest"
echo "libgcc-s1 $(dpkg-query -W -f='${Version}' libgcc-s1:amd64) host" >> "$manifest"
# Loader cache: the guest finds libraries in the default paths plus these.
printf '%s\n' "/usr/lib/$arch" "/usr/lib/$arch/libibverbs" > "$stage/etc/ld.so.conf"
/sbin/ldconfig -r "$stage" 2>/dev/null || ldconfig -r "$stage"

# Drop what a test guest never reads.
rm -rf "$stage"/usr/share/{doc,man,info,locale,lintian,bash-completion,zsh} \
       "$stage"/usr/lib/systemd "$stage"/usr/lib/udev "$stage"/usr/include "$stage"/etc/init.d

# 3. Sanity: verbs providers must be present.
ls "$stage"/etc/libibverbs.d/rxe.driver >/dev/null 2>&1 || die "rxe.driver missing from /etc/libibverbs.d"
ls "$stage"/usr/lib/$arch/libibverbs/librxe-rdmav34.so >/dev/null 2>&1 || die "librxe-rdmav34.so missing"
for b in rping ibv_rc_pingpong ibv_ud_pingpong ib_write_bw ib_send_lat rdma ip; do
    [ -e "$stage/usr/bin/$b" ] || [ -e "$stage/usr/sbin/$b" ] || die "$b missing"
done

# 4. /etc and /init.
cat > "$stage/etc/passwd" <<'E'
root:x:0:0:root:/root:/bin/sh
E
cat > "$stage/etc/group" <<'E'
root:x:0:
E
cat > "$stage/etc/hosts" <<'E'
127.0.0.1	localhost
::1	localhost
192.0.2.1	guest-a
192.0.2.2	guest-b
2001:db8::1	guest-a
2001:db8::2	guest-b
E
echo 'hosts: files' > "$stage/etc/nsswitch.conf"
# Login shells (rrxe.shell=1): Debian's busybox-static runs its applets before PATH,
# so make ip/tc mean iproute2's.
cat > "$stage/etc/profile" <<'E'
export PATH=/rrxe/bin:/usr/sbin:/usr/bin:/sbin:/bin
ip() { /usr/bin/ip "$@"; }
tc() { /usr/sbin/tc "$@"; }
PS1='guest-$RRXE_ROLE:\w# '
E
sort "$manifest" > "$stage/etc/rrxe-initramfs.manifest"
install -m 0755 "$here/init" "$stage/init"

(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -6 > "$work/out.cpio.gz"
cp "$stage/etc/rrxe-initramfs.manifest" "$outdir/base-$key.manifest"
mv "$work/out.cpio.gz" "$out"
# Older bases (other keys) untouched for a day go.
find "$outdir" -maxdepth 1 -name 'base-*' ! -name "base-$key.*" -mtime +1 -delete 2>/dev/null || true
log "built $out ($(du -sh "$stage" | cut -f1) unpacked, $(du -h "$out" | cut -f1) compressed, $(( $(date +%s) - t0 )) s)"
echo "$out"
