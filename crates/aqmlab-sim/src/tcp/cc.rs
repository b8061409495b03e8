//! Congestion controllers: the window rules that differ between NewReno and CUBIC, behind one
//! small seam so the sender's loss recovery (fast retransmit, NewReno partial ACKs, RFC 6675
//! SACK recovery, RTO, F-RTO) stays one piece of code.
//!
//! A controller sees three events and answers with a window (bytes):
//! * [`Controller::on_ack`]: bytes newly acknowledged outside loss recovery -> the new cwnd
//!   (slow start and congestion avoidance);
//! * [`Controller::on_congestion_event`]: fast retransmit or ECN-Echo -> the new ssthresh;
//! * [`Controller::on_ecn_echo`]: ECN-Echo, once per window -> the new ssthresh (DCTCP's own
//!   rule, [`dctcp`]; the classic controllers' congestion event);
//! * [`Controller::on_timeout`]: a retransmission timeout -> the new ssthresh (the sender sets
//!   cwnd to the loss window of one segment, RFC 5681 section 3.1, for both).
//!
//! What the sender does with ssthresh afterwards (cwnd = ssthresh + 3 SMSS in NewReno's fast
//! recovery, cwnd = ssthresh with SACK or ECN, deflation on exit) is the same for both, as RFC
//! 9438 section 4.6 intends: CUBIC changes only the reduction factor and the growth function.
//! The receiver-window cap is applied by the sender too.
//!
//! BBR ([`bbr`]) does not fit these three rules: like Linux's `cong_control` hook it sets cwnd
//! and the pacing rate itself on every ACK from the delivery-rate sample, in and out of loss
//! recovery. Its arm answers the three rules without changing anything (ssthresh stays where
//! it is, the window is its own), and the sender calls [`bbr::Bbr::on_ack`] after each ACK
//! (`TcpSender::bbr_on_ack`). BBRv3 ([`bbr3`], draft-ietf-ccwg-bbr) takes the same path.

pub mod bbr;
pub mod bbr3;
pub mod dctcp;
pub mod prague;

use aqmlab_core::Time;
use aqmlab_model::app::tcp_config::CongestionControl;
use bbr::Bbr;
use bbr3::Bbr3;
use dctcp::Dctcp;
use prague::Prague;

/// RFC 9438 section 5.1: C = 0.4 (segments / s^3).
pub const CUBIC_C: f64 = 0.4;
/// RFC 9438 section 4.6: beta_cubic = 0.7.
pub const CUBIC_BETA: f64 = 0.7;
/// RFC 9438 section 4.3: alpha_cubic = 3 (1 - beta_cubic) / (1 + beta_cubic), the additive
/// increase (segments per RTT) that gives Reno's average rate with CUBIC's beta.
pub const CUBIC_ALPHA: f64 = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA);

/// The congestion controller of one sender, chosen by [`CongestionControl`].
#[derive(Clone, Debug)]
pub enum Controller {
    NewReno(NewReno),
    Cubic(Cubic),
    Dctcp(Dctcp),
    Bbr(Box<Bbr>),
    Bbr3(Box<Bbr3>),
    Prague(Prague),
}

/// ssthresh before any reduction ("arbitrarily high", RFC 5681 section 3.1), and BBR's while it
/// has not set one (Linux's TCP_INFINITE_SSTHRESH).
pub const SSTHRESH_UNSET: u64 = u64::MAX / 2;

impl Controller {
    pub fn new(kind: CongestionControl, mss: u64) -> Controller {
        match kind {
            CongestionControl::NewReno => Controller::NewReno(NewReno::new(mss)),
            CongestionControl::Cubic => Controller::Cubic(Cubic::new(mss)),
            CongestionControl::Dctcp => Controller::Dctcp(Dctcp::new(mss)),
            CongestionControl::Prague => Controller::Prague(Prague::new(mss)),
            // The sender gives BBR its initial window and its flow's random stream
            // (`TcpSender::with_rng`); this default serves tests of the seam alone.
            CongestionControl::Bbr => Controller::Bbr(Box::new(Bbr::new(mss, bbr::TCP_INIT_CWND, aqmlab_model::streams::flow_bbr(0, 0)))),
            CongestionControl::Bbr3 => {
                Controller::Bbr3(Box::new(Bbr3::new(mss, bbr::TCP_INIT_CWND, aqmlab_model::streams::flow_bbr(0, 0))))
            }
        }
    }

