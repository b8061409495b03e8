//! The window grows only while it limits sending (`TcpConfig::cwnd_limited_growth`), as
//! Linux's `tcp_is_cwnd_limited` gates `tcp_reno_cong_avoid` and `bictcp_cong_avoid`: a sender
//! held back by its application, its send buffer or the receiver's window does not grow a
//! window it does not use. Without this rule the simulator's window grows on every ACK, up to
//! the receiver's window, however little is sent.
//!
//! Read from Linux's include/net/tcp.h (`tcp_is_cwnd_limited`) and net/ipv4/tcp_output.c
//! (`tcp_cwnd_validate`, `tcp_write_xmit`); the code below is written from the rules.
//!
//! Modelled:
//! * After each attempt to send (`tcp_write_xmit`), the sender was window-limited when what it
//!   has in flight leaves no room for a segment in cwnd. When it sent something or was
//!   window-limited, and the last window's measurement is over (SND.UNA has passed the
//!   SND.NXT of that measurement), or it is window-limited now, or it was not and has more
//!   outstanding than ever in this window, the measurement starts again: the window-limited
//!   state, the most outstanding (`max_packets_out`) and the SND.NXT it ends at
//!   (`tcp_cwnd_validate`).
//! * The window may grow (`tcp_is_cwnd_limited`) when the window was limiting in the current
//!   measurement, or in slow start while cwnd is below twice the most outstanding ("ensure cwnd
//!   grows to twice what was ACKed").
//!
//! Choices and what is left out:
//! * In flight outside recovery is SND.NXT - SND.UNA (the sender's FlightSize); Linux's
//!   `tcp_packets_in_flight` subtracts SACKed and lost segments, which only differ once a loss
//!   is detected, where the window does not grow anyway.
//! * Linux also counts as window-limited a sender whose TSO deferral waits for the window
//!   (`tcp_tso_should_defer`); the simulator does not defer.
//! * RFC 7661's reduction of an unused window after an idle period and Linux's
//!   `tcp_cwnd_application_limited` (cwnd halved toward what was used once the sender has been
//!   limited by its application for an RTO) are not modelled.

use super::TcpSender;

/// The state of `tcp_cwnd_validate`'s measurement of the window's use (bytes and sequence
/// numbers).
#[derive(Debug, Clone, Default)]
pub struct CwndUsage {
    /// The window limited sending during the current measurement (`is_cwnd_limited`).
    cwnd_limited: bool,
    /// The most outstanding in the current measurement (`max_packets_out`, bytes).
    max_outstanding: u64,
    /// The measurement ends when SND.UNA reaches this (`cwnd_usage_seq`).
    usage_seq: u64,
}

impl CwndUsage {
    /// `tcp_cwnd_validate`, after a send attempt that sent something or stopped at the window
    /// (`limited_now`), with `outstanding` = SND.NXT - SND.UNA.
    pub fn on_send_attempt(&mut self, limited_now: bool, outstanding: u64, snd_una: u64, snd_nxt: u64) {
        if snd_una >= self.usage_seq || limited_now || (!self.cwnd_limited && outstanding > self.max_outstanding) {
            self.cwnd_limited = limited_now;
            self.max_outstanding = outstanding;
            self.usage_seq = snd_nxt;
        }
    }

    /// `tcp_is_cwnd_limited`: whether an ACK may grow the window.
    pub fn allows_growth(&self, cwnd: u64, ssthresh: u64) -> bool {
        self.cwnd_limited || (cwnd < ssthresh && cwnd < 2 * self.max_outstanding)
    }
}

impl TcpSender {
    /// Records, after the send loop, whether the window limited it (`sent`: segments went
    /// out). Out of line: the send loop it follows is inlined into the per-ACK path.
    #[inline(never)]
    pub(super) fn note_cwnd_usage(&mut self, sent: bool) {
        let outstanding = self.snd_nxt - self.snd_una;
        let limited_now = outstanding + self.mss > self.cwnd;
        if let Some(u) = self.cwnd_usage.as_mut() {
            if sent || limited_now {
                u.on_send_attempt(limited_now, outstanding, self.snd_una, self.snd_nxt);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    #[test]
    fn a_window_limited_send_allows_growth_for_that_window() {
        let mut u = CwndUsage::default();
        u.on_send_attempt(true, 10 * MSS, 0, 10 * MSS);
        assert!(u.allows_growth(10 * MSS, 5 * MSS));
        // Later sends within the same window that are not limited do not clear it...
        u.on_send_attempt(false, 9 * MSS, 2 * MSS, 11 * MSS);
        assert!(u.allows_growth(10 * MSS, 5 * MSS));
        // ...until SND.UNA passes the measurement's SND.NXT.
        u.on_send_attempt(false, 3 * MSS, 10 * MSS, 13 * MSS);
        assert!(!u.allows_growth(10 * MSS, 5 * MSS));
    }

    #[test]
    fn slow_start_grows_to_twice_the_most_outstanding() {
        let mut u = CwndUsage::default();
        u.on_send_attempt(false, 8 * MSS, 0, 8 * MSS);
        // Slow start (cwnd < ssthresh): up to twice the 8 segments outstanding.
        assert!(u.allows_growth(15 * MSS, 100 * MSS));
        assert!(!u.allows_growth(16 * MSS, 100 * MSS));
        // Congestion avoidance: not without the window limiting.
        assert!(!u.allows_growth(10 * MSS, 5 * MSS));
        // More outstanding than ever in this measurement raises the bound at once.
        u.on_send_attempt(false, 12 * MSS, MSS, 13 * MSS);
        assert!(u.allows_growth(20 * MSS, 100 * MSS));
    }

    use crate::tcp::tests::cfg;
    use crate::tcp::{TcpReceiver, TcpSender};
    use aqmlab_core::Time;
    use aqmlab_model::app::tcp_config::TcpConfig;

    /// cwnd after 30 lossless round trips of an application that has 5 segments to send each
    /// round (`write_until`), every segment acknowledged at once, from a window of 10 with
    /// ssthresh 4 (congestion avoidance from the start).
    fn window_of_an_application_limited_sender(cwnd_limited_growth: bool) -> u64 {
        let c = TcpConfig { mss: MSS as u32, initial_cwnd_segments: 10, cwnd_limited_growth, ..cfg() };
        let (mut s, mut r) = (TcpSender::new(&c), TcpReceiver::new(&c));
        s.ssthresh = 4 * MSS;
        let mut out = Vec::new();
        for round in 0..30u64 {
            let now = Time::from_millis(50 * round);
            s.write_until(s.snd_max + 5 * MSS);
            s.send_available(now, &mut out);
            for seq in out.drain(..).map(|x| x.seq).collect::<Vec<_>>() {
                r.on_data(seq, MSS as u32, false, now);
                let (ack, _) = r.take_ack();
                s.on_ack_sack(ack, false, r.sack_blocks().as_slice(), now, &mut out);
            }
        }
        s.cwnd
    }

    #[test]
    fn an_application_limited_sender_keeps_its_window() {
        // Never more than 5 of its 10 segments in flight: the window stays.
        assert_eq!(window_of_an_application_limited_sender(true), 10 * MSS);
        // Without the rule it grows by about 5 / cwnd a round for 30 rounds.
        assert!(window_of_an_application_limited_sender(false) > 11 * MSS);
    }
}
