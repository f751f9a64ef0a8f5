// SPDX-License-Identifier: GPL-2.0

//! rrxe: a soft-RoCE v2 (RDMA over Converged Ethernet) driver.
//!
//! The driver proper is policy on top of two layers it mounts by path:
//! [`rdma`], the safe abstractions over ib_core, and [`proto`], the
//! `unsafe`-free protocol core that is also tested on the host.

use kernel::prelude::*;

#[path = "../../../../rust/rdma/mod.rs"]
pub mod rdma;

module! {
    type: Rrxe,
    name: "rrxe",
    authors: ["The rrxe developers"],
    description: "Soft RoCE v2 driver in Rust",
    license: "GPL",
}

/// Module state: alive between `insmod` and `rmmod`.
struct Rrxe;

impl kernel::Module for Rrxe {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: `rrxe_sizeof_ib_device` is a C shim with no preconditions.
        let c_size = unsafe { rdma::bindings::rrxe_sizeof_ib_device() };
        let rust_size = core::mem::size_of::<rdma::bindings::ib_device>();
        if c_size != rust_size {
            pr_err!("ib_device layout mismatch: C {} bytes, Rust {}\n", c_size, rust_size);
            return Err(EINVAL);
        }
        pr_info!(
            "rrxe: loaded (driver id {}, struct ib_device {} bytes)\n",
            rdma::bindings::rdma_driver_id_RDMA_DRIVER_RXE,
            rust_size
        );
        Ok(Rrxe)
    }
}

impl Drop for Rrxe {
    fn drop(&mut self) {
        pr_info!("rrxe: unloaded\n");
    }
}
