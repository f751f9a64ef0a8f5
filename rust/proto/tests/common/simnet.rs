//! Deterministic simulation harness: two connected QPs (RC or UC) over a
//! simulated lossy link and clock, all driven by one u64 seed.

#![allow(dead_code)]

use rrxe_proto::icrc;
use rrxe_proto::opcode::mask;
use rrxe_proto::*;

/// SplitMix64: tiny, fast, good enough for test scheduling.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x005e_ed0f_2024_cafe)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// True with probability `ppm` parts per million.
    pub fn chance(&mut self, ppm: u64) -> bool {
        self.below(1_000_000) < ppm
    }
}

pub struct Region {
    pub key: u32,
    pub base: u64,
    pub data: Vec<u8>,
    pub remote: bool,
    /// Grants FLUSH for global visibility (set with `remote`); no region
    /// grants persistence.
    pub flush: bool,
    /// False once invalidated (locally or by a SEND with invalidate),
    /// until a fast registration makes it valid again.
    pub valid: bool,
}

/// Memory regions of one node.
#[derive(Default)]
pub struct SimMem {
    pub regions: Vec<Region>,
    pub atomics_executed: u64,
    /// FLUSHes executed (not answered from history).
    pub flushes_executed: u64,
    /// Local operations executed, in order.
    pub local_ops: Vec<LocalOp>,
    /// The shared pieces of the packet being handled ([`Piece::Shared`]
    /// names them by index), as the driver's skb holds its fragments.
    pub frags: Vec<Vec<u8>>,
    /// Bytes copied from shared pieces.
    pub shared_bytes_written: u64,
}

impl SimMem {
    pub fn add(&mut self, key: u32, base: u64, data: Vec<u8>, remote: bool) {
        self.regions.push(Region {
            key,
            base,
            data,
            remote,
            flush: remote,
            valid: true,
        });
    }
    /// Invalidate the valid region named by exactly `key`.
    fn invalidate_key(&mut self, key: u32) -> Result<(), MemError> {
        let r = self
            .regions
            .iter_mut()
            .find(|r| r.key == key && r.valid)
            .ok_or(MemError::BadKey)?;
        r.valid = false;
        Ok(())
    }
    fn find(&mut self, key: u32, va: u64, len: u64, access: Access) -> Result<&mut [u8], MemError> {
        let r = self
            .regions
            .iter_mut()
            .find(|r| r.key == key && r.valid)
            .ok_or(MemError::BadKey)?;
        let remote = matches!(
            access,
            Access::RemoteRead | Access::RemoteWrite | Access::RemoteAtomic
        );
        if remote && !r.remote {
            return Err(MemError::AccessDenied);
        }
        let off = va.checked_sub(r.base).ok_or(MemError::OutOfRange)?;
        let end = off.checked_add(len).ok_or(MemError::OutOfRange)?;
        if end > r.data.len() as u64 {
            return Err(MemError::OutOfRange);
        }
        Ok(&mut r.data[off as usize..end as usize])
    }
    pub fn slice(&mut self, key: u32, va: u64, len: usize) -> Vec<u8> {
        self.find(key, va, len as u64, Access::LocalRead)
            .unwrap()
            .to_vec()
    }
}

