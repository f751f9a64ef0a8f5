//! Packet parser and ICRC on arbitrary bytes: must never panic, and a
//! parsed packet must re-emit to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rrxe_proto::{icrc, parse, SoftCrc32};

fuzz_target!(|data: &[u8]| {
    let _ = icrc::verify_ip_packet(&mut SoftCrc32, data);
    if let Ok(p) = parse(data) {
        let len = p
            .hdr
            .packet_len(p.payload.len())
            .expect("parsed headers re-emit");
        assert!(len <= data.len());
        let mut out = vec![0u8; len];
        let off = p.hdr.emit(&mut out, p.payload.len()).expect("emit");
        assert!(p.payload.copy_to(&mut out[off..off + p.payload.len()]));
        let q = parse(&out).expect("re-parse");
        assert_eq!(q.hdr, p.hdr);
        assert_eq!(q.payload, p.payload);
    }
});