    /// CUBIC's Reno-friendly estimate keeps alpha_cubic after it passes cwnd_prior
    /// ([`Cubic::alpha_to_one`] false, the `cubic_alpha_to_one` option of the TCP config); the
    /// other controllers are left as they are.
    pub fn with_cubic_alpha_to_one(mut self, on: bool) -> Controller {
        if let Controller::Cubic(c) = &mut self {
            c.alpha_to_one = on;
        }
        self
    }

    /// Grow the window by acknowledged bytes, not by ACKs ([`NewReno::on_ack`]; the
    /// `byte_counting` option of the TCP config). BBR sets its own window and is left as it is.
    pub fn with_byte_counting(mut self, on: bool) -> Controller {
        match &mut self {
            Controller::NewReno(c) => c.byte_counting = on,
            Controller::Cubic(c) => c.reno.byte_counting = on,
            Controller::Dctcp(c) => c.reno.byte_counting = on,
            Controller::Prague(c) => c.reno.byte_counting = on,
            Controller::Bbr(_) | Controller::Bbr3(_) => {}
        }
        self
    }

    /// `acked` bytes newly acknowledged outside loss recovery; returns the new cwnd.
    /// `srtt` is the smoothed RTT (None before the first sample).
    #[inline]
    pub fn on_ack(&mut self, cwnd: u64, ssthresh: u64, acked: u64, srtt: Option<Time>, now: Time) -> u64 {
        match self {
            Controller::NewReno(c) => c.on_ack(cwnd, ssthresh, acked),
            Controller::Cubic(c) => c.on_ack(cwnd, ssthresh, acked, srtt, now),
            Controller::Dctcp(c) => c.on_ack(cwnd, ssthresh, acked),
            Controller::Prague(c) => c.on_ack(cwnd, ssthresh, acked, srtt),
            Controller::Bbr(_) | Controller::Bbr3(_) => cwnd, // BBR sets cwnd in its own per-ACK step
        }
    }

    /// A congestion event (fast retransmit or ECN-Echo) with `flight` bytes outstanding;
    /// returns the new ssthresh.
    pub fn on_congestion_event(&mut self, cwnd: u64, flight: u64) -> u64 {
        match self {
            Controller::NewReno(c) => c.reduced(flight),
            Controller::Cubic(c) => c.on_congestion_event(cwnd, flight),
            Controller::Dctcp(c) => c.on_loss(flight),
            Controller::Prague(c) => c.on_loss(flight),
            Controller::Bbr(b) => b.on_congestion_event(),
            Controller::Bbr3(b) => b.on_congestion_event(),
        }
    }

    /// An ECN-Echo the sender reacts to (at most once per window); returns the new ssthresh.
    /// DCTCP scales its reduction by alpha (RFC 8257 section 3.3) and reduces the window as it
    /// was before the ECN-Echo's ACK grew it (`cwnd_before_ack`): Linux does not grow cwnd on
    /// the ACK that starts a reduction (`tcp_cong_control` skips `tcp_cong_avoid` in CWR), and
    /// with a small alpha growth-then-reduction would leave ssthresh above the window the
    /// marks were about (found by the TCP fuzzer). The classic controllers treat it as any
    /// congestion event (RFC 3168 section 6.1.2), unchanged. Prague reduces as DCTCP, but
    /// with RTT independence at most once per target RTT: None when it makes no reduction.
    pub fn on_ecn_echo(&mut self, cwnd: u64, cwnd_before_ack: u64, flight: u64) -> Option<u64> {
        Some(match self {
            Controller::Dctcp(c) => c.on_ecn_echo(cwnd.min(cwnd_before_ack)),
            Controller::Prague(c) => return c.on_ecn_echo(cwnd.min(cwnd_before_ack)),
            // BBR v1 does not respond to ECN (Linux's cong_control hook bypasses the CWR
            // reduction); ssthresh stays as it is.
            Controller::Bbr(b) => b.ssthresh_or_unset(),
            // The ECN response of BBRv3 is not built (`cc::bbr3`): ECN-Echo is ignored.
            Controller::Bbr3(b) => b.ssthresh_or_unset(),
            _ => self.on_congestion_event(cwnd, flight),
        })
    }

