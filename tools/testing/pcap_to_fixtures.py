#!/usr/bin/env python3
"""Turn RoCE v2 packets of a capture into known-answer fixtures for rust/proto.

usage: tools/testing/pcap_to_fixtures.py CAPTURE.pcap OUTDIR [--prefix rxe_]

Writes one file per distinct BTH opcode (the first packet seen with it) as
OUTDIR/PREFIX<opcode-name>_v4.hex: the IP packet from the IP header to the
ICRC, in the format of rust/proto/tests/fixtures/README. Captures come from
`tools/qemu/run.sh --pair --pcap FILE` (QEMU's filter-dump: Ethernet frames).
"""
import struct
import sys

OPCODES = {
    0x04: "rc_send_only", 0x06: "rc_rdma_write_first", 0x07: "rc_rdma_write_middle",
    0x08: "rc_rdma_write_last", 0x0A: "rc_rdma_write_only", 0x0C: "rc_rdma_read_request",
    0x0D: "rc_rdma_read_response_first", 0x0E: "rc_rdma_read_response_middle",
    0x0F: "rc_rdma_read_response_last", 0x10: "rc_rdma_read_response_only",
    0x11: "rc_acknowledge", 0x00: "rc_send_first", 0x01: "rc_send_middle", 0x02: "rc_send_last",
}


def packets(path):
    data = open(path, "rb").read()
    magic = struct.unpack_from("<I", data, 0)[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack_from(endian + "IIII", data, off)
        off += 16
        yield data[off:off + incl]
        off += incl


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cap, outdir = sys.argv[1], sys.argv[2]
    prefix = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--prefix" else "rxe_"
    seen = set()
    for frame in packets(cap):
        if len(frame) < 14 + 20 + 8 + 12 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack_from(">H", ip, 2)[0]
        if ip[9] != 17 or ihl != 20:
            continue
        dport = struct.unpack_from(">H", ip, ihl + 2)[0]
        if dport != 4791:
            continue
        opcode = ip[ihl + 8]
        if opcode in seen or opcode not in OPCODES:
            continue
        seen.add(opcode)
        pkt = ip[:total]
        name = f"{outdir}/{prefix}{OPCODES[opcode]}_v4.hex"
        with open(name, "w") as f:
            f.write(f"# {OPCODES[opcode]} (opcode 0x{opcode:02x}) sent by upstream rdma_rxe in a\n")
            f.write("# QEMU guest during rping (tools/qemu/run.sh --pair --test rxe_pair_rping\n")
            f.write("# --pcap); Ethernet header stripped. The ICRC was computed by rxe.\n")
            for i in range(0, len(pkt), 16):
                f.write(" ".join(f"{b:02x}" for b in pkt[i:i + 16]) + "\n")
        print(name)


if __name__ == "__main__":
    main()
