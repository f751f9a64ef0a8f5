//! The requester's congestion window: how many packets an RC QP keeps in
//! flight.
//!
//! RoCE relies on a lossless fabric (PFC) that an ordinary Ethernet network
//! does not give, and a soft-RoCE requester that always fills its whole
//! window overflows the first short queue on the way (a switch port, a
//! slow receiver's ring) on every burst. Every overflow then costs a
//! go-back-N retransmission of the rest of the window, which overflows the
//! queue again. So the window follows TCP Reno's rule (RFC 5681), in
//! packets:
//!
//! * it starts at the QP's maximum, so a network that loses nothing (and a
//!   QP of the same device, whose packets never leave memory) sees no
//!   difference;
//! * a loss (a PSN sequence NAK, a READ or atomic response missing) halves
//!   it, down to [`MIN_WINDOW`]. The requester goes back N and starts one
//!   retransmission per lost packet (a NAK repeated for the same PSN starts
//!   none), and the responder NAKs only the first gap of a burst, so one
//!   overflow is one cut; a retransmission that overflows the queue again
//!   is a second one;
//! * each window's worth of packets acknowledged grows it by one packet,
//!   back up to the maximum (congestion avoidance);
//! * an ACK timeout, where nothing came back at all, drops it to
//!   [`MIN_WINDOW`]; it then grows by one packet per packet acknowledged
//!   (doubling each round trip: slow start) up to half of what it was, and
//!   on from there by one per window.
//!
//! RNR NAKs are not losses: the responder is short of receive WQEs, not
//! the network of room.

use crate::proto::Psn;

/// The window never shrinks below this many packets (or the QP's maximum,
/// if that is smaller).
pub const MIN_WINDOW: u32 = 8;

/// A requester's congestion window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cwnd {
    /// Packets allowed in flight.
    size: u32,
    /// The QP's maximum (`QpConfig::max_inflight_pkts`).
    max: u32,
    /// Below this size the window grows by one packet per packet
    /// acknowledged, from it on by one per window.
    threshold: u32,
    /// Packets acknowledged since the window last grew by one (congestion
    /// avoidance).
    acked: u32,
    /// The oldest unacknowledged PSN when last told.
    base: Psn,
}

impl Cwnd {
    /// A full window of `max` packets (at least one), nothing acknowledged
    /// before `psn`.
    pub fn new(max: u32, psn: Psn) -> Self {
        let max = max.max(1);
        Self {
            size: max,
            max,
            threshold: max,
            acked: 0,
            base: psn,
        }
    }

    /// Packets allowed in flight now.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The responder has acknowledged every packet before `comp_psn`.
    pub fn acknowledged(&mut self, comp_psn: Psn) {
        if !comp_psn.after(self.base) {
            return;
        }
        let n = comp_psn.since(self.base);
        self.base = comp_psn;
        if self.size >= self.max {
            self.acked = 0;
            return;
        }
        if self.size < self.threshold {
            self.size = self.size.saturating_add(n).min(self.threshold);
            return;
        }
        self.acked = self.acked.saturating_add(n);
        if self.acked >= self.size {
            self.acked = self.acked.saturating_sub(self.size);
            self.size = self.size.saturating_add(1).min(self.max);
        }
    }

    /// The network lost a packet: the requester starts a retransmission.
    /// Returns whether the window shrank (it does not at its floor).
    pub fn lost(&mut self) -> bool {
        let before = self.size;
        self.threshold = (self.size / 2).max(MIN_WINDOW).min(self.max);
        self.size = self.threshold;
        self.acked = 0;
        self.size < before
    }

    /// The ACK timer expired (after [`Cwnd::lost`] for the same
    /// retransmission): start again from the smallest window.
    pub fn timed_out(&mut self) {
        self.size = MIN_WINDOW.min(self.max);
        self.acked = 0;
    }

