//! The send time of each first transmission not yet acknowledged, for the slow-start exits
//! that time every ACK (HyStart++, [`super::hystart`], and CUBIC's HyStart,
//! [`super::cubic_hystart`]): the sender's RFC 6298 estimator times one segment a round, which
//! gives one sample where these need one per ACK.

use aqmlab_core::Time;
use std::collections::VecDeque;

/// (end sequence, send time) of the first transmissions not yet acknowledged, oldest first.
#[derive(Clone, Debug, Default)]
pub struct SendTimes {
    sent: VecDeque<(u64, Time)>,
}

impl SendTimes {
    /// The segment ending at `end` was sent for the first time at `now`.
    pub fn on_sent(&mut self, end: u64, now: Time) {
        self.sent.push_back((end, now));
    }

    /// Forgets every send time (its memory too).
    pub fn clear(&mut self) {
        self.sent = VecDeque::new();
    }

    /// The RTT of an ACK up to `ack`: now minus the send time of the newest first
    /// transmission it covers (the segments it covers are forgotten); None when it covers none.
    pub fn rtt_sample(&mut self, ack: u64, now: Time) -> Option<Time> {
        let mut newest = None;
        while let Some(&(end, sent)) = self.sent.front() {
            if end > ack {
                break;
            }
            newest = Some(sent);
            self.sent.pop_front();
        }
        newest.map(|sent| now - sent)
    }
}
