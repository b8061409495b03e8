//! The connection's opening, the client's half of the three-way handshake (RFC 9293 section
//! 3.5): a SYN, retransmitted on a timer until the server's SYN-ACK arrives, which gives the
//! first RTT sample and says whether the data may start with the full initial window.
//!
//! Choices where the sources leave room (docs/tcp.md, "The handshake"):
//! - The SYN timer starts at `TcpConfig::initial_rto` (RFC 6298 section 2.1: 1 s; Linux's
//!   `TCP_TIMEOUT_INIT`) and doubles on each expiry up to `max_rto` (RFC 6298 section 5.5).
//! - After `SYN_RETRIES` retransmissions the client gives up and the connection never opens,
//!   as Linux does with `net.ipv4.tcp_syn_retries` = 6 (its default).
//! - The RTT sample is taken only from a SYN that was not retransmitted (Karn's rule, RFC 6298
//!   section 3; the simulator's segments carry no timestamps that would tell the copies apart).
//! - When a SYN was retransmitted (the SYN or the SYN-ACK was lost), the data starts with one
//!   segment, RFC 5681 section 3.1: "if the SYN or SYN/ACK is lost, the initial window used by a
//!   sender after a correctly transmitted SYN MUST be one segment".
//! - The server answers every SYN, a retransmitted one too, with a SYN-ACK and keeps no timer
//!   of its own (Linux's server also retransmits its SYN-ACK, `tcp_synack_retries`; here a lost
//!   SYN-ACK is repaired by the client's SYN retransmission, which the server answers). The
//!   handshake's third segment, the client's ACK, travels with the first data segment (which
//!   carries ACK), as a client with data to send does.

use aqmlab_core::Time;

/// Linux's default `net.ipv4.tcp_syn_retries`: SYN retransmissions before giving up.
pub const SYN_RETRIES: u32 = 6;

/// Where the opening stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// A SYN is out, the timer runs until `deadline`.
    SynSent { deadline: Time },
    /// The SYN-ACK arrived: data may flow.
    Established,
    /// Every retransmission timed out: the connection never opens.
    GaveUp,
}

/// What the SYN-ACK told the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opened {
    /// The handshake's RTT, when the SYN it answers was sent once (Karn's rule).
    pub rtt: Option<Time>,
    /// A SYN was retransmitted: the data starts with one segment (RFC 5681 section 3.1).
    pub syn_lost: bool,
}

/// The client's opening (RFC 9293 section 3.5, with the timer rules of RFC 6298).
#[derive(Clone, Debug)]
pub struct Handshake {
    state: State,
    sent_at: Time,
    retries: u32,
    rto: Time,
    max_rto: Time,
}

impl Handshake {
    /// Sends the first SYN at `now`: the caller puts it on the wire and arms a timer at the
    /// returned deadline.
    pub fn start(now: Time, initial_rto: Time, max_rto: Time) -> (Handshake, Time) {
        let deadline = now + initial_rto;
        let h = Handshake { state: State::SynSent { deadline }, sent_at: now, retries: 0, rto: initial_rto, max_rto };
        (h, deadline)
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// SYNs retransmitted so far.
    pub fn retransmissions(&self) -> u32 {
        self.retries
    }

    /// The SYN timer fired at `now`: `Some(deadline)` when a SYN is to be retransmitted now
    /// (and the timer re-armed at `deadline`), `None` when the timer is stale (an earlier event
    /// of a re-armed timer, or the connection is open) or the client gives up.
    pub fn on_timer(&mut self, now: Time) -> Option<Time> {
        let State::SynSent { deadline } = self.state else { return None };
        if now < deadline {
            return None;
        }
        if self.retries == SYN_RETRIES {
            self.state = State::GaveUp;
            return None;
        }
        self.retries += 1;
        // RFC 6298 section 5.5: back off the timer, here up to max_rto.
        self.rto = Time((self.rto.0.saturating_mul(2)).min(self.max_rto.0));
        self.sent_at = now;
        let deadline = now + self.rto;
        self.state = State::SynSent { deadline };
        Some(deadline)
    }

    /// A SYN-ACK arrived at `now`: `Some` the first time (the connection opens), `None` for a
    /// duplicate or after giving up.
    pub fn on_syn_ack(&mut self, now: Time) -> Option<Opened> {
        let State::SynSent { .. } = self.state else { return None };
        self.state = State::Established;
        let syn_lost = self.retries > 0;
        Some(Opened { rtt: (!syn_lost).then(|| now - self.sent_at), syn_lost })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_syn_ack_opens_the_connection_with_the_rtt_of_the_syn() {
        let (mut h, deadline) = Handshake::start(Time(5 * S), Time(S), Time(60 * S));
        assert_eq!(deadline, Time(6 * S));
        let opened = h.on_syn_ack(Time(5 * S + 42_000_000)).unwrap();
        assert_eq!(opened, Opened { rtt: Some(Time(42_000_000)), syn_lost: false });
        assert_eq!(h.state(), State::Established);
        // a duplicate SYN-ACK and the stale timer change nothing
        assert_eq!(h.on_syn_ack(Time(6 * S)), None);
        assert_eq!(h.on_timer(Time(6 * S)), None);
        assert_eq!(h.retransmissions(), 0);
    }

    #[test]
    fn lost_syns_are_sent_again_at_1_2_4_s_and_then_no_rtt_and_one_segment() {
        let (mut h, first) = Handshake::start(Time(0), Time(S), Time(60 * S));
        assert_eq!(h.on_timer(Time(S / 2)), None, "early: a stale event");
        let second = h.on_timer(first).unwrap();
        assert_eq!(second, Time(3 * S)); // sent at 1 s, timer 2 s
        let third = h.on_timer(second).unwrap();
        assert_eq!(third, Time(7 * S)); // sent at 3 s, timer 4 s
                                        // the SYN-ACK answers some copy: no RTT sample (Karn), one segment to start with
        let opened = h.on_syn_ack(Time(3 * S + 40_000_000)).unwrap();
        assert_eq!(opened, Opened { rtt: None, syn_lost: true });
        assert_eq!(h.retransmissions(), 2);
    }

    #[test]
    fn the_timer_backs_off_to_max_rto_and_gives_up_after_six_retransmissions() {
        let (mut h, mut deadline) = Handshake::start(Time(0), Time(S), Time(10 * S));
        let mut sent = vec![];
        while let Some(next) = h.on_timer(deadline) {
            sent.push(deadline.0 / S);
            deadline = next;
        }
        // retransmissions at 1, 3, 7, 15, 25, 35 s (2, 4, 8, then capped at 10 s)
        assert_eq!(sent, vec![1, 3, 7, 15, 25, 35]);
        assert_eq!(h.retransmissions(), SYN_RETRIES);
        assert_eq!(h.state(), State::GaveUp);
        assert_eq!(deadline, Time(45 * S), "the last wait");
        assert_eq!(h.on_syn_ack(Time(50 * S)), None, "too late: it never opens");
    }
}
