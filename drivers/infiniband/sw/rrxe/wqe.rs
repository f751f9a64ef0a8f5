// SPDX-License-Identifier: GPL-2.0

//! rxe's work queue entries and completions, translated to and from the
//! protocol core's types. Entries are copied out of the shared rings first
//! and parsed from the copy, so user space cannot change them under us.

use crate::{
    ah::AhInfo,
    device::RrxeDev,
    proto::{LocalOp, MwBind, RecvWr, SendWr, Sge, WorkCompletion, WrOp},
    queue::{ElemCopy, Queue},
    rdma::{
        bindings as b,
        wr::{RecvWr as KRecvWr, SendWr as KSendWr, Sge as KSge},
    },
    staging::{Extra, LAST_RESERVED_KEY},
};
use core::mem::offset_of;
use kernel::prelude::*;

/// Bytes of a send WQE the datapath reads: the header and one SGE or the
/// largest inline data.
pub(crate) const SEND_WQE_READ: usize = SEND_DATA + MAX_INLINE;
/// Most inline data a send WQE carries.
pub(crate) const MAX_INLINE: usize = crate::params::MAX_INLINE_DATA as usize;
/// Bytes of a receive WQE with the most SGEs a QP may have.
pub(crate) const RECV_WQE_READ_ALL: usize =
    RECV_DMA + DMA_SGE + crate::params::MAX_SGE as usize * SGE_LEN;

/// A send WQE as the datapath copies it out of its ring.
pub(crate) type SendCopy = ElemCopy<SEND_WQE_READ>;
/// A receive WQE as the datapath copies it out of its ring.
pub(crate) type RecvCopy = ElemCopy<RECV_WQE_READ_ALL>;

const SGE_LEN: usize = core::mem::size_of::<b::rxe_sge>();
const WR: usize = offset_of!(b::rxe_send_wqe, wr);
const WR_ID: usize = WR + offset_of!(b::rxe_send_wr, wr_id);
const OPCODE: usize = WR + offset_of!(b::rxe_send_wr, opcode);
const FLAGS: usize = WR + offset_of!(b::rxe_send_wr, send_flags);
const EX: usize = WR + offset_of!(b::rxe_send_wr, ex);
const UNION: usize = WR + offset_of!(b::rxe_send_wr, wr);
const RDMA_ADDR: usize =
    UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_2, remote_addr);
const RDMA_RKEY: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_2, rkey);
const ATOMIC_ADDR: usize =
    UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_3, remote_addr);
const ATOMIC_ARG: usize =
    UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_3, compare_add);
const ATOMIC_SWAP: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_3, swap);
const ATOMIC_RKEY: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_3, rkey);
/// The `flush` member: librxe's `wr_flush` keeps the length in
/// `dma.length`, not here.
const FLUSH_ADDR: usize =
    UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_1, remote_addr);
const FLUSH_RKEY: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_1, rkey);
const FLUSH_TYPE: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_1, type_);
const FLUSH_LEVEL: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_1, level);
/// The `mw` member: a window bind.
const MW_ADDR: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_5, addr);
const MW_LENGTH: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_5, length);
const MW_MR_LKEY: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_5, mr_lkey);
const MW_MW_RKEY: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_5, mw_rkey);
const MW_RKEY: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_5, rkey);
const MW_ACCESS: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_5, access);
/// The kernel-only `reg` member: a fast registration's key and access.
const REG_KEY: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_6, key);
const REG_ACCESS: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_6, access);
const SEND_DMA: usize = offset_of!(b::rxe_send_wqe, dma);
const RECV_DMA: usize = offset_of!(b::rxe_recv_wqe, dma);
const DMA_LEN: usize = offset_of!(b::rxe_dma_info, length);
const DMA_RESID: usize = offset_of!(b::rxe_dma_info, resid);
const DMA_NUM_SGE: usize = offset_of!(b::rxe_dma_info, num_sge);
const DMA_SGE: usize = offset_of!(b::rxe_dma_info, __bindgen_anon_1);
/// Where a send WQE's SGEs, its inline data or an ATOMIC WRITE's value lie.
const SEND_DATA: usize = SEND_DMA + DMA_SGE;
const SGE_ADDR: usize = offset_of!(b::rxe_sge, addr);
const SGE_LENGTH: usize = offset_of!(b::rxe_sge, length);
const SGE_LKEY: usize = offset_of!(b::rxe_sge, lkey);

fn u8_at(buf: &[u8], off: usize) -> u8 {
    buf.get(off).copied().unwrap_or(0)
}

