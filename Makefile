# SPDX-License-Identifier: GPL-2.0
#
# rrxe top-level Makefile. Two commands do everything on a fresh Debian 12 host:
#   make run     build what is missing, boot a guest with rrxe loaded, show it working
#   make check   all tests: host crates, module build with clippy, guest tests
#   make bench   rrxe vs upstream rxe perftest comparison in one guest (not a test)
# The kernel build itself (`make -C $KDIR M=$PWD`) descends through ./Kbuild.

SHELL := /bin/bash
REPO := $(CURDIR)
export RRXE_CACHE ?= $(HOME)/.cache/rrxe
export RRXE_OUT ?= $(REPO)/out
# normal | debug (KASAN, lockdep, kmemleak, DEBUG_LIST)
KERNEL_VARIANT ?= normal
export KERNEL_VARIANT

.PHONY: all help setup kernel module install initramfs run check bench shell host-test fmt clean

all: module

help:
	@echo "make run            boot a guest with rrxe: ibv_devices, data over RC, rping"
	@echo "make check          run every test (ends with 'N passed, N failed')"
	@echo "make bench          perftest rrxe vs rxe in one guest: medians and ratios"
	@echo "                    (BENCH_ARGS='--rounds 2 --tests ib_send_lat', see --help)"
	@echo "make shell          interactive guest console with rrxe loaded"
	@echo "make install        build rrxe.ko for the running kernel (or KDIR=...), install"
	@echo "                    it in /lib/modules/KVER/extra and run depmod: modprobe rrxe"
	@echo "make fmt            rustfmt every Rust file (kernel settings, .rustfmt.toml)"
	@echo "make setup|kernel|module|initramfs   individual steps"
	@echo "KERNEL_VARIANT=debug  use the KASAN/lockdep/kmemleak kernel"

setup:
	tools/setup.sh

kernel: setup
	tools/kernel/build.sh $(KERNEL_VARIANT)

module: setup
	tools/module.sh $(KERNEL_VARIANT)

initramfs: setup
	tools/initramfs/build.sh

# For the running kernel, or the Rust-enabled kernel build tree KDIR; into
# INSTALL_MOD_PATH (default /). Then `modprobe rrxe` (Documentation/rrxe.rst).
install:
	tools/install.sh $(if $(KDIR),--kdir $(KDIR)) $(if $(INSTALL_MOD_PATH),--root $(INSTALL_MOD_PATH))

# The module's crate root pulls in rust/rdma and rust/proto by path, so rustfmt
# on it formats all of the module's Rust code.
MODULE_ROOT := drivers/infiniband/sw/rrxe/rrxe_main.rs

fmt:
	cargo fmt --all
	rustfmt $(MODULE_ROOT)

host-test: setup
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo test --workspace

run: setup
	tools/run.sh

shell: setup
	tools/run.sh --shell

check:
	tools/check.sh

# A benchmark, not a test: not part of `make check` (Documentation/benchmarks.rst).
bench: setup
	tools/bench/run.sh $(BENCH_ARGS)

clean:
	rm -rf $(RRXE_OUT) target drivers/infiniband/sw/rrxe/generated
	find drivers -name '*.o' -o -name '*.ko' -o -name '*.mod*' -o -name '.*.cmd' | xargs rm -f
