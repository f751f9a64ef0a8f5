// SPDX-License-Identifier: GPL-2.0

//! Execution primitives the datapath is built on, beyond those of the
//! kernel crate: data that one context at a time works on ([`serial`]), a
//! workqueue the module owns ([`workqueue`]), a table of reference-counted
//! objects that softirq context can look up ([`table`]), and module-wide
//! objects set up at load and torn down at unload ([`global`]), and
//! sections run with softirqs disabled ([`bh`]).

pub mod bh;
pub mod global;
pub mod serial;
pub mod table;
pub mod workqueue;
