//! The opcode table: which headers follow the BTH for each opcode and what
//! role the packet plays in its message.

/// Header and property bits of an [`OpcodeInfo`] (compare rxe's
/// `RXE_*_MASK`).
pub mod mask {
    /// RETH follows.
    pub const RETH: u32 = 1 << 0;
    /// AETH follows.
    pub const AETH: u32 = 1 << 1;
    /// AtomicETH follows.
    pub const ATMETH: u32 = 1 << 2;
    /// AtomicAckETH follows.
    pub const ATMACK: u32 = 1 << 3;
    /// IETH follows.
    pub const IETH: u32 = 1 << 4;
    /// DETH follows.
    pub const DETH: u32 = 1 << 5;
    /// ImmDt follows.
    pub const IMMDT: u32 = 1 << 6;
    /// A payload is allowed.
    pub const PAYLOAD: u32 = 1 << 7;
    /// Sent by a requester.
    pub const REQ: u32 = 1 << 8;
    /// A response (sent by a responder).
    pub const ACK: u32 = 1 << 9;
    /// SEND operation.
    pub const SEND: u32 = 1 << 10;
    /// RDMA WRITE operation.
    pub const WRITE: u32 = 1 << 11;
    /// RDMA READ operation (request or response).
    pub const READ: u32 = 1 << 12;
    /// ATOMIC operation (request or response).
    pub const ATOMIC: u32 = 1 << 13;
    /// Consumes a receive WQE at the responder.
    pub const RWR: u32 = 1 << 14;
    /// Generates a receive completion at the responder.
    pub const COMP: u32 = 1 << 15;
    /// First packet of a message.
    pub const START: u32 = 1 << 16;
    /// Middle packet of a message.
    pub const MIDDLE: u32 = 1 << 17;
    /// Last packet of a message.
    pub const END: u32 = 1 << 18;
    /// RDMA ATOMIC WRITE (an 8-byte payload stored as one word).
    pub const ATOMIC_WRITE: u32 = 1 << 19;
    /// RDMA FLUSH (no payload; answered like an ATOMIC WRITE).
    pub const FLUSH: u32 = 1 << 20;
    /// FLUSH ETH follows (before the RETH).
    pub const FETH: u32 = 1 << 21;
}

use mask::*;

/// Transport service encoded in the top three opcode bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Reliable datagram (not supported).
    Rd,
    /// Unreliable datagram.
    Ud,
    /// CNP or vendor/manufacturer specific.
    Other,
}

impl Transport {
    /// The transport of an opcode byte.
    pub const fn of(opcode: u8) -> Self {
        match opcode >> 5 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            2 => Transport::Rd,
            3 => Transport::Ud,
            _ => Transport::Other,
        }
    }

    /// The opcode of operation `rc_op` (an RC SEND or RDMA WRITE opcode,
    /// `0x00..=0x0b`) in this transport: UC numbers its SEND and WRITE
    /// opcodes as RC does, in its own range of 32. `None` for a transport
    /// without those operations or an opcode outside that set.
    pub const fn request_opcode(self, rc_op: u8) -> Option<u8> {
        if rc_op > rc::RDMA_WRITE_ONLY_WITH_IMMEDIATE {
            return None;
        }
        match self {
            Transport::Rc => Some(rc_op),
            Transport::Uc => Some(rc_op | 0x20),
            _ => None,
        }
    }
}

/// An extension header that may follow the BTH, in wire order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExtHeader {
    /// Datagram ETH.
    Deth,
    /// FLUSH ETH (placement type and selectivity level).
    Feth,
    /// RDMA ETH.
    Reth,
    /// Atomic ETH.
    AtomicEth,
    /// ACK ETH.
    Aeth,
    /// Atomic ACK ETH.
    AtomicAckEth,
    /// Immediate data.
    ImmDt,
    /// Invalidate ETH.
    Ieth,
}

impl ExtHeader {
    /// All extension headers in the order they appear on the wire.
    pub const ORDER: [ExtHeader; 8] = [
        ExtHeader::Deth,
        ExtHeader::Feth,
        ExtHeader::Reth,
        ExtHeader::AtomicEth,
        ExtHeader::Aeth,
        ExtHeader::AtomicAckEth,
        ExtHeader::ImmDt,
        ExtHeader::Ieth,
    ];

