//! RoCE v2 protocol core shared by the rrxe kernel module and host tests.
//!
//! * [`headers`], [`packet`], [`opcode`]: wire formats and the opcode table.
//! * [`icrc`]: the invariant CRC, generic over the CRC-32 engine.
//! * [`psn`]: 24-bit PSN/MSN arithmetic, AETH syndromes, RNR timers.
//! * [`verbs`], [`env`], [`qp`]: the RC requester, completer and
//!   responder, driven through environment traits without allocation.
//! * [`stall`]: how long a QP waits for a full transmit queue.
//!
//! Only `core` is used; no code here may panic on any input.
#![forbid(unsafe_code)]
#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects
)]
#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )
)]

#[macro_use]
pub(crate) mod wire;

pub mod cwnd;
pub mod env;
pub mod headers;
pub mod icrc;
pub mod opcode;
pub mod packet;
pub mod payload;
pub mod psn;
pub mod qp;
pub mod stall;
pub mod verbs;

pub use cwnd::Cwnd;
pub use env::{
    Access, AtomicOp, Clock, CompletionSink, Env, MemError, MemoryAccess, PayloadRef, Placement,
    TxSink,
};
pub use headers::{
    AethRepr, AtomicEthRepr, BthRepr, DethRepr, FethRepr, IethRepr, ImmDtRepr, RethRepr,
    ROCE_V2_PORT,
};
pub use icrc::{Crc32, IcrcError, IpHeader, SoftCrc32};
pub use opcode::{opcode_info, OpcodeInfo, Transport};
pub use packet::{
    parse, parse_payload, parse_payload_with, EmitError, Headers, Packet, ParseError,
};
pub use payload::{Chunk, Payload, Piece, SharedRange};
pub use psn::{rnr_timer_us, Credits, Msn, NakCode, Psn, Syndrome, RNR_TIMER_US};
pub use qp::{
    ArrayQp, Arrays, AtomicResult, Buffers, Counters, Qp, QpConfig, QpError, QpState, RemoteAccess,
    Response, SendWqe, Slots, Storage,
};
pub use stall::Stall;
pub use verbs::{LocalOp, MwBind, RecvWr, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion, WrOp};
pub use wire::HeaderRepr;
