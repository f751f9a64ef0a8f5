// SPDX-License-Identifier: GPL-2.0

//! Device and port attributes a driver reports to ib_core.
//!
//! These are plain-data structures (no pointers), so the driver fills their
//! fields directly through `DerefMut`.

use super::bindings as b;
use core::ops::{Deref, DerefMut};

macro_rules! plain_attr {
    ($(#[$doc:meta])* $name:ident => $raw:ty) => {
        $(#[$doc])*
        pub struct $name<'a>(pub(crate) &'a mut $raw);

        impl Deref for $name<'_> {
            type Target = $raw;
            fn deref(&self) -> &$raw {
                self.0
            }
        }

        impl DerefMut for $name<'_> {
            fn deref_mut(&mut self) -> &mut $raw {
                self.0
            }
        }
    };
}

plain_attr!(
    /// Device capabilities (`struct ib_device_attr`), answered by `query_device`.
    DeviceAttr => b::ib_device_attr
);
plain_attr!(
    /// Port attributes (`struct ib_port_attr`), answered by `query_port`.
    PortAttr => b::ib_port_attr
);
plain_attr!(
    /// Port data that never changes (`struct ib_port_immutable`).
    PortImmutable => b::ib_port_immutable
);

/// Corresponds to the kernel's [`enum ib_mtu`]: the IB MTU that fits `bytes`
/// of payload, or `None` below 256.
pub fn ib_mtu_for(bytes: u32) -> Option<u32> {
    Some(match bytes {
        4096.. => b::ib_mtu_IB_MTU_4096,
        2048.. => b::ib_mtu_IB_MTU_2048,
        1024.. => b::ib_mtu_IB_MTU_1024,
        512.. => b::ib_mtu_IB_MTU_512,
        256.. => b::ib_mtu_IB_MTU_256,
        _ => return None,
    })
}

/// The UDP source port of a RoCE v2 flow, in 0xC000..=0xFFFF, from the GRH
/// flow label, or from the local and remote QP numbers when the flow label is
/// 0: ib_core's `rdma_get_udp_sport`, as RoCE NICs pick it, so ECMP spreads
/// flows the way a flow label asks.
pub fn roce_udp_sport(flow_label: u32, lqpn: u32, rqpn: u32) -> u16 {
    // SAFETY: A pure function of its arguments.
    unsafe { b::rrxe_rdma_get_udp_sport(flow_label, lqpn, rqpn) }
}
