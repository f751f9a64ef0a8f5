//! Work requests and work completions, with the numeric codes of
//! `enum ib_wc_status` / `enum ibv_wc_status` and `enum ib_wc_opcode`.

/// Work completion status; values equal `enum ib_wc_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum WcStatus {
    /// IB_WC_SUCCESS.
    Success = 0,
    /// IB_WC_LOC_LEN_ERR: message longer than the receive buffer.
    LocLenErr = 1,
    /// IB_WC_LOC_QP_OP_ERR: invalid work request.
    LocQpOpErr = 2,
    /// IB_WC_LOC_EEC_OP_ERR.
    LocEecOpErr = 3,
    /// IB_WC_LOC_PROT_ERR: local key or bounds violation.
    LocProtErr = 4,
    /// IB_WC_WR_FLUSH_ERR: flushed because the QP is in the error state.
    WrFlushErr = 5,
    /// IB_WC_MW_BIND_ERR.
    MwBindErr = 6,
    /// IB_WC_BAD_RESP_ERR: unexpected response from the responder.
    BadRespErr = 7,
    /// IB_WC_LOC_ACCESS_ERR.
    LocAccessErr = 8,
    /// IB_WC_REM_INV_REQ_ERR: responder NAKed with "invalid request".
    RemInvReqErr = 9,
    /// IB_WC_REM_ACCESS_ERR: responder NAKed with "remote access error".
    RemAccessErr = 10,
    /// IB_WC_REM_OP_ERR: responder NAKed with "remote operational error".
    RemOpErr = 11,
    /// IB_WC_RETRY_EXC_ERR: transport retry counter exceeded.
    RetryExcErr = 12,
    /// IB_WC_RNR_RETRY_EXC_ERR: RNR retry counter exceeded.
    RnrRetryExcErr = 13,
    /// IB_WC_LOC_RDD_VIOL_ERR.
    LocRddViolErr = 14,
    /// IB_WC_REM_INV_RD_REQ_ERR.
    RemInvRdReqErr = 15,
    /// IB_WC_REM_ABORT_ERR.
    RemAbortErr = 16,
    /// IB_WC_INV_EECN_ERR.
    InvEecnErr = 17,
    /// IB_WC_INV_EEC_STATE_ERR.
    InvEecStateErr = 18,
    /// IB_WC_FATAL_ERR.
    FatalErr = 19,
    /// IB_WC_RESP_TIMEOUT_ERR.
    RespTimeoutErr = 20,
    /// IB_WC_GENERAL_ERR.
    GeneralErr = 21,
}

/// Work completion opcode; values equal `enum ib_wc_opcode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum WcOpcode {
    /// IB_WC_SEND.
    Send = 0,
    /// IB_WC_RDMA_WRITE.
    RdmaWrite = 1,
    /// IB_WC_RDMA_READ.
    RdmaRead = 2,
    /// IB_WC_COMP_SWAP.
    CompSwap = 3,
    /// IB_WC_FETCH_ADD.
    FetchAdd = 4,
    /// IB_WC_BIND_MW.
    BindMw = 5,
    /// IB_WC_LOCAL_INV.
    LocalInv = 6,
    /// IB_WC_FLUSH.
    Flush = 8,
    /// IB_WC_ATOMIC_WRITE.
    AtomicWrite = 9,
    /// IB_WC_REG_MR.
    RegMr = 10,
    /// IB_WC_RECV.
    Recv = 128,
    /// IB_WC_RECV_RDMA_WITH_IMM.
    RecvRdmaWithImm = 129,
}

/// Operation of a send work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WrOp {
    /// SEND.
    Send,
    /// SEND with immediate data.
    SendWithImm(u32),
    /// SEND with invalidate of the given remote key.
    SendWithInv(u32),
    /// RDMA WRITE.
    Write,
    /// RDMA WRITE with immediate data (consumes a receive WQE).
    WriteWithImm(u32),
    /// RDMA READ.
    Read,
    /// 64-bit compare and swap.
    CmpSwap {
        /// Value compared with the remote word.
        compare: u64,
        /// Value stored if equal.
        swap: u64,
    },
    /// 64-bit fetch and add.
    FetchAdd {
        /// Value added to the remote word.
        add: u64,
    },
    /// RDMA ATOMIC WRITE: these 8 bytes stored at the remote address as one
    /// 64-bit word (no local buffer; the work request's SGE has length 8).
    AtomicWrite {
        /// The bytes, as the consumer gave them.
        value: [u8; 8],
    },
    /// RDMA FLUSH of remote memory: `remote_addr`, `rkey` and, as the
    /// length, the work request's `sge.length` (there is no local buffer;
    /// librxe keeps the length where the gather list's total would be).
    /// One request packet, answered like an RDMA READ.
    Flush {
        /// Placement type bits (`IB_FLUSH_GLOBAL`, `IB_FLUSH_PERSISTENT`).
        placement: u8,
        /// Selectivity level (`IB_FLUSH_RANGE` or `IB_FLUSH_MR`).
        selectivity: u8,
    },
    /// A local operation on the QP's own memory keys: no packets; it runs
    /// when the requester reaches it and completes in queue order.
    Local(LocalOp),
}

/// A send queue operation that changes a memory key of the requester's own
/// side and sends nothing (fast registration, local invalidation, window
/// binds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocalOp {
    /// Fast registration (`IB_WR_REG_MR`): the region whose index `key`
    /// names becomes valid under `key`, with the `IB_ACCESS_*` flags
    /// `access` and the pages its consumer mapped last.
    RegMr {
        /// The new key (the region's index and a new 8-bit variant).
        key: u32,
        /// Access flags.
        access: u32,
    },
    /// Local invalidation (`IB_WR_LOCAL_INV`) of `key`.
    Invalidate {
        /// The key to invalidate.
        key: u32,
    },
    /// A memory window bind (`IBV_WR_BIND_MW`, and `ibv_bind_mw` for type 1).
    BindMw(MwBind),
}

