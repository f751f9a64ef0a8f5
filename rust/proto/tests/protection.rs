//! Responder protection: operations a QP does not enable, keys and ranges a
//! region does not grant, and receive buffers that cannot be written. Each
//! case checks the requester's completion, the responder's memory and both
//! QPs' states, over a loss-free simulated link.

#[path = "common/simnet.rs"]
mod simnet;

use rrxe_proto::*;
use simnet::{Faults, Sim};

const SRC: (u32, u64) = (0x10, 0x10_0000);
const DST: (u32, u64) = (0x20, 0x20_0000);
const RECV: (u32, u64) = (0x21, 0x30_0000);
const LEN: u32 = 600;
const FILL: u8 = 0x5a;

/// Two connected QPs; B's QP allows `remote`; A has a source region, B a
/// remote-accessible region and a local-only receive region, both filled.
fn pair(remote: RemoteAccess) -> Sim {
    let mut a = QpConfig::new(0x11, 0x22);
    let mut b = QpConfig::new(0x22, 0x11);
    a.mtu = 256;
    b.mtu = 256;
    b.remote = remote;
    let mut sim = Sim::new(1, a, b, Faults::default());
    sim.nodes[0].mem.add(SRC.0, SRC.1, vec![7; 4096], false);
    sim.nodes[1].mem.add(DST.0, DST.1, vec![FILL; 4096], true);
    sim.nodes[1]
        .mem
        .add(RECV.0, RECV.1, vec![FILL; 4096], false);
    sim
}

fn run(sim: &mut Sim) {
    for _ in 0..100_000 {
        if !sim.step() {
            return;
        }
    }
    panic!("simulation did not settle");
}

fn post(sim: &mut Sim, op: WrOp, remote_addr: u64, rkey: u32) {
    let wr = SendWr {
        wr_id: 1,
        op,
        sge: Sge {
            addr: SRC.1,
            length: if op.is_atomic() { 8 } else { LEN },
            lkey: SRC.0,
        },
        remote_addr,
        rkey,
        signaled: true,
        fence: false,
        solicited: false,
    };
    let now = sim.now;
    sim.nodes[0]
        .with(now, |qp, env| qp.post_send(env, wr))
        .unwrap();
}

/// A's single completion has `status`, both QPs failed, B's memory untouched.
fn expect_failed(sim: &mut Sim, status: WcStatus) {
    run(sim);
    let wcs = &sim.nodes[0].cq.send;
    assert_eq!(wcs.len(), 1, "{wcs:?}");
    assert_eq!(wcs[0].status, status);
    assert_eq!(sim.nodes[0].qp.state(), QpState::Error);
    assert_eq!(sim.nodes[1].qp.state(), QpState::Error);
    assert!(sim.nodes[1]
        .mem
        .slice(DST.0, DST.1, 4096)
        .iter()
        .all(|&b| b == FILL));
    assert!(sim.nodes[1]
        .mem
        .slice(RECV.0, RECV.1, 4096)
        .iter()
        .all(|&b| b == FILL));
}

#[test]
fn operations_the_qp_does_not_enable_are_invalid_requests() {
    let no_write = RemoteAccess {
        write: false,
        ..RemoteAccess::ALL
    };
    let no_read = RemoteAccess {
        read: false,
        ..RemoteAccess::ALL
    };
    let no_atomic = RemoteAccess {
        atomic: false,
        ..RemoteAccess::ALL
    };
    for (remote, op) in [
        (no_write, WrOp::Write),
        (no_write, WrOp::WriteWithImm(5)),
        (no_read, WrOp::Read),
        (no_atomic, WrOp::FetchAdd { add: 1 }),
        (
            no_atomic,
            WrOp::CmpSwap {
                compare: 0,
                swap: 1,
            },
        ),
    ] {
        let mut sim = pair(remote);
        post(&mut sim, op, DST.1, DST.0);
        expect_failed(&mut sim, WcStatus::RemInvReqErr);
        assert_eq!(
            sim.nodes[1].qp.responder_failure(),
            Some(NakCode::InvalidRequest)
        );
    }
}

#[test]
fn enabled_operations_still_work() {
    let mut sim = pair(RemoteAccess::ALL);
    post(&mut sim, WrOp::Write, DST.1, DST.0);
    run(&mut sim);
    assert_eq!(sim.nodes[0].cq.send[0].status, WcStatus::Success);
    assert_eq!(
        sim.nodes[1].mem.slice(DST.0, DST.1, LEN as usize),
        vec![7; LEN as usize]
    );
}

