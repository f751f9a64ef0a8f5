//! Pauses for a full transmit queue.
//!
//! A QP whose packet the local transmit queue refused (a full qdisc, or no
//! memory for the packet) keeps that packet at the head of its queue and
//! sends it again later, instead of losing it: the requester and responder
//! hold it through [`crate::proto::env::TxSink::commit`] returning `false`,
//! a datagram QP leaves its work request in the ring. [`Stall`] says when
//! the QP tries again by itself (any earlier run, for a doorbell or an
//! arriving packet, tries too), and when it stops waiting.

/// After the transmit queue refused a packet, the QP tries again by itself
/// this many microseconds later, doubled for each further try in a row that
/// could send nothing (up to [`MAX_BACKOFF_SHIFT`] times).
pub const BACKOFF_US: u64 = 20;
/// Most doublings of [`BACKOFF_US`] (1.28 ms).
pub const MAX_BACKOFF_SHIFT: u32 = 6;
/// How long (µs) a QP waits for a queue that takes none of its packets
/// before it stops waiting: its packets are then lost to it (a connected
/// QP's ACK timer and retry count decide), so a queue that never drains
/// fails a connected QP, and empties a datagram QP's send queue, instead of
/// holding the QP forever.
pub const MAX_STALL_US: u64 = 64_000;
/// Tries further apart than this (µs) do not count as one stall: the QP
/// (its CPU, or the whole guest) was away, and finds the queue as full as
/// it left it, which says nothing about the queue. A stall counts from the
/// first refusal after such a gap. The timer brings a waiting QP back at
/// most [`BACKOFF_US`] << [`MAX_BACKOFF_SHIFT`] (1.28 ms) after each try.
pub const MAX_TRY_GAP_US: u64 = 10_000;

/// A QP's waits for a full transmit queue.
#[derive(Debug, Default, Clone)]
pub struct Stall {
    /// Tries in a row that sent nothing because a packet was refused.
    tries: u32,
    /// When (µs) the queue began to take nothing, while it does.
    since: Option<u64>,
    /// When (µs) the last try was refused.
    last: u64,
    /// When (µs) the QP tries again by itself; 0 when nothing waits.
    until: u64,
}

impl Stall {
    /// When (µs) the QP tries again by itself, if a refused packet waits.
    pub fn retry_at(&self) -> Option<u64> {
        (self.until != 0).then_some(self.until)
    }

    /// Whether a packet refused now (the time in µs, read only if needed)
    /// may wait for the next try (else it counts as sent, and is lost).
    pub fn may_pause(&self, now: impl FnOnce() -> u64) -> bool {
        self.since.is_none_or(|since| {
            let now = now();
            now.saturating_sub(self.last) > MAX_TRY_GAP_US
                || now.saturating_sub(since) < MAX_STALL_US
        })
    }

    /// Notes the end of a try to send that sent something (`sent_any`)
    /// and had a packet refused (`refused`) at `now` (µs, read only if
    /// needed); returns when (µs) the QP must try again, if a packet waits.
    pub fn end_try(
        &mut self,
        now: impl FnOnce() -> u64,
        sent_any: bool,
        refused: bool,
    ) -> Option<u64> {
        if !refused || sent_any {
            // The queue took what it was given: a new stall starts afresh.
            self.tries = 0;
            self.since = None;
            self.until = 0;
        }
        if !refused {
            return None;
        }
        if !sent_any {
            self.tries = self.tries.saturating_add(1);
        }
        let now = now();
        if self.since.is_none() || now.saturating_sub(self.last) > MAX_TRY_GAP_US {
            self.since = Some(now);
        }
        self.last = now;
        self.until = now
            .saturating_add(BACKOFF_US << self.tries.min(MAX_BACKOFF_SHIFT))
            .max(1);
        Some(self.until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_while_nothing_goes_and_is_capped() {
        let mut s = Stall::default();
        assert_eq!(s.retry_at(), None);
        // Something went, then the queue was full: the shortest pause.
        assert_eq!(s.end_try(|| 1000, true, true), Some(1020));
        let mut now = 1020;
        let mut waits = [0; 9];
        for w in &mut waits {
            let until = s.end_try(|| now, false, true).unwrap();
            *w = until - now;
            now = until;
        }
        assert_eq!(waits, [40, 80, 160, 320, 640, 1280, 1280, 1280, 1280]);
        assert_eq!(s.retry_at(), Some(now));
    }

    #[test]
    fn progress_ends_the_stall() {
        let mut s = Stall::default();
        s.end_try(|| 10, false, true);
        s.end_try(|| 50, false, true);
        // The queue took everything: no pause, and the next refusal
        // starts from the shortest pause again.
        assert_eq!(s.end_try(|| 200, true, false), None);
        assert_eq!(s.retry_at(), None);
        assert_eq!(s.end_try(|| 300, false, true), Some(340));
        // A try with nothing to send also ends it.
        assert_eq!(s.end_try(|| 400, false, false), None);
        assert!(s.may_pause(|| u64::MAX));
    }

    #[test]
    fn gives_up_after_max_stall() {
        let mut s = Stall::default();
        // Nothing stalls yet: the clock is not even read.
        assert!(s.may_pause(|| panic!("read the clock")));
        s.end_try(|| 5_000, false, true);
        let mut now = 5_000;
        while now < 5_000 + MAX_STALL_US {
            assert!(s.may_pause(|| now));
            now = s.end_try(|| now, false, true).unwrap();
        }
        assert!(!s.may_pause(|| now));
        // The refused packet then counts as sent: the queue took "something",
        // and the next refusal pauses again.
        assert_eq!(s.end_try(|| now, true, false), None);
        assert!(s.may_pause(|| now));
    }

    #[test]
    fn a_long_freeze_is_not_a_stall() {
        let mut s = Stall::default();
        let mut now = 1_000;
        while now < 1_000 + MAX_STALL_US / 2 {
            s.end_try(|| now, false, true);
            now += 1_000;
        }
        // The CPU was away for a second: the first try after it finds the
        // queue as full as before. The packet still waits, and the stall
        // counts from here.
        now += 1_000_000;
        assert!(s.may_pause(|| now));
        s.end_try(|| now, false, true);
        let start = now;
        while now < start + MAX_STALL_US {
            assert!(s.may_pause(|| now));
            now += 5_000;
            s.end_try(|| now, false, true);
        }
        assert!(!s.may_pause(|| now));
    }

    #[test]
    fn clock_read_only_on_refusal_and_no_overflow() {
        let mut s = Stall::default();
        assert_eq!(s.end_try(|| panic!("read the clock"), true, false), None);
        assert_eq!(s.end_try(|| u64::MAX, false, true), Some(u64::MAX));
        assert!(s.may_pause(|| u64::MAX));
        // Time 0 still pauses (until is never 0 while paused).
        let mut s = Stall::default();
        assert!(s.end_try(|| 0, false, true).unwrap() > 0);
        assert!(s.retry_at().is_some());
    }
}