impl MemoryAccess for SimMem {
    fn check(&mut self, key: u32, va: u64, len: u32, access: Access) -> Result<(), MemError> {
        self.find(key, va, len.into(), access).map(|_| ())
    }
    fn read(&mut self, key: u32, va: u64, buf: &mut [u8], access: Access) -> Result<(), MemError> {
        buf.copy_from_slice(self.find(key, va, buf.len() as u64, access)?);
        Ok(())
    }
    fn write(&mut self, key: u32, va: u64, data: &[u8], access: Access) -> Result<(), MemError> {
        self.find(key, va, data.len() as u64, access)?
            .copy_from_slice(data);
        Ok(())
    }
    fn write_shared(
        &mut self,
        key: u32,
        va: u64,
        range: SharedRange,
        access: Access,
    ) -> Result<(), MemError> {
        let src = self
            .frags
            .get(range.index)
            .and_then(|f| f.get(range.off..range.off + range.len))
            .ok_or(MemError::OutOfRange)?
            .to_vec();
        self.write(key, va, &src, access)?;
        self.shared_bytes_written += src.len() as u64;
        Ok(())
    }
    fn atomic(&mut self, rkey: u32, va: u64, op: AtomicOp) -> Result<u64, MemError> {
        let w = self.find(rkey, va, 8, op.access())?;
        let old = u64::from_ne_bytes(w[..8].try_into().unwrap());
        let new = op.apply(old);
        w.copy_from_slice(&new.to_ne_bytes());
        self.atomics_executed += 1;
        Ok(old)
    }
    fn flush(
        &mut self,
        rkey: u32,
        range: Option<(u64, u32)>,
        placement: Placement,
    ) -> Result<(), MemError> {
        let r = self
            .regions
            .iter()
            .find(|r| r.key == rkey && r.valid)
            .ok_or(MemError::BadKey)?;
        if placement.persistent || (placement.global && !r.flush) {
            return Err(MemError::AccessDenied);
        }
        if let Some((va, len)) = range {
            let off = va.checked_sub(r.base).ok_or(MemError::OutOfRange)?;
            if off + u64::from(len) > r.data.len() as u64 {
                return Err(MemError::OutOfRange);
            }
        }
        self.flushes_executed += 1;
        Ok(())
    }
    fn invalidate(&mut self, rkey: u32) -> Result<(), MemError> {
        self.invalidate_key(rkey)
    }
    /// Keys as the driver forms them: an index (all but the low 8 bits) and
    /// a variant the consumer rotates at each registration.
    fn local(&mut self, op: LocalOp) -> Result<(), MemError> {
        self.local_ops.push(op);
        match op {
            LocalOp::RegMr { key, .. } => {
                let r = self
                    .regions
                    .iter_mut()
                    .find(|r| r.key >> 8 == key >> 8 && !r.valid)
                    .ok_or(MemError::BadKey)?;
                r.key = key;
                r.valid = true;
                Ok(())
            }
            LocalOp::Invalidate { key } => self.invalidate_key(key),
            // A window over this node's region with the window's key.
            LocalOp::BindMw(b) => self
                .regions
                .iter()
                .any(|r| r.key == b.mr_key && r.valid)
                .then_some(())
                .ok_or(MemError::BadKey),
        }
    }
}

/// The packets a node sends. With `by_ref`, the sink takes payloads by
/// reference (as the driver's local path does): a packet's payload is read
/// from the node's memory only after the engine's call returned, and a
/// payload that cannot be read then loses its packet.
#[derive(Default)]
pub struct SimTx {
    scratch: Vec<u8>,
    pub out: Vec<Vec<u8>>,
    pub by_ref: bool,
    /// The payload of the packet being built, if taken by reference:
    /// (offset in the packet, where it lies).
    next_ref: Option<(usize, PayloadRef)>,
    /// Committed packets whose payloads are still to be read: (index in
    /// `out`, offset, where it lies).
    refs: Vec<(usize, usize, PayloadRef)>,
    /// Packets the transmit queue still takes in this turn (`None`: no
    /// limit); a commit beyond them is refused, as a full qdisc refuses.
    pub room: Option<usize>,
    /// Commits the queue took in this turn.
    pub sent_now: u64,
    /// Commits refused in this turn.
    pub refused_now: u64,
    /// Commits refused in all.
    pub refused: u64,
}

impl SimTx {
    /// Reads the payloads taken by reference from `mem`.
    fn resolve(&mut self, mem: &mut SimMem) {
        let mut lost = Vec::new();
        for (i, off, p) in self.refs.drain(..) {
            let pkt = &mut self.out[i];
            let dst = &mut pkt[off..off + p.len as usize];
            if mem.read(p.key, p.va, dst, p.access).is_err() {
                lost.push(i);
            }
        }
        for i in lost.into_iter().rev() {
            self.out.remove(i);
        }
    }
}

impl TxSink for SimTx {
    fn buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        self.next_ref = None;
        self.scratch.clear();
        self.scratch.resize(len, 0xee);
        Some(&mut self.scratch)
    }
    fn buffer_by_ref(&mut self, len: usize, head: usize, payload: PayloadRef) -> Option<&mut [u8]> {
        if !self.by_ref {
            return None;
        }
        // The bytes after the headers: payload (read later), pad and
        // ICRC (zeros, as the sink promises).
        self.scratch.clear();
        self.scratch.resize(len, 0);
        self.next_ref = Some((head, payload));
        Some(&mut self.scratch[..head])
    }
    fn commit(&mut self, _psns: u32) -> bool {
        if let Some(room) = self.room.as_mut() {
            if *room == 0 {
                self.next_ref = None;
                self.refused_now += 1;
                self.refused += 1;
                return false;
            }
            *room -= 1;
        }
        if let Some((off, p)) = self.next_ref.take() {
            self.refs.push((self.out.len(), off, p));
        }
        self.out.push(std::mem::take(&mut self.scratch));
        self.sent_now += 1;
        true
    }
}