#[test]
fn bad_keys_and_ranges_are_remote_access_errors() {
    for (addr, rkey) in [
        (DST.1, 0x99),              // no such key
        (DST.1, RECV.0),            // a region without remote access
        (DST.1 + 4096 - 10, DST.0), // crosses the end
        (DST.1 - 1, DST.0),         // starts before
        (u64::MAX - 100, DST.0),    // wraps around 2^64
    ] {
        let mut sim = pair(RemoteAccess::ALL);
        post(&mut sim, WrOp::Write, addr, rkey);
        expect_failed(&mut sim, WcStatus::RemAccessErr);
        let mut sim = pair(RemoteAccess::ALL);
        post(&mut sim, WrOp::Read, addr, rkey);
        expect_failed(&mut sim, WcStatus::RemAccessErr);
    }
}

#[test]
fn a_receive_buffer_that_cannot_be_written_is_never_written_in_part() {
    // The buffer's first 512 bytes are in the region, the rest is not: the
    // first packet would fit, so only checking the whole buffer up front
    // keeps it untouched.
    let mut sim = pair(RemoteAccess::ALL);
    let wr = RecvWr {
        wr_id: 9,
        sge: Sge {
            addr: RECV.1 + 4096 - 512,
            length: 1024,
            lkey: RECV.0,
        },
    };
    let now = sim.now;
    sim.nodes[1]
        .with(now, |qp, env| qp.post_recv(env, wr))
        .unwrap();
    post(&mut sim, WrOp::Send, 0, 0);
    expect_failed(&mut sim, WcStatus::RemOpErr);
    let recv = &sim.nodes[1].cq.recv;
    assert_eq!(recv.len(), 1, "{recv:?}");
    assert_eq!((recv[0].wr_id, recv[0].status), (9, WcStatus::LocProtErr));
}

#[test]
fn a_request_failed_before_posting_completes_in_order() {
    let mut sim = pair(RemoteAccess::ALL);
    // Two good WRITEs in flight, then one the caller found invalid.
    post(&mut sim, WrOp::Write, DST.1, DST.0);
    post(&mut sim, WrOp::Write, DST.1, DST.0);
    let bad = SendWr {
        wr_id: 7,
        op: WrOp::Read,
        sge: Sge::default(),
        remote_addr: DST.1,
        rkey: DST.0,
        signaled: false,
        fence: false,
        solicited: false,
    };
    let now = sim.now;
    sim.nodes[0].with(now, |qp, env| {
        qp.post_send_failed(env, bad, WcStatus::LocProtErr)
    });
    let got: Vec<_> = sim.nodes[0]
        .cq
        .send
        .iter()
        .map(|w| (w.wr_id, w.status))
        .collect();
    assert_eq!(
        got,
        [
            (1, WcStatus::WrFlushErr),
            (1, WcStatus::WrFlushErr),
            (7, WcStatus::LocProtErr)
        ]
    );
    assert_eq!(sim.nodes[0].qp.state(), QpState::Error);
}

#[test]
fn a_region_may_end_at_two_to_the_64() {
    // B's region is the last 4096 bytes of the address space; a WRITE to its
    // last 16 bytes (in two packets' worth of pieces) must land.
    const TOP: u64 = u64::MAX - 4095;
    let mut sim = pair(RemoteAccess::ALL);
    sim.nodes[1].mem.add(0x30, TOP, vec![FILL; 4096], true);
    let wr = SendWr {
        wr_id: 3,
        op: WrOp::Write,
        sge: Sge {
            addr: SRC.1,
            length: 16,
            lkey: SRC.0,
        },
        remote_addr: u64::MAX - 15,
        rkey: 0x30,
        signaled: true,
        fence: false,
        solicited: false,
    };
    let now = sim.now;
    sim.nodes[0]
        .with(now, |qp, env| qp.post_send(env, wr))
        .unwrap();
    run(&mut sim);
    assert_eq!(sim.nodes[0].cq.send[0].status, WcStatus::Success);
    assert_eq!(sim.nodes[1].mem.slice(0x30, u64::MAX - 15, 16), vec![7; 16]);
    // And a piecewise write ending there.
    let rest = [Piece::Bytes(&[9u8; 8])];
    let data = Payload::from_pieces(&[8u8; 8], &rest);
    sim.nodes[1]
        .mem
        .write_payload(0x30, u64::MAX - 15, &data, Access::RemoteWrite)
        .unwrap();
}
