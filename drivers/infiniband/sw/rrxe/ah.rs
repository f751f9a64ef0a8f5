// SPDX-License-Identifier: GPL-2.0

//! Address handles: where UD sends go. librxe refers to them by number
//! (`ah_num`) in its send WQEs.

use crate::{
    index::Index,
    params as p,
    rdma::{bindings as b, udata::Udata},
};
use kernel::prelude::*;

/// Driver data of an address handle. The datapath will keep the resolved
/// address vector here; for now the AH owns its number.
pub(crate) struct Ah {
    _num: Index,
}

impl Ah {
    /// Creates an address handle and tells user space its number.
    pub(crate) fn new(num: Index, attr: &b::rdma_ah_attr, udata: &mut Udata) -> Result<Self> {
        if attr.type_ != b::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE
            || u32::from(attr.ah_flags) & b::ib_ah_flags_IB_AH_GRH == 0
            || i32::from(attr.grh.sgid_index) >= p::GID_TABLE_LEN
        {
            return Err(EINVAL);
        }
        // Providers older than `ah_num` pass no response buffer.
        if udata.outlen() >= core::mem::size_of::<b::rxe_create_ah_resp>() {
            udata.write(&b::rxe_create_ah_resp {
                ah_num: num.get(),
                reserved: 0,
            })?;
        }
        Ok(Self { _num: num })
    }
}
