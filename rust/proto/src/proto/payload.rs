//! The bytes of a packet, which a received packet may hold in several
//! pieces (its linear area and page fragments): the state machines read
//! them where they are, without gathering them into one buffer first.
//!
//! A piece may also be memory that others can write while the packet
//! lives: a local packet's payload sent by reference from its sender's
//! user pages ([`Piece::Shared`]). Such bytes are never handed out as a
//! slice, which would promise that they do not change: the core only
//! measures them and passes them on to [`crate::proto::MemoryAccess`],
//! and the driver that made the packet copies them.

/// One piece of a packet's bytes.
#[derive(Debug, Clone, Copy)]
pub enum Piece<'a> {
    /// Bytes only the packet holds.
    Bytes(&'a [u8]),
    /// `len` bytes that others may write at any time: the packet's
    /// fragment `index`, which only the driver that made the packet reads.
    Shared {
        /// Which of the packet's fragments.
        index: usize,
        /// Its length.
        len: usize,
    },
}

impl Piece<'_> {
    /// Number of bytes.
    pub fn len(&self) -> usize {
        match self {
            Piece::Bytes(b) => b.len(),
            Piece::Shared { len, .. } => *len,
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A range of the bytes of one shared piece ([`Piece::Shared`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedRange {
    /// The packet's fragment.
    pub index: usize,
    /// Offset of the range in the fragment.
    pub off: usize,
    /// Bytes in the range.
    pub len: usize,
}

/// A contiguous part of a [`Payload`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk<'a> {
    /// Bytes the core may read.
    Bytes(&'a [u8]),
    /// Bytes of a shared piece, which the core passes on unread.
    Shared(SharedRange),
}

impl Chunk<'_> {
    /// Number of bytes.
    pub fn len(&self) -> usize {
        match self {
            Chunk::Bytes(b) => b.len(),
            Chunk::Shared(r) => r.len,
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A range of bytes that lies in one or more contiguous pieces, in order.
#[derive(Debug, Clone, Copy)]
pub struct Payload<'a> {
    first: &'a [u8],
    rest: &'a [Piece<'a>],
    /// Bytes of the pieces before the range.
    skip: usize,
    /// Bytes in the range.
    len: usize,
}

impl<'a> Payload<'a> {
    /// All of `bytes`.
    pub const fn from_slice(bytes: &'a [u8]) -> Self {
        Payload {
            first: bytes,
            rest: &[],
            skip: 0,
            len: bytes.len(),
        }
    }

    /// All the bytes of `first` followed by those of `rest`.
    pub fn from_pieces(first: &'a [u8], rest: &'a [Piece<'a>]) -> Self {
        let len = rest
            .iter()
            .fold(first.len(), |n, p| n.saturating_add(p.len()));
        Payload {
            first,
            rest,
            skip: 0,
            len,
        }
    }

    /// An empty range.
    pub const fn empty() -> Self {
        Self::from_slice(&[])
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `len` bytes at `off`, or `None` if they are not all there.
    pub fn sub(&self, off: usize, len: usize) -> Option<Self> {
        let end = off.checked_add(len)?;
        if end > self.len {
            return None;
        }
        Some(Payload {
            skip: self.skip.checked_add(off)?,
            len,
            ..*self
        })
    }

    /// The contiguous chunks of the range, in order.
    pub fn chunks(&self) -> impl Iterator<Item = Chunk<'a>> + 'a {
        let mut skip = self.skip;
        let mut left = self.len;
        core::iter::once(Piece::Bytes(self.first))
            .chain(self.rest.iter().copied())
            .filter_map(move |piece| {
                if left == 0 {
                    return None;
                }
                let plen = piece.len();
                if skip >= plen {
                    skip = skip.saturating_sub(plen);
                    return None;
                }
                let take = plen.saturating_sub(skip).min(left);
                let chunk = match piece {
                    Piece::Bytes(b) => Chunk::Bytes(b.get(skip..skip.saturating_add(take))?),
                    Piece::Shared { index, .. } => Chunk::Shared(SharedRange {
                        index,
                        off: skip,
                        len: take,
                    }),
                };
                skip = 0;
                left = left.saturating_sub(take);
                Some(chunk)
            })
    }

    /// The chunks of the range as slices, or `None` if one of them is
    /// shared (and so not for the core to read).
    fn readable_chunks(&self) -> Option<impl Iterator<Item = &'a [u8]> + 'a> {
        if self.chunks().any(|c| matches!(c, Chunk::Shared(_))) {
            return None;
        }
        Some(self.chunks().filter_map(|c| match c {
            Chunk::Bytes(b) => Some(b),
            Chunk::Shared(_) => None,
        }))
    }

    /// The bytes of the range, or `None` if any of them is shared.
    pub fn bytes(&self) -> Option<impl Iterator<Item = u8> + 'a> {
        Some(self.readable_chunks()?.flat_map(|c| c.iter().copied()))
    }

    /// The range as one slice, if it lies in one piece the core may read.
    pub fn as_slice(&self) -> Option<&'a [u8]> {
        let mut chunks = self.chunks();
        match (chunks.next(), chunks.next()) {
            (None, _) => Some(&[]),
            (Some(Chunk::Bytes(c)), None) => Some(c),
            _ => None,
        }
    }

    /// Copies the range into `out`, which must be exactly as long; `false`
    /// (and `out` partly written) if it is not or a byte is shared.
    pub fn copy_to(&self, out: &mut [u8]) -> bool {
        if out.len() != self.len {
            return false;
        }
        let mut at = 0usize;
        for c in self.chunks() {
            let Chunk::Bytes(c) = c else {
                return false;
            };
            // Exactly `c.len()` bytes by construction, so the copy has no
            // length-mismatch panic path.
            match out.get_mut(at..).and_then(|o| o.get_mut(..c.len())) {
                Some(d) => d.copy_from_slice(c),
                None => return false,
            }
            at = at.saturating_add(c.len());
        }
        at == self.len
    }
}

/// Equal if every byte is readable and the same: a shared byte equals
/// nothing, as the core cannot know what it holds.
impl PartialEq<[u8]> for Payload<'_> {
    fn eq(&self, other: &[u8]) -> bool {
        if self.len != other.len() {
            return false;
        }
        let Some(chunks) = self.readable_chunks() else {
            return false;
        };
        let mut at = 0usize;
        for c in chunks {
            let end = at.saturating_add(c.len());
            if other.get(at..end) != Some(c) {
                return false;
            }
            at = end;
        }
        true
    }
}

/// Equal if they hold the same bytes; a payload with shared bytes (which
/// the core cannot read) only equals one cut into the same chunks, with
/// the same shared ranges.
impl PartialEq for Payload<'_> {
    fn eq(&self, other: &Payload<'_>) -> bool {
        if self.len != other.len {
            return false;
        }
        let (Some(mut a), Some(mut b)) = (self.bytes(), other.bytes()) else {
            return self.chunks().eq(other.chunks());
        };
        // Compare byte by byte across differently cut pieces.
        loop {
            match (a.next(), b.next()) {
                (None, None) => return true,
                (Some(x), Some(y)) if x == y => {}
                _ => return false,
            }
        }
    }
}

impl Eq for Payload<'_> {}

#[cfg(test)]
mod tests {
    use super::{Chunk, Payload, Piece, SharedRange};

    #[test]
    fn pieces_and_ranges() {
        let rest = [Piece::Bytes(b"def"), Piece::Bytes(b"ghij")];
        let p = Payload::from_pieces(b"abc", &rest);
        assert_eq!(p.len(), 10);
        assert!(p == *b"abcdefghij".as_slice());
        let s = p.sub(2, 5).unwrap();
        assert!(s == *b"cdefg".as_slice());
        assert_eq!(s.chunks().count(), 3);
        assert_eq!(s.as_slice(), None);
        assert_eq!(p.sub(4, 2).unwrap().as_slice(), Some(&b"ef"[..]));
        assert!(p.sub(9, 2).is_none());
        let mut out = [0u8; 5];
        assert!(s.copy_to(&mut out));
        assert_eq!(&out, b"cdefg");
        assert!(s == Payload::from_slice(b"cdefg"));
        assert!(Payload::empty().is_empty());
    }

    #[test]
    fn shared_pieces_are_measured_never_read() {
        // "abc", 4 shared bytes (fragment 1), "xy".
        let rest = [Piece::Shared { index: 1, len: 4 }, Piece::Bytes(b"xy")];
        let p = Payload::from_pieces(b"abc", &rest);
        assert_eq!(p.len(), 9);
        let s = p.sub(2, 4).unwrap();
        let mut chunks = s.chunks();
        assert_eq!(chunks.next(), Some(Chunk::Bytes(b"c")));
        assert_eq!(
            chunks.next(),
            Some(Chunk::Shared(SharedRange {
                index: 1,
                off: 0,
                len: 3
            }))
        );
        assert_eq!(chunks.next(), None);
        // Nothing of it reads as bytes: not a copy, a slice or a comparison.
        let mut out = [0u8; 4];
        assert!(!s.copy_to(&mut out));
        assert!(s.bytes().is_none());
        assert_eq!(p.sub(4, 1).unwrap().as_slice(), None);
        assert!(s != *b"cxxx".as_slice());
        // The readable parts around it still are.
        assert_eq!(p.sub(0, 3).unwrap().as_slice(), Some(&b"abc"[..]));
        assert!(p.sub(7, 2).unwrap() == *b"xy".as_slice());
        // A shared payload equals itself (the same ranges) and no other.
        assert!(s == s);
        assert!(s != p.sub(1, 4).unwrap());
    }
}
