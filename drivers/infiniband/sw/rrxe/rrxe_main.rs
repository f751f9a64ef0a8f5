// SPDX-License-Identifier: GPL-2.0

//! rrxe: a soft-RoCE v2 (RDMA over Converged Ethernet) driver.
//!
//! The driver proper is policy on top of two layers it mounts by path:
//! [`rdma`], the safe abstractions over ib_core, and [`proto`], the
//! `unsafe`-free protocol core that is also tested on the host.
//!
//! `rdma link add NAME type rrxe netdev DEV` creates a device; it goes away
//! with `rdma link delete`, when its net device is unregistered, or on `rmmod`.
//!
//! Every value from user space or the wire is untrusted, and the kernel is
//! built with overflow checks (a panic is an oops): the lints below forbid
//! arithmetic that can overflow, indexing that can go out of bounds, and
//! `unwrap`/`expect`/`panic` anywhere in the module, `rust/rdma` and
//! `rust/proto` included. Where a bound is proven, a local `allow` says why.
#![deny(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use kernel::prelude::*;

#[path = "../../../../rust/bindings.rs"]
pub mod bindings;

#[path = "../../../../rust/rdma/mod.rs"]
pub mod rdma;

#[path = "../../../../rust/net/mod.rs"]
pub mod net;

#[path = "../../../../rust/sync/mod.rs"]
pub mod sync;

#[path = "../../../../rust/proto/src/proto/mod.rs"]
pub mod proto;

mod ah;
mod cq;
mod datapath;
mod device;
mod index;
mod mem;
mod mr;
mod packet_io;
mod params;
mod path;
mod qp;
mod queue;
mod srq;
mod staging;
mod stats;
mod uapi;
mod ud;
mod verbs;
mod wqe;

use device::RrxeDev;

use net::netdev::{NetDevice, NetdevNotifier};
use rdma::link::{LinkHandler, LinkRegistration};

module! {
    type: RrxeModule,
    name: "rrxe",
    authors: ["The rrxe developers"],
    description: "Soft RoCE v2 driver in Rust",
    license: "GPL",
    alias: ["rdma-link-rrxe"],
}

/// The rrxe driver: its devices are `Device<Rrxe>`.
pub struct Rrxe;

impl LinkHandler for Rrxe {
    const TYPE: &'static CStr = c"rrxe";

    fn newlink(name: &CStr, netdev: &NetDevice) -> Result {
        device::add(name, netdev)
    }
}

/// Module state: alive between `insmod` and `rmmod`.
struct RrxeModule {
    link: Option<Pin<KBox<LinkRegistration<Rrxe>>>>,
    notifier: Option<Pin<KBox<NetdevNotifier<device::NetdevEvents>>>>,
    sockets: Option<packet_io::Sockets>,
}

impl kernel::Module for RrxeModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: `rrxe_sizeof_ib_device` is a C shim with no preconditions.
        let c_size = unsafe { rdma::bindings::rrxe_sizeof_ib_device() };
        let rust_size = core::mem::size_of::<rdma::bindings::ib_device>();
        if c_size != rust_size {
            pr_err!(
                "ib_device layout mismatch: C {} bytes, Rust {}\n",
                c_size,
                rust_size
            );
            return Err(EINVAL);
        }
        device::init();
        let sockets = packet_io::Sockets::open(datapath::run)?;
        let notifier = KBox::pin_init(NetdevNotifier::register(device::NetdevEvents), GFP_KERNEL)?;
        let link = KBox::pin_init(LinkRegistration::<Rrxe>::register(), GFP_KERNEL)?;
        pr_info!("loaded\n");
        Ok(RrxeModule {
            link: Some(link),
            notifier: Some(notifier),
            sockets: Some(sockets),
        })
    }
}

impl Drop for RrxeModule {
    fn drop(&mut self) {
        // No new devices from here on, no more packets, no more net device
        // events; then remove what exists and stop the worker.
        self.link = None;
        self.sockets = None;
        self.notifier = None;
        device::remove_all();
        packet_io::stop_worker();
        pr_info!("unloaded\n");
    }
}
