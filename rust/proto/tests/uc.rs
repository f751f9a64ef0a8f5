//! UC queue pairs over the simulated link: no ACKs, no retransmission; a
//! message that loses a packet is dropped whole, the next one arrives.
//!
//! Replay one seed of the random test:
//! `RRXE_SIM_SEED=1234 cargo test -p rrxe-proto --test uc uc_replay -- --nocapture`.

#[path = "common/simnet.rs"]
mod simnet;

use rrxe_proto::*;
use simnet::{Faults, Rng, Sim};

const MTU: u32 = 256;
const SRC: (u32, u64) = (0x10, 0x10_0000);
const WRITE: (u32, u64) = (0x20, 0x30_0000);
const RECV: (u32, u64) = (0x23, 0x60_0000);
const REGION: usize = 64 * 1024;
const SLOT: u32 = 1024;
const SLOTS: u64 = 16;
const MAX_STEPS: u64 = 100_000;

/// A's source bytes: no two nearby offsets alike.
fn pattern() -> Vec<u8> {
    (0..REGION)
        .map(|i| (i % 251) as u8 ^ (i / 251) as u8)
        .collect()
}

/// A UC pair: A sends from `SRC`; B receives into `RECV` (16 slots) and
/// lets A write into `WRITE`.
fn uc_pair(seed: u64, faults: Faults, a_psn: u32) -> Sim {
    uc_pair_in_segments(seed, faults, a_psn, 1)
}

/// [`uc_pair`] whose SENDs and WRITEs go as local segments of up to
/// `segment_pkts` PSNs.
fn uc_pair_in_segments(seed: u64, faults: Faults, a_psn: u32, segment_pkts: u32) -> Sim {
    let mut a = QpConfig::new(1, 2);
    let mut b = QpConfig::new(2, 1);
    for c in [&mut a, &mut b] {
        c.transport = Transport::Uc;
        c.mtu = MTU;
        c.segment_pkts = segment_pkts;
    }
    a.sq_psn = a_psn;
    b.rq_psn = a_psn;
    let mut sim = Sim::new(seed, a, b, faults);
    sim.nodes[0].mem.add(SRC.0, SRC.1, pattern(), false);
    sim.nodes[1].mem.add(
        RECV.0,
        RECV.1,
        vec![0; (SLOTS * u64::from(SLOT)) as usize],
        false,
    );
    sim.nodes[1]
        .mem
        .add(WRITE.0, WRITE.1, vec![0; REGION], true);
    sim
}

fn wr(id: u64, op: WrOp, off: u64, len: u32, dst: u64) -> SendWr {
    SendWr {
        wr_id: id,
        op,
        sge: Sge {
            addr: SRC.1 + off,
            length: len,
            lkey: SRC.0,
        },
        remote_addr: WRITE.1 + dst,
        rkey: WRITE.0,
        signaled: true,
        fence: false,
        solicited: false,
    }
}

fn post(sim: &mut Sim, w: SendWr) {
    let now = sim.now;
    sim.nodes[0]
        .with(now, |qp, env| qp.post_send(env, w))
        .unwrap();
}

/// Post `n` receive WQEs, one slot each, in slot order.
fn post_recvs(sim: &mut Sim, n: u64, len: u32) {
    for j in 0..n {
        let now = sim.now;
        let r = RecvWr {
            wr_id: 100 + j,
            sge: Sge {
                addr: RECV.1 + j * u64::from(SLOT),
                length: len,
                lkey: RECV.0,
            },
        };
        sim.nodes[1]
            .with(now, |qp, env| qp.post_recv(env, r))
            .unwrap();
    }
}

fn run_until_quiet(sim: &mut Sim) {
    for _ in 0..MAX_STEPS {
        if !sim.step() {
            return;
        }
    }
    panic!("no quiescence");
}

/// The source bytes of a request.
fn src(w: &SendWr) -> Vec<u8> {
    let off = (w.sge.addr - SRC.1) as usize;
    pattern()[off..off + w.sge.length as usize].to_vec()
}

/// Receive completion `j` (into slot `j`) holds message `w` intact.
fn assert_received(sim: &mut Sim, j: usize, w: &SendWr) {
    let wc = sim.nodes[1].cq.recv[j];
    assert_eq!(wc.status, WcStatus::Success, "recv {j}");
    assert_eq!(wc.wr_id, 100 + j as u64, "recv {j}: WQEs are used in order");
    let (imm, opcode) = match w.op {
        WrOp::Send => (None, WcOpcode::Recv),
        WrOp::SendWithImm(i) => (Some(i), WcOpcode::Recv),
        WrOp::WriteWithImm(i) => (Some(i), WcOpcode::RecvRdmaWithImm),
        op => panic!("{op:?} completes no receive"),
    };
    assert_eq!((wc.opcode, wc.imm), (opcode, imm), "recv {j}");
    assert_eq!(wc.byte_len, w.sge.length, "recv {j}");
    if opcode == WcOpcode::Recv {
        let at = RECV.1 + j as u64 * u64::from(SLOT);
        let got = sim.nodes[1].mem.slice(RECV.0, at, w.sge.length as usize);
        assert_eq!(got, src(w), "recv {j}: data");
    }
}