fn u32_at(buf: &[u8], off: usize) -> u32 {
    buf.get(off..off.saturating_add(4))
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_ne_bytes)
}

fn u64_at(buf: &[u8], off: usize) -> u64 {
    buf.get(off..off.saturating_add(8))
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

/// Immediate data as it travels (`__be32` in the WQE and the completion).
fn be32_at(buf: &[u8], off: usize) -> u32 {
    buf.get(off..off.saturating_add(4))
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_be_bytes)
}

/// A local key a user SGE named: keys of index 0 are the staging store's
/// (see [`crate::staging`]), so a user's become the reserved key no one has.
fn user_key(lkey: u32) -> u32 {
    if lkey <= LAST_RESERVED_KEY {
        LAST_RESERVED_KEY
    } else {
        lkey
    }
}

/// The scatter/gather list of an entry whose `rxe_dma_info` starts at `dma`:
/// as one SGE when it has none or one element, else as a list to stage.
fn sge_or_list(buf: &[u8], dma: usize, max_sge: u32) -> Option<(Sge, Option<SgeList<'_>>)> {
    let n = u32_at(buf, dma.saturating_add(DMA_NUM_SGE));
    if n > max_sge {
        return None;
    }
    let n = n as usize;
    let start = dma.saturating_add(DMA_SGE);
    match n {
        0 => Some((Sge::default(), None)),
        1 => Some((
            Sge {
                addr: u64_at(buf, start.saturating_add(SGE_ADDR)),
                length: u32_at(buf, start.saturating_add(SGE_LENGTH)),
                lkey: user_key(u32_at(buf, start.saturating_add(SGE_LKEY))),
            },
            None,
        )),
        _ if n
            .checked_mul(SGE_LEN)
            .and_then(|l| l.checked_add(start))
            .is_some_and(|e| e <= buf.len()) =>
        {
            Some((Sge::default(), Some(SgeList { buf, start, n })))
        }
        _ => None,
    }
}

/// The inline data of a send WQE posted with `IB_SEND_INLINE`: `dma.length`
/// bytes where the SGEs would be; `None` if that is more than a WQE carries.
fn inline_data(buf: &[u8]) -> Option<&[u8]> {
    let len = u32_at(buf, SEND_DMA + DMA_LEN) as usize;
    buf.get(SEND_DATA..SEND_DATA.saturating_add(len))
        .filter(|_| len <= MAX_INLINE)
}

/// Copies the oldest send WQE of `sq` into `out` without taking it: its
/// header, then the SGEs or inline data the header says it has (at least
/// one SGE's room, where an ATOMIC WRITE keeps its value). `false` if the
/// ring is empty.
pub(crate) fn peek_send(sq: &Queue, out: &mut SendCopy) -> bool {
    // A UD send's address vector lies in the header too.
    const _: () = assert!(UD_AV + AhInfo::LEN <= SEND_DATA);
    sq.peek_parts(out, SEND_DATA, |head| {
        let sges = (u32_at(head, SEND_DMA + DMA_NUM_SGE) as usize).saturating_mul(SGE_LEN);
        let inline = if u32_at(head, FLAGS) & b::ib_send_flags_IB_SEND_INLINE as u32 != 0 {
            u32_at(head, SEND_DMA + DMA_LEN) as usize
        } else {
            0
        };
        sges.max(inline).max(SGE_LEN)
    })
}

/// Copies the oldest receive WQE of `rq` into `out` without taking it: its
/// header, then the SGEs it says it has. `false` if the ring is empty.
pub(crate) fn peek_recv(rq: &Queue, out: &mut RecvCopy) -> bool {
    rq.peek_parts(out, RECV_DMA + DMA_SGE, |head| {
        (u32_at(head, RECV_DMA + DMA_NUM_SGE) as usize).saturating_mul(SGE_LEN)
    })
}

/// Immediate data as a completion entry's `ex.imm_data` holds it (`__be32`).
pub(crate) fn imm_field(imm: u32) -> u32 {
    u32::from_ne_bytes(imm.to_be_bytes())
}

/// A send WQE rrxe cannot execute, with the `wr_id` to complete it with.
#[derive(Clone, Copy)]
pub(crate) struct Unsupported {
    /// The caller's identifier.
    pub(crate) wr_id: u64,
}

