// SPDX-License-Identifier: GPL-2.0

//! Safe abstractions over the networking core that a soft-RoCE device
//! needs: the net devices it runs over ([`netdev`]), packets ([`skb`]), UDP
//! tunnel sockets that deliver received datagrams ([`udp_tunnel`]),
//! sending datagrams over cached routes ([`route`]), and the network
//! namespaces all of these live in ([`ns`]).
//!
//! C headers: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h),
//! [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h),
//! [`include/net/udp_tunnel.h`](srctree/include/net/udp_tunnel.h),
//! [`include/net/route.h`](srctree/include/net/route.h),
//! [`include/net/net_namespace.h`](srctree/include/net/net_namespace.h).

pub mod netdev;
pub mod ns;
pub mod route;
pub mod skb;
pub mod udp_tunnel;
