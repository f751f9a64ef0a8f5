// SPDX-License-Identifier: GPL-2.0

//! Safe abstractions over the kernel's RDMA core (ib_core).
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/rdma/rdma_netlink.h`](srctree/include/rdma/rdma_netlink.h).
//!
//! This tree is mounted into the rrxe module crate as `crate::rdma`; it is the
//! only place that touches raw ib_core pointers. The driver implements
//! [`driver::Driver`] and sees only the safe types below.

pub mod attr;
pub use crate::bindings;
pub mod device;
pub mod driver;
pub mod link;
pub mod mmap;
pub mod object;
pub mod qp;
pub mod stats;
pub mod udata;
pub mod umem;
pub mod umem_odp;
pub mod wr;