#[derive(Default)]
pub struct SimCq {
    pub send: Vec<WorkCompletion>,
    pub recv: Vec<WorkCompletion>,
}

impl CompletionSink for SimCq {
    fn send_completion(&mut self, wc: &WorkCompletion) {
        self.send.push(*wc);
    }
    fn recv_completion(&mut self, wc: &WorkCompletion) {
        self.recv.push(*wc);
    }
}

pub type SimQp = ArrayQp<16, 16, 130>;

pub struct Node {
    pub qp: SimQp,
    pub mem: SimMem,
    pub tx: SimTx,
    pub cq: SimCq,
    /// Pauses for a full transmit queue, as the driver's.
    pub stall: Stall,
}

impl Node {
    pub fn new(cfg: QpConfig) -> Self {
        Node {
            qp: SimQp::new(cfg, Buffers::arrays()).unwrap(),
            mem: SimMem::default(),
            tx: SimTx::default(),
            cq: SimCq::default(),
            stall: Stall::default(),
        }
    }
    /// Run `f` with an [`Env`] over this node's parts.
    pub fn with<R>(&mut self, now: u64, f: impl FnOnce(&mut SimQp, &mut Env<'_>) -> R) -> R {
        let Node {
            qp, mem, tx, cq, ..
        } = self;
        let mut env = Env {
            clock: &Clock::at(now),
            mem,
            tx,
            cq,
        };
        let before = *qp.counters();
        let r = f(qp, &mut env);
        let after = *qp.counters();
        // What the driver relies on to skip unchanged counters after a run.
        if after.changes == before.changes {
            assert_eq!(
                without_packet_counts(after),
                without_packet_counts(before),
                "a counter moved without Counters::changes"
            );
        }
        self.tx.resolve(&mut self.mem);
        r
    }
}

/// `c` without the counters that [`Counters::changes`] does not follow
/// (and without itself).
fn without_packet_counts(c: Counters) -> Counters {
    Counters {
        tx_packets: 0,
        rx_packets: 0,
        responses_received: 0,
        changes: 0,
        ..c
    }
}

/// Fault model of the link, in parts per million per packet.
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    pub loss: u64,
    pub dup: u64,
    pub corrupt: u64,
    /// Extra random delay up to this many microseconds (reordering).
    pub jitter_us: u64,
}

/// netem-like shaping of the link: a base delay that a fraction of the
/// packets skip (netem's `reorder`), and a queue limit per direction.
#[derive(Clone, Copy, Debug, Default)]
pub struct Netem {
    pub delay_us: u64,
    /// Packets (ppm) sent without the base delay, overtaking the others.
    pub reorder: u64,
    /// Packets in flight per direction beyond which new ones are dropped
    /// (0: no limit).
    pub limit: usize,
    /// Time to put one packet on the link, in microseconds (a slow guest's
    /// transmit rate; 0: no limit). A node sends again only once its link
    /// has sent what it sent before.
    pub rate_us: u64,
    /// Packets a node's transmit queue takes per turn (0: no limit); it
    /// refuses the rest ([`TxSink::commit`] returns false), and the node
    /// pauses as the driver's QP does ([`Stall`]).
    pub txq: usize,
}

#[derive(Default, Debug)]
pub struct LinkStats {
    pub sent: u64,
    /// Packets sent by each node.
    pub sent_by: [u64; 2],
    pub lost: u64,
    pub duplicated: u64,
    pub corrupted: u64,
    pub icrc_dropped: u64,
    pub corrupted_masked_ok: u64,
    pub parse_dropped: u64,
    pub queue_dropped: u64,
}

struct InFlight {
    at: u64,
    seq: u64,
    to: usize,
    frame: Vec<u8>,
    /// Byte offset of an injected corruption, if any.
    corrupt_at: Option<usize>,
}

/// Byte offsets of an IPv4 RoCE frame that the ICRC masks.
fn masked(off: usize) -> bool {
    matches!(off, 1 | 8 | 10 | 11 | 26 | 27 | 32)
}

pub struct Sim {
    pub rng: Rng,
    pub now: u64,
    pub nodes: [Node; 2],
    pub faults: Faults,
    pub netem: Netem,
    /// Drop every packet (dead link) while true.
    pub blackhole: bool,
    /// Drop every packet node `i` sends while `cut[i]` (a one-way outage).
    pub cut: [bool; 2],
    /// Lose these packets: numbers in order of transmission, from 1 (the
    /// value of `stats.sent` once the packet is counted).
    pub lose: Vec<u64>,
    flight: Vec<InFlight>,
    /// When each direction's link is free again (with `netem.rate_us`).
    free_at: [u64; 2],
    seq: u64,
    pub stats: LinkStats,
    /// Print every packet's fate (RRXE_SIM_TRACE=1).
    trace: bool,
}

