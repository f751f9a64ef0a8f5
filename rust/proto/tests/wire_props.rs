//! Property tests for the wire formats: parse(emit(repr)) == repr, and the
//! parser never panics on arbitrary input.

use proptest::prelude::*;
use rrxe_proto::opcode::{mask, OPCODES};
use rrxe_proto::*;

fn psn() -> impl Strategy<Value = Psn> {
    any::<u32>().prop_map(Psn::new)
}

fn syndrome() -> impl Strategy<Value = Syndrome> {
    prop_oneof![
        (0u8..32).prop_map(|c| Syndrome::Ack(Credits::from_code(c))),
        (0u8..32).prop_map(Syndrome::RnrNak),
        (0u8..5).prop_map(|c| Syndrome::Nak(NakCode::from_u8(c).unwrap())),
    ]
}

fn bth() -> impl Strategy<Value = BthRepr> {
    (
        any::<u8>(),
        any::<[bool; 5]>(),
        0u8..4,
        any::<u16>(),
        0u32..(1 << 24),
        psn(),
    )
        .prop_map(|(opcode, f, pad_count, pkey, dest_qpn, psn)| BthRepr {
            opcode,
            solicited: f[0],
            mig_req: f[1],
            pad_count,
            pkey,
            fecn: f[2],
            becn: f[3],
            dest_qpn,
            ack_req: f[4],
            psn,
        })
}

fn roundtrip<R: HeaderRepr + PartialEq + std::fmt::Debug>(r: R) {
    let mut buf = vec![0u8; r.buffer_len()];
    r.emit(&mut buf).unwrap();
    assert_eq!(R::parse(&buf).unwrap(), r);
    assert!(R::parse(&buf[..R::LEN - 1]).is_err());
}

