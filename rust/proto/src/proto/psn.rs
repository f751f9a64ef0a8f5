//! 24-bit packet sequence numbers, message sequence numbers, AETH syndromes,
//! the RNR timer table and credit-count encoding.

use crate::proto::ParseError;

const MASK24: u32 = 0x00ff_ffff;

/// A 24-bit packet sequence number with modulo-2^24 arithmetic.
///
/// PSNs are only ordered relative to each other within half the sequence
/// space (2^23), so there is deliberately no `Ord` implementation: use
/// [`Psn::diff`], [`Psn::before`] and [`Psn::after`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Psn(u32);

impl Psn {
    /// Number of distinct PSN values.
    pub const MODULUS: u32 = 1 << 24;
    /// Largest distance at which two PSNs are still ordered.
    pub const HALF_WINDOW: u32 = 1 << 23;

    /// Build a PSN from the low 24 bits of `v`.
    pub const fn new(v: u32) -> Self {
        Psn(v & MASK24)
    }

    /// The PSN as an integer in `0..2^24`.
    pub const fn value(self) -> u32 {
        self.0
    }

    /// `self + n` modulo 2^24.
    pub const fn add(self, n: u32) -> Self {
        Psn::new(self.0.wrapping_add(n))
    }

    /// `self - n` modulo 2^24.
    pub const fn sub(self, n: u32) -> Self {
        Psn::new(self.0.wrapping_sub(n))
    }

    /// The next PSN.
    pub const fn next(self) -> Self {
        self.add(1)
    }

    /// Signed distance `self - other`, interpreted in `-2^23..2^23`.
    pub const fn diff(self, other: Psn) -> i32 {
        // Shift the 24-bit difference into the top of an i32 and back to
        // sign-extend it.
        ((self.0.wrapping_sub(other.0) << 8) as i32) >> 8
    }

    /// True if `self` comes strictly before `other` (within half a window).
    pub const fn before(self, other: Psn) -> bool {
        self.diff(other) < 0
    }

    /// True if `self` comes strictly after `other` (within half a window).
    pub const fn after(self, other: Psn) -> bool {
        self.diff(other) > 0
    }

    /// Unsigned forward distance from `other` to `self` modulo 2^24.
    pub const fn since(self, other: Psn) -> u32 {
        self.0.wrapping_sub(other.0) & MASK24
    }
}

/// A 24-bit message sequence number, carried in the AETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Msn(u32);

impl Msn {
    /// Build an MSN from the low 24 bits of `v`.
    pub const fn new(v: u32) -> Self {
        Msn(v & MASK24)
    }
    /// The MSN as an integer in `0..2^24`.
    pub const fn value(self) -> u32 {
        self.0
    }
    /// The next MSN, wrapping at 2^24.
    pub const fn next(self) -> Self {
        Msn::new(self.0.wrapping_add(1))
    }
}

/// NAK codes carried in the low five bits of a NAK syndrome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum NakCode {
    /// PSN sequence error: the responder expects an earlier PSN.
    PsnSeqError = 0,
    /// Invalid request (bad opcode sequence, length or unsupported op).
    InvalidRequest = 1,
    /// Remote access error (R_Key or bounds violation).
    RemoteAccessError = 2,
    /// Remote operational error.
    RemoteOpError = 3,
    /// Invalid RD request.
    InvalidRdRequest = 4,
}

impl NakCode {
    /// Decode a 5-bit NAK code.
    pub const fn from_u8(v: u8) -> Option<Self> {
        match v {
            0 => Some(NakCode::PsnSeqError),
            1 => Some(NakCode::InvalidRequest),
            2 => Some(NakCode::RemoteAccessError),
            3 => Some(NakCode::RemoteOpError),
            4 => Some(NakCode::InvalidRdRequest),
            _ => None,
        }
    }
}

/// Encoded end-to-end credit count (the 5-bit field of an ACK syndrome).
///
/// Code 31 means "unlimited / credits not in use"; the other codes map to
/// a logarithmic table of counts (0, 1, 2, 3, 4, 6, 8, 12, ... 32768).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Credits(u8);

const CREDIT_TABLE: [u32; 31] = [
    0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
];

impl Credits {
    /// The "unlimited credits" code.
    pub const UNLIMITED: Credits = Credits(31);