/// One line about a RoCE packet for the trace: opcode, PSN and AETH.
fn describe(p: &Packet<'_>) -> String {
    format!(
        "op {:#04x} psn {:?} aeth {:?}",
        p.hdr.bth.opcode, p.hdr.bth.psn, p.hdr.aeth
    )
}

/// [`describe`] for a packet still in its bytes.
fn describe_bytes(udp_payload: &[u8]) -> String {
    parse(udp_payload).map_or_else(|e| format!("unparsable ({e:?})"), |p| describe(&p))
}

impl Sim {
    pub fn new(seed: u64, a: QpConfig, b: QpConfig, faults: Faults) -> Self {
        Sim {
            rng: Rng::new(seed),
            now: 0,
            nodes: [Node::new(a), Node::new(b)],
            faults,
            netem: Netem::default(),
            blackhole: false,
            cut: [false; 2],
            lose: Vec::new(),
            flight: Vec::new(),
            free_at: [0; 2],
            seq: 0,
            stats: LinkStats::default(),
            trace: std::env::var_os("RRXE_SIM_TRACE").is_some(),
        }
    }

    fn wrap(from: usize, udp_payload: &[u8]) -> Vec<u8> {
        let udp_len = 8 + udp_payload.len();
        let mut f = vec![0u8; 20 + udp_len];
        f[0] = 0x45;
        f[2..4].copy_from_slice(&((20 + udp_len) as u16).to_be_bytes());
        f[8] = 64;
        f[9] = 17;
        f[12..16].copy_from_slice(&[10, 0, 0, 1 + from as u8]);
        f[16..20].copy_from_slice(&[10, 0, 0, 2 - from as u8]);
        f[20..22].copy_from_slice(&0xc000u16.to_be_bytes());
        f[22..24].copy_from_slice(&ROCE_V2_PORT.to_be_bytes());
        f[24..26].copy_from_slice(&(udp_len as u16).to_be_bytes());
        f[28..].copy_from_slice(udp_payload);
        icrc::fill_ip_packet(&mut SoftCrc32, &mut f).unwrap();
        f
    }

    /// Move transmitted packets onto the link, applying faults.
    fn pump(&mut self) {
        for from in 0..2 {
            let now = self.now;
            // A node whose link is still busy (with `netem.rate_us`) sends
            // nothing more yet: transmit backpressure.
            if self.netem.rate_us > 0 && self.free_at[from] > now {
                continue;
            }
            let node = &mut self.nodes[from];
            let tx = &mut node.tx;
            tx.room = (self.netem.txq > 0).then_some(self.netem.txq);
            tx.refused_now = 0;
            tx.sent_now = 0;
            node.with(now, |qp, env| qp.poll_tx(env, 32));
            let tx = &node.tx;
            node.stall
                .end_try(|| now, tx.sent_now > 0, tx.refused_now > 0);
            if self.trace && tx.refused_now > 0 {
                let n = tx.refused_now;
                eprintln!("{now:>9} {from}> transmit queue full: {n} refused");
            }
            let out = std::mem::take(&mut self.nodes[from].tx.out);
            for p in out {
                self.stats.sent += 1;
                self.stats.sent_by[from] += 1;
                let lost = self.blackhole
                    || self.cut[from]
                    || self.lose.contains(&self.stats.sent)
                    || self.rng.chance(self.faults.loss);
                if self.trace {
                    let fate = if lost { "lost" } else { "sent" };
                    eprintln!("{:>9} {from}> {fate} {}", self.now, describe_bytes(&p));
                }
                if lost {
                    self.stats.lost += 1;
                    continue;
                }
                let queued = self.flight.iter().filter(|f| f.to != from).count();
                if self.netem.limit > 0 && queued >= self.netem.limit {
                    self.stats.queue_dropped += 1;
                    continue;
                }
                let depart = self.now.max(self.free_at[from]) + self.netem.rate_us;
                self.free_at[from] = depart;
                // (No draw without reordering: seeds replay as before.)
                let delay = if self.netem.reorder > 0 && self.rng.chance(self.netem.reorder) {
                    0
                } else {
                    self.netem.delay_us
                };
                let copies = if self.rng.chance(self.faults.dup) {
                    self.stats.duplicated += 1;
                    2
                } else {
                    1
                };
                for _ in 0..copies {
                    let mut frame = Self::wrap(from, &p);
                    let mut corrupt_at = None;
                    if self.rng.chance(self.faults.corrupt) {
                        let off = self.rng.below(frame.len() as u64) as usize;
                        frame[off] ^= 1 + self.rng.below(255) as u8;
                        corrupt_at = Some(off);
                        self.stats.corrupted += 1;
                    }
                    let at = depart + 5 + delay + self.rng.below(self.faults.jitter_us + 1);
                    self.seq += 1;
                    self.flight.push(InFlight {
                        at,
                        seq: self.seq,
                        to: 1 - from,
                        frame,
                        corrupt_at,
                    });
                }
            }
        }
    }

