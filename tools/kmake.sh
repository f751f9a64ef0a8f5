# SPDX-License-Identifier: GPL-2.0
# Sourced, not run: kmake, kbuild for an out-of-tree module, as rrxe.ko, the
# kernel verbs test module and the harness's self-test module are built.
#
#   kmake KDIR BUILD [make arguments...]
#
# runs `make -C KDIR M=BUILD ...` with the kernel's own compiler (LLVM=-19 for
# a clang-built kernel, as the test kernels are; the default compiler
# otherwise) and the Rust tools the test kernels were built with (Debian's
# rustc-web and its library sources, bindgen-cli, clippy-driver).

export LIBCLANG_PATH=${LIBCLANG_PATH:-/usr/lib/llvm-19/lib}

kmake() {
    local kdir=$1 build=$2 llvm=()
    shift 2
    grep -q '^CONFIG_CC_IS_CLANG=y' "$kdir/include/config/auto.conf" 2>/dev/null && llvm=(LLVM=-19)
    make -C "$kdir" M="$build" ${llvm[@]+"${llvm[@]}"} RUSTC=/usr/bin/rustc \
        RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library BINDGEN=bindgen \
        CLIPPY_DRIVER=/usr/bin/clippy-driver "$@"
}
