//! The environment the state machines run in: memory access by key,
//! packet transmission and completion delivery. The kernel module
//! implements these over MRs, skbs and CQs; the tests over plain vectors.

use crate::proto::payload::{Chunk, Payload, SharedRange};
use crate::proto::verbs::{LocalOp, WorkCompletion};
use core::cell::Cell;

/// Kind of access requested for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Local read through an lkey (SEND/WRITE source).
    LocalRead,
    /// Local write through an lkey (receive buffer, READ/atomic result).
    LocalWrite,
    /// Remote read through an rkey (RDMA READ).
    RemoteRead,
    /// Remote write through an rkey (RDMA WRITE).
    RemoteWrite,
    /// Remote atomic through an rkey.
    RemoteAtomic,
    /// RDMA FLUSH through an rkey: the region must grant every placement
    /// asked for (`IB_ACCESS_FLUSH_GLOBAL`, `IB_ACCESS_FLUSH_PERSISTENT`).
    Flush(Placement),
}

/// What a FLUSH asks to be done with the data written before it: the
/// placement type bits of its FETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Placement {
    /// Make it globally visible (`IB_FLUSH_GLOBAL`).
    pub global: bool,
    /// Make it persistent (`IB_FLUSH_PERSISTENT`).
    pub persistent: bool,
}

impl Placement {
    /// The placement named by a FETH's placement type bits (the reserved
    /// ones ignored, as rxe does).
    pub const fn from_bits(bits: u8) -> Self {
        Placement {
            global: bits & crate::proto::headers::FethRepr::GLOBAL != 0,
            persistent: bits & crate::proto::headers::FethRepr::PERSISTENT != 0,
        }
    }
}

/// Why a memory access failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemError {
    /// No region with this key.
    BadKey,
    /// The region does not grant the requested access.
    AccessDenied,
    /// The range is outside the region.
    OutOfRange,
    /// Atomic address not 8-byte aligned.
    Misaligned,
}

/// A 64-bit atomic operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// Store `swap` if the word equals `compare`.
    CmpSwap {
        /// Expected value.
        compare: u64,
        /// New value.
        swap: u64,
    },
    /// Add `add` (wrapping).
    FetchAdd {
        /// Addend.
        add: u64,
    },
    /// Store `value` (RDMA ATOMIC WRITE).
    Store {
        /// New value.
        value: u64,
    },
}

impl AtomicOp {
    /// The value the word holds after the operation, given its value `old`
    /// before (which is what the operation returns to the requester).
    pub fn apply(self, old: u64) -> u64 {
        match self {
            AtomicOp::CmpSwap { compare, swap } => {
                if old == compare {
                    swap
                } else {
                    old
                }
            }
            AtomicOp::FetchAdd { add } => old.wrapping_add(add),
            AtomicOp::Store { value } => value,
        }
    }

    /// The access right the target memory must grant: remote atomic, or
    /// remote write for ATOMIC WRITE (as rxe checks it).
    pub fn access(self) -> Access {
        match self {
            AtomicOp::Store { .. } => Access::RemoteWrite,
            _ => Access::RemoteAtomic,
        }
    }
}

/// Memory named by keys (MRs).
pub trait MemoryAccess {
    /// Check that `[va, va + len)` may be accessed through `key`.
    fn check(&mut self, key: u32, va: u64, len: u32, access: Access) -> Result<(), MemError>;
    /// Copy `buf.len()` bytes at `va` into `buf`.
    fn read(&mut self, key: u32, va: u64, buf: &mut [u8], access: Access) -> Result<(), MemError>;
    /// Copy `data` to `va`.
    fn write(&mut self, key: u32, va: u64, data: &[u8], access: Access) -> Result<(), MemError>;
    /// Execute an atomic on the host-order 64-bit word at `va` and return
    /// its original value.
    fn atomic(&mut self, rkey: u32, va: u64, op: AtomicOp) -> Result<u64, MemError>;
    /// Copy `data` (a packet's payload, possibly in pieces) to `va`.
    fn write_payload(
        &mut self,
        key: u32,
        va: u64,
        data: &Payload<'_>,
        access: Access,
    ) -> Result<(), MemError> {
        // The address of each chunk is computed from its offset, never the
        // one after the last chunk: a buffer may end at 2^64 exactly.
        let mut off = 0u64;
        for c in data.chunks() {
            let at = va.checked_add(off).ok_or(MemError::OutOfRange)?;
            match c {
                Chunk::Bytes(b) => self.write(key, at, b, access)?,
                Chunk::Shared(r) => self.write_shared(key, at, r, access)?,
            }
            let n = u64::try_from(c.len()).map_err(|_| MemError::OutOfRange)?;
            off = off.saturating_add(n);
        }
        Ok(())
    }
    /// Copy the bytes `range` names, of a packet's piece that others may
    /// write ([`crate::proto::Piece::Shared`]), to `va`. Only the driver
    /// that made the packet can read them; the default refuses.
    fn write_shared(
        &mut self,
        key: u32,
        va: u64,
        range: SharedRange,
        access: Access,
    ) -> Result<(), MemError> {
        let _ = (key, va, range, access);
        Err(MemError::OutOfRange)
    }
    /// RDMA FLUSH: check that `rkey` grants [`Access::Flush`] of
    /// `placement` and, if `range` is given (`IB_FLUSH_RANGE`), that the
    /// bytes `[va, va + len)` lie in the memory it names (with `None`, the
    /// whole region is flushed and no range is checked); then make what
    /// was written there reach that placement. The default refuses it.
    fn flush(
        &mut self,
        rkey: u32,
        range: Option<(u64, u32)>,
        placement: Placement,
    ) -> Result<(), MemError> {
        let _ = (rkey, range, placement);
        Err(MemError::AccessDenied)
    }
    /// Invalidate `rkey` (SEND_WITH_INV). The default does nothing.
    fn invalidate(&mut self, rkey: u32) -> Result<(), MemError> {
        let _ = rkey;
        Ok(())
    }
    /// Execute a local operation of the send queue (fast registration,
    /// local invalidation, a window bind). The default refuses it.
    fn local(&mut self, op: LocalOp) -> Result<(), MemError> {
        let _ = op;
        Err(MemError::BadKey)
    }
}

