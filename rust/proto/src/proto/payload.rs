//! The bytes of a packet, which a received packet may hold in several
//! pieces (its linear area and page fragments): the state machines read
//! them where they are, without gathering them into one buffer first.

/// A range of bytes that lies in one or more contiguous pieces, in order.
#[derive(Debug, Clone, Copy)]
pub struct Payload<'a> {
    first: &'a [u8],
    rest: &'a [&'a [u8]],
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
    pub fn from_pieces(first: &'a [u8], rest: &'a [&'a [u8]]) -> Self {
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
    pub fn chunks(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let mut skip = self.skip;
        let mut left = self.len;
        core::iter::once(self.first)
            .chain(self.rest.iter().copied())
            .filter_map(move |piece| {
                if left == 0 {
                    return None;
                }
                if skip >= piece.len() {
                    skip = skip.saturating_sub(piece.len());
                    return None;
                }
                let take = piece.len().saturating_sub(skip).min(left);
                let chunk = piece.get(skip..skip.saturating_add(take));
                skip = 0;
                left = left.saturating_sub(take);
                chunk
            })
    }

    /// The range as one slice, if it lies in one piece.
    pub fn as_slice(&self) -> Option<&'a [u8]> {
        let mut chunks = self.chunks();
        match (chunks.next(), chunks.next()) {
            (None, _) => Some(&[]),
            (Some(c), None) => Some(c),
            _ => None,
        }
    }

    /// Copies the range into `out`, which must be exactly as long.
    pub fn copy_to(&self, out: &mut [u8]) -> bool {
        if out.len() != self.len {
            return false;
        }
        let mut at = 0usize;
        for c in self.chunks() {
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

impl PartialEq<[u8]> for Payload<'_> {
    fn eq(&self, other: &[u8]) -> bool {
        if self.len != other.len() {
            return false;
        }
        let mut at = 0usize;
        self.chunks().all(|c| {
            let end = at.saturating_add(c.len());
            let same = other.get(at..end) == Some(c);
            at = end;
            same
        })
    }
}

impl PartialEq for Payload<'_> {
    fn eq(&self, other: &Payload<'_>) -> bool {
        if self.len != other.len {
            return false;
        }
        // Compare byte by byte across differently cut pieces.
        let mut a = self.chunks().flat_map(|c| c.iter());
        let mut b = other.chunks().flat_map(|c| c.iter());
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
    use super::Payload;

    #[test]
    fn pieces_and_ranges() {
        let rest: [&[u8]; 2] = [b"def", b"ghij"];
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
}