/// Headers for a random opcode from the table, with matching extensions.
fn headers() -> impl Strategy<Value = (Headers, Vec<u8>)> {
    (
        0..OPCODES.len(),
        bth(),
        any::<(u64, u32, u32)>(),
        any::<(u64, u32, u64, u64)>(),
        syndrome(),
        any::<(u32, u32, u32, u64, u32)>(),
        proptest::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(|(i, mut bth, reth, atm, syn, misc, payload)| {
            let info = &OPCODES[i];
            bth.opcode = info.opcode;
            let mut h = Headers::new(bth);
            let has = |m| info.mask & m != 0;
            if has(mask::RETH) {
                h.reth = Some(RethRepr {
                    va: reth.0,
                    rkey: reth.1,
                    len: reth.2,
                });
            }
            if has(mask::ATMETH) {
                h.atomic = Some(AtomicEthRepr {
                    va: atm.0,
                    rkey: atm.1,
                    swap_add: atm.2,
                    compare: atm.3,
                });
            }
            if has(mask::AETH) {
                h.aeth = Some(AethRepr {
                    syndrome: syn,
                    msn: Msn::new(misc.0),
                });
            }
            if has(mask::DETH) {
                h.deth = Some(DethRepr {
                    qkey: misc.1,
                    src_qpn: misc.2 & 0xff_ffff,
                });
            }
            if has(mask::ATMACK) {
                h.atomic_ack = Some(misc.3);
            }
            if has(mask::IMMDT) {
                h.imm = Some(misc.4);
            }
            if has(mask::IETH) {
                h.ieth = Some(misc.0);
            }
            if has(mask::FETH) {
                let [.., a, b] = misc.1.to_be_bytes();
                h.feth = Some(FethRepr {
                    placement: a & 0xf,
                    selectivity: b & 3,
                });
            }
            let payload = if has(mask::PAYLOAD) {
                payload
            } else {
                Vec::new()
            };
            (h, payload)
        })
}

proptest! {
    #[test]
    fn bth_roundtrip(b in bth()) { roundtrip(b) }

    #[test]
    fn ext_roundtrip(r in any::<(u64, u32, u32, u64, u64)>(), s in syndrome()) {
        roundtrip(RethRepr { va: r.0, rkey: r.1, len: r.2 });
        roundtrip(AtomicEthRepr { va: r.0, rkey: r.1, swap_add: r.3, compare: r.4 });
        roundtrip(AethRepr { syndrome: s, msn: Msn::new(r.2) });
        roundtrip(DethRepr { qkey: r.1, src_qpn: r.2 & 0xff_ffff });
        roundtrip(headers::AtomicAckRepr(r.3));
        roundtrip(ImmDtRepr(r.1));
        roundtrip(IethRepr(r.2));
        roundtrip(FethRepr { placement: (r.1 & 0xf) as u8, selectivity: (r.2 & 3) as u8 });
    }

    #[test]
    fn packet_roundtrip((h, payload) in headers()) {
        let len = h.packet_len(payload.len()).unwrap();
        let mut buf = vec![0x5au8; len + 7];
        let off = h.emit(&mut buf, payload.len()).unwrap();
        buf[off..off + payload.len()].copy_from_slice(&payload);
        let p = parse(&buf[..len]).unwrap();
        let mut expect = h;
        expect.bth.pad_count = ((4 - payload.len() % 4) % 4) as u8;
        prop_assert_eq!(p.hdr, expect);
        prop_assert!(p.payload == payload[..]);
        prop_assert_eq!(p.info.opcode, h.bth.opcode);
        // Any strict prefix is rejected (never accepted as a shorter packet
        // with the same headers and payload).
        for cut in [1usize, 4, 5] {
            if cut <= len {
                if let Ok(q) = parse(&buf[..len - cut]) {
                    prop_assert!(q.payload.len() < payload.len());
                }
            }
        }
    }

    /// A packet cut into pieces anywhere (as a received skb's fragments)
    /// parses and verifies exactly as the whole buffer does.
    #[test]
    fn pieces_parse_and_verify_as_one(
        (h, payload) in headers(),
        cuts in proptest::collection::vec(any::<usize>(), 0..4),
        ip in proptest::array::uniform20(any::<u8>()),
    ) {
        let len = h.packet_len(payload.len()).unwrap();
        let mut pkt = vec![0u8; 28 + len];
        pkt[0] = 0x45;
        pkt[1..20].copy_from_slice(&ip[1..]);
        pkt[2..4].copy_from_slice(&((28 + len) as u16).to_be_bytes());
        let off = h.emit(&mut pkt[28..], payload.len()).unwrap() + 28;
        pkt[off..off + payload.len()].copy_from_slice(&payload);
        icrc::fill_ip_packet(&mut SoftCrc32, &mut pkt).unwrap();
        let udp_payload = &pkt[28..];
        let mut at: Vec<usize> = cuts.iter().map(|c| c % (len + 1)).collect();
        at.sort();
        let mut pieces: Vec<&[u8]> = Vec::new();
        let mut prev = 0;
        for c in at.into_iter().chain([len]) {
            pieces.push(&udp_payload[prev..c]);
            prev = c;
        }
        let whole = parse(udp_payload).unwrap();
        let rest: Vec<Piece<'_>> = pieces[1..].iter().map(|&p| Piece::Bytes(p)).collect();
        let cut = Payload::from_pieces(pieces[0], &rest);
        let p = parse_payload(cut).unwrap();
        prop_assert_eq!(p.hdr, whole.hdr);
        prop_assert!(p.payload == whole.payload);
        prop_assert_eq!(p.icrc, whole.icrc);
        let v4 = icrc::IpHeader::V4(&pkt[..20]);
        prop_assert!(icrc::verify_payload(&mut SoftCrc32, v4, &pkt[20..28], &cut).is_ok());
        let mut bad = pkt.clone();
        let i = 28 + 12 + (len - 16) / 2;
        bad[i] ^= 1;
        let bad_payload = Payload::from_slice(&bad[28..]);
        let v4 = icrc::IpHeader::V4(&bad[..20]);
        prop_assert!(icrc::verify_payload(&mut SoftCrc32, v4, &bad[20..28], &bad_payload).is_err());
    }

    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse(&bytes);
        let _ = icrc::verify_ip_packet(&mut SoftCrc32, &bytes);
    }

    #[test]
    fn parse_never_panics_on_valid_opcodes(
        i in 0..OPCODES.len(),
        mut bytes in proptest::collection::vec(any::<u8>(), 1..120),
    ) {
        bytes[0] = OPCODES[i].opcode;
        if let Ok(p) = parse(&bytes) {
            prop_assert!(p.payload.len() + p.info.hdr_len + 4 <= bytes.len());
        }
    }
}
