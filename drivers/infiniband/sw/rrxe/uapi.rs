// SPDX-License-Identifier: GPL-2.0

//! The udata structures of rxe's uverbs ABI (`include/uapi/rdma/rdma_user_rxe.h`),
//! which rrxe keeps so that rdma-core's librxe drives it unchanged.

use crate::rdma::{bindings as b, udata::UserPod};

// SAFETY: `repr(C)` structures of integers without padding (checked by the
// sizes below), valid for any bit pattern.
unsafe impl UserPod for b::rxe_create_cq_resp {}
// SAFETY: As above.
unsafe impl UserPod for b::rxe_resize_cq_resp {}
// SAFETY: As above.
unsafe impl UserPod for b::rxe_create_qp_resp {}
// SAFETY: As above.
unsafe impl UserPod for b::rxe_create_srq_resp {}
// SAFETY: As above.
unsafe impl UserPod for b::rxe_modify_srq_cmd {}
// SAFETY: As above.
unsafe impl UserPod for b::rxe_create_ah_resp {}
// SAFETY: As above.
unsafe impl UserPod for b::mminfo {}
// SAFETY: As above (the completion entry user space polls).
unsafe impl UserPod for b::ib_uverbs_wc {}

// The ABI is fixed: these sizes are what librxe sends and expects.
const _: () = {
    use core::mem::size_of;
    assert!(size_of::<b::mminfo>() == 16);
    assert!(size_of::<b::rxe_create_cq_resp>() == 16);
    assert!(size_of::<b::rxe_resize_cq_resp>() == 16);
    assert!(size_of::<b::rxe_create_qp_resp>() == 32);
    assert!(size_of::<b::rxe_create_srq_resp>() == 24);
    assert!(size_of::<b::rxe_modify_srq_cmd>() == 8);
    assert!(size_of::<b::rxe_create_ah_resp>() == 8);
    assert!(size_of::<b::rxe_send_wqe>() == 208);
    assert!(size_of::<b::rxe_recv_wqe>() == 40);
    assert!(size_of::<b::ib_uverbs_wc>() == 48);
};

/// Bytes of a send WQE before its SGEs or inline data.
pub(crate) const SEND_WQE_HDR: usize = core::mem::size_of::<b::rxe_send_wqe>();
/// Bytes of a receive WQE before its SGEs.
pub(crate) const RECV_WQE_HDR: usize = core::mem::size_of::<b::rxe_recv_wqe>();
/// Bytes of one scatter/gather entry.
pub(crate) const SGE_SIZE: usize = 16;
/// Bytes of a completion entry as user space reads it.
pub(crate) const CQE_SIZE: usize = core::mem::size_of::<b::ib_uverbs_wc>();
