// SPDX-License-Identifier: GPL-2.0

//! Safe abstractions over the kernel's RDMA core (ib_core).
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/rdma/uverbs_ioctl.h`](srctree/include/rdma/uverbs_ioctl.h).
//!
//! This tree is mounted into the rrxe module crate as `crate::rdma`; it is the
//! only place that touches raw ib_core pointers.

pub mod bindings;
