//! Known-answer tests: every packet in tests/fixtures/*.hex must carry a
//! valid ICRC, and every packet with a known opcode must parse.

use rrxe_proto::icrc::{self, Crc32, IcrcError};
use rrxe_proto::{parse, SoftCrc32};
use std::path::PathBuf;

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).expect("fixtures dir") {
        let path = e.expect("entry").path();
        if path.extension().and_then(|s| s.to_str()) != Some("hex") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read fixture");
        let hex: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .flat_map(|l| l.chars().filter(|c| !c.is_whitespace()))
            .collect();
        assert!(
            hex.len().is_multiple_of(2),
            "{}: odd number of hex digits",
            path.display()
        );
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex digit"))
            .collect();
        out.push((
            path.file_name().unwrap().to_string_lossy().into_owned(),
            bytes,
        ));
    }
    out.sort();
    out
}

/// crc32fast adapted to the raw `crc32_le` semantics of [`Crc32`].
fn crc32fast_raw(crc: u32, data: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(!crc);
    h.update(data);
    !h.finalize()
}

#[test]
fn fixtures_icrc_and_parse() {
    let all = fixtures();
    assert!(all.len() >= 5, "expected the bundled fixtures");
    for (name, pkt) in &all {
        icrc::verify_ip_packet(&mut SoftCrc32, pkt).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let mut engine = crc32fast_raw;
        icrc::verify_ip_packet(&mut engine, pkt).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let (_, _, udp_payload) = icrc::split_ip_packet(pkt).unwrap();
        if rrxe_proto::opcode_info(udp_payload[0]).is_some() {
            let p = parse(udp_payload).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            assert_eq!(&p.icrc[..], &pkt[pkt.len() - 4..]);
        }
        // Flipping any single bit outside the masked fields must break it.
        let mut bad = pkt.clone();
        let last = bad.len() - 5;
        bad[last] ^= 0x01;
        assert_eq!(
            icrc::verify_ip_packet(&mut SoftCrc32, &bad),
            Err(IcrcError::Mismatch)
        );
    }
}

#[test]
fn hardware_cnp_known_answer() {
    let all = fixtures();
    let (_, cnp) = all
        .iter()
        .find(|(n, _)| n == "cnp_connectx4_v4.hex")
        .unwrap();
    let (ip, udp, payload) = icrc::split_ip_packet(cnp).unwrap();
    let body = &payload[..payload.len() - 4];
    assert_eq!(
        icrc::compute(&mut SoftCrc32, ip, udp, body),
        Ok([0x82, 0xfd, 0x00, 0x2a])
    );
}

#[test]
fn masked_fields_do_not_matter() {
    for (name, pkt) in fixtures() {
        let mut p = pkt.clone();
        let v6 = p[0] >> 4 == 6;
        if v6 {
            p[0] ^= 0x0f; // traffic class (high nibble)
            p[1] ^= 0xff; // traffic class (low nibble), flow label
            p[3] ^= 0x5a; // flow label
            p[7] ^= 0x33; // hop limit
        } else {
            p[1] ^= 0xfc; // DSCP/ECN
            p[8] ^= 0x0f; // TTL
            p[10] ^= 0xaa; // checksum
        }
        let ip_len = if v6 { 40 } else { 20 };
        p[ip_len + 6] ^= 0xff; // UDP checksum
        p[ip_len + 8 + 4] ^= 0xc0; // FECN/BECN
        icrc::verify_ip_packet(&mut SoftCrc32, &p).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    }
}

#[test]
fn fill_then_verify_and_engines_agree() {
    let mut engine = crc32fast_raw;
    for (_, pkt) in fixtures() {
        let mut p = pkt.clone();
        let n = p.len();
        p[n - 4..].fill(0);
        icrc::fill_ip_packet(&mut SoftCrc32, &mut p).unwrap();
        assert_eq!(p, pkt);
        let data = &pkt[..n - 4];
        assert_eq!(
            SoftCrc32.update(0x1234_5678, data),
            engine.update(0x1234_5678, data)
        );
    }
}

/// Packets rdma_rxe itself sent (captured between two QEMU guests with
/// `tools/qemu/run.sh --pair --test rxe_pair_rping --pcap`, converted by
/// `tools/testing/pcap_to_fixtures.py`): rxe's ICRC must verify with ours and
/// each must parse as the opcode its file is named after.
#[test]
fn captured_rxe_packets_agree() {
    let expect = [
        ("rxe_rc_send_only_v4.hex", 0x04),
        ("rxe_rc_acknowledge_v4.hex", 0x11),
        ("rxe_rc_rdma_read_request_v4.hex", 0x0c),
        ("rxe_rc_rdma_read_response_only_v4.hex", 0x10),
        ("rxe_rc_rdma_write_only_v4.hex", 0x0a),
    ];
    let all = fixtures();
    for (file, opcode) in expect {
        let (_, pkt) = all
            .iter()
            .find(|(n, _)| n.ends_with(file))
            .unwrap_or_else(|| panic!("captured fixture {file} missing"));
        icrc::verify_ip_packet(&mut SoftCrc32, pkt).unwrap_or_else(|e| panic!("{file}: {e:?}"));
        let (_, _, udp_payload) = icrc::split_ip_packet(pkt).unwrap();
        let p = parse(udp_payload).unwrap_or_else(|e| panic!("{file}: {e:?}"));
        assert_eq!(udp_payload[0], opcode, "{file}");
        assert_eq!(&p.icrc[..], &pkt[pkt.len() - 4..], "{file}");
    }
}