    /// The mask bit announcing this header.
    #[inline]
    pub const fn mask(self) -> u32 {
        match self {
            ExtHeader::Deth => DETH,
            ExtHeader::Feth => FETH,
            ExtHeader::Reth => RETH,
            ExtHeader::AtomicEth => ATMETH,
            ExtHeader::Aeth => AETH,
            ExtHeader::AtomicAckEth => ATMACK,
            ExtHeader::ImmDt => IMMDT,
            ExtHeader::Ieth => IETH,
        }
    }

    /// Length in bytes.
    #[inline]
    pub const fn wire_len(self) -> usize {
        match self {
            ExtHeader::Deth => 8,
            ExtHeader::Feth => 4,
            ExtHeader::Reth => 16,
            ExtHeader::AtomicEth => 28,
            ExtHeader::Aeth => 4,
            ExtHeader::AtomicAckEth => 8,
            ExtHeader::ImmDt => 4,
            ExtHeader::Ieth => 4,
        }
    }
}

/// Length of the BTH.
pub const BTH_LEN: usize = 12;
/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;

/// Static description of one opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpcodeInfo {
    /// The opcode byte.
    pub opcode: u8,
    /// Name in the style of the IB spec, e.g. `RC_SEND_FIRST`.
    pub name: &'static str,
    /// Bits from [`mask`].
    pub mask: u32,
    /// Length of BTH plus all extension headers.
    pub hdr_len: usize,
    /// Offset of each extension header present (indexed in
    /// [`ExtHeader::ORDER`]), 0 for absent: computed once, with the table,
    /// as the packet path asks for it on every packet.
    offsets: [u8; ExtHeader::ORDER.len()],
}

impl OpcodeInfo {
    // Only evaluated at compile time (static initialiser).
    #[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
    const fn new(opcode: u8, name: &'static str, mask: u32) -> Self {
        let mut hdr_len = BTH_LEN;
        let mut offsets = [0u8; ExtHeader::ORDER.len()];
        let mut i = 0;
        while i < ExtHeader::ORDER.len() {
            let h = ExtHeader::ORDER[i];
            if mask & h.mask() != 0 {
                // At most 12 + 8 * 28 bytes: fits.
                offsets[i] = hdr_len as u8;
                hdr_len += h.wire_len();
            }
            i += 1;
        }
        OpcodeInfo {
            opcode,
            name,
            mask,
            hdr_len,
            offsets,
        }
    }

    /// True if all bits of `m` are set.
    #[inline]
    pub const fn has(&self, m: u32) -> bool {
        self.mask & m == m
    }

    /// Transport service.
    #[inline]
    pub const fn transport(&self) -> Transport {
        Transport::of(self.opcode)
    }

    /// Offset of extension header `h` from the start of the BTH, if present.
    #[inline]
    pub fn offset(&self, h: ExtHeader) -> Option<usize> {
        // `ExtHeader` is declared in wire order: its discriminant is its
        // index in `ORDER`.
        match self.offsets.get(h as usize) {
            Some(&off) if off != 0 => Some(usize::from(off)),
            _ => None,
        }
    }

    /// True if this packet starts a message.
    #[inline]
    pub const fn is_first(&self) -> bool {
        self.mask & START != 0
    }
    /// True if this packet ends a message.
    #[inline]
    pub const fn is_last(&self) -> bool {
        self.mask & END != 0
    }
    /// True if this is a middle packet.
    #[inline]
    pub const fn is_middle(&self) -> bool {
        self.mask & MIDDLE != 0
    }
    /// True if this is a single-packet message ("ONLY").
    #[inline]
    pub const fn is_only(&self) -> bool {
        self.mask & (START | END) == START | END
    }
    /// True if sent by a requester.
    #[inline]
    pub const fn is_request(&self) -> bool {
        self.mask & REQ != 0
    }
    /// True if a response.
    #[inline]
    pub const fn is_response(&self) -> bool {
        self.mask & ACK != 0
    }
}

