// SPDX-License-Identifier: GPL-2.0

//! Address handles: where UD sends go.
//!
//! librxe names an AH by number (`ah_num`) in its send WQEs, so user AHs get
//! a number and an entry in the device's AH table. In-kernel callers pass the
//! AH itself to `post_send`, which copies its address into the (kernel-only)
//! WQE; kernel AHs may be created in atomic context (the CM does so under a
//! spinlock), so they allocate nothing.

use crate::{
    datapath::Datapath,
    device::RrxeDev,
    index::Index,
    params as p,
    rdma::{bindings as b, qp::AhAttr, udata::Udata},
};
use kernel::{prelude::*, sync::Arc};

/// The address of an AH, as the datapath needs it.
#[derive(Clone, Copy, Default)]
#[repr(C)]
pub(crate) struct AhInfo {
    /// Source GID (one of the device's).
    pub(crate) sgid: [u8; 16],
    /// Destination GID.
    pub(crate) dgid: [u8; 16],
    /// Flow label (20 bits).
    pub(crate) flow_label: u32,
    /// Hop limit / TTL.
    pub(crate) hop_limit: u8,
    /// Traffic class / TOS.
    pub(crate) tclass: u8,
    /// Destination Ethernet address (ib_core resolved it; the device's own
    /// means the datagram stays on this device).
    pub(crate) dmac: [u8; 6],
    /// Interface of the source GID (a VLAN device for a VLAN's GID); 0: the
    /// device's own.
    pub(crate) ifindex: i32,
}

impl AhInfo {
    /// Bytes of the structure as stored in a kernel WQE.
    pub(crate) const LEN: usize = core::mem::size_of::<Self>();
    const _FIELDS: () = assert!(Self::LEN == 48);

    /// The structure as bytes.
    pub(crate) fn to_bytes(self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        out[..16].copy_from_slice(&self.sgid);
        out[16..32].copy_from_slice(&self.dgid);
        out[32..36].copy_from_slice(&self.flow_label.to_ne_bytes());
        out[36] = self.hop_limit;
        out[37] = self.tclass;
        out[38..44].copy_from_slice(&self.dmac);
        out[44..48].copy_from_slice(&self.ifindex.to_ne_bytes());
        out
    }

    /// The structure from bytes written by [`AhInfo::to_bytes`].
    pub(crate) fn from_bytes(b: &[u8]) -> Option<Self> {
        let b: &[u8; Self::LEN] = b.get(..Self::LEN)?.try_into().ok()?;
        let mut info = Self::default();
        info.sgid.copy_from_slice(&b[..16]);
        info.dgid.copy_from_slice(&b[16..32]);
        info.flow_label = u32::from_ne_bytes([b[32], b[33], b[34], b[35]]);
        info.hop_limit = b[36];
        info.tclass = b[37];
        info.dmac.copy_from_slice(&b[38..44]);
        info.ifindex = i32::from_ne_bytes([b[44], b[45], b[46], b[47]]);
        Some(info)
    }
}

/// Driver data of an address handle.
pub(crate) struct Ah {
    /// User AHs: the number librxe uses and the table it is entered in.
    user: Option<(Index, Arc<Datapath>)>,
    info: AhInfo,
}

impl Ah {
    /// Creates an address handle; tells user space its number.
    pub(crate) fn new(dev: &RrxeDev, attr: &AhAttr<'_>, udata: &mut Udata) -> Result<Self> {
        if attr.type_ != b::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE
            || u32::from(attr.ah_flags) & b::ib_ah_flags_IB_AH_GRH == 0
            || i32::from(attr.grh.sgid_index) >= p::GID_TABLE_LEN
        {
            return Err(EINVAL);
        }
        let grh = &attr.grh;
        let info = AhInfo {
            sgid: attr.source_gid().ok_or(EINVAL)?,
            // SAFETY: `raw` is the plain-bytes view of the GID union.
            dgid: unsafe { grh.dgid.raw },
            flow_label: grh.flow_label,
            hop_limit: grh.hop_limit,
            tclass: grh.traffic_class,
            // SAFETY: RoCE address vectors use the `roce` member of the union.
            dmac: unsafe { attr.__bindgen_anon_1.roce.dmac },
            ifindex: attr.source_ifindex().unwrap_or(0),
        };
        if !udata.is_user() {
            return Ok(Self { user: None, info });
        }
        let num = Index::new(&dev.ahns)?;
        dev.dp.add_ah(num.get(), info)?;
        let ah = Self {
            user: Some((num, dev.dp.clone())),
            info,
        };
        // Providers older than `ah_num` pass no response buffer.
        if udata.outlen() >= core::mem::size_of::<b::rxe_create_ah_resp>() {
            let num = ah.user.as_ref().map_or(0, |(n, _)| n.get());
            udata.write(&b::rxe_create_ah_resp {
                ah_num: num,
                reserved: 0,
            })?;
        }
        Ok(ah)
    }

    /// The address.
    pub(crate) fn info(&self) -> AhInfo {
        self.info
    }
}

impl Drop for Ah {
    fn drop(&mut self) {
        if let Some((num, dp)) = &self.user {
            dp.remove_ah(num.get());
        }
    }
}
