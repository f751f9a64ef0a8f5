//! rrxe protocol core: RoCE v2 wire formats, ICRC, PSN arithmetic and the
//! RC requester/completer/responder state machines.
//!
//! All code lives in [`proto`], which the kernel module includes verbatim
//! with `#[path = ".../rust/proto/src/proto/mod.rs"] pub mod proto;`.
//! This crate exists so the same source is host-tested with `cargo test`.
#![no_std]
#![forbid(unsafe_code)]

pub mod proto;

pub use proto::*;
