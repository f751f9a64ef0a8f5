// SPDX-License-Identifier: GPL-2.0

//! Device and port limits rrxe advertises.
//!
//! They match upstream rxe's so that applications tuned for rxe behave the
//! same on rrxe; the driver enforces every one of them.

/// Most objects of one kind a device allows.
const MAX_OBJECTS: u32 = 1 << 20;

/// Maximum work requests per queue.
pub(crate) const MAX_QP_WR: u32 = MAX_OBJECTS;
/// Maximum scatter/gather entries per work request.
pub(crate) const MAX_SGE: u32 = 32;
/// Maximum completion queue entries (2^15 - 1).
pub(crate) const MAX_CQE: u32 = (1 << 15) - 1;
/// Maximum queue pairs (QPNs below 16 are reserved).
pub(crate) const MAX_QP: u32 = MAX_OBJECTS - 16;
/// Maximum completion queues.
pub(crate) const MAX_CQ: u32 = MAX_OBJECTS;
/// Maximum protection domains.
pub(crate) const MAX_PD: u32 = MAX_OBJECTS;
/// Maximum memory regions.
pub(crate) const MAX_MR: u32 = (MAX_OBJECTS >> 1) - 1;
/// Maximum shared receive queues.
pub(crate) const MAX_SRQ: u32 = MAX_OBJECTS - 0x0002_0001;
/// Maximum work requests per shared receive queue.
pub(crate) const MAX_SRQ_WR: u32 = MAX_OBJECTS;
/// Maximum scatter/gather entries per SRQ work request.
pub(crate) const MAX_SRQ_SGE: u32 = 27;
/// Maximum address handles.
pub(crate) const MAX_AH: u32 = (1 << 15) - 1;
/// Outstanding RDMA READ/ATOMIC per QP, as initiator and responder.
pub(crate) const MAX_QP_RD_ATOM: u32 = 128;
/// Total responder resources.
pub(crate) const MAX_RES_RD_ATOM: u32 = 0x3f000;
/// Largest memory region.
pub(crate) const MAX_MR_SIZE: u64 = u64::MAX;
/// Supported page sizes (4 KiB and up).
pub(crate) const PAGE_SIZE_CAP: u64 = 0xffff_f000;
/// P_Key table length (only the default P_Key is valid).
pub(crate) const MAX_PKEYS: u16 = 64;
/// The default, full-membership P_Key.
pub(crate) const DEFAULT_PKEY: u16 = 0xffff;
/// GID table length per port.
pub(crate) const GID_TABLE_LEN: i32 = 1024;
/// Largest message.
pub(crate) const MAX_MSG_SIZE: u32 = 1 << 31;
/// Local CA ACK delay (4.096 us * 2^15).
pub(crate) const LOCAL_CA_ACK_DELAY: u8 = 15;
/// IEEE OUI for vendor-specific devices (none assigned).
pub(crate) const VENDOR_ID: u32 = 0x00ff_ffff;
/// Bytes of headers a RoCE v2 packet may need on top of its payload
/// (Ethernet, IPv6, UDP, BTH, extension headers, ICRC), subtracted from the
/// netdev MTU to find the IB MTU.
pub(crate) const MAX_HDR_LEN: u32 = 80;
/// Management datagram size ib_core uses for RoCE ports.
pub(crate) const MAX_MAD_SIZE: u32 = 256;
/// Firmware version reported to user space (major.minor.sub).
pub(crate) const FW_VERSION: u64 = 1 << 16;
/// uverbs ABI version of rxe's udata layouts, which rrxe keeps.
pub(crate) const UVERBS_ABI_VERSION: u32 = 2;
/// `IB_PORT_CM_SUP` of `enum ib_port_capability_mask_bits`: the port supports
/// connection management (rdma_cm).
pub(crate) const PORT_CAP_CM_SUP: u32 = 1 << 16;
/// Maximum inline data per send work request (32 SGEs' worth).
pub(crate) const MAX_INLINE_DATA: u32 = MAX_SGE * 16;
/// Multicast groups of a device, QPs attached to one group and to all of
/// them (as rxe).
pub(crate) const MAX_MCAST_GRP: u32 = 8192;
/// See [`MAX_MCAST_GRP`].
pub(crate) const MAX_MCAST_QP_ATTACH: usize = 56;
/// See [`MAX_MCAST_GRP`].
pub(crate) const MAX_TOTAL_MCAST_QP_ATTACH: usize = 0x70000;
/// The QP number multicast datagrams carry.
pub(crate) const MULTICAST_QPN: u32 = 0x00ff_ffff;
/// Most pages a fast-registration region maps (as rxe).
pub(crate) const MAX_FAST_REG_PAGES: u32 = 512;
/// First QP number handed out (0 and 1 are the special QPs, the rest is
/// reserved as in rxe).
pub(crate) const MIN_QPN: u32 = 16;
/// First SRQ number handed out.
pub(crate) const MIN_SRQN: u32 = 0x0002_0001;