    /// An ACK arrives at `now`, with ECN-Echo or not, before any of the steps above: Prague notes
    /// both (bytes an ACK with ECN-Echo acknowledges grow no window; its reductions and estimate
    /// are timed); the others ignore it.
    #[inline]
    pub fn on_ack_start(&mut self, ece: bool, now: Time) {
        if let Controller::Prague(c) = self {
            c.on_ack_start(ece, now);
        }
    }

    /// A segment ending at `end` leaves at `now`: Prague's classic ECN AQM detector takes its
    /// RTT samples from the send times; the others ignore it.
    #[inline]
    pub fn on_sent(&mut self, end: u64, retransmission: bool, now: Time) {
        if let Controller::Prague(c) = self {
            c.on_sent(end, retransmission, now);
        }
    }

    /// Every ACK's feedback, before the sender reacts to it: `acked` bytes newly acknowledged,
    /// its ECN-Echo flag, SND.UNA and SND.NXT after it, at `now`. DCTCP (RFC 8257 section 3.3)
    /// and Prague keep an estimate from it; the others ignore it.
    #[inline]
    pub fn on_ack_feedback(&mut self, acked: u64, ece: bool, snd_una: u64, snd_nxt: u64, now: Time) {
        match self {
            Controller::Dctcp(c) => c.on_ack_feedback(acked, ece, snd_una, snd_nxt),
            Controller::Prague(c) => c.on_ack_feedback(acked, ece, snd_una, snd_nxt, now),
            _ => {}
        }
    }

    /// A retransmission timeout with `flight` bytes outstanding; returns the new ssthresh.
    pub fn on_timeout(&mut self, flight: u64) -> u64 {
        match self {
            Controller::NewReno(c) => c.reduced(flight),
            Controller::Cubic(c) => c.on_timeout(flight),
            Controller::Dctcp(c) => c.on_loss(flight),
            Controller::Prague(c) => c.on_timeout(flight),
            Controller::Bbr(b) => {
                b.on_timeout();
                b.ssthresh_or_unset()
            }
            Controller::Bbr3(b) => {
                b.on_timeout();
                b.ssthresh_or_unset()
            }
        }
    }
}

/// RFC 3465 section 2.3: L, the most segments one ACK may add in slow start with byte
/// counting ("L = 2*SMSS bytes" recommended).
pub const ABC_LIMIT_SEGMENTS: u64 = 2;

/// NewReno's window rules (RFC 5681 sections 3.1 and 3.2).
#[derive(Clone, Debug)]
pub struct NewReno {
    mss: u64,
    /// Count acknowledged bytes, not ACKs (`TcpConfig::byte_counting`, Linux's growth).
    byte_counting: bool,
}

impl NewReno {
    pub fn new(mss: u64) -> NewReno {
        NewReno { mss, byte_counting: false }
    }

    /// RFC 5681 (2) slow start: cwnd += min(N, SMSS); (3) congestion avoidance:
    /// cwnd += SMSS*SMSS/cwnd per ACK, at least one byte. With byte counting, as Linux's
    /// `tcp_reno_cong_avoid`: slow start up to ssthresh by every acknowledged byte, the rest
    /// of the ACK in congestion avoidance at SMSS x acked / cwnd.
    fn on_ack(&self, cwnd: u64, ssthresh: u64, acked: u64) -> u64 {
        if cwnd < ssthresh {
            let (grown, rest) = self.slow_start(cwnd, ssthresh, acked);
            if rest == 0 {
                return grown;
            }
            return grown + self.avoidance_increase(grown, rest);
        }
        cwnd + self.avoidance_increase(cwnd, acked)
    }

    /// Slow start's new window and the acknowledged bytes it left for congestion avoidance:
    /// RFC 5681's cwnd += min(acked, SMSS) (nothing left), or with byte counting RFC 3465's
    /// cwnd += min(acked, L x SMSS) with L = 2 (its section 2.3 limit), stopping at ssthresh
    /// as Linux's `tcp_slow_start` does, the rest of the counted bytes left over.
    ///
    /// Why L = 2 and not Linux's unlimited count: Linux counts only newly delivered segments
    /// (`tp->delivered`), so the cumulative ACK that covers data SACKed earlier or held by the
    /// receiver across a timeout adds little. The simulator's `acked` is the advance of SND.UNA
    /// and cannot tell those bytes apart; counted whole, one such ACK after a timeout lifted cwnd
    /// from one segment to ssthresh and sent that as a line-rate burst (measured: a 10 Mbit/s
    /// one-flow reno run timing out 63 times in 30 s, 35 % of its segments retransmitted). L =
    /// 2 is what a delayed ACK of two segments needs, the case byte counting is for.
    fn slow_start(&self, cwnd: u64, ssthresh: u64, acked: u64) -> (u64, u64) {
        if !self.byte_counting {
            return (cwnd + acked.min(self.mss), 0);
        }
        let counted = acked.min(ABC_LIMIT_SEGMENTS * self.mss);
        let grown = (cwnd + counted).min(ssthresh.max(cwnd));
        (grown, cwnd + counted - grown)
    }

