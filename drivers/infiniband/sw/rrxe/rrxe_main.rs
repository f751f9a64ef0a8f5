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

#[path = "../../../../rust/shared_bytes.rs"]
pub mod shared_bytes;

#[path = "../../../../rust/proto/src/proto/mod.rs"]
pub mod proto;

mod ah;
mod cq;
mod datapath;
mod device;
mod exec;
mod index;
mod mcast;
mod mem;
mod mr;
mod netns;
mod params;
mod qp;
mod queue;
mod rc;
mod recv;
mod srq;
mod staging;
mod stats;
mod uapi;
mod ud;
mod verbs;
mod wqe;
mod xmit;

use device::RrxeDev;

use net::{
    netdev::{NetDevice, NetdevNotifier},
    ns::PernetRegistration,
};
use rdma::link::{LinkHandler, LinkRegistration};
use sync::workqueue::OwnedQueue;

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
    /// Closes a namespace's RoCE v2 sockets when it goes (`netns.rs`).
    pernet: Option<Pin<KBox<PernetRegistration<netns::NsExit>>>>,
}

impl kernel::Module for RrxeModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: `rrxe_sizeof_ib_device` is a C shim with no preconditions.
        let c_size = unsafe { bindings::rrxe_sizeof_ib_device() };
        let rust_size = core::mem::size_of::<bindings::ib_device>();
        if c_size != rust_size {
            pr_err!(
                "ib_device layout mismatch: C {} bytes, Rust {}\n",
                c_size,
                rust_size
            );
            return Err(EINVAL);
        }
        device::init();
        netns::init();
        let mut m = RrxeModule {
            link: None,
            notifier: None,
            pernet: None,
        };
        // On an error, dropping `m` undoes whatever was set up.
        exec::QUEUE.set(KBox::pin(OwnedQueue::new_per_cpu(c"rrxe")?, GFP_KERNEL)?)?;
        exec::STREAMS.set(KBox::pin(OwnedQueue::new(c"rrxe_streams")?, GFP_KERNEL)?)?;
        m.pernet = Some(KBox::pin_init(PernetRegistration::register(), GFP_KERNEL)?);
        m.notifier = Some(KBox::pin_init(
            NetdevNotifier::register(device::NetdevEvents),
            GFP_KERNEL,
        )?);
        m.link = Some(KBox::pin_init(
            LinkRegistration::<Rrxe>::register(),
            GFP_KERNEL,
        )?);
        pr_info!("loaded\n");
        Ok(m)
    }
}

impl Drop for RrxeModule {
    fn drop(&mut self) {
        // No new devices from here on, no more packets (unregistering the
        // pernet operations closes every namespace's sockets, which waits
        // for receives in progress), no more net device events; then remove
        // what exists (ib_core destroys every QP), and run the QP work still
        // queued before the code goes.
        self.link = None;
        self.pernet = None;
        self.notifier = None;
        device::remove_all();
        // SAFETY: Every device, and so every QP that could queue work or
        // look a device up, is gone; work items still queued, on either
        // queue, cope with the queues going away (they queue nothing more).
        drop(unsafe { exec::STREAMS.take() });
        // SAFETY: As above.
        drop(unsafe { exec::QUEUE.take() });
        netns::clear();
        pr_info!("unloaded\n");
    }
}