impl Unsupported {
    /// A request standing for the one that could not be parsed, for its
    /// error completion (a SEND of nothing, signaled).
    pub(crate) fn placeholder(self) -> SendWr {
        SendWr {
            wr_id: self.wr_id,
            op: WrOp::Send,
            sge: Sge::default(),
            remote_addr: 0,
            rkey: 0,
            signaled: true,
            fence: false,
            solicited: false,
        }
    }
}

/// The local operation a send WQE asks for, if it is one: local
/// invalidation, a window bind, or a fast registration, which comes only
/// from in-kernel callers (`kernel`): its region is an `alloc_mr` one,
/// which user space cannot have.
fn local_op(buf: &[u8], opcode: u32, kernel: bool) -> Option<LocalOp> {
    match opcode {
        b::ib_wr_opcode_IB_WR_LOCAL_INV => Some(LocalOp::Invalidate {
            key: u32_at(buf, EX),
        }),
        b::ib_wr_opcode_IB_WR_REG_MR if kernel => Some(LocalOp::RegMr {
            key: u32_at(buf, REG_KEY),
            access: u32_at(buf, REG_ACCESS),
        }),
        b::ib_wr_opcode_IB_WR_BIND_MW => Some(LocalOp::BindMw(MwBind {
            mw_key: u32_at(buf, MW_MW_RKEY),
            new_key: u32_at(buf, MW_RKEY),
            mr_key: u32_at(buf, MW_MR_LKEY),
            addr: u64_at(buf, MW_ADDR),
            len: u64_at(buf, MW_LENGTH),
            access: u32_at(buf, MW_ACCESS),
        })),
        _ => None,
    }
}

/// Parses a send WQE of an RC or UC QP (`sig_all`: every WR is signaled;
/// `kernel`: an in-kernel caller's). Inline data and lists of several SGEs
/// come back to be staged.
pub(crate) fn send_wr(
    buf: &[u8],
    sig_all: bool,
    max_sge: u32,
    kernel: bool,
) -> Result<(SendWr, Extra<'_>), Unsupported> {
    let wr_id = u64_at(buf, WR_ID);
    let flags = u32_at(buf, FLAGS);
    let bad = Unsupported { wr_id };
    let len = u32_at(buf, SEND_DMA + DMA_LEN);
    let opcode = u32_at(buf, OPCODE);
    let signaled = sig_all || flags & b::ib_send_flags_IB_SEND_SIGNALED as u32 != 0;
    let fence = flags & b::ib_send_flags_IB_SEND_FENCE as u32 != 0;
    if let Some(op) = local_op(buf, opcode, kernel) {
        let wr = SendWr {
            wr_id,
            op: WrOp::Local(op),
            sge: Sge::default(),
            remote_addr: 0,
            rkey: 0,
            signaled,
            fence,
            solicited: false,
        };
        return Ok((wr, Extra::None));
    }
    let (sge, extra) = if opcode == b::ib_wr_opcode_IB_WR_ATOMIC_WRITE {
        // No gather list: librxe puts the 8 bytes where the SGEs would be
        // (`dma.atomic_wr`), with `dma.length` 8.
        if len != 8 {
            return Err(bad);
        }
        let sge = Sge {
            addr: 0,
            length: 8,
            lkey: 0,
        };
        (sge, Extra::None)
    } else if opcode == b::ib_wr_opcode_IB_WR_FLUSH {
        // No local buffer either: `dma.length` is the remote length, which
        // the request's SGE length carries through the engine.
        let sge = Sge {
            addr: 0,
            length: len,
            lkey: 0,
        };
        (sge, Extra::None)
    } else if flags & b::ib_send_flags_IB_SEND_INLINE as u32 != 0 {
        (Sge::default(), Extra::Inline(inline_data(buf).ok_or(bad)?))
    } else {
        let (sge, list) = sge_or_list(buf, SEND_DMA, max_sge).ok_or(bad)?;
        match list {
            Some(list) => (sge, Extra::List(list)),
            None => {
                // librxe keeps the total length in dma.length; with one SGE they agree.
                if sge.length != len {
                    return Err(bad);
                }
                (sge, Extra::None)
            }
        }
    };
    let (op, remote_addr, rkey) = match opcode {
        b::ib_wr_opcode_IB_WR_SEND => (WrOp::Send, 0, 0),
        b::ib_wr_opcode_IB_WR_SEND_WITH_IMM => (WrOp::SendWithImm(be32_at(buf, EX)), 0, 0),
        b::ib_wr_opcode_IB_WR_SEND_WITH_INV => (WrOp::SendWithInv(u32_at(buf, EX)), 0, 0),
        b::ib_wr_opcode_IB_WR_RDMA_WRITE => {
            (WrOp::Write, u64_at(buf, RDMA_ADDR), u32_at(buf, RDMA_RKEY))
        }
        b::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM => (
            WrOp::WriteWithImm(be32_at(buf, EX)),
            u64_at(buf, RDMA_ADDR),
            u32_at(buf, RDMA_RKEY),
        ),
        b::ib_wr_opcode_IB_WR_RDMA_READ => {
            (WrOp::Read, u64_at(buf, RDMA_ADDR), u32_at(buf, RDMA_RKEY))
        }
        b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP => (
            WrOp::CmpSwap {
                compare: u64_at(buf, ATOMIC_ARG),
                swap: u64_at(buf, ATOMIC_SWAP),
            },
            u64_at(buf, ATOMIC_ADDR),
            u32_at(buf, ATOMIC_RKEY),
        ),
        b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => (
            WrOp::FetchAdd {
                add: u64_at(buf, ATOMIC_ARG),
            },
            u64_at(buf, ATOMIC_ADDR),
            u32_at(buf, ATOMIC_RKEY),
        ),
        b::ib_wr_opcode_IB_WR_ATOMIC_WRITE => {
            let value = buf
                .get(SEND_DATA..SEND_DATA + 8)
                .and_then(|v| <[u8; 8]>::try_from(v).ok())
                .ok_or(bad)?;
            (
                WrOp::AtomicWrite { value },
                u64_at(buf, RDMA_ADDR),
                u32_at(buf, RDMA_RKEY),
            )
        }
        b::ib_wr_opcode_IB_WR_FLUSH => (
            WrOp::Flush {
                placement: u8_at(buf, FLUSH_TYPE),
                selectivity: u8_at(buf, FLUSH_LEVEL),
            },
            u64_at(buf, FLUSH_ADDR),
            u32_at(buf, FLUSH_RKEY),
        ),
        _ => return Err(bad),
    };
    let wr = SendWr {
        wr_id,
        op,
        sge,
        remote_addr,
        rkey,
        signaled,
        fence,
        solicited: flags & b::ib_send_flags_IB_SEND_SOLICITED as u32 != 0,
    };
    Ok((wr, extra))
}