fn written(sim: &mut Sim, w: &SendWr) -> Vec<u8> {
    let len = w.sge.length as usize;
    sim.nodes[1].mem.slice(WRITE.0, w.remote_addr, len)
}

fn send_statuses(sim: &Sim) -> Vec<(u64, WcStatus)> {
    let wcs = &sim.nodes[0].cq.send;
    wcs.iter().map(|w| (w.wr_id, w.status)).collect()
}

fn all_succeeded(n: u64) -> Vec<(u64, WcStatus)> {
    (0..n).map(|i| (i, WcStatus::Success)).collect()
}

/// Both sides idle, in RTS, and nothing ever went from B to A.
fn assert_quiet(sim: &Sim) {
    for n in &sim.nodes {
        assert_eq!(n.qp.state(), QpState::Rts);
        assert!(n.qp.is_idle());
        assert_eq!(n.qp.next_deadline(), None, "UC keeps no timers");
    }
    assert_eq!(
        sim.nodes[1].qp.counters().tx_packets,
        0,
        "UC answers nothing"
    );
    assert_eq!(sim.nodes[0].qp.counters().rx_packets, 0);
}

#[test]
fn uc_clean_delivery() {
    clean_delivery(1, 16);
}

/// The same messages as local segments of two PSNs: 2 + 2 + 1 + 1 + 2 + 1 +
/// 1 packets, and the messages after a segment start where the responder
/// expects them.
#[test]
fn uc_clean_delivery_in_segments() {
    clean_delivery(2, 10);
}

/// Seven messages across the PSN wrap, in segments of `segment_pkts`:
/// `packets` are sent, and every one arrives.
fn clean_delivery(segment_pkts: u32, packets: u64) {
    let mut sim = uc_pair_in_segments(0, Faults::default(), 0xff_fffe, segment_pkts);
    post_recvs(&mut sim, 6, SLOT);
    let wrs = [
        wr(0, WrOp::Send, 0, 600, 0),
        wr(1, WrOp::Write, 1000, 900, 0),
        wr(2, WrOp::SendWithImm(0xaabb), 3000, 0, 0),
        wr(3, WrOp::WriteWithImm(7), 5000, 256, 2000),
        wr(4, WrOp::Send, 7000, 1024, 0),
        wr(5, WrOp::Write, 9000, 0, 4000),
        wr(6, WrOp::SendWithImm(9), 11000, 257, 0),
    ];
    for w in wrs {
        post(&mut sim, w);
    }
    run_until_quiet(&mut sim);
    assert_eq!(send_statuses(&sim), all_succeeded(7));
    assert_eq!(sim.nodes[1].cq.recv.len(), 5);
    for (j, w) in [0, 2, 3, 4, 6].into_iter().enumerate() {
        assert_received(&mut sim, j, &wrs[w]);
    }
    assert_eq!(written(&mut sim, &wrs[1]), src(&wrs[1]));
    assert_eq!(written(&mut sim, &wrs[3]), src(&wrs[3]));
    // 3 + 4 + 1 + 1 + 4 + 1 + 2 PSNs, each packet sent once.
    assert_eq!(sim.nodes[0].qp.counters().tx_packets, packets);
    assert_eq!(sim.nodes[1].qp.counters().uc_dropped, 0);
    assert_eq!(sim.nodes[1].qp.counters().out_of_buffer, 0);
    assert_quiet(&sim);
}