/// What a memory window bind asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MwBind {
    /// The window's key as the consumer knows it now.
    pub mw_key: u32,
    /// The key the window gets (same index, new variant).
    pub new_key: u32,
    /// Local key of the memory region the window opens.
    pub mr_key: u32,
    /// First address of the window, in the region's address space.
    pub addr: u64,
    /// Length of the window; 0 unbinds a type 1 window.
    pub len: u64,
    /// `IB_ACCESS_REMOTE_*` flags the window grants.
    pub access: u32,
}

impl LocalOp {
    /// Completion status when the operation fails: a bind reports a bind
    /// error, the others an invalid local operation (as rxe does).
    pub const fn error_status(self) -> WcStatus {
        match self {
            LocalOp::BindMw(_) => WcStatus::MwBindErr,
            _ => WcStatus::LocQpOpErr,
        }
    }
}

impl WrOp {
    /// True for RDMA READ, the atomics, ATOMIC WRITE and FLUSH (they need
    /// responder resources and are answered by a response of their own).
    pub const fn is_read_or_atomic(self) -> bool {
        matches!(
            self,
            WrOp::Read
                | WrOp::CmpSwap { .. }
                | WrOp::FetchAdd { .. }
                | WrOp::AtomicWrite { .. }
                | WrOp::Flush { .. }
        )
    }
    /// True for ATOMIC WRITE and FLUSH: a zero-length RDMA READ RESPONSE
    /// ONLY answers them, and they have no local buffer (the SGE length is
    /// the 8 bytes carried in the request, or the remote length).
    pub const fn has_empty_response(self) -> bool {
        matches!(self, WrOp::AtomicWrite { .. } | WrOp::Flush { .. })
    }
    /// True for the atomics.
    pub const fn is_atomic(self) -> bool {
        matches!(self, WrOp::CmpSwap { .. } | WrOp::FetchAdd { .. })
    }
    /// True for operations carrying a payload from requester to responder.
    pub const fn is_send_or_write(self) -> bool {
        !self.is_read_or_atomic() && !self.is_local()
    }
    /// True for local operations (no packets).
    pub const fn is_local(self) -> bool {
        matches!(self, WrOp::Local(_))
    }
    /// True if `transport` has this operation: RC has them all; UC has
    /// SEND and RDMA WRITE, with or without immediate data (no invalidate),
    /// and the local operations.
    pub const fn carried_by(self, transport: crate::proto::Transport) -> bool {
        match transport {
            crate::proto::Transport::Rc => true,
            crate::proto::Transport::Uc => matches!(
                self,
                WrOp::Send
                    | WrOp::SendWithImm(_)
                    | WrOp::Write
                    | WrOp::WriteWithImm(_)
                    | WrOp::Local(_)
            ),
            _ => false,
        }
    }
    /// Completion opcode reported for this operation.
    pub const fn wc_opcode(self) -> WcOpcode {
        match self {
            WrOp::Send | WrOp::SendWithImm(_) | WrOp::SendWithInv(_) => WcOpcode::Send,
            WrOp::Write | WrOp::WriteWithImm(_) => WcOpcode::RdmaWrite,
            WrOp::Read => WcOpcode::RdmaRead,
            WrOp::CmpSwap { .. } => WcOpcode::CompSwap,
            WrOp::FetchAdd { .. } => WcOpcode::FetchAdd,
            WrOp::AtomicWrite { .. } => WcOpcode::AtomicWrite,
            WrOp::Flush { .. } => WcOpcode::Flush,
            WrOp::Local(LocalOp::RegMr { .. }) => WcOpcode::RegMr,
            WrOp::Local(LocalOp::Invalidate { .. }) => WcOpcode::LocalInv,
            WrOp::Local(LocalOp::BindMw(_)) => WcOpcode::BindMw,
        }
    }
}

/// A scatter/gather element: local memory named by `lkey`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Sge {
    /// Local virtual address.
    pub addr: u64,
    /// Length in bytes.
    pub length: u32,
    /// Local key.
    pub lkey: u32,
}

/// A send work request (single SGE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SendWr {
    /// Caller's identifier, returned in the completion.
    pub wr_id: u64,
    /// Operation.
    pub op: WrOp,
    /// Local buffer: source of SEND/WRITE data, destination of READ data
    /// or of the 8-byte original value of an atomic.
    pub sge: Sge,
    /// Remote address (WRITE, READ, atomics).
    pub remote_addr: u64,
    /// Remote key (WRITE, READ, atomics).
    pub rkey: u32,
    /// Generate a completion on success (errors always complete).
    pub signaled: bool,
    /// Wait for all earlier READs and atomics to complete before starting.
    pub fence: bool,
    /// Set the solicited-event bit on the last packet.
    pub solicited: bool,
}

/// A receive work request (single SGE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RecvWr {
    /// Caller's identifier, returned in the completion.
    pub wr_id: u64,
    /// Receive buffer.
    pub sge: Sge,
}

/// A work completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkCompletion {
    /// `wr_id` of the completed request.
    pub wr_id: u64,
    /// Status.
    pub status: WcStatus,
    /// Opcode.
    pub opcode: WcOpcode,
    /// Bytes transferred (receives, READ).
    pub byte_len: u32,
    /// Immediate data, if any.
    pub imm: Option<u32>,
    /// Remote key invalidated by SEND_WITH_INV, if any.
    pub invalidated_rkey: Option<u32>,
    /// Local QP number.
    pub qpn: u32,
}