/// Parses a receive WQE; a list of several SGEs comes back to be staged.
/// `Err(wr_id)` if the list does not fit the copied slot.
pub(crate) fn recv_wr(buf: &[u8], max_sge: u32) -> Result<(RecvWr, Option<SgeList<'_>>), u64> {
    let wr_id = u64_at(buf, 0);
    let (sge, list) = sge_or_list(buf, RECV_DMA, max_sge).ok_or(wr_id)?;
    Ok((RecvWr { wr_id, sge }, list))
}

/// The completion entry user space polls, for a completion of QP `qpn`
/// connected to `src_qp`.
pub(crate) fn completion(wc: &WorkCompletion, qpn: u32, src_qp: u32) -> b::ib_uverbs_wc {
    let mut out = b::ib_uverbs_wc {
        wr_id: wc.wr_id,
        status: wc.status as u32,
        opcode: wc.opcode as u32,
        byte_len: wc.byte_len,
        qp_num: qpn,
        src_qp,
        port_num: 1,
        ..Default::default()
    };
    if let Some(imm) = wc.imm {
        out.ex.imm_data = imm_field(imm);
        out.wc_flags |= b::ib_wc_flags_IB_WC_WITH_IMM;
    } else if let Some(rkey) = wc.invalidated_rkey {
        out.ex.invalidate_rkey = rkey;
        out.wc_flags |= b::ib_wc_flags_IB_WC_WITH_INVALIDATE;
    }
    out
}

const UD_QPN: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_4, remote_qpn);
const UD_QKEY: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_4, remote_qkey);
const UD_AH_NUM: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_4, ah_num);
/// Where a kernel WQE carries its AH's address (rxe's `av` area).
const UD_AV: usize = UNION + offset_of!(b::rxe_send_wr__bindgen_ty_2__bindgen_ty_4, av);
const _: () = assert!(AhInfo::LEN <= core::mem::size_of::<b::rxe_av>());