    /// Congestion avoidance's increase for one ACK: SMSS^2 / cwnd (RFC 5681 equation 3), or
    /// SMSS x acked / cwnd with byte counting (`tcp_cong_avoid_ai`); at least one byte.
    fn avoidance_increase(&self, cwnd: u64, acked: u64) -> u64 {
        let counted = if self.byte_counting { acked } else { self.mss };
        (self.mss * counted / cwnd).max(1)
    }

    /// RFC 5681 equation (4): ssthresh = max(FlightSize / 2, 2 * SMSS).
    fn reduced(&self, flight: u64) -> u64 {
        (flight / 2).max(2 * self.mss)
    }
}

/// CUBIC (RFC 9438). Windows inside are in segments (f64), as the RFC writes them; the
/// sender's cwnd stays in bytes.
#[derive(Clone, Debug)]
pub struct Cubic {
    mss: u64,
    /// Reno's slow start, which CUBIC keeps (RFC 9438 section 4.10), with its byte counting.
    reno: NewReno,
    /// W_max: the window (segments) at the last congestion event, after fast convergence
    /// (section 4.7). 0 before any congestion event.
    w_max: f64,
    /// cwnd_prior: the window (segments) just before the last reduction (section 4.6), where
    /// the Reno-friendly estimate switches from alpha_cubic to 1 (section 4.3).
    cwnd_prior: f64,
    /// The current congestion-avoidance stage, started by its first ACK.
    epoch: Option<Epoch>,
    /// Section 4.8: the next congestion-avoidance stage follows a timeout, so it starts with
    /// K = 0 and W_max = its own initial window.
    after_timeout: bool,
    /// Fractions of a byte of growth not yet added to the integer cwnd, so that growth below
    /// one byte per ACK near the plateau is not lost.
    carry: f64,
    /// Section 4.3's switch of W_est's increase from alpha_cubic to 1 once W_est reaches
    /// cwnd_prior (a SHOULD). Off, alpha_cubic throughout, as Linux's tcp_cubic.c
    /// (`cubic_update`'s tcp_friendliness, one segment per beta_scale / 8 windows of ACKed
    /// segments) and ns-3's TcpCubic (`TcpCubic::Update`) run it.
    pub alpha_to_one: bool,
}

/// One congestion-avoidance stage of CUBIC.
#[derive(Clone, Copy, Debug)]
struct Epoch {
    /// t_epoch: when the stage began.
    start: Time,
    /// K (section 4.2, equation 2): the time W_cubic takes to reach W_max again.
    k: f64,
    /// W_max for this stage.
    w_max: f64,
    /// W_est (section 4.3): the window Reno with alpha_cubic would have now.
    w_est: f64,
}

impl Cubic {
    pub fn new(mss: u64) -> Cubic {
        Cubic {
            mss,
            reno: NewReno::new(mss),
            w_max: 0.0,
            cwnd_prior: 0.0,
            epoch: None,
            after_timeout: false,
            carry: 0.0,
            alpha_to_one: true,
        }
    }

    /// W_max (segments) remembered from the last congestion event.
    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    /// RFC 9438 section 4.2, equation (1): W_cubic(t) = C (t - K)^3 + W_max (segments).
    pub fn w_cubic(t: f64, k: f64, w_max: f64) -> f64 {
        CUBIC_C * (t - k).powi(3) + w_max
    }

    /// RFC 9438 section 4.2, equation (2): K = cbrt((W_max - cwnd_epoch) / C); after a
    /// reduction to beta_cubic * W_max this is cbrt(W_max (1 - beta_cubic) / C). K = 0 when the
    /// stage starts at or above W_max.
    pub fn k(w_max: f64, cwnd_epoch: f64) -> f64 {
        ((w_max - cwnd_epoch).max(0.0) / CUBIC_C).cbrt()
    }

