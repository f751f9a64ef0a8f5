// SPDX-License-Identifier: GPL-2.0

//! Raw bindings for the RDMA and networking headers rrxe uses, and for the
//! C shims of `drivers/infiniband/sw/rrxe/rrxe_shims.c`, generated at build
//! time.
//!
//! The kernel crate carries no RDMA bindings, so rrxe's Kbuild runs bindgen over
//! `drivers/infiniband/sw/rrxe/rdma_bindings.h` with the kernel's own C flags.
//! Types here are distinct from `kernel::bindings`' types of the same name.
//! Only the abstractions under `rust/` use them.

#![allow(
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    improper_ctypes,
    clippy::all,
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::undocumented_unsafe_blocks,
    clippy::ptr_as_ptr,
    clippy::ref_as_ptr,
    clippy::cast_lossless,
    clippy::as_underscore,
    clippy::ptr_cast_constness
)]

// The kernel's bindgen parameters block these so they map to Rust's pointer-sized
// integers, as `kernel::bindings` does.
type __kernel_size_t = usize;
type __kernel_ssize_t = isize;
type __kernel_ptrdiff_t = isize;

include!("../drivers/infiniband/sw/rrxe/generated/rdma_bindings.rs");