/// A send WQE of a UD or GSI QP.
pub(crate) struct UdSend<'a> {
    /// The caller's identifier.
    pub(crate) wr_id: u64,
    /// Immediate data, for SEND with immediate.
    pub(crate) imm: Option<u32>,
    /// Signaled (or the QP signals all).
    pub(crate) signaled: bool,
    /// Solicited event requested.
    pub(crate) solicited: bool,
    /// Destination QP.
    pub(crate) remote_qpn: u32,
    /// Q_Key as posted (high bit: use the QP's).
    pub(crate) remote_qkey: u32,
    /// Number of the user AH; 0 in kernel WQEs, which carry `av`.
    pub(crate) ah_num: u32,
    /// The address of a kernel WQE.
    pub(crate) av: Option<AhInfo>,
    /// Inline data, if sent inline.
    pub(crate) inline: Option<&'a [u8]>,
    /// The gather list, when not inline.
    pub(crate) sges: SgeList<'a>,
}

/// The gather list of a WQE as it sits in the copied slot.
#[derive(Clone, Copy)]
pub(crate) struct SgeList<'a> {
    buf: &'a [u8],
    start: usize,
    n: usize,
}

impl SgeList<'_> {
    /// The elements (those that lie inside the copied slot).
    pub(crate) fn iter(&self) -> impl Iterator<Item = Sge> + '_ {
        (0..self.n).map_while(move |i| {
            let s = i.checked_mul(SGE_LEN)?.checked_add(self.start)?;
            self.buf.get(s..s.checked_add(SGE_LEN)?)?;
            Some(Sge {
                addr: u64_at(self.buf, s.saturating_add(SGE_ADDR)),
                length: u32_at(self.buf, s.saturating_add(SGE_LENGTH)),
                lkey: u32_at(self.buf, s.saturating_add(SGE_LKEY)),
            })
        })
    }
}

/// Parses a send WQE of a UD or GSI QP (SEND and SEND with immediate only).
pub(crate) fn ud_send(
    buf: &[u8],
    sig_all: bool,
    kernel: bool,
    max_sge: u32,
) -> Result<UdSend<'_>, Unsupported> {
    let wr_id = u64_at(buf, WR_ID);
    let bad = Unsupported { wr_id };
    let flags = u32_at(buf, FLAGS);
    let imm = match u32_at(buf, OPCODE) {
        b::ib_wr_opcode_IB_WR_SEND => None,
        b::ib_wr_opcode_IB_WR_SEND_WITH_IMM => Some(be32_at(buf, EX)),
        _ => return Err(bad),
    };
    let inline = if flags & b::ib_send_flags_IB_SEND_INLINE as u32 != 0 {
        Some(inline_data(buf).ok_or(bad)?)
    } else {
        None
    };
    let n = u32_at(buf, SEND_DMA + DMA_NUM_SGE);
    if inline.is_none() && n > max_sge {
        return Err(bad);
    }
    let n = n as usize;
    let end = n
        .checked_mul(SGE_LEN)
        .and_then(|l| l.checked_add(SEND_DATA));
    if inline.is_none() && end.is_none_or(|e| e > buf.len()) {
        return Err(bad);
    }
    let ah_num = u32_at(buf, UD_AH_NUM);
    // Only kernel WQEs may carry an address: a user one must name an AH.
    let av = if kernel && ah_num == 0 {
        Some(AhInfo::from_bytes(buf.get(UD_AV..).ok_or(bad)?).ok_or(bad)?)
    } else {
        None
    };
    Ok(UdSend {
        wr_id,
        imm,
        signaled: sig_all || flags & b::ib_send_flags_IB_SEND_SIGNALED as u32 != 0,
        solicited: flags & b::ib_send_flags_IB_SEND_SOLICITED as u32 != 0,
        remote_qpn: u32_at(buf, UD_QPN) & 0x00ff_ffff,
        remote_qkey: u32_at(buf, UD_QKEY),
        ah_num,
        av,
        inline,
        sges: SgeList {
            buf,
            start: SEND_DATA,
            n,
        },
    })
}

/// The gather or scatter list of a receive WQE.
/// `None` if it has more than `max_sge` elements.
pub(crate) fn recv_sges(buf: &[u8], max_sge: u32) -> (u64, Option<SgeList<'_>>) {
    let n = u32_at(buf, RECV_DMA + DMA_NUM_SGE);
    let list = (n <= max_sge).then_some(SgeList {
        buf,
        start: RECV_DMA + DMA_SGE,
        n: n as usize,
    });
    (u64_at(buf, 0), list)
}

fn put_u32(out: &mut [u8], off: usize, v: u32) {
    if let Some(d) = out.get_mut(off..off.saturating_add(4)) {
        d.copy_from_slice(&v.to_ne_bytes());
    }
}

fn put_u64(out: &mut [u8], off: usize, v: u64) {
    if let Some(d) = out.get_mut(off..off.saturating_add(8)) {
        d.copy_from_slice(&v.to_ne_bytes());
    }
}

