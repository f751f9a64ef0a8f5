// SPDX-License-Identifier: GPL-2.0

//! Packets whose payload lies in memory that others may write (a local
//! packet sent by reference from its sender's user pages): the core parses
//! them from their readable headers and trailer, never reads the shared
//! bytes, and hands them to the memory's `write_shared` to be copied.

use rrxe_proto::opcode::rc;
use rrxe_proto::*;

/// A memory that records what it is asked to write.
#[derive(Default)]
struct Recorder {
    bytes: Vec<(u64, Vec<u8>)>,
    shared: Vec<(u64, SharedRange)>,
}

impl MemoryAccess for Recorder {
    fn check(&mut self, _: u32, _: u64, _: u32, _: Access) -> Result<(), MemError> {
        Ok(())
    }
    fn read(&mut self, _: u32, _: u64, _: &mut [u8], _: Access) -> Result<(), MemError> {
        Err(MemError::AccessDenied)
    }
    fn write(&mut self, _: u32, va: u64, data: &[u8], _: Access) -> Result<(), MemError> {
        self.bytes.push((va, data.to_vec()));
        Ok(())
    }
    fn write_shared(
        &mut self,
        _: u32,
        va: u64,
        range: SharedRange,
        _: Access,
    ) -> Result<(), MemError> {
        self.shared.push((va, range));
        Ok(())
    }
    fn atomic(&mut self, _: u32, _: u64, _: AtomicOp) -> Result<u64, MemError> {
        Err(MemError::AccessDenied)
    }
}

/// A memory that leaves `write_shared` to the trait's default.
struct Plain;

impl MemoryAccess for Plain {
    fn check(&mut self, _: u32, _: u64, _: u32, _: Access) -> Result<(), MemError> {
        Ok(())
    }
    fn read(&mut self, _: u32, _: u64, _: &mut [u8], _: Access) -> Result<(), MemError> {
        Ok(())
    }
    fn write(&mut self, _: u32, _: u64, _: &[u8], _: Access) -> Result<(), MemError> {
        Ok(())
    }
    fn atomic(&mut self, _: u32, _: u64, _: AtomicOp) -> Result<u64, MemError> {
        Ok(0)
    }
}

/// An RDMA WRITE ONLY of `len` bytes to `va`, built as the driver builds
/// one sent by reference: the headers in the packet, the payload in
/// fragment 0 (shared), the pad and ICRC in fragment 1 (zeros).
fn write_only(len: usize, va: u64) -> (Vec<u8>, Vec<u8>) {
    let mut h = Headers::new(BthRepr {
        opcode: rc::RDMA_WRITE_ONLY,
        dest_qpn: 0x11,
        ..Default::default()
    });
    h.reth = Some(RethRepr {
        va,
        rkey: 0x1234,
        len: len as u32,
    });
    let total = h.packet_len(len).unwrap();
    let mut buf = vec![0u8; total];
    let head = h.emit(&mut buf, len).unwrap();
    let tail = buf[head + len..].to_vec();
    buf.truncate(head);
    (buf, tail)
}

#[test]
fn parsed_without_reading_the_shared_bytes() {
    let (head, tail) = write_only(10, 0x5000);
    assert_eq!(tail.len(), 2 + 4, "pad and ICRC");
    let rest = [Piece::Shared { index: 0, len: 10 }, Piece::Bytes(&tail)];
    let udp_payload = Payload::from_pieces(&head, &rest);
    let p = parse_payload(udp_payload).unwrap();
    assert_eq!(p.hdr.reth.unwrap().va, 0x5000);
    assert_eq!(p.payload.len(), 10);
    let chunks: Vec<Chunk<'_>> = p.payload.chunks().collect();
    assert_eq!(
        chunks,
        [Chunk::Shared(SharedRange {
            index: 0,
            off: 0,
            len: 10
        })]
    );
    // No CRC over bytes that may change (a local packet has none checked).
    let ip = [0x45u8; 20];
    let v4 = IpHeader::V4(&ip);
    assert_eq!(
        icrc::verify_payload(&mut SoftCrc32, v4, &[0u8; 8], &udp_payload),
        Err(IcrcError::Shared)
    );
}

#[test]
fn shared_bytes_go_to_write_shared() {
    // 3 readable bytes, 5 shared (fragment 2, from its byte 1), 2 readable.
    let rest = [Piece::Shared { index: 2, len: 6 }, Piece::Bytes(b"yz")];
    let all = Payload::from_pieces(b"abc", &rest);
    let data = all.sub(0, 3).unwrap();
    let mut m = Recorder::default();
    m.write_payload(7, 0x100, &data, Access::RemoteWrite)
        .unwrap();
    assert_eq!(m.bytes, [(0x100, b"abc".to_vec())]);
    assert!(m.shared.is_empty());

    let data = all.sub(1, 10).unwrap();
    let mut m = Recorder::default();
    m.write_payload(7, 0x100, &data, Access::RemoteWrite)
        .unwrap();
    assert_eq!(m.bytes, [(0x100, b"bc".to_vec()), (0x108, b"yz".to_vec())]);
    assert_eq!(
        m.shared,
        [(
            0x102,
            SharedRange {
                index: 2,
                off: 0,
                len: 6
            }
        )]
    );

    let data = all.sub(4, 3).unwrap();
    let mut m = Recorder::default();
    m.write_payload(7, 0x100, &data, Access::RemoteWrite)
        .unwrap();
    assert!(m.bytes.is_empty());
    assert_eq!(
        m.shared,
        [(
            0x100,
            SharedRange {
                index: 2,
                off: 1,
                len: 3
            }
        )]
    );
}

#[test]
fn a_memory_that_cannot_read_shared_bytes_refuses_them() {
    let rest = [Piece::Shared { index: 0, len: 4 }];
    let data = Payload::from_pieces(b"ab", &rest);
    assert_eq!(
        Plain.write_payload(1, 0, &data, Access::LocalWrite),
        Err(MemError::OutOfRange)
    );
    let readable = data.sub(0, 2).unwrap();
    assert_eq!(
        Plain.write_payload(1, 0, &readable, Access::LocalWrite),
        Ok(())
    );
}