const SEND_FIRST: u32 = REQ | SEND | PAYLOAD | RWR | START;
const SEND_MIDDLE: u32 = REQ | SEND | PAYLOAD | MIDDLE;
const SEND_LAST: u32 = REQ | SEND | PAYLOAD | COMP | END;
const SEND_ONLY: u32 = SEND_FIRST | COMP | END;
const WRITE_FIRST: u32 = REQ | WRITE | PAYLOAD | RETH | START;
const WRITE_MIDDLE: u32 = REQ | WRITE | PAYLOAD | MIDDLE;
const WRITE_LAST: u32 = REQ | WRITE | PAYLOAD | END;
const WRITE_LAST_IMM: u32 = WRITE_LAST | IMMDT | RWR | COMP;
const WRITE_ONLY: u32 = WRITE_FIRST | END;
const WRITE_ONLY_IMM: u32 = WRITE_ONLY | IMMDT | RWR | COMP;
const READ_RESP_START: u32 = ACK | READ | PAYLOAD | START;

/// Every opcode this core understands.
pub static OPCODES: [OpcodeInfo; 39] = [
    OpcodeInfo::new(0x00, "RC_SEND_FIRST", SEND_FIRST),
    OpcodeInfo::new(0x01, "RC_SEND_MIDDLE", SEND_MIDDLE),
    OpcodeInfo::new(0x02, "RC_SEND_LAST", SEND_LAST),
    OpcodeInfo::new(0x03, "RC_SEND_LAST_WITH_IMMEDIATE", SEND_LAST | IMMDT),
    OpcodeInfo::new(0x04, "RC_SEND_ONLY", SEND_ONLY),
    OpcodeInfo::new(0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", SEND_ONLY | IMMDT),
    OpcodeInfo::new(0x06, "RC_RDMA_WRITE_FIRST", WRITE_FIRST),
    OpcodeInfo::new(0x07, "RC_RDMA_WRITE_MIDDLE", WRITE_MIDDLE),
    OpcodeInfo::new(0x08, "RC_RDMA_WRITE_LAST", WRITE_LAST),
    OpcodeInfo::new(0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", WRITE_LAST_IMM),
    OpcodeInfo::new(0x0a, "RC_RDMA_WRITE_ONLY", WRITE_ONLY),
    OpcodeInfo::new(0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", WRITE_ONLY_IMM),
    OpcodeInfo::new(
        0x0c,
        "RC_RDMA_READ_REQUEST",
        REQ | READ | RETH | START | END,
    ),
    OpcodeInfo::new(0x0d, "RC_RDMA_READ_RESPONSE_FIRST", READ_RESP_START | AETH),
    OpcodeInfo::new(
        0x0e,
        "RC_RDMA_READ_RESPONSE_MIDDLE",
        ACK | READ | PAYLOAD | MIDDLE,
    ),
    OpcodeInfo::new(
        0x0f,
        "RC_RDMA_READ_RESPONSE_LAST",
        ACK | READ | PAYLOAD | AETH | END,
    ),
    OpcodeInfo::new(
        0x10,
        "RC_RDMA_READ_RESPONSE_ONLY",
        READ_RESP_START | AETH | END,
    ),
    OpcodeInfo::new(0x11, "RC_ACKNOWLEDGE", ACK | AETH | START | END),
    OpcodeInfo::new(
        0x12,
        "RC_ATOMIC_ACKNOWLEDGE",
        ACK | ATOMIC | AETH | ATMACK | START | END,
    ),
    OpcodeInfo::new(0x13, "RC_COMPARE_SWAP", REQ | ATOMIC | ATMETH | START | END),
    OpcodeInfo::new(0x14, "RC_FETCH_ADD", REQ | ATOMIC | ATMETH | START | END),
    OpcodeInfo::new(0x16, "RC_SEND_LAST_WITH_INVALIDATE", SEND_LAST | IETH),
    OpcodeInfo::new(0x17, "RC_SEND_ONLY_WITH_INVALIDATE", SEND_ONLY | IETH),
    OpcodeInfo::new(0x1c, "RC_FLUSH", REQ | FLUSH | FETH | RETH | START | END),
    OpcodeInfo::new(
        0x1d,
        "RC_ATOMIC_WRITE",
        REQ | ATOMIC_WRITE | RETH | PAYLOAD | START | END,
    ),
    OpcodeInfo::new(0x20, "UC_SEND_FIRST", SEND_FIRST),
    OpcodeInfo::new(0x21, "UC_SEND_MIDDLE", SEND_MIDDLE),
    OpcodeInfo::new(0x22, "UC_SEND_LAST", SEND_LAST),
    OpcodeInfo::new(0x23, "UC_SEND_LAST_WITH_IMMEDIATE", SEND_LAST | IMMDT),
    OpcodeInfo::new(0x24, "UC_SEND_ONLY", SEND_ONLY),
    OpcodeInfo::new(0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", SEND_ONLY | IMMDT),
    OpcodeInfo::new(0x26, "UC_RDMA_WRITE_FIRST", WRITE_FIRST),
    OpcodeInfo::new(0x27, "UC_RDMA_WRITE_MIDDLE", WRITE_MIDDLE),
    OpcodeInfo::new(0x28, "UC_RDMA_WRITE_LAST", WRITE_LAST),
    OpcodeInfo::new(0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", WRITE_LAST_IMM),
    OpcodeInfo::new(0x2a, "UC_RDMA_WRITE_ONLY", WRITE_ONLY),
    OpcodeInfo::new(0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", WRITE_ONLY_IMM),
    OpcodeInfo::new(0x64, "UD_SEND_ONLY", SEND_ONLY | DETH),
    OpcodeInfo::new(
        0x65,
        "UD_SEND_ONLY_WITH_IMMEDIATE",
        SEND_ONLY | DETH | IMMDT,
    ),
];

#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const fn build_index() -> [u8; 256] {
    let mut t = [u8::MAX; 256];
    let mut i = 0;
    while i < OPCODES.len() {
        if OPCODES[i].mask != 0 {
            t[OPCODES[i].opcode as usize] = i as u8;
        }
        i += 1;
    }
    t
}

static INDEX: [u8; 256] = build_index();

/// Look up an opcode; `None` for opcodes this core does not handle
/// (RD, CNP, vendor opcodes).
pub fn opcode_info(opcode: u8) -> Option<&'static OpcodeInfo> {
    let idx = *INDEX.get(usize::from(opcode))?;
    OPCODES.get(usize::from(idx))
}

/// RC opcode bytes used by the state machines.
#[allow(missing_docs)]
pub mod rc {
    pub const SEND_FIRST: u8 = 0x00;
    pub const SEND_MIDDLE: u8 = 0x01;
    pub const SEND_LAST: u8 = 0x02;
    pub const SEND_LAST_WITH_IMMEDIATE: u8 = 0x03;
    pub const SEND_ONLY: u8 = 0x04;
    pub const SEND_ONLY_WITH_IMMEDIATE: u8 = 0x05;
    pub const RDMA_WRITE_FIRST: u8 = 0x06;
    pub const RDMA_WRITE_MIDDLE: u8 = 0x07;
    pub const RDMA_WRITE_LAST: u8 = 0x08;
    pub const RDMA_WRITE_LAST_WITH_IMMEDIATE: u8 = 0x09;
    pub const RDMA_WRITE_ONLY: u8 = 0x0a;
    pub const RDMA_WRITE_ONLY_WITH_IMMEDIATE: u8 = 0x0b;
    pub const RDMA_READ_REQUEST: u8 = 0x0c;
    pub const RDMA_READ_RESPONSE_FIRST: u8 = 0x0d;
    pub const RDMA_READ_RESPONSE_MIDDLE: u8 = 0x0e;
    pub const RDMA_READ_RESPONSE_LAST: u8 = 0x0f;
    pub const RDMA_READ_RESPONSE_ONLY: u8 = 0x10;
    pub const ACKNOWLEDGE: u8 = 0x11;
    pub const ATOMIC_ACKNOWLEDGE: u8 = 0x12;
    pub const COMPARE_SWAP: u8 = 0x13;
    pub const FETCH_ADD: u8 = 0x14;
    pub const FLUSH: u8 = 0x1c;
    pub const ATOMIC_WRITE: u8 = 0x1d;
    pub const SEND_LAST_WITH_INVALIDATE: u8 = 0x16;
    pub const SEND_ONLY_WITH_INVALIDATE: u8 = 0x17;
}

/// UC opcode bytes.
#[allow(missing_docs)]
pub mod uc {
    pub const SEND_FIRST: u8 = 0x20;
    pub const SEND_MIDDLE: u8 = 0x21;
    pub const SEND_LAST: u8 = 0x22;
    pub const SEND_LAST_WITH_IMMEDIATE: u8 = 0x23;
    pub const SEND_ONLY: u8 = 0x24;
    pub const SEND_ONLY_WITH_IMMEDIATE: u8 = 0x25;
    pub const RDMA_WRITE_FIRST: u8 = 0x26;
    pub const RDMA_WRITE_MIDDLE: u8 = 0x27;
    pub const RDMA_WRITE_LAST: u8 = 0x28;
    pub const RDMA_WRITE_LAST_WITH_IMMEDIATE: u8 = 0x29;
    pub const RDMA_WRITE_ONLY: u8 = 0x2a;
    pub const RDMA_WRITE_ONLY_WITH_IMMEDIATE: u8 = 0x2b;
}

/// UD opcode bytes.
#[allow(missing_docs)]
pub mod ud {
    pub const SEND_ONLY: u8 = 0x64;
    pub const SEND_ONLY_WITH_IMMEDIATE: u8 = 0x65;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_match_rxe() {
        let len = |op| opcode_info(op).map(|i| i.hdr_len);
        assert_eq!(len(rc::SEND_ONLY), Some(12));
        assert_eq!(len(rc::RDMA_WRITE_ONLY_WITH_IMMEDIATE), Some(32));
        assert_eq!(len(rc::RDMA_READ_REQUEST), Some(28));
        assert_eq!(len(rc::RDMA_READ_RESPONSE_MIDDLE), Some(12));
        assert_eq!(len(rc::RDMA_READ_RESPONSE_FIRST), Some(16));
        assert_eq!(len(rc::ATOMIC_ACKNOWLEDGE), Some(24));
        assert_eq!(len(rc::COMPARE_SWAP), Some(40));
        assert_eq!(len(rc::SEND_ONLY_WITH_INVALIDATE), Some(16));
        assert_eq!(len(ud::SEND_ONLY_WITH_IMMEDIATE), Some(24));
        assert_eq!(len(rc::FLUSH), Some(32));
        assert_eq!(len(0x15), None);
        assert_eq!(len(0x2c), None);
        assert_eq!(len(0x81), None);
        assert_eq!(len(0xff), None);
    }

    #[test]
    fn offsets() {
        let i = opcode_info(0x65).unwrap();
        assert_eq!(i.offset(ExtHeader::Deth), Some(12));
        assert_eq!(i.offset(ExtHeader::ImmDt), Some(20));
        assert_eq!(i.offset(ExtHeader::Reth), None);
        let i = opcode_info(rc::ATOMIC_ACKNOWLEDGE).unwrap();
        assert_eq!(i.offset(ExtHeader::AtomicAckEth), Some(16));
        assert!(i.is_only() && i.is_response());
        // FETH comes right after the BTH, the RETH after it.
        let i = opcode_info(rc::FLUSH).unwrap();
        assert_eq!(i.offset(ExtHeader::Feth), Some(12));
        assert_eq!(i.offset(ExtHeader::Reth), Some(16));
        assert!(i.is_only() && i.is_request() && !i.has(PAYLOAD));
    }

    #[test]
    fn uc_requests_mirror_rc() {
        for op in rc::SEND_FIRST..=rc::RDMA_WRITE_ONLY_WITH_IMMEDIATE {
            let u = Transport::Uc.request_opcode(op).unwrap();
            let (r, u) = (opcode_info(op).unwrap(), opcode_info(u).unwrap());
            assert_eq!(r.mask, u.mask);
            assert_eq!(u.transport(), Transport::Uc);
            assert_eq!(r.name.get(3..), u.name.get(3..));
        }
        assert_eq!(Transport::Uc.request_opcode(rc::RDMA_READ_REQUEST), None);
        assert_eq!(Transport::Ud.request_opcode(rc::SEND_ONLY), None);
        assert_eq!(
            Transport::Uc.request_opcode(rc::RDMA_WRITE_ONLY),
            Some(uc::RDMA_WRITE_ONLY)
        );
    }

    #[test]
    fn table_is_consistent() {
        for (n, i) in OPCODES.iter().enumerate() {
            if i.mask == 0 {
                continue;
            }
            assert_eq!(
                opcode_info(i.opcode).map(|x| x.opcode),
                Some(i.opcode),
                "{n}"
            );
            assert!(i.is_request() != i.is_response());
            assert!(i.is_first() || i.is_last() || i.is_middle());
            let prefix = match i.transport() {
                Transport::Rc => "RC_",
                Transport::Uc => "UC_",
                Transport::Ud => "UD_",
                _ => unreachable!(),
            };
            assert!(i.name.starts_with(prefix));
        }
    }
}