fn put_sges(out: &mut [u8], dma: usize, sges: &[KSge]) -> Result<u32> {
    let mut total = 0u32;
    for (i, s) in sges.iter().enumerate() {
        let at = i
            .checked_mul(SGE_LEN)
            .and_then(|o| o.checked_add(dma.saturating_add(DMA_SGE)))
            .filter(|at| at.saturating_add(SGE_LEN) <= out.len())
            .ok_or(EINVAL)?;
        put_u64(out, at.saturating_add(SGE_ADDR), s.addr);
        put_u32(out, at.saturating_add(SGE_LENGTH), s.length);
        put_u32(out, at.saturating_add(SGE_LKEY), s.lkey);
        total = total.checked_add(s.length).ok_or(EINVAL)?;
    }
    put_u32(
        out,
        dma.saturating_add(DMA_NUM_SGE),
        u32::try_from(sges.len()).map_err(|_| EINVAL)?,
    );
    put_u32(out, dma.saturating_add(DMA_LEN), total);
    put_u32(out, dma.saturating_add(DMA_RESID), total);
    Ok(total)
}

/// Writes the rxe send WQE for an in-kernel caller's request into `out`
/// (at most `max_sge` SGEs, or `max_inline` bytes of inline data, which is
/// copied now; `av` for UD/GSI QPs).
pub(crate) fn kernel_send(
    out: &mut [u8],
    wr: &KSendWr<'_, RrxeDev>,
    max_sge: usize,
    max_inline: usize,
) -> Result {
    let inline = wr.send_flags() & b::ib_send_flags_IB_SEND_INLINE as u32 != 0;
    let sges = wr.sges();
    if !inline && sges.len() > max_sge {
        return Err(EINVAL);
    }
    put_u64(out, WR_ID, wr.wr_id());
    put_u32(out, OPCODE, wr.opcode());
    put_u32(out, FLAGS, wr.send_flags());
    put_u32(out, EX, wr.ex());
    if let Some(ud) = wr.ud() {
        put_u32(out, UD_QPN, ud.remote_qpn);
        put_u32(out, UD_QKEY, ud.remote_qkey);
        put_u32(out, UD_AH_NUM, 0);
        let av = ud.ah.data().info().to_bytes();
        out.get_mut(UD_AV..UD_AV + AhInfo::LEN)
            .ok_or(EINVAL)?
            .copy_from_slice(&av);
    } else if let Some((addr, rkey)) = wr.rdma() {
        put_u64(out, RDMA_ADDR, addr);
        put_u32(out, RDMA_RKEY, rkey);
    } else if let Some((addr, arg, swap, rkey)) = wr.atomic() {
        put_u64(out, ATOMIC_ADDR, addr);
        put_u64(out, ATOMIC_ARG, arg);
        put_u64(out, ATOMIC_SWAP, swap);
        put_u32(out, ATOMIC_RKEY, rkey);
    } else if wr.opcode() == b::ib_wr_opcode_IB_WR_REG_MR {
        let reg = wr.reg().ok_or(EINVAL)?;
        // The key must name the region posted (same index, new variant).
        if reg.key >> 8 != reg.mr_lkey >> 8 {
            return Err(EINVAL);
        }
        put_u32(out, REG_KEY, reg.key);
        put_u32(out, REG_ACCESS, reg.access);
    }
    if inline {
        // The data goes where the SGEs would be, as librxe puts it.
        let room = MAX_INLINE.min(max_inline);
        let data = out
            .get_mut(SEND_DATA..SEND_DATA.saturating_add(room))
            .ok_or(EINVAL)?;
        let len = u32::try_from(wr.copy_inline(data).ok_or(EINVAL)?).map_err(|_| EINVAL)?;
        put_u32(out, SEND_DMA + DMA_LEN, len);
        put_u32(out, SEND_DMA + DMA_RESID, len);
        return Ok(());
    }
    put_sges(out, SEND_DMA, sges)?;
    Ok(())
}

/// Writes the rxe receive WQE for an in-kernel caller's request into `out`.
pub(crate) fn kernel_recv(out: &mut [u8], wr: &KRecvWr<'_>, max_sge: usize) -> Result {
    let sges = wr.sges();
    if sges.len() > max_sge {
        return Err(EINVAL);
    }
    put_u64(out, 0, wr.wr_id());
    put_sges(out, RECV_DMA, sges)?;
    Ok(())
}
