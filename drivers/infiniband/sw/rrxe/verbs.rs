// SPDX-License-Identifier: GPL-2.0

//! The verbs rrxe implements for ib_core.

use crate::{
    ah::Ah,
    cq::Cq,
    datapath::Datapath,
    device::RrxeDev,
    index::Index,
    mem::{Memory, OdpMemory},
    mr::Mr,
    params as p,
    qp::Qp,
    rdma::{
        attr::{ib_mtu_for, DeviceAttr, PortAttr, PortImmutable},
        bindings as b,
        device::Device,
        driver::{self, CqRef, Driver, NewMr, ReregMr, SrqRef},
        qp::{AhAttr, QpAttr, QpInit, SrqInit},
        stats::CounterDesc,
        udata::Udata,
        umem::Umem,
        umem_odp::UmemOdp,
        wr::{RecvWr, SendWr},
    },
    srq::Srq,
};
use core::sync::atomic::Ordering;
use kernel::{prelude::*, sync::Arc};

/// Driver data of a user context.
pub(crate) struct Ucontext;

/// Driver data of a protection domain.
pub(crate) struct Pd;

/// The only port of an rrxe device.
const PORT: u32 = 1;

fn check_port(port: u32) -> Result {
    if port == PORT {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

#[vtable]
impl Driver for RrxeDev {
    type Ucontext = Ucontext;
    type Pd = Pd;
    type Cq = Cq;
    type Qp = Qp;
    type Srq = Srq;
    type Ah = Ah;
    type Mr = Mr;
    type Mw = Mr;

    const DRIVER_ID: u32 = b::rdma_driver_id_RDMA_DRIVER_RXE;
    const UVERBS_ABI_VERSION: u32 = p::UVERBS_ABI_VERSION;
    // librxe arms CQs and rings the send doorbell through legacy commands.
    const UVERBS_CMD_MASK: u64 = (1 << b::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ)
        | (1 << b::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND);

    fn query_device(dev: &Device<Self>, attr: &mut DeviceAttr<'_>, udata: &Udata) -> Result {
        if udata.inlen() != 0 || udata.outlen() != 0 {
            return Err(EINVAL);
        }
        attr.fw_ver = p::FW_VERSION;
        attr.sys_image_guid = dev.node_guid();
        attr.vendor_id = p::VENDOR_ID;
        attr.max_mr_size = p::MAX_MR_SIZE;
        attr.page_size_cap = p::PAGE_SIZE_CAP;
        attr.max_qp = p::MAX_QP;
        attr.max_qp_wr = p::MAX_QP_WR;
        attr.device_cap_flags = (b::ib_device_cap_flags_IB_DEVICE_BAD_PKEY_CNTR
            | b::ib_device_cap_flags_IB_DEVICE_BAD_QKEY_CNTR
            | b::ib_device_cap_flags_IB_DEVICE_PORT_ACTIVE_EVENT
            | b::ib_device_cap_flags_IB_DEVICE_SYS_IMAGE_GUID
            | b::ib_device_cap_flags_IB_DEVICE_RC_RNR_NAK_GEN
            | b::ib_device_cap_flags_IB_DEVICE_SRQ_RESIZE
            | b::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS
            | b::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW
            | b::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW_TYPE_2B
            | b::ib_device_cap_flags_IB_DEVICE_FLUSH_GLOBAL
            | b::ib_device_cap_flags_IB_DEVICE_FLUSH_PERSISTENT
            | b::ib_device_cap_flags_IB_DEVICE_ATOMIC_WRITE) as u64;
        attr.max_fast_reg_page_list_len = p::MAX_FAST_REG_PAGES;
        attr.kernel_cap_flags = u64::from(
            b::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG
                | b::ib_kernel_cap_flags_IBK_ON_DEMAND_PAGING,
        );
        // On-demand paging as rxe offers it: explicit regions only (no
        // implicit ODP), for RC and UD.
        attr.odp_caps.general_caps = u64::from(b::ib_odp_general_cap_bits_IB_ODP_SUPPORT);
        let odp = |bits: &[u32]| bits.iter().fold(0u32, |acc, b| acc | b);
        attr.odp_caps.per_transport_caps.rc_odp_caps = odp(&[
            b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SEND,
            b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_RECV,
            b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_WRITE,
            b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_READ,
            b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_ATOMIC,
            b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SRQ_RECV,
            b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_FLUSH,
            b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_ATOMIC_WRITE,
        ]);
        attr.odp_caps.per_transport_caps.ud_odp_caps = odp(&[
            b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SEND,
            b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_RECV,
            b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SRQ_RECV,
        ]);
        attr.max_send_sge = p::MAX_SGE;
        attr.max_recv_sge = p::MAX_SGE;
        attr.max_sge_rd = p::MAX_SGE;
        attr.max_cq = p::MAX_CQ;
        attr.max_cqe = p::MAX_CQE;
        attr.max_mr = p::MAX_MR;
        // Windows take their keys from the regions' indices.
        attr.max_mw = p::MAX_MR;
        attr.max_mcast_grp = p::MAX_MCAST_GRP;
        attr.max_mcast_qp_attach = p::MAX_MCAST_QP_ATTACH as u32;
        attr.max_total_mcast_qp_attach = p::MAX_TOTAL_MCAST_QP_ATTACH as u32;
        attr.max_pd = p::MAX_PD;
        attr.max_qp_rd_atom = p::MAX_QP_RD_ATOM;
        attr.max_qp_init_rd_atom = p::MAX_QP_RD_ATOM;
        attr.max_res_rd_atom = p::MAX_RES_RD_ATOM;
        attr.atomic_cap = b::ib_atomic_cap_IB_ATOMIC_HCA;
        attr.max_ah = p::MAX_AH;
        attr.max_srq = p::MAX_SRQ;
        attr.max_srq_wr = p::MAX_SRQ_WR;
        attr.max_srq_sge = p::MAX_SRQ_SGE;
        attr.max_pkeys = p::MAX_PKEYS;
        attr.local_ca_ack_delay = p::LOCAL_CA_ACK_DELAY;
        Ok(())
    }

    fn query_port(dev: &Device<Self>, port: u32, attr: &mut PortAttr<'_>) -> Result {
        check_port(port)?;
        let rd = dev.data();
        let ndev = rd.netdev();
        attr.gid_tbl_len = p::GID_TABLE_LEN;
        attr.port_cap_flags = p::PORT_CAP_CM_SUP;
        attr.max_msg_sz = p::MAX_MSG_SIZE;
        attr.pkey_tbl_len = p::MAX_PKEYS;
        attr.max_vl_num = 1;
        attr.max_mtu = b::ib_mtu_IB_MTU_4096;
        attr.active_mtu = ndev
            .mtu()
            .checked_sub(p::MAX_HDR_LEN)
            .and_then(ib_mtu_for)
            .unwrap_or(b::ib_mtu_IB_MTU_256);
        attr.active_width = b::ib_port_width_IB_WIDTH_1X as u8;
        attr.active_speed = b::ib_port_speed_IB_SPEED_SDR as u16;
        if rd.port_is_active() {
            attr.state = b::ib_port_state_IB_PORT_ACTIVE;
            attr.phys_state = b::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP as u8;
        } else {
            attr.state = b::ib_port_state_IB_PORT_DOWN;
            attr.phys_state = if ndev.is_running() {
                b::ib_port_phys_state_IB_PORT_PHYS_STATE_POLLING
            } else {
                b::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED
            } as u8;
        }
        Ok(())
    }

    fn get_port_immutable(_dev: &Device<Self>, port: u32, imm: &mut PortImmutable<'_>) -> Result {
        check_port(port)?;
        imm.core_cap_flags = b::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
        imm.pkey_tbl_len = i32::from(p::MAX_PKEYS);
        imm.gid_tbl_len = p::GID_TABLE_LEN;
        imm.max_mad_size = p::MAX_MAD_SIZE;
        Ok(())
    }

    fn query_pkey(_dev: &Device<Self>, port: u32, index: u16) -> Result<u16> {
        check_port(port)?;
        match index {
            0 => Ok(p::DEFAULT_PKEY),
            i if i < p::MAX_PKEYS => Ok(0),
            _ => Err(EINVAL),
        }
    }

    fn link_layer_is_ethernet(_dev: &Device<Self>, _port: u32) -> bool {
        true
    }

    fn alloc_ucontext(_dev: &Device<Self>, _udata: &mut Udata) -> Result<Ucontext> {
        Ok(Ucontext)
    }

    fn alloc_pd(_dev: &Device<Self>, _udata: &mut Udata) -> Result<Pd> {
        Ok(Pd)
    }

    fn create_cq(
        _dev: &Device<Self>,
        attr: &b::ib_cq_init_attr,
        cqe: &mut u32,
        udata: &mut Udata,
    ) -> Result<impl PinInit<Cq, Error>> {
        Cq::new(attr, cqe, udata)
    }

    fn destroy_cq(_cq: &driver::Cq<Self>) -> Result {
        Ok(())
    }

    fn resize_cq(cq: &driver::Cq<Self>, cqe: u32, udata: &mut Udata) -> Result<u32> {
        cq.data().resize(cqe, udata)
    }

    fn req_notify_cq(cq: &driver::Cq<Self>, flags: u32) -> Result<bool> {
        Ok(cq.data().req_notify(flags))
    }

    fn create_qp(
        pd: &driver::Pd<Self>,
        init: &mut QpInit<'_>,
        send_cq: CqRef<Self>,
        recv_cq: CqRef<Self>,
        srq: Option<SrqRef<Self>>,
        udata: &mut Udata,
    ) -> Result<(impl PinInit<Qp, Error>, u32)> {
        let dev = pd.device::<Self>().data();
        // The GSI QP is number 1; every other QP takes an index.
        let (num, qpn) = if init.qp_type() == b::ib_qp_type_IB_QPT_GSI {
            (None, 1)
        } else {
            let num = Index::new(&dev.qpns)?;
            let qpn = num.get();
            (Some(num), qpn)
        };
        let qp = Qp::new(
            num,
            pd.as_raw() as usize,
            &dev.dp,
            init,
            send_cq,
            recv_cq,
            srq,
            udata,
        )?;
        Ok((qp, qpn))
    }

    fn modify_qp(
        qp: &driver::Qp<Self>,
        attr: &QpAttr<'_>,
        mask: u32,
        _udata: &mut Udata,
    ) -> Result {
        qp.data().modify(attr, mask)
    }

    fn query_qp(
        qp: &driver::Qp<Self>,
        attr: &mut b::ib_qp_attr,
        init: &mut b::ib_qp_init_attr,
    ) -> Result {
        qp.data().query(attr, init);
        Ok(())
    }

    fn destroy_qp(qp: &driver::Qp<Self>) -> Result {
        qp.data().destroy();
        Ok(())
    }

    fn post_send_doorbell(qp: &driver::Qp<Self>) -> Result {
        qp.data().doorbell()
    }

    fn post_send(qp: &driver::Qp<Self>, wr: &SendWr<'_, Self>) -> Result {
        qp.data().post_send(wr)
    }

    fn post_recv(qp: &driver::Qp<Self>, wr: &RecvWr<'_>) -> Result {
        qp.data().post_recv(wr)
    }

    fn poll_cq(cq: &driver::Cq<Self>, wc: &mut [b::ib_wc]) -> Result<usize> {
        Ok(cq.data().poll(wc))
    }

    fn get_dma_mr(pd: &driver::Pd<Self>, access: u32) -> Result<NewMr<Mr>> {
        // Local access only, whatever was asked: remote peers never reach
        // kernel memory through rrxe.
        let access = access & b::ib_access_flags_IB_ACCESS_LOCAL_WRITE;
        keyed_mr(pd, |index, variant, dp| {
            Mr::new(
                index,
                variant,
                pd.as_raw() as usize,
                0,
                access,
                Memory::KernelDma,
                dp,
            )
        })
    }

    fn alloc_mr(pd: &driver::Pd<Self>, mr_type: u32, max_num_sg: u32) -> Result<NewMr<Mr>> {
        if mr_type != b::ib_mr_type_IB_MR_TYPE_MEM_REG {
            return Err(EOPNOTSUPP);
        }
        if max_num_sg == 0 || max_num_sg > p::MAX_FAST_REG_PAGES {
            return Err(EINVAL);
        }
        keyed_mr(pd, |index, variant, dp| {
            Mr::new_fast(
                index,
                variant,
                pd.as_raw() as usize,
                max_num_sg as usize,
                dp,
            )
        })
    }

    fn attach_mcast(qp: &driver::Qp<Self>, gid: [u8; 16]) -> Result {
        qp.data().attach_mcast(gid)
    }

    fn detach_mcast(qp: &driver::Qp<Self>, gid: [u8; 16]) -> Result {
        qp.data().detach_mcast(gid)
    }

    fn alloc_mw(pd: &driver::Pd<Self>, mw_type: u32, _udata: &mut Udata) -> Result<(Mr, u32)> {
        let type2 = match mw_type {
            b::ib_mw_type_IB_MW_TYPE_1 => false,
            b::ib_mw_type_IB_MW_TYPE_2 => true,
            _ => return Err(EINVAL),
        };
        let new = keyed_mr(pd, |index, variant, dp| {
            Mr::new_window(index, variant, pd.as_raw() as usize, type2, dp)
        })?;
        Ok((new.data, new.rkey))
    }

    fn map_mr_begin(mr: &driver::Mr<Self>) -> Result {
        mr.data().fast()?.lock().stage_begin();
        Ok(())
    }

    fn map_mr_page(mr: &driver::Mr<Self>, addr: u64) -> Result {
        mr.data().fast()?.lock().stage_page(addr)
    }

    fn map_mr_end(mr: &driver::Mr<Self>, iova: u64, len: u64, page_size: u32) -> Result {
        mr.data().fast()?.lock().stage_end(iova, len, page_size)
    }

    fn create_srq(
        pd: &driver::Pd<Self>,
        init: &mut SrqInit<'_>,
        udata: &mut Udata,
    ) -> Result<impl PinInit<Srq, Error>> {
        let num = Index::new(&pd.device::<Self>().data().srqns)?;
        Srq::new(num, init, udata)
    }

    fn post_srq_recv(srq: &driver::Srq<Self>, wr: &RecvWr<'_>) -> Result {
        srq.data().post_recv(wr)
    }

    fn modify_srq(
        srq: &driver::Srq<Self>,
        attr: &b::ib_srq_attr,
        mask: u32,
        udata: &mut Udata,
    ) -> Result {
        srq.data().modify(attr, mask, udata)
    }

    fn query_srq(srq: &driver::Srq<Self>, attr: &mut b::ib_srq_attr) -> Result {
        srq.data().query(attr);
        Ok(())
    }

    fn create_ah(pd: &driver::Pd<Self>, attr: &AhAttr<'_>, udata: &mut Udata) -> Result<Ah> {
        Ah::new(pd.device::<Self>().data(), attr, udata)
    }

    fn reg_user_mr(
        pd: &driver::Pd<Self>,
        start: u64,
        length: u64,
        iova: u64,
        access: u32,
        _udata: &mut Udata,
    ) -> Result<NewMr<Mr>> {
        use b::*;
        // rxe advertises persistence (so ib_core lets the flag through) but
        // refuses it for pages that are not persistent memory, as user
        // pages on a machine without pmem never are.
        if access & ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT != 0 {
            return Err(EINVAL);
        }
        if access & !MR_ACCESS != 0 {
            return Err(EOPNOTSUPP);
        }
        // Peers and work requests name the region's bytes `iova` to
        // `iova + length - 1`: the last one must have a 64-bit address (a
        // region may end at 2^64 exactly).
        if length
            .checked_sub(1)
            .is_some_and(|last| iova.checked_add(last).is_none())
        {
            return Err(EINVAL);
        }
        let dev = pd.device::<Self>();
        let mem = if access & ib_access_flags_IB_ACCESS_ON_DEMAND != 0 {
            Memory::Odp(OdpMemory::new(UmemOdp::get(dev, start, length, access)?)?)
        } else {
            Memory::User(Umem::get(dev, start, length, access)?)
        };
        keyed_mr(pd, |index, variant, dp| {
            Mr::new(index, variant, pd.as_raw() as usize, iova, access, mem, dp)
        })
    }

    fn rereg_user_mr(
        mr: &driver::Mr<Self>,
        req: &ReregMr,
        pd: &driver::Pd<Self>,
        _udata: &mut Udata,
    ) -> Result {
        use b::*;
        let pd_flag = ib_mr_rereg_flags_IB_MR_REREG_PD;
        let access_flag = ib_mr_rereg_flags_IB_MR_REREG_ACCESS;
        // As rxe: a new PD or new access flags, not a new translation
        // (`IB_MR_REREG_TRANS`).
        if req.flags & !(pd_flag | access_flag) != 0 {
            return Err(EOPNOTSUPP);
        }
        // rxe lets FLUSH_PERSISTENT through here, unlike at registration;
        // a FLUSH that asks for persistence still fails (see `mem`).
        let access = (req.flags & access_flag != 0).then_some(req.access);
        let pd = (req.flags & pd_flag != 0).then(|| pd.as_raw() as usize);
        mr.data().rereg(req.flags, pd, access, MR_ACCESS)
    }

    fn advise_mr(pd: &driver::Pd<Self>, advice: u32, flags: u32, sges: &[b::ib_sge]) -> Result {
        use b::*;
        // (write, fault): PREFETCH faults pages in readable, PREFETCH_WRITE
        // writable, NO_FAULT only takes note of those already present.
        let (write, fault) = if advice
            == ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH
        {
            (false, true)
        } else if advice == ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE {
            (true, true)
        } else if advice == ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT
        {
            (false, false)
        } else {
            return Err(EOPNOTSUPP);
        };
        // rxe faults in at once with the FLUSH flag and otherwise from a
        // work item, where failures go unreported; rrxe always faults in
        // during the call, and reports failures only with the flag.
        let sync = flags & ib_uverbs_advise_mr_flag_IB_UVERBS_ADVISE_MR_FLAG_FLUSH != 0;
        let regions = &pd.device::<Self>().data().dp.regions;
        for sge in sges {
            // Every key is checked first, as rxe does before its work runs.
            regions.odp(pd.as_raw() as usize, sge.lkey)?;
        }
        for sge in sges {
            let (iova, odp) = regions.odp(pd.as_raw() as usize, sge.lkey)?;
            if sge.length == 0 {
                continue;
            }
            let off = sge.addr.checked_sub(iova).ok_or(EINVAL)?;
            let ret = odp.prefetch(off, sge.length.into(), write, fault);
            if sync {
                ret?;
            }
        }
        Ok(())
    }

    const HW_COUNTERS: &'static [CounterDesc] = &crate::stats::NAMES;

    fn get_hw_stats(dev: &Device<Self>, port: u32, out: &mut [u64]) -> Result {
        check_port(port)?;
        dev.data().dp.stats.read(out);
        Ok(())
    }

    fn enable(dev: &Device<Self>) -> Result {
        crate::device::track(dev)
    }

    fn release(dev: &Device<Self>) {
        crate::device::untrack(dev);
    }
}

/// `IB_ACCESS_*` flags a user region may have (rxe's
/// `RXE_ACCESS_SUPPORTED_MR`).
const MR_ACCESS: u32 = b::ib_access_flags_IB_ACCESS_LOCAL_WRITE
    | b::ib_access_flags_IB_ACCESS_REMOTE_WRITE
    | b::ib_access_flags_IB_ACCESS_REMOTE_READ
    | b::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC
    | b::ib_access_flags_IB_ACCESS_MW_BIND
    | b::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL
    | b::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT
    | b::ib_access_flags_IB_ACCESS_ON_DEMAND
    | b::ib_access_flags_IB_ACCESS_OPTIONAL;

/// A new memory region of `pd`'s device under a fresh key, which `make`
/// builds from the key's index and 8-bit variant; its local and remote
/// keys are the same.
fn keyed_mr(
    pd: &driver::Pd<RrxeDev>,
    make: impl FnOnce(Index, u8, &Arc<Datapath>) -> Result<Mr>,
) -> Result<NewMr<Mr>> {
    let dev = pd.device::<RrxeDev>();
    let index = Index::new(&dev.data().mrns)?;
    let variant = dev.data().key_variant.fetch_add(1, Ordering::Relaxed);
    let mr = make(index, variant, &dev.data().dp)?;
    let key = mr.key();
    Ok(NewMr {
        data: mr,
        lkey: key,
        rkey: key,
    })
}