/// A packet's payload named by where it lies: `len` bytes at `va` of the
/// memory `key` names, read with `access` rights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadRef {
    /// Memory key.
    pub key: u32,
    /// Address of the first byte.
    pub va: u64,
    /// Length in bytes.
    pub len: u32,
    /// The right the key must grant.
    pub access: Access,
}

/// Where outgoing packets go.
///
/// The QP asks for a buffer of the exact packet length (BTH through ICRC),
/// writes it, and commits it. The last four bytes (the ICRC) are left zero:
/// the sink adds the UDP/IP headers and fills in the ICRC. A buffer that is
/// not committed is simply reused by the next call to `buffer`.
pub trait TxSink {
    /// A buffer of exactly `len` bytes, or `None` if the link is busy.
    fn buffer(&mut self, len: usize) -> Option<&mut [u8]>;
    /// A buffer for the first `head` bytes (the headers) of a packet of
    /// `len` bytes whose payload, next, is `payload`: the sink sends the
    /// payload from that memory itself, without a copy into the buffer, and
    /// the bytes after it (pad and ICRC) as zeros. `None` if the sink does
    /// not send this payload so, which is the default; the caller then
    /// builds the whole packet in a [`TxSink::buffer`]. Either way the
    /// packet goes with [`TxSink::commit`].
    fn buffer_by_ref(&mut self, len: usize, head: usize, payload: PayloadRef) -> Option<&mut [u8]> {
        let _ = (len, head, payload);
        None
    }
    /// Send the packet most recently written to [`TxSink::buffer`], which
    /// stands for `psns` PSNs (1, or more for a local segment,
    /// [`crate::proto::QpConfig::segment_pkts`]); `false` if the link
    /// refused it (its transmit queue is full): the packet was
    /// not sent, and the engine builds it again at a later turn, as after a
    /// [`TxSink::buffer`] that returned `None`. A sink that refuses a packet
    /// owes its QP a later turn; one that may drop it instead returns
    /// `true`, and the protocol's timers recover it.
    fn commit(&mut self, psns: u32) -> bool;
}

/// Where completions go.
pub trait CompletionSink {
    /// A send-queue completion.
    fn send_completion(&mut self, wc: &WorkCompletion);
    /// A receive-queue completion.
    fn recv_completion(&mut self, wc: &WorkCompletion);
}

/// The time in microseconds (monotonic), read once at most, and only when
/// asked: most calls into a QP (a request served, a response that completes
/// its request) set no deadline and need no time.
pub struct Clock {
    /// Reads the time.
    read: fn() -> u64,
    /// The time read, once it is.
    at: Cell<Option<u64>>,
}

impl Clock {
    /// A clock that calls `read` when first asked for the time.
    pub const fn new(read: fn() -> u64) -> Self {
        Self {
            read,
            at: Cell::new(None),
        }
    }

    /// A clock that says `now_us` (a simulation's, a fuzzer's).
    pub const fn at(now_us: u64) -> Self {
        Self {
            read: never_read,
            at: Cell::new(Some(now_us)),
        }
    }

    /// The time, the same for every call on this clock.
    pub fn now_us(&self) -> u64 {
        if let Some(t) = self.at.get() {
            return t;
        }
        let t = (self.read)();
        self.at.set(Some(t));
        t
    }
}

/// The reader of a clock that was set when made.
fn never_read() -> u64 {
    0
}

/// Everything one call into a QP may use.
pub struct Env<'a> {
    /// The current time.
    pub clock: &'a Clock,
    /// Memory regions.
    pub mem: &'a mut dyn MemoryAccess,
    /// Packet output.
    pub tx: &'a mut dyn TxSink,
    /// Completion output.
    pub cq: &'a mut dyn CompletionSink,
}

#[cfg(test)]
mod tests {
    use super::{AtomicOp, Clock};

    #[test]
    fn atomic_apply() {
        let cs = AtomicOp::CmpSwap {
            compare: 5,
            swap: 9,
        };
        assert_eq!(cs.apply(5), 9);
        assert_eq!(cs.apply(6), 6);
        assert_eq!(AtomicOp::FetchAdd { add: 3 }.apply(u64::MAX), 2);
    }

    static READS: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

    fn counted_read() -> u64 {
        READS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        42
    }

    #[test]
    fn a_clock_reads_the_time_once_and_only_when_asked() {
        use core::sync::atomic::Ordering::Relaxed;
        let clock = Clock::new(counted_read);
        assert_eq!(READS.load(Relaxed), 0);
        assert_eq!(clock.now_us(), 42);
        assert_eq!(clock.now_us(), 42);
        assert_eq!(READS.load(Relaxed), 1);
        assert_eq!(Clock::at(7).now_us(), 7);
    }
}