    fn deliver(&mut self, f: InFlight) {
        if icrc::verify_ip_packet(&mut SoftCrc32, &f.frame).is_err() {
            self.stats.icrc_dropped += 1;
            return;
        }
        if let Some(off) = f.corrupt_at {
            assert!(masked(off), "corruption at byte {off} passed the ICRC");
            self.stats.corrupted_masked_ok += 1;
        }
        let Ok(pkt) = parse(&f.frame[28..]) else {
            self.stats.parse_dropped += 1;
            return;
        };
        if self.trace {
            eprintln!("{:>9} >{} recv {}", self.now, f.to, describe(&pkt));
        }
        let now = self.now;
        // A payload its sender took by reference arrives as the driver's
        // local path delivers it: in a fragment that others may write,
        // which the receiver's core may only pass on to `write_shared`.
        let udp_payload = &f.frame[28..];
        let by_ref = self.nodes[1 - f.to].tx.by_ref
            && !pkt.payload.is_empty()
            && !pkt.info.has(mask::ATOMIC_WRITE);
        if !by_ref {
            self.nodes[f.to].with(now, |qp, env| qp.on_packet(env, &pkt));
            return;
        }
        let (head, rest) = udp_payload.split_at(pkt.info.hdr_len);
        let (body, tail) = rest.split_at(pkt.payload.len());
        let pieces = [
            Piece::Shared {
                index: 0,
                len: body.len(),
            },
            Piece::Bytes(tail),
        ];
        let shared = parse_payload(Payload::from_pieces(head, &pieces))
            .expect("a packet whose payload is shared parses");
        assert_eq!((shared.hdr, shared.icrc), (pkt.hdr, pkt.icrc));
        let node = &mut self.nodes[f.to];
        node.mem.frags = vec![body.to_vec()];
        node.with(now, |qp, env| qp.on_packet(env, &shared));
        node.mem.frags.clear();
    }

    /// Sends and delivers packets until none is left to send or in
    /// flight, firing no timer: what happens before the next post when
    /// posts come far apart from the ACK timeout.
    pub fn settle(&mut self) {
        loop {
            self.pump();
            let Some((at, seq)) = self.flight.iter().map(|f| (f.at, f.seq)).min() else {
                return;
            };
            self.now = self.now.max(at);
            self.deliver_seq(seq);
        }
    }

    /// Takes the packet numbered `seq` off the link and delivers it.
    fn deliver_seq(&mut self, seq: u64) {
        let i = self.flight.iter().position(|f| f.seq == seq).unwrap();
        let f = self.flight.swap_remove(i);
        self.deliver(f);
    }

    /// Packets the nodes' transmit queues refused (see [`Netem::txq`]).
    pub fn refused(&self) -> u64 {
        self.nodes.iter().map(|n| n.tx.refused).sum()
    }

    /// Advance to the next event. Returns false when nothing is pending.
    pub fn step(&mut self) -> bool {
        self.pump();
        let next_pkt = self.flight.iter().map(|f| (f.at, f.seq)).min();
        let next_timer = self.nodes.iter().filter_map(|n| n.qp.next_deadline()).min();
        // A busy link becoming free lets its node send again.
        let next_free = self.free_at.iter().copied().filter(|&f| f > self.now).min();
        // A node whose transmit queue refused a packet tries again by
        // itself when its pause ends (and at any turn before).
        let next_retry = self
            .nodes
            .iter()
            .filter_map(|n| n.stall.retry_at())
            .filter(|&t| t > self.now)
            .min();
        let Some(t) = [next_pkt.map(|x| x.0), next_timer, next_free, next_retry]
            .into_iter()
            .flatten()
            .min()
        else {
            return false;
        };
        self.now = self.now.max(t);
        if let Some((at, seq)) = next_pkt {
            if at <= self.now {
                self.deliver_seq(seq);
                return true;
            }
        }
        let now = self.now;
        for n in &mut self.nodes {
            if n.qp.next_deadline().is_some_and(|d| d <= now) {
                if self.trace {
                    eprintln!("{now:>9} timer");
                }
                n.with(now, |qp, env| qp.on_timer(env));
            }
        }
        true
    }
}
