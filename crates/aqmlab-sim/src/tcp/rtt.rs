//! Retransmission timer after RFC 6298 ("Computing TCP's Retransmission Timer"), or from
//! Linux's estimator ([`super::rto_linux`]) when the sender is built with it.

use super::rto_linux::LinuxRto;
use aqmlab_core::Time;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<f64>,
    rttvar: f64,
    rto: Time,
    min_rto: Time,
    max_rto: Time,
    granularity: Time,
    /// Linux's RTO instead of section 2's (`TcpConfig::rto_estimator`).
    linux: Option<LinuxRto>,
}

impl RttEstimator {
    pub fn new(initial_rto: Time, min_rto: Time, max_rto: Time, granularity: Time) -> RttEstimator {
        RttEstimator { srtt: None, rttvar: 0.0, rto: initial_rto, min_rto, max_rto, granularity, linux: None }
    }

    /// The same, with Linux's RTO ([`LinuxRto`]) in place of RFC 6298 section 2's.
    pub fn linux(initial_rto: Time, min_rto: Time, max_rto: Time) -> RttEstimator {
        let mut e = RttEstimator::new(initial_rto, min_rto, max_rto, Time::ZERO);
        e.linux = Some(LinuxRto::new(min_rto));
        e
    }

    /// Takes one RTT measurement R (RFC 6298 section 2.2 and 2.3) and recomputes the RTO,
    /// which also clears any exponential backoff (section 5.7). `snd_una` (after the ACK) and
    /// `snd_nxt` time Linux's round trips; RFC 6298 does not use them.
    pub fn sample(&mut self, r: Time, snd_una: u64, snd_nxt: u64) {
        if let Some(l) = self.linux.as_mut() {
            let (srtt, rto) = l.sample(r, snd_una, snd_nxt);
            self.srtt = Some(srtt);
            self.rto = Time(rto.round() as u64).min(self.max_rto);
            return;
        }
        let r = r.as_nanos() as f64;
        match self.srtt {
            None => {
                // (2.2) SRTT <- R, RTTVAR <- R/2
                self.srtt = Some(r);
                self.rttvar = r / 2.0;
            }
            Some(srtt) => {
                // (2.3) alpha = 1/8, beta = 1/4; RTTVAR is updated with the old SRTT.
                self.rttvar = 0.75 * self.rttvar + 0.25 * (srtt - r).abs();
                self.srtt = Some(0.875 * srtt + 0.125 * r);
            }
        }
        let srtt = self.srtt.unwrap_or(r);
        // RTO <- SRTT + max(G, K*RTTVAR), K = 4, then clamped (2.4, 2.5).
        let rto = srtt + (self.granularity.as_nanos() as f64).max(4.0 * self.rttvar);
        self.rto = Time(rto.round() as u64).max(self.min_rto).min(self.max_rto);
    }

    /// Doubles the RTO after a timeout (section 5.5), up to the maximum.
    pub fn back_off(&mut self) {
        self.rto = Time(self.rto.as_nanos().saturating_mul(2)).min(self.max_rto);
    }

    pub fn rto(&self) -> Time {
        self.rto
    }
    pub fn srtt(&self) -> Option<Time> {
        self.srtt.map(|s| Time(s.round() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> RttEstimator {
        RttEstimator::new(Time::from_secs(1), Time::from_millis(200), Time::from_secs(60), Time::from_millis(1))
    }

    #[test]
    fn first_sample_sets_srtt_and_half_variance() {
        let mut e = est();
        e.sample(Time::from_millis(100), 0, 0);
        // RTO = 100 + 4 * 50 = 300 ms.
        assert_eq!(e.rto(), Time::from_millis(300));
        assert_eq!(e.srtt(), Some(Time::from_millis(100)));
    }

    #[test]
    fn steady_samples_converge_to_the_minimum() {
        let mut e = est();
        for _ in 0..100 {
            e.sample(Time::from_millis(50), 0, 0);
        }
        assert_eq!(e.rto(), Time::from_millis(200));
    }

    #[test]
    fn backoff_doubles_up_to_the_max_and_a_sample_resets_it() {
        let mut e = est();
        e.sample(Time::from_millis(100), 0, 0);
        e.back_off();
        assert_eq!(e.rto(), Time::from_millis(600));
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), Time::from_secs(60));
        e.sample(Time::from_millis(100), 0, 0);
        assert!(e.rto() < Time::from_secs(1));
    }
}