    /// Build from a raw 5-bit code (upper bits ignored).
    pub const fn from_code(code: u8) -> Self {
        Credits(code & 0x1f)
    }
    /// The raw 5-bit code.
    pub const fn code(self) -> u8 {
        self.0
    }
    /// Number of receive WQEs advertised, or `None` for unlimited.
    pub fn count(self) -> Option<u32> {
        CREDIT_TABLE.get(usize::from(self.0)).copied()
    }
    /// Largest encodable count that does not exceed `n`.
    pub fn from_count(n: u32) -> Self {
        let mut code = 0u8;
        for (i, &c) in CREDIT_TABLE.iter().enumerate() {
            if c <= n {
                code = u8::try_from(i).unwrap_or(0);
            }
        }
        Credits(code)
    }
}

/// RNR NAK timer values in microseconds, indexed by the 5-bit timer code
/// (IB spec table "Encoding for RNR NAK Timer Field"; code 0 is the longest).
pub const RNR_TIMER_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

/// Microseconds for a 5-bit RNR timer code (upper bits ignored).
pub fn rnr_timer_us(code: u8) -> u32 {
    RNR_TIMER_US
        .get(usize::from(code & 0x1f))
        .copied()
        .unwrap_or(0)
}

/// The decoded AETH syndrome byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// Positive acknowledgement with an end-to-end credit count.
    Ack(Credits),
    /// Receiver not ready: retry after the given 5-bit timer code.
    RnrNak(u8),
    /// Negative acknowledgement.
    Nak(NakCode),
}

impl Syndrome {
    /// Decode a syndrome byte; reserved encodings are rejected.
    pub const fn from_u8(v: u8) -> Result<Self, ParseError> {
        let low = v & 0x1f;
        match v >> 5 {
            0 => Ok(Syndrome::Ack(Credits::from_code(low))),
            1 => Ok(Syndrome::RnrNak(low)),
            3 => match NakCode::from_u8(low) {
                Some(c) => Ok(Syndrome::Nak(c)),
                None => Err(ParseError::BadSyndrome),
            },
            _ => Err(ParseError::BadSyndrome),
        }
    }

    /// Encode to the syndrome byte.
    pub const fn to_u8(self) -> u8 {
        match self {
            Syndrome::Ack(c) => c.code(),
            Syndrome::RnrNak(t) => 0x20 | (t & 0x1f),
            Syndrome::Nak(c) => 0x60 | c as u8,
        }
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn psn_wraps() {
        let p = Psn::new(0xff_fffe);
        assert_eq!(p.add(3), Psn::new(1));
        assert_eq!(Psn::new(1).sub(3), p);
        assert_eq!(Psn::new(1).diff(p), 3);
        assert_eq!(p.diff(Psn::new(1)), -3);
        assert!(p.before(Psn::new(1)));
        assert!(Psn::new(1).after(p));
        assert_eq!(Psn::new(1).since(p), 3);
        assert_eq!(Psn::new(0x1234_5678).value(), 0x34_5678);
    }

    #[test]
    fn psn_half_window() {
        let a = Psn::new(0);
        assert_eq!(a.add(Psn::HALF_WINDOW - 1).diff(a), (1 << 23) - 1);
        assert_eq!(a.add(Psn::HALF_WINDOW).diff(a), -(1 << 23));
    }

    #[test]
    fn syndromes_roundtrip() {
        for v in 0..=255u8 {
            if let Ok(s) = Syndrome::from_u8(v) {
                assert_eq!(s.to_u8(), v);
            }
        }
        assert_eq!(
            Syndrome::from_u8(0x1f),
            Ok(Syndrome::Ack(Credits::UNLIMITED))
        );
        assert_eq!(
            Syndrome::from_u8(0x60),
            Ok(Syndrome::Nak(NakCode::PsnSeqError))
        );
        assert_eq!(
            Syndrome::from_u8(0x62),
            Ok(Syndrome::Nak(NakCode::RemoteAccessError))
        );
        assert_eq!(Syndrome::from_u8(0x40), Err(ParseError::BadSyndrome));
        assert_eq!(Syndrome::from_u8(0x65), Err(ParseError::BadSyndrome));
    }

    #[test]
    fn credits() {
        assert_eq!(Credits::from_code(31).count(), None);
        assert_eq!(Credits::from_code(5).count(), Some(6));
        assert_eq!(Credits::from_count(7).count(), Some(6));
        assert_eq!(Credits::from_count(100_000).count(), Some(32768));
        assert_eq!(Credits::from_count(0).code(), 0);
    }

    #[test]
    fn rnr_table() {
        assert_eq!(rnr_timer_us(0), 655_360);
        assert_eq!(rnr_timer_us(1), 10);
        assert_eq!(rnr_timer_us(14), 1_280);
        assert_eq!(rnr_timer_us(31), 491_520);
        assert_eq!(rnr_timer_us(0xff), 491_520);
    }
}