#[test]
fn uc_loss_drops_whole_messages() {
    let mut sim = uc_pair(0, Faults::default(), 100);
    post_recvs(&mut sim, 8, SLOT);
    // Packet numbers (from 1) in comments; MTU 256.
    let wrs = [
        wr(0, WrOp::Send, 0, 600, 0),                  // 1 2 3
        wr(1, WrOp::Send, 1000, 600, 0),               // 4 [5] 6
        wr(2, WrOp::Send, 2000, 100, 0),               // 7
        wr(3, WrOp::Write, 3000, 700, 0),              // [8] 9 10
        wr(4, WrOp::WriteWithImm(4), 4000, 300, 1000), // 11 [12]
        wr(5, WrOp::SendWithImm(5), 5000, 500, 0),     // 13 14
        wr(6, WrOp::Send, 6000, 10, 0),                // [15]
        wr(7, WrOp::WriteWithImm(7), 7000, 200, 2000), // 16
        wr(8, WrOp::Send, 8000, 800, 0),               // 17 18 19 20
    ];
    sim.lose = vec![5, 8, 12, 15];
    for w in wrs {
        post(&mut sim, w);
    }
    run_until_quiet(&mut sim);
    assert_eq!(sim.stats.sent, 20, "nothing is retransmitted");
    assert_eq!(sim.stats.lost, 4);
    // The sender cannot tell: everything completes.
    assert_eq!(send_statuses(&sim), all_succeeded(9));
    // Only the intact messages complete, in order, each in the next WQE:
    // message 1's half-filled WQE went to message 2.
    assert_eq!(sim.nodes[1].cq.recv.len(), 5);
    for (j, w) in [0, 2, 5, 7, 8].into_iter().enumerate() {
        assert_received(&mut sim, j, &wrs[w]);
    }
    // The WRITE that lost its FIRST left memory alone; the one that lost
    // its LAST completed nothing.
    assert_eq!(written(&mut sim, &wrs[3]), vec![0; 700]);
    assert_eq!(written(&mut sim, &wrs[7]), src(&wrs[7]));
    // Dropped at B: message 1's LAST, message 3's MIDDLE and LAST.
    assert_eq!(sim.nodes[1].qp.counters().uc_dropped, 3);
    assert_eq!(sim.nodes[1].qp.recv_queued(), 3);
    assert_quiet(&sim);
}

#[test]
fn uc_remote_errors_drop_silently() {
    let mut sim = uc_pair(0, Faults::default(), 0);
    post_recvs(&mut sim, 1, 100);
    let mut bad_key = wr(1, WrOp::Write, 0, 300, 0);
    bad_key.rkey = 0x99;
    let wrs = [
        wr(0, WrOp::Send, 0, 300, 0), // longer than the receive buffer
        bad_key,
        wr(2, WrOp::Write, 0, 300, REGION as u64 - 100), // past the region's end
        wr(3, WrOp::SendWithImm(3), 500, 60, 0),
        wr(4, WrOp::Send, 600, 10, 0), // no receive WQE left
    ];
    for w in wrs {
        post(&mut sim, w);
    }
    run_until_quiet(&mut sim);
    assert_eq!(send_statuses(&sim), all_succeeded(5));
    assert_eq!(sim.nodes[1].cq.recv.len(), 1);
    assert_received(&mut sim, 0, &wrs[3]);
    // Dropped: the 300-byte SEND's 2 packets (the first already overflows
    // the 100-byte buffer, which then takes message 3), the bad key's 2,
    // the bounds error's 2 and the SEND that found no WQE.
    assert_eq!(sim.nodes[1].qp.counters().uc_dropped, 7);
    // Of those, only the last found no receive WQE.
    assert_eq!(sim.nodes[1].qp.counters().out_of_buffer, 1);
    assert_eq!(sim.nodes[1].qp.responder_failure(), None);
    assert_quiet(&sim);
}

#[test]
fn uc_refuses_read_and_atomics() {
    let mut sim = uc_pair(0, Faults::default(), 0);
    let now = sim.now;
    let ops = [
        WrOp::Read,
        WrOp::FetchAdd { add: 1 },
        WrOp::CmpSwap {
            compare: 0,
            swap: 1,
        },
        WrOp::SendWithInv(5),
    ];
    for op in ops {
        let w = wr(0, op, 0, 8, 0);
        let r = sim.nodes[0].with(now, |qp, env| qp.post_send(env, w));
        assert_eq!(r, Err(QpError::InvalidWr), "{op:?}");
    }
    assert!(sim.nodes[0].cq.send.is_empty());
    assert_eq!(sim.nodes[0].qp.state(), QpState::Rts);
}

#[test]
fn uc_ignores_other_transports() {
    // An RC sender aimed at a UC receiver: its packets are not UC's.
    let mut a = QpConfig::new(1, 2);
    a.mtu = MTU;
    let mut b = a;
    b.qpn = 2;
    b.dest_qpn = 1;
    b.transport = Transport::Uc;
    let mut sim = Sim::new(0, a, b, Faults::default());
    sim.nodes[0].mem.add(SRC.0, SRC.1, pattern(), false);
    sim.nodes[1]
        .mem
        .add(RECV.0, RECV.1, vec![0; SLOT as usize], false);
    post_recvs(&mut sim, 1, SLOT);
    post(&mut sim, wr(0, WrOp::Send, 0, 10, 0));
    for _ in 0..20 {
        sim.step();
    }
    assert!(sim.nodes[1].qp.counters().rx_dropped > 0);
    assert!(sim.nodes[1].cq.recv.is_empty());
    assert_eq!(sim.nodes[1].qp.counters().tx_packets, 0);
}