    fn segments(&self, bytes: u64) -> f64 {
        bytes as f64 / self.mss as f64
    }

    fn on_ack(&mut self, cwnd: u64, ssthresh: u64, acked: u64, srtt: Option<Time>, now: Time) -> u64 {
        let (cwnd, acked) = if cwnd < ssthresh {
            // Section 4.10: slow start as Reno's (RFC 5681; HyStart++ runs in the sender).
            // With byte counting the bytes beyond ssthresh go on into congestion avoidance, as
            // in Linux's bictcp_cong_avoid.
            let (grown, rest) = self.reno.slow_start(cwnd, ssthresh, acked);
            if rest == 0 {
                return grown;
            }
            (grown, rest)
        } else {
            (cwnd, acked)
        };
        let w = self.segments(cwnd);
        let epoch = *self.epoch.get_or_insert_with(|| {
            // Section 4.8: after a timeout, K = 0 and W_max = the stage's initial window.
            let w_max = if self.after_timeout || self.w_max < w { w } else { self.w_max };
            Epoch { start: now, k: Cubic::k(w_max, w), w_max, w_est: w }
        });
        self.after_timeout = false;
        let acked_segments = self.segments(acked);
        let t = (now - epoch.start).as_secs_f64();
        let rtt = srtt.map_or(0.0, Time::as_secs_f64);

        // Section 4.3: W_est grows by alpha_cubic segments per RTT (alpha_cubic * acked / cwnd
        // per ACK), by 1 once it has passed cwnd_prior (unless `alpha_to_one` is off).
        let alpha = if self.alpha_to_one && epoch.w_est >= self.cwnd_prior { 1.0 } else { CUBIC_ALPHA };
        let w_est = epoch.w_est + alpha * acked_segments / w;
        self.epoch = Some(Epoch { w_est, ..epoch });

        let w_cubic_now = Cubic::w_cubic(t, epoch.k, epoch.w_max);
        if w_cubic_now < w_est {
            // Section 4.3, Reno-friendly region: cwnd = W_est. (Never below the current cwnd,
            // which may already be a little above W_cubic(t) since it aims one RTT ahead.)
            self.carry = 0.0;
            return cwnd.max((w_est * self.mss as f64) as u64);
        }
        // Sections 4.4/4.5 (concave and convex regions alike): aim at W_cubic one RTT ahead,
        // clamped to [cwnd, 1.5 cwnd] (section 4.2), and close (target - cwnd) / cwnd of the
        // gap per acknowledged segment.
        let target = Cubic::w_cubic(t + rtt, epoch.k, epoch.w_max).clamp(w, 1.5 * w);
        self.carry += (target - w) / w * acked_segments * self.mss as f64;
        let whole = self.carry.floor();
        self.carry -= whole;
        cwnd + whole as u64
    }

    /// Section 4.6 multiplicative decrease with section 4.7 fast convergence.
    fn on_congestion_event(&mut self, cwnd: u64, flight: u64) -> u64 {
        let w = self.segments(cwnd);
        // Section 4.7: a flow whose window did not get back to the last W_max releases
        // bandwidth for new flows: W_max = cwnd (1 + beta_cubic) / 2.
        self.w_max = if w < self.w_max { w * (1.0 + CUBIC_BETA) / 2.0 } else { w };
        self.cwnd_prior = w;
        self.epoch = None;
        self.carry = 0.0;
        self.reduced(flight)
    }

    /// Section 4.8: cwnd goes to the loss window as in Reno (done by the sender), ssthresh as in
    /// section 4.6; the next congestion-avoidance stage starts with K = 0.
    fn on_timeout(&mut self, flight: u64) -> u64 {
        self.epoch = None;
        self.carry = 0.0;
        self.after_timeout = true;
        self.reduced(flight)
    }

    /// Section 4.6: ssthresh = flight_size * beta_cubic, at least 2 segments (RFC 5681's
    /// floor, as for NewReno).
    fn reduced(&self, flight: u64) -> u64 {
        ((flight as f64 * CUBIC_BETA) as u64).max(2 * self.mss)
    }
}

#[cfg(test)]
mod tests;
