//! Byte-level helpers and the macros that generate the typed header views.
//!
//! Every accessor goes through `get`/`get_mut`, so a view over a buffer that
//! is too short reads zeros and ignores writes instead of panicking. Use the
//! `new_checked` constructors to reject short buffers up front.

use crate::proto::ParseError;

/// A big-endian integer that can be read from or written to a byte slice.
pub(crate) trait BeField: Sized + Copy {
    /// Read the value at `off`, or zero if the slice is too short.
    fn read(b: &[u8], off: usize) -> Self;
    /// Write the value at `off`; does nothing if the slice is too short.
    fn write(self, b: &mut [u8], off: usize);
}

macro_rules! be_field {
    ($($ty:ty),*) => {$(
        impl BeField for $ty {
            #[inline]
            fn read(b: &[u8], off: usize) -> Self {
                const N: usize = core::mem::size_of::<$ty>();
                b.get(off..off.wrapping_add(N))
                    .and_then(|s| <[u8; N]>::try_from(s).ok())
                    .map_or(0, <$ty>::from_be_bytes)
            }
            #[inline]
            fn write(self, b: &mut [u8], off: usize) {
                const N: usize = core::mem::size_of::<$ty>();
                if let Some(s) = b.get_mut(off..off.wrapping_add(N)) {
                    s.copy_from_slice(&self.to_be_bytes());
                }
            }
        }
    )*};
}
be_field!(u8, u16, u32, u64);

/// Read a 24-bit big-endian value at `off` (zero if short).
#[inline]
pub(crate) fn read_be24(b: &[u8], off: usize) -> u32 {
    b.get(off..off.wrapping_add(3))
        .and_then(|s| <[u8; 3]>::try_from(s).ok())
        .map_or(0, |[x, y, z]| u32::from_be_bytes([0, x, y, z]))
}

/// Write the low 24 bits of `v` big-endian at `off`.
#[inline]
pub(crate) fn write_be24(b: &mut [u8], off: usize, v: u32) {
    let bytes = v.to_be_bytes();
    if let Some(s) = b.get_mut(off..off.wrapping_add(3)) {
        for (d, s) in s.iter_mut().zip(bytes.iter().skip(1)) {
            *d = *s;
        }
    }
}

/// Read a single bit (7 = most significant) of the byte at `off`.
#[inline]
pub(crate) fn read_bit(b: &[u8], off: usize, bit: u32) -> bool {
    u8::read(b, off) >> bit & 1 == 1
}

/// Replace the bits selected by `mask` in the byte at `off` with `v & mask`.
#[inline]
pub(crate) fn write_bits(b: &mut [u8], off: usize, mask: u8, v: u8) {
    if let Some(x) = b.get_mut(off) {
        *x = (*x & !mask) | (v & mask);
    }
}

/// Check that `len` bytes are available in `buf`.
#[inline]
pub(crate) fn check_len(buf: &[u8], len: usize) -> Result<(), ParseError> {
    if buf.len() < len {
        Err(ParseError::Truncated)
    } else {
        Ok(())
    }
}

/// Declare a fixed-length header view `$name<T>` over a byte buffer.
macro_rules! header_view {
    ($(#[$m:meta])* $name:ident, $len:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Length of this header on the wire, in bytes.
            pub const LEN: usize = $len;

            /// Wrap `buffer` without checking its length. Accessors on a
            /// short buffer read zero and ignore writes.
            pub const fn new_unchecked(buffer: T) -> Self {
                Self { buffer }
            }

            /// Wrap `buffer` after checking it holds at least [`Self::LEN`] bytes.
            pub fn new_checked(buffer: T) -> Result<Self, crate::proto::ParseError> {
                crate::proto::wire::check_len(buffer.as_ref(), $len)?;
                Ok(Self { buffer })
            }

            /// Give back the underlying buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }
        }
    };
}

/// Generate plain big-endian getters and setters for a header view.
macro_rules! header_fields {
    ($view:ident { $( $(#[$doc:meta])* $get:ident / $set:ident : $ty:ty = $off:expr; )* }) => {
        impl<T: AsRef<[u8]>> $view<T> {
            $(
                $(#[$doc])*
                #[inline]
                pub fn $get(&self) -> $ty {
                    <$ty as crate::proto::wire::BeField>::read(self.buffer.as_ref(), $off)
                }
            )*
        }
        impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
            $(
                #[doc = concat!("Set the field read by [`Self::", stringify!($get), "`].")]
                #[inline]
                pub fn $set(&mut self, value: $ty) {
                    crate::proto::wire::BeField::write(value, self.buffer.as_mut(), $off)
                }
            )*
        }
    };
}

/// Generate getters and setters for 24-bit big-endian fields.
macro_rules! header_fields24 {
    ($view:ident { $( $(#[$doc:meta])* $get:ident / $set:ident = $off:expr; )* }) => {
        impl<T: AsRef<[u8]>> $view<T> {
            $(
                $(#[$doc])*
                #[inline]
                pub fn $get(&self) -> u32 {
                    crate::proto::wire::read_be24(self.buffer.as_ref(), $off)
                }
            )*
        }
        impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
            $(
                #[doc = concat!("Set the 24-bit field read by [`Self::", stringify!($get), "`].")]
                #[inline]
                pub fn $set(&mut self, value: u32) {
                    crate::proto::wire::write_be24(self.buffer.as_mut(), $off, value)
                }
            )*
        }
    };
}

/// A fixed-size header with a high-level representation.
pub trait HeaderRepr: Sized {
    /// Length of the header on the wire.
    const LEN: usize;
    /// Parse the header from the start of `buf`.
    fn parse(buf: &[u8]) -> Result<Self, ParseError>;
    /// Write the header to the start of `buf`.
    fn emit(&self, buf: &mut [u8]) -> Result<(), ParseError>;
    /// Bytes needed by [`HeaderRepr::emit`].
    fn buffer_len(&self) -> usize {
        Self::LEN
    }
}