    /// Forgets what was in flight (the requester flushed it): nothing is
    /// acknowledged before `psn`.
    pub fn restart_at(&mut self, psn: Psn) {
        self.base = psn;
        self.acked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_full_and_stays_full_without_loss() {
        let mut w = Cwnd::new(256, Psn::new(10));
        assert_eq!(w.size(), 256);
        w.acknowledged(Psn::new(5000));
        assert_eq!(w.size(), 256);
    }

    #[test]
    fn halves_per_loss_down_to_the_floor() {
        let mut w = Cwnd::new(256, Psn::new(0));
        assert!(w.lost());
        assert_eq!(w.size(), 128);
        assert!(w.lost());
        assert_eq!(w.size(), 64);
        // 32, 16, 8: then the floor, where a loss changes nothing.
        let shrank = (0..20).filter(|_| w.lost()).count();
        assert_eq!(shrank, 3);
        assert_eq!(w.size(), MIN_WINDOW);
        let mut small = Cwnd::new(4, Psn::new(0));
        assert!(!small.lost());
        assert_eq!(small.size(), 4);
        assert_eq!(Cwnd::new(0, Psn::new(0)).size(), 1);
    }

    #[test]
    fn grows_by_one_per_window_acknowledged() {
        let mut w = Cwnd::new(256, Psn::new(0));
        w.lost();
        w.acknowledged(Psn::new(1));
        assert_eq!(w.size(), 128);
        // 127 packets acknowledged: not yet a window's worth.
        w.acknowledged(Psn::new(127));
        assert_eq!(w.size(), 128);
        w.acknowledged(Psn::new(128));
        assert_eq!(w.size(), 129);
        // A loss forgets the packets counted towards the next growth.
        w.acknowledged(Psn::new(200));
        w.lost();
        w.acknowledged(Psn::new(263));
        assert_eq!(w.size(), 64);
        w.acknowledged(Psn::new(264));
        assert_eq!(w.size(), 65);
        // Many windows later it is back at the maximum, and no further.
        let mut psn = 264u32;
        for _ in 0..1000 {
            psn += 64;
            w.acknowledged(Psn::new(psn));
        }
        assert_eq!(w.size(), 256);
    }

    #[test]
    fn timeout_restarts_slowly_up_to_half() {
        let mut w = Cwnd::new(256, Psn::new(0));
        w.lost();
        w.timed_out();
        assert_eq!(w.size(), MIN_WINDOW);
        // Slow start: one packet more per packet acknowledged, up to half
        // of the window before the timeout.
        w.acknowledged(Psn::new(8));
        assert_eq!(w.size(), 16);
        w.acknowledged(Psn::new(200));
        assert_eq!(w.size(), 128);
        // Then one per window.
        w.acknowledged(Psn::new(327));
        assert_eq!(w.size(), 128);
        w.acknowledged(Psn::new(328));
        assert_eq!(w.size(), 129);
    }

    #[test]
    fn acknowledgements_across_the_psn_wrap() {
        let top = (1u32 << 24) - 10;
        let mut w = Cwnd::new(64, Psn::new(top));
        w.lost();
        assert_eq!(w.size(), 32);
        // 40 packets later, past the wrap: more than a window.
        w.acknowledged(Psn::new(top).add(40));
        assert_eq!(w.size(), 33);
        // An old (or repeated) acknowledgement changes nothing.
        w.acknowledged(Psn::new(top).add(20));
        w.acknowledged(Psn::new(top).add(40));
        assert_eq!(w.size(), 33);
    }

    #[test]
    fn restart_counts_from_the_new_psn() {
        let mut w = Cwnd::new(64, Psn::new(0));
        w.lost();
        w.acknowledged(Psn::new(20));
        // Flushed: PSNs up to 1000 were never acknowledged packets.
        w.restart_at(Psn::new(1000));
        w.acknowledged(Psn::new(1031));
        assert_eq!(w.size(), 32);
        w.acknowledged(Psn::new(1032));
        assert_eq!(w.size(), 33);
    }
}
