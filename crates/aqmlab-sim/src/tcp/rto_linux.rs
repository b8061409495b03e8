//! Linux's retransmission timeout from its RTT samples (`tcp_rtt_estimator` and
//! `__tcp_set_rto` in `net/ipv4/tcp_input.c`), `TcpConfig::rto_estimator = Linux`.
//!
//! RFC 6298 sets RTO = max(SRTT + 4 RTTVAR, min_rto). Linux keeps the same SRTT (gain 1/8) and a
//! mean deviation with gain 1/4, but sets RTO = SRTT + RTTVAR, where RTTVAR is the largest
//! 4 x deviation seen over the last round trip, never below `min_rto` (TCP_RTO_MIN, 200 ms), and
//! falls only by a quarter of its excess once a round trip. So the minimum acts on the variance
//! term, not on the sum: RTO >= SRTT + 200 ms, where RFC 6298 gives max(SRTT + 4 RTTVAR, 200 ms).
//! With a sample from every ACK (`rtt_every_ack`), RFC 6298's RTTVAR decays within a round trip
//! (its gains assume one sample a round, RFC 7323 appendix G), and its RTO approaches
//! max(SRTT, 200 ms); Linux's round-trip maximum keeps it above SRTT + 200 ms.
//!
//! The kernel's rules kept: when a sample is below SRTT the deviation grows with a gain of 1/32
//! instead of 1/4 (its "similar to Eifel" comment); the first sample sets SRTT = R and
//! 4 x deviation = 2 R, so that RTO = 3 R when that is above R + min_rto. Left out: the kernel's
//! integer microseconds and its timer's jiffies (1 ms here, as HZ = 1000 rounds up); the
//! arithmetic here is in nanoseconds.

use aqmlab_core::Time;

#[derive(Clone, Debug)]
pub struct LinuxRto {
    /// SRTT, ns (0: no sample yet).
    srtt: f64,
    /// 4 x the mean deviation (the kernel's `mdev_us`), ns.
    mdev4: f64,
    /// The largest `mdev4` in the current round trip, at least `min_rto` (`mdev_max_us`).
    mdev_max: f64,
    /// The variance term of the RTO (`rttvar_us`), ns.
    rttvar: f64,
    /// The round trip ends when SND.UNA passes this (`rtt_seq`: SND.NXT at its start).
    rtt_seq: u64,
    min_rto: f64,
}

impl LinuxRto {
    pub fn new(min_rto: Time) -> LinuxRto {
        LinuxRto { srtt: 0.0, mdev4: 0.0, mdev_max: 0.0, rttvar: 0.0, rtt_seq: 0, min_rto: min_rto.as_nanos() as f64 }
    }

    /// One RTT sample `r`, taken when SND.UNA is `snd_una` (after the ACK) and SND.NXT
    /// `snd_nxt`. Returns SRTT and the RTO before its upper bound.
    pub fn sample(&mut self, r: Time, snd_una: u64, snd_nxt: u64) -> (f64, f64) {
        let m = r.as_nanos() as f64;
        if self.srtt == 0.0 {
            self.srtt = m;
            self.mdev4 = 2.0 * m;
            self.rttvar = self.mdev4.max(self.min_rto);
            self.mdev_max = self.rttvar;
            self.rtt_seq = snd_nxt;
        } else {
            let err = m - self.srtt;
            self.srtt += err / 8.0;
            let mut step = err.abs() - self.mdev4 / 4.0;
            if err < 0.0 && step > 0.0 {
                step /= 8.0; // a falling RTT raises the deviation slowly
            }
            self.mdev4 += step;
            if self.mdev4 > self.mdev_max {
                self.mdev_max = self.mdev4;
                self.rttvar = self.rttvar.max(self.mdev_max);
            }
            if snd_una > self.rtt_seq {
                // A round trip has passed: RTTVAR falls a quarter of the way to its maximum.
                if self.mdev_max < self.rttvar {
                    self.rttvar -= (self.rttvar - self.mdev_max) / 4.0;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max = self.min_rto;
            }
        }
        (self.srtt, self.srtt + self.rttvar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time::from_millis(x)
    }

    #[test]
    fn the_first_sample_gives_three_rtts_or_rtt_plus_the_minimum() {
        let mut e = LinuxRto::new(ms(200));
        assert_eq!(e.sample(ms(50), 0, 10).1, 250e6); // 50 + max(100, 200)
        let mut e = LinuxRto::new(ms(200));
        assert_eq!(e.sample(ms(300), 0, 10).1, 900e6); // 300 + 600
    }

    #[test]
    fn steady_samples_keep_the_minimum_above_srtt() {
        // RFC 6298 would converge to max(SRTT, 200 ms) = 200 ms; Linux to SRTT + 200 ms.
        let mut e = LinuxRto::new(ms(200));
        let mut una = 0;
        let mut rto = 0.0;
        for k in 0..2000u64 {
            una = k; // one sample per round trip and per ACK alike: SND.UNA passes rtt_seq
            rto = e.sample(ms(100), una, una + 1).1;
        }
        assert!((rto - 300e6).abs() < 1e3, "{rto}");
        let _ = una;
    }

    #[test]
    fn the_variance_term_falls_only_once_a_round_trip() {
        let mut e = LinuxRto::new(ms(200));
        e.sample(ms(400), 0, 100); // rttvar = 800 ms
                                   // Many samples within one round trip (SND.UNA stays below 100): rttvar cannot fall.
        let mut rto = 0.0;
        for _ in 0..50 {
            rto = e.sample(ms(400), 50, 100).1;
        }
        assert!(rto >= 400e6 + 800e6 - 1.0, "{rto}");
        // The first round trip ends: its maximum was the first sample's 800 ms, nothing goes.
        e.sample(ms(400), 101, 200);
        assert_eq!(e.rttvar, 800e6);
        // The second ends: its maximum was min_rto (the deviation has decayed below it), so a
        // quarter of the excess over min_rto goes: 800 - 600 / 4 = 650 ms.
        e.sample(ms(400), 201, 300);
        assert_eq!(e.rttvar, 650e6);
    }

    #[test]
    fn a_falling_rtt_raises_the_deviation_with_a_smaller_gain() {
        let (mut up, mut down) = (LinuxRto::new(ms(1)), LinuxRto::new(ms(1)));
        up.sample(ms(100), 0, 1);
        down.sample(ms(100), 0, 1);
        // Drive the deviation down first, in both, the same way.
        for k in 1..200 {
            up.sample(ms(100), k, k + 1);
            down.sample(ms(100), k, k + 1);
        }
        up.sample(ms(140), 300, 301);
        down.sample(ms(60), 300, 301);
        assert!(up.mdev4 > down.mdev4 && down.mdev4 > 0.0, "{} {}", up.mdev4, down.mdev4);
    }
}
