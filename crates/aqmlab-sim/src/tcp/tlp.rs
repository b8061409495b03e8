//! Tail loss probes (RFC 8985 section 7): when the ACKs stop with data outstanding and no loss
//! known, the sender sends one probe after a probe timeout (PTO) of about two round trips,
//! well before the RTO, so that a tail loss is repaired by SACK recovery instead of a timeout.

use aqmlab_core::Time;

/// RFC 8985 section 7.5.1's WCDelAckT: the worst-case delayed-ACK time the PTO allows for when
/// one segment is in flight (the RFC's RECOMMENDED 200 ms).
pub const WC_DEL_ACK: Time = Time(200_000_000);
/// The PTO before any RTT sample (section 7.2: 1 second).
pub const PTO_NO_RTT: Time = Time(1_000_000_000);

/// RFC 8985 section 7.2 TLP_calc_PTO: 2 * SRTT (plus WCDelAckT when `one_segment` is in
/// flight), 1 s without SRTT; never after the RTO's expiry `rto_at`.
pub fn pto_deadline(now: Time, srtt: Option<Time>, one_segment: bool, rto_at: Option<Time>) -> Time {
    let pto = match srtt {
        Some(s) if one_segment => Time(2 * s.as_nanos()) + WC_DEL_ACK,
        Some(s) => Time(2 * s.as_nanos()),
        None => PTO_NO_RTT,
    };
    let at = now + pto;
    rto_at.map_or(at, |r| at.min(r))
}

/// One TLP episode (section 7.4): TLP.end_seq and TLP.is_retrans.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tlp {
    /// SND.NXT after the probe; None when no probe is outstanding.
    pub end_seq: Option<u64>,
    pub is_retrans: bool,
}

/// What an ACK says about the outstanding probe (section 7.4.2 TLP_process_ack).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// The episode goes on.
    Pending,
    /// Over without a loss to react to (new data probed; or, for a retransmitted probe, a
    /// duplicate ACK without SACK: the original and the probe both arrived).
    NoLoss,
    /// The ACK covers more than the retransmitted probe: it repaired a loss, and congestion
    /// control must reduce the window once.
    Repaired,
}

impl Tlp {
    /// `ack` arrived; `duplicate`: it did not advance SND.UNA and carried no SACK block. The
    /// receiver sends no DSACK, so the section's DSACK branch never applies.
    pub fn on_ack(&mut self, ack: u64, duplicate: bool) -> ProbeOutcome {
        let Some(end) = self.end_seq else { return ProbeOutcome::Pending };
        if ack < end {
            return ProbeOutcome::Pending;
        }
        let outcome = if !self.is_retrans {
            ProbeOutcome::NoLoss
        } else if ack > end {
            ProbeOutcome::Repaired
        } else if duplicate {
            ProbeOutcome::NoLoss
        } else {
            return ProbeOutcome::Pending;
        };
        self.end_seq = None;
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time::from_millis(x)
    }

    #[test]
    fn pto_is_two_srtt_plus_the_delayed_ack_allowance_for_one_segment_capped_by_the_rto() {
        // RFC 8985 section 7.2.
        assert_eq!(pto_deadline(ms(1000), Some(ms(100)), false, None), ms(1200));
        assert_eq!(pto_deadline(ms(1000), Some(ms(100)), true, None), ms(1400));
        assert_eq!(pto_deadline(ms(1000), None, false, None), ms(2000));
        assert_eq!(pto_deadline(ms(1000), Some(ms(100)), false, Some(ms(1150))), ms(1150));
        assert_eq!(pto_deadline(ms(1000), Some(ms(100)), false, Some(ms(1300))), ms(1200));
    }

    #[test]
    fn a_retransmitted_probe_repairs_a_loss_only_when_the_ack_goes_beyond_it() {
        let mut t = Tlp { end_seq: Some(10), is_retrans: true };
        assert_eq!(t.on_ack(5, false), ProbeOutcome::Pending);
        assert_eq!(t.on_ack(10, false), ProbeOutcome::Pending, "at end_seq: loss not shown yet");
        assert_eq!(t.on_ack(11, false), ProbeOutcome::Repaired);
        assert_eq!(t.end_seq, None);
        let mut t = Tlp { end_seq: Some(10), is_retrans: true };
        assert_eq!(t.on_ack(10, true), ProbeOutcome::NoLoss, "a pure duplicate: original and probe both arrived");
        let mut t = Tlp { end_seq: Some(10), is_retrans: false };
        assert_eq!(t.on_ack(10, false), ProbeOutcome::NoLoss);
    }
}
