//! Building one packet into the environment's transmit sink: its headers,
//! and its payload either copied into the packet or, where the sink can,
//! sent by reference from the memory it lies in.

use crate::proto::env::{Env, PayloadRef};
use crate::proto::packet::Headers;

/// Where a packet's payload comes from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Body<'a> {
    /// No payload.
    Empty,
    /// Bytes the engine holds (an ATOMIC WRITE's value).
    Bytes(&'a [u8]),
    /// Registered memory: sent by reference if the sink takes it so,
    /// copied otherwise.
    Memory(PayloadRef),
}

impl Body<'_> {
    fn len(&self) -> usize {
        match self {
            Body::Empty => 0,
            Body::Bytes(b) => b.len(),
            Body::Memory(p) => p.len as usize,
        }
    }
}

/// Why a packet was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EmitFail {
    /// The sink has no buffer now, or refused the packet: try again
    /// later.
    Busy,
    /// The headers and payload length do not make a packet.
    Build,
    /// The payload's memory cannot be read (key, rights, bounds).
    Memory,
}

/// Sends one packet of headers `hdr` and payload `body`, standing for
/// `psns` PSNs (see [`crate::proto::env::TxSink::commit`]).
pub(crate) fn emit(
    env: &mut Env<'_>,
    hdr: &Headers,
    body: Body<'_>,
    psns: u32,
) -> Result<(), EmitFail> {
    let plen = body.len();
    let (head, len) = hdr.layout(plen).map_err(|_| EmitFail::Build)?;
    if let Body::Memory(p) = body {
        if plen > 0 {
            if let Some(buf) = env.tx.buffer_by_ref(len, head, p) {
                hdr.emit_headers(buf, plen).map_err(|_| EmitFail::Build)?;
                return commit(env, psns);
            }
        }
    }
    let buf = env.tx.buffer(len).ok_or(EmitFail::Busy)?;
    let off = hdr.emit(buf, plen).map_err(|_| EmitFail::Build)?;
    // Exactly `plen` bytes by construction, so no copy has a
    // length-mismatch panic path.
    let dst = buf
        .get_mut(off..)
        .and_then(|d| d.get_mut(..plen))
        .ok_or(EmitFail::Build)?;
    match body {
        Body::Empty => {}
        Body::Bytes(b) => {
            let d = dst.get_mut(..b.len()).ok_or(EmitFail::Build)?;
            d.copy_from_slice(b);
        }
        Body::Memory(p) => {
            if plen > 0 {
                env.mem
                    .read(p.key, p.va, dst, p.access)
                    .map_err(|_| EmitFail::Memory)?;
            }
        }
    }
    commit(env, psns)
}

/// Sends the packet just built; a refusal is [`EmitFail::Busy`].
fn commit(env: &mut Env<'_>, psns: u32) -> Result<(), EmitFail> {
    if env.tx.commit(psns) {
        Ok(())
    } else {
        Err(EmitFail::Busy)
    }
}
