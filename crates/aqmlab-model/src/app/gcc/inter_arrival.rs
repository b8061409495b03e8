//! Packet groups and the delay variation between them (draft-ietf-rmcat-gcc-02 sections 5.1
//! and 5.2).
//!
//! Section 5.1: the one-way delay variation between two consecutive groups is
//! `d(i) = t(i) - t(i-1) - (T(i) - T(i-1))`, with `t` a group's arrival time and `T` its
//! departure time. We take both from the group's *last* packet, as WebRTC's inter-arrival code
//! does (the draft leaves the choice open; the last packet is the one whose arrival completes
//! the group).
//!
//! Section 5.2 (pre-filtering): a group is the packets sent within `burst_time` = 5 ms of the
//! group's first packet; a packet sent later still joins the group when it arrives less than
//! `burst_time` after the previous arrival *and* its own delay variation against the group is
//! negative (the packets were held by the channel and delivered in a burst, which says nothing
//! about the queue).

use aqmlab_core::Time;

/// `burst_time` of section 5.2.
pub const BURST_TIME: Time = Time::from_millis(5);

#[derive(Clone, Copy, Debug, PartialEq)]
struct Group {
    first_send: Time,
    last_send: Time,
    last_arrival: Time,
}

/// The deltas between two complete, consecutive groups, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupDelta {
    /// `T(i) - T(i-1)`.
    pub send_delta_ms: f64,
    /// `t(i) - t(i-1)`.
    pub arrival_delta_ms: f64,
    /// `t(i)`: arrival of the newer group's last packet, ms since t = 0 (the trendline's x).
    pub arrival_ms: f64,
}

impl GroupDelta {
    /// `d(i)` of section 5.1, ms.
    pub fn variation_ms(&self) -> f64 {
        self.arrival_delta_ms - self.send_delta_ms
    }
}

fn ms(t: Time) -> f64 {
    t.as_nanos() as f64 * 1e-6
}

/// Groups packets as they are reported (in arrival order) and yields one [`GroupDelta`] each
/// time a group completes after a previous complete group.
#[derive(Clone, Debug, Default)]
pub struct InterArrival {
    current: Option<Group>,
    previous: Option<Group>,
}

impl InterArrival {
    /// A packet sent at `send` arrived at `arrival`. Returns the delta between the two latest
    /// complete groups when this packet starts a new group.
    pub fn on_packet(&mut self, send: Time, arrival: Time) -> Option<GroupDelta> {
        let Some(mut g) = self.current else {
            self.current = Some(Group { first_send: send, last_send: send, last_arrival: arrival });
            return None;
        };
        if send < g.first_send {
            // Reordered behind its group's start: it says nothing about this group's spacing.
            return None;
        }
        if self.belongs(&g, send, arrival) {
            g.last_send = g.last_send.max(send);
            g.last_arrival = g.last_arrival.max(arrival);
            self.current = Some(g);
            return None;
        }
        let delta = self.previous.map(|p| GroupDelta {
            send_delta_ms: ms(g.last_send) - ms(p.last_send),
            arrival_delta_ms: ms(g.last_arrival) - ms(p.last_arrival),
            arrival_ms: ms(g.last_arrival),
        });
        self.previous = Some(g);
        self.current = Some(Group { first_send: send, last_send: send, last_arrival: arrival });
        delta
    }

    fn belongs(&self, g: &Group, send: Time, arrival: Time) -> bool {
        if send.saturating_sub(g.first_send) <= BURST_TIME {
            return true;
        }
        // Section 5.2's burst: arrives within burst_time of the group's last arrival and
        // with a negative delay variation against it.
        let arrival_gap = ms(arrival) - ms(g.last_arrival);
        let send_gap = ms(send) - ms(g.last_send);
        arrival_gap < ms(BURST_TIME) && arrival_gap - send_gap < 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Time {
        Time::from_millis(ms)
    }

    #[test]
    fn packets_within_five_ms_of_the_first_form_one_group() {
        let mut ia = InterArrival::default();
        // Group A: sent 0, 2, 5 ms; group B: 10, 12 ms; group C starts at 20 ms.
        assert_eq!(ia.on_packet(t(0), t(50)), None);
        assert_eq!(ia.on_packet(t(2), t(52)), None);
        assert_eq!(ia.on_packet(t(5), t(56)), None);
        assert_eq!(ia.on_packet(t(10), t(70)), None, "A completes, but has no predecessor");
        assert_eq!(ia.on_packet(t(12), t(73)), None);
        let d = ia.on_packet(t(20), t(80)).expect("B completes after A");
        // Last packets: A sent 5 arrived 56, B sent 12 arrived 73.
        assert_eq!(d.send_delta_ms, 7.0);
        assert_eq!(d.arrival_delta_ms, 17.0);
        assert_eq!(d.variation_ms(), 10.0);
        assert_eq!(d.arrival_ms, 73.0);
    }

    #[test]
    fn a_late_burst_with_negative_variation_joins_the_group() {
        let mut ia = InterArrival::default();
        ia.on_packet(t(0), t(100));
        // Sent 10 ms later but arriving 1 ms after: held by the channel, same group.
        assert_eq!(ia.on_packet(t(10), t(101)), None);
        // A packet sent at 20 arriving 30 ms later has positive variation: new group, no
        // delta yet (no previous group).
        assert_eq!(ia.on_packet(t(20), t(131)), None);
        let d = ia.on_packet(t(40), t(151)).unwrap();
        // The merged group ended with the packet sent at 10 arriving at 101.
        assert_eq!(d.send_delta_ms, 10.0);
        assert_eq!(d.arrival_delta_ms, 30.0);
    }
}