/// A random UC workload on a link that loses and corrupts (but neither
/// duplicates nor reorders) packets: the sender completes everything,
/// sending each packet once; the receiver completes a subsequence of the
/// messages, in order and intact; with no loss, all of them.
fn run_seed(seed: u64) {
    let mut rng = Rng::new(seed);
    let faults = if rng.chance(200_000) {
        Faults::default()
    } else {
        Faults {
            loss: rng.below(80_000),
            corrupt: rng.below(40_000),
            ..Faults::default()
        }
    };
    // Odd seeds send local segments of 2 to 64 PSNs (no number taken from
    // `rng`, so a seed's traffic is the same either way).
    let segment_pkts = if seed % 2 == 1 {
        1 << (1 + seed / 2 % 6)
    } else {
        1
    };
    let mut sim = uc_pair_in_segments(seed, faults, rng.below(1 << 24) as u32, segment_pkts);
    post_recvs(&mut sim, SLOTS, SLOT);
    let n = 1 + rng.below(SLOTS);
    let mut wrs = Vec::new();
    let mut pkts = 0;
    for id in 0..n {
        let len = match rng.below(3) {
            0 => rng.below(16) as u32,
            1 => rng.below(u64::from(MTU) + 1) as u32,
            _ => rng.below(u64::from(SLOT) + 1) as u32,
        };
        let off = rng.below((REGION - 2048) as u64);
        let imm = rng.next() as u32;
        let op = match rng.below(4) {
            0 => WrOp::Send,
            1 => WrOp::SendWithImm(imm),
            2 => WrOp::Write,
            _ => WrOp::WriteWithImm(imm),
        };
        // Each WRITE has its own stretch of B's region.
        let w = wr(id, op, off, len, id * u64::from(SLOT));
        pkts += u64::from(len.max(1).div_ceil(MTU).div_ceil(segment_pkts));
        post(&mut sim, w);
        wrs.push(w);
    }
    run_until_quiet(&mut sim);
    assert_eq!(send_statuses(&sim), all_succeeded(n));
    assert_eq!(sim.nodes[0].qp.counters().tx_packets, pkts);
    // Match the receive completions to the messages that ask for one.
    let completing: Vec<&SendWr> = wrs
        .iter()
        .filter(|w| !matches!(w.op, WrOp::Write))
        .collect();
    let mut next = 0;
    for j in 0..sim.nodes[1].cq.recv.len() {
        let imm = sim.nodes[1].cq.recv[j].imm;
        let len = sim.nodes[1].cq.recv[j].byte_len;
        // The first message at or after `next` that it can be: skipped
        // ones were lost.
        let k = (next..completing.len())
            .find(|&k| {
                let w = completing[k];
                let w_imm = match w.op {
                    WrOp::SendWithImm(i) | WrOp::WriteWithImm(i) => Some(i),
                    _ => None,
                };
                w_imm == imm && w.sge.length == len && {
                    let at = RECV.1 + j as u64 * u64::from(SLOT);
                    matches!(w.op, WrOp::WriteWithImm(_))
                        || sim.nodes[1].mem.slice(RECV.0, at, len as usize) == src(w)
                }
            })
            .unwrap_or_else(|| panic!("recv {j} matches no message after {next}"));
        assert_received(&mut sim, j, completing[k]);
        next = k + 1;
    }
    for w in &wrs {
        if matches!(w.op, WrOp::Write | WrOp::WriteWithImm(_)) {
            // Delivered or not, never corrupt: what is written is the
            // source, or nothing.
            let got = written(&mut sim, w);
            let want = src(w);
            assert!(
                got.iter().zip(&want).all(|(g, s)| *g == 0 || g == s),
                "write {} holds foreign bytes",
                w.wr_id
            );
        }
    }
    if sim.stats.lost == 0 && sim.stats.icrc_dropped == 0 && sim.stats.parse_dropped == 0 {
        assert_eq!(sim.nodes[1].cq.recv.len(), completing.len());
        for w in wrs.iter().filter(|w| matches!(w.op, WrOp::Write)) {
            assert_eq!(written(&mut sim, w), src(w));
        }
        assert_eq!(sim.nodes[1].qp.counters().uc_dropped, 0);
    }
    assert_quiet(&sim);
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn uc_many_seeds() {
    let n = env_u64("RRXE_SIM_SEEDS").unwrap_or(2000);
    for seed in 0..n {
        if std::panic::catch_unwind(|| run_seed(seed)).is_err() {
            panic!(
                "UC seed {seed} failed; replay with:\n  RRXE_SIM_SEED={seed} \
                 cargo test -p rrxe-proto --test uc uc_replay -- --nocapture"
            );
        }
    }
}

#[test]
fn uc_replay() {
    run_seed(env_u64("RRXE_SIM_SEED").unwrap_or(1));
}
