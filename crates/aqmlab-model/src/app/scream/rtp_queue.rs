//! The sender's RTP queue: the encoder's packets wait here until the send window and the pacer
//! let them go (draft-johansson-ccwg-rfc8298bis-screamv2, section "Sender Transmission
//! Control"). When the oldest packet has waited longer than MAX_RTP_QUEUE_DELAY the whole
//! queue is discarded, so that a sudden drop in throughput does not leave seconds of stale
//! video queued (the draft's media rate control section allows discarding frames and leaves the
//! method out; RFC 8298 section 4.2.1 discarded the queue; the threshold is the reference
//! code's, EricssonResearch/scream's kMaxRtpQueueDelay).

use aqmlab_core::Time;
use std::collections::VecDeque;

/// Oldest packet age at which the queue is discarded (reference code's default, 0.1 s).
pub const MAX_RTP_QUEUE_DELAY: Time = Time::from_millis(100);

/// A packet waiting: when it was queued, its IP size and its frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    pub at: Time,
    pub size: u32,
    pub frame: u32,
}

#[derive(Clone, Debug, Default)]
pub struct RtpQueue {
    packets: VecDeque<Queued>,
    pub bytes: u64,
    /// Packets discarded so far.
    pub discarded: u64,
}

impl RtpQueue {
    pub fn push(&mut self, q: Queued) {
        self.bytes += q.size as u64;
        self.packets.push_back(q);
    }

    pub fn front(&self) -> Option<&Queued> {
        self.packets.front()
    }

    pub fn pop(&mut self) -> Option<Queued> {
        let q = self.packets.pop_front()?;
        self.bytes -= q.size as u64;
        Some(q)
    }

    pub fn len(&self) -> usize {
        self.packets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// How long the oldest packet has waited (the draft's media_qdelay), s.
    pub fn delay(&self, now: Time) -> f64 {
        self.packets.front().map_or(0.0, |q| now.saturating_sub(q.at).as_secs_f64())
    }

    /// Discards everything if the oldest packet waited more than MAX_RTP_QUEUE_DELAY; returns
    /// how many packets went.
    pub fn discard_stale(&mut self, now: Time) -> usize {
        if self.packets.front().is_none_or(|q| now.saturating_sub(q.at) <= MAX_RTP_QUEUE_DELAY) {
            return 0;
        }
        let n = self.packets.len();
        self.packets.clear();
        self.bytes = 0;
        self.discarded += n as u64;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_is_discarded_when_its_oldest_packet_waited_over_100_ms() {
        let mut q = RtpQueue::default();
        q.push(Queued { at: Time::ZERO, size: 1200, frame: 0 });
        q.push(Queued { at: Time::from_millis(50), size: 800, frame: 1 });
        assert_eq!(q.bytes, 2000);
        assert!((q.delay(Time::from_millis(80)) - 0.08).abs() < 1e-12);
        assert_eq!(q.discard_stale(Time::from_millis(100)), 0);
        assert_eq!(q.discard_stale(Time::from_millis(101)), 2);
        assert!(q.is_empty());
        assert_eq!((q.bytes, q.discarded), (0, 2));
    }
}
