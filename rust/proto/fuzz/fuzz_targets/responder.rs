//! A QP fed arbitrary packets (split from the input on length prefixes),
//! interleaved with timer and transmit calls: must never panic, and must
//! only emit packets that parse.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rrxe_proto::*;

struct Mem(Vec<u8>);

impl Mem {
    fn range(&mut self, key: u32, va: u64, len: usize) -> Result<&mut [u8], MemError> {
        if key != 0x42 {
            return Err(MemError::BadKey);
        }
        let start = usize::try_from(va).map_err(|_| MemError::OutOfRange)?;
        let end = start.checked_add(len).ok_or(MemError::OutOfRange)?;
        self.0.get_mut(start..end).ok_or(MemError::OutOfRange)
    }
}

impl MemoryAccess for Mem {
    fn check(&mut self, key: u32, va: u64, len: u32, _: Access) -> Result<(), MemError> {
        self.range(key, va, len as usize).map(|_| ())
    }
    fn read(&mut self, key: u32, va: u64, buf: &mut [u8], _: Access) -> Result<(), MemError> {
        buf.copy_from_slice(self.range(key, va, buf.len())?);
        Ok(())
    }
    fn write(&mut self, key: u32, va: u64, data: &[u8], _: Access) -> Result<(), MemError> {
        self.range(key, va, data.len())?.copy_from_slice(data);
        Ok(())
    }
    fn atomic(&mut self, rkey: u32, va: u64, op: AtomicOp) -> Result<u64, MemError> {
        let w = self.range(rkey, va, 8)?;
        let old = u64::from_ne_bytes(w[..8].try_into().unwrap());
        let new = op.apply(old);
        w.copy_from_slice(&new.to_ne_bytes());
        Ok(old)
    }
}

#[derive(Default)]
struct Tx {
    buf: Vec<u8>,
    sent: usize,
}

impl TxSink for Tx {
    fn buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        self.buf.clear();
        self.buf.resize(len, 0);
        Some(&mut self.buf)
    }
    fn commit(&mut self, _psns: u32) -> bool {
        parse(&self.buf).expect("the QP emitted a packet that does not parse");
        self.sent += 1;
        true
    }
}

struct Cq;
impl CompletionSink for Cq {
    fn send_completion(&mut self, _: &WorkCompletion) {}
    fn recv_completion(&mut self, _: &WorkCompletion) {}
}

fuzz_target!(|data: &[u8]| {
    let mut cfg = QpConfig::new(0x11, 0x22);
    cfg.mtu = 256;
    let Ok(mut qp) = ArrayQp::<4, 4, 6>::new(cfg, Buffers::arrays()) else {
        return;
    };
    let mut mem = Mem(vec![0; 4096]);
    let mut tx = Tx::default();
    let mut cq = Cq;
    let mut now = 0u64;
    let mut rest = data;
    let mut posted = 0u64;
    while let Some((&ctl, tail)) = rest.split_first() {
        let len = usize::from(ctl & 0x7f).min(tail.len());
        let (pkt, tail) = tail.split_at(len);
        rest = tail;
        now += u64::from(ctl);
        let mut env = Env {
            clock: &Clock::at(now),
            mem: &mut mem,
            tx: &mut tx,
            cq: &mut cq,
        };
        if ctl & 0x80 != 0 {
            // Control byte with the high bit: also post work and run timers.
            let wr = RecvWr {
                wr_id: posted,
                sge: Sge {
                    addr: 0,
                    length: 1024,
                    lkey: 0x42,
                },
            };
            let _ = qp.post_recv(&mut env, wr);
            let op = match posted % 4 {
                0 => WrOp::Send,
                1 => WrOp::Write,
                2 => WrOp::Read,
                _ => WrOp::FetchAdd { add: 1 },
            };
            let length = if posted % 4 == 3 {
                8
            } else {
                (posted * 97 % 700) as u32
            };
            let wr = SendWr {
                wr_id: posted,
                op,
                sge: Sge {
                    addr: 1024,
                    length,
                    lkey: 0x42,
                },
                remote_addr: 2048,
                rkey: 0x42,
                signaled: true,
                fence: posted % 5 == 0,
                solicited: false,
            };
            let _ = qp.post_send(&mut env, wr);
            posted += 1;
            qp.on_timer(&mut env);
        }
        // Force the packet to this QP so the state machines see it.
        let mut buf = pkt.to_vec();
        if buf.len() >= 8 {
            buf[5..8].copy_from_slice(&[0, 0, 0x11]);
        }
        if let Ok(p) = parse(&buf) {
            qp.on_packet(&mut env, &p);
        }
        qp.poll_tx(&mut env, 8);
    }
});
