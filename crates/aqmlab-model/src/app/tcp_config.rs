//! The parameters of a TCP sender and receiver: pure data, read by the simulator's TCP
//! (`aqmlab_sim::tcp`) and, for the options a kernel has (SACK, ECN, congestion control), by the
//! emulator's set-up of the Linux stack. The state machine itself stays in the simulator.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpConfig {
    /// Payload bytes per segment; packets on the wire are `mss + headers::TCP_IP_HEADER_BYTES`
    /// (40) bytes.
    pub mss: u32,
    pub initial_cwnd_segments: u32,
    pub initial_rto_ns: u64,
    pub min_rto_ns: u64,
    pub max_rto_ns: u64,
    /// RFC 6298's clock granularity G.
    pub clock_granularity_ns: u64,
    pub delayed_ack: bool,
    pub delayed_ack_timeout_ns: u64,
    /// Receiver window in bytes (also caps the congestion window); with `rwnd_autotuning`, the
    /// largest the receiver's window grows to.
    pub rwnd: u64,
    /// The receiver advertises Linux's window: about 64 kB at first, grown by receive-buffer
    /// autotuning as the application reads (`aqmlab_sim::tcp::receive_window`), up to `rwnd`;
    /// the sender keeps the window of the latest ACK. Off: `rwnd` from the first segment.
    #[serde(default)]
    pub rwnd_autotuning: bool,
    /// The sender's socket buffer in bytes of Linux socket memory (net.ipv4.tcp_wmem's third
    /// value): an application writes again only when at most two thirds of it is queued, so
    /// data in flight stays under about that (`aqmlab_sim::tcp::send_buffer`). 0: unlimited.
    #[serde(default)]
    pub send_buffer: u64,
    /// The window grows only while it limits sending, as Linux's `tcp_is_cwnd_limited` gates
    /// reno's and CUBIC's growth (`aqmlab_sim::tcp::cwnd_limited`): in slow start up to twice
    /// the most outstanding, in congestion avoidance only in a window that cwnd limited. Off:
    /// every ACK grows it (up to the receiver's window).
    #[serde(default)]
    pub cwnd_limited_growth: bool,
    /// Send ECN-capable packets and react to ECN-Echo (RFC 3168).
    pub ecn: bool,
    /// Selective acknowledgments (RFC 2018) and SACK-based loss recovery (RFC 6675).
    #[serde(default)]
    pub sack: bool,
    /// F-RTO detection of spurious retransmission timeouts (RFC 5682 section 2).
    #[serde(default)]
    pub frto: bool,
    /// Proportional Rate Reduction (RFC 6937, PRR-SSRB) in SACK-based fast recovery; without
    /// SACK it has no effect.
    #[serde(default)]
    pub prr: bool,
    /// Whose PRR runs when `prr` is on: RFC 6937's PRR-SSRB as Linux runs it, or ns-3 3.44's
    /// `TcpPrrRecovery` (`aqmlab_sim::tcp::prr` lists its rules). Needs `prr`.
    #[serde(default)]
    pub prr_variant: PrrVariant,
    /// Limited Transmit (RFC 3042): one new segment on each of the first two duplicate ACKs.
    #[serde(default)]
    pub limited_transmit: bool,
    /// RACK-TLP (RFC 8985): time-based loss detection and tail loss probes; needs `sack`.
    #[serde(default)]
    pub rack: bool,
    /// A retransmission of the first unacknowledged segment restarts the retransmission timer,
    /// as Linux's `tcp_xmit_retransmit_queue` does (`aqmlab_sim::tcp::rto_restart`). Off: RFC
    /// 6298's restart on ACKs of new data alone.
    #[serde(default)]
    pub rto_restart_on_head_retransmit: bool,
    /// An RTT sample from every ACK that newly acknowledges data, as Linux takes it with TCP
    /// timestamps (`aqmlab_sim::tcp::rtt_every_ack`). Off: RFC 6298's one timed segment a round
    /// with Karn's rule.
    #[serde(default)]
    pub rtt_sample_every_ack: bool,
    /// How the RTT samples become the RTO: RFC 6298's formula or Linux's
    /// (`aqmlab_sim::tcp::rto_linux`).
    #[serde(default)]
    pub rto_estimator: RtoEstimator,
    /// HyStart++ (RFC 9406) in the initial slow start (`aqmlab_sim::tcp::hystart`); not with
    /// BBR, which has its own startup.
    #[serde(default)]
    pub hystart: bool,
    /// CUBIC's Reno-friendly estimate W_est grows by 1 segment per RTT instead of alpha_cubic
    /// once it reaches the window before the last reduction (RFC 9438 section 4.3, a SHOULD);
    /// false keeps alpha_cubic, as Linux's `tcp_cubic.c` and ns-3's `TcpCubic` do. On by
    /// default; false only with `Cubic`.
    #[serde(default = "on")]
    pub cubic_alpha_to_one: bool,
    /// The delivery-rate estimator (`aqmlab_sim::tcp::rate_sample`, Linux's `tcp_rate.c`) for
    /// every controller, so that `flow_samples.delivery_rate_bps` reads as a kernel's
    /// tcpi_delivery_rate; it records and changes no sending. BBR and BBRv3 run it regardless.
    #[serde(default)]
    pub rate_estimator: bool,
    /// CUBIC's own HyStart as Linux's `tcp_cubic.c` runs it by default (ACK-train and delay
    /// tests, `aqmlab_sim::tcp::cubic_hystart`); only with CUBIC, and not with `hystart`.
    #[serde(default)]
    pub cubic_hystart: bool,
    /// The window rules: NewReno (RFC 5681), CUBIC (RFC 9438), DCTCP (RFC 8257; needs `ecn`),
    /// BBR, BBRv3 (needs `pacing`, refuses `ecn`), or Prague (needs `ecn`, `ecn_codepoint` ect1
    /// and `pacing`).
    #[serde(default)]
    pub congestion_control: CongestionControl,
    /// The ECN-capable codepoint data segments carry when `ecn` is on: ECT(0) (RFC 3168), or
    /// ECT(1), which classifies the flow as L4S (RFC 9331) into DualPI2's L queue.
    #[serde(default)]
    pub ecn_codepoint: EcnCodepoint,
    /// Sender pacing (`aqmlab_sim::tcp::pacing`): segments leave no faster than the pacing
    /// rate, as Linux paces inside TCP without the fq qdisc. Off by default, so every run that
    /// does not ask for it is unchanged; BBR needs it (the scenario layer turns it on for BBR).
    #[serde(default)]
    pub pacing: bool,
    /// A paced sender sends as many segments back to back as Linux puts in one skb (TSO
    /// autosizing, `aqmlab_sim::tcp::tso`: about 1 ms of data at the pacing rate, at least 2
    /// segments, BBR 1 below 1.2 Mbit/s) and paces the bursts. Off: each segment paced alone.
    /// Changes nothing without pacing.
    #[serde(default)]
    pub tso_autosize: bool,
    /// Window growth from the bytes an ACK acknowledges (RFC 3465's appropriate byte counting,
    /// L = 2), as Linux grows behind a delayed-ACK receiver: slow start adds up to two segments
    /// per ACK, stopping at ssthresh (`tcp_slow_start`), NewReno's congestion avoidance SMSS x
    /// acked / cwnd (`tcp_cong_avoid_ai` counts acknowledged segments), so a delayed ACK of two
    /// segments grows the window as two ACKs would. Off: RFC 5681's per-ACK rules (cwnd +=
    /// min(acked, SMSS) in slow start, SMSS^2 / cwnd per ACK in congestion avoidance), which
    /// grow half as fast per RTT behind a delayed-ACK receiver. CUBIC's congestion avoidance
    /// counts acknowledged segments either way (RFC 9438 section 4.2), so for CUBIC only slow
    /// start differs; BBR sets its own window and ignores it.
    #[serde(default)]
    pub byte_counting: bool,
    /// Linux's quick-ACK start at the receiver (`aqmlab_sim::tcp::quickack`): an immediate ACK
    /// for every segment while a budget of min(rwnd / (2 mss), 16) ACKs lasts, granted at the
    /// first data, after an idle gap longer than the receiver's RTO and on duplicate data
    /// (`tcp_incr_quickack`, `tcp_event_data_recv`, `tcp_data_queue`); needs `delayed_ack`.
    #[serde(default)]
    pub quickack: bool,
    /// BBR v1's ACK-aggregation allowance (`aqmlab_sim::tcp::cc::bbr::AckAggregation`, Linux
    /// `bbr_update_ack_aggregation`); on by default as in the kernel; false only with `Bbr`.
    #[serde(default = "on")]
    pub bbr_ack_aggregation: bool,
    /// BBR v1's long-term bandwidth sampling that detects token-bucket policers (Linux
    /// `bbr_lt_bw_sampling`); on by default as in the kernel; false only with `Bbr`.
    #[serde(default = "on")]
    pub bbr_policer_detection: bool,
    /// Prague's detection of a classic (RFC 3168) ECN AQM at the bottleneck and its fall-back
    /// to a Reno-friendly reduction there (`aqmlab_sim::tcp::cc::prague::classic_ecn`; Linux
    /// `prague_ecn_fallback` = 1). Off by default, as Linux's module parameter; only with
    /// Prague.
    #[serde(default)]
    pub prague_ecn_fallback: bool,
    /// Prague's RTT-independence heuristic (Linux `prague_rtt_scaling`; RATE, Linux's
    /// default, unless set; `aqmlab_sim::tcp::cc::prague::rtt_scaling`); only with Prague.
    #[serde(default)]
    pub prague_rtt_scaling: PragueRttScaling,
    /// What SACK-based fast recovery reduces from (RFC 6675 section 5 step (4.2)): FlightSize,
    /// as the RFC writes it, or the pipe, as ns-3 3.44 does (`TcpSocketBase::EnterRecovery`
    /// hands its controller `BytesInFlight()`, the RFC's pipe, when SACK is on). Needs `sack`.
    #[serde(default)]
    pub ssthresh_basis: SsthreshBasis,
    /// Open the connection with the three-way handshake before any data
    /// (`aqmlab_sim::tcp::handshake`: SYN and SYN-ACK on the wire, the SYN retransmitted on a
    /// backed-off timer, the first RTT sample from it, one segment to start with after a lost
    /// SYN). Off: data from the flow's start, as every earlier version ran.
    #[serde(default)]
    pub handshake: bool,
}

/// The default of the BBR parts the kernel runs.
fn on() -> bool {
    true
}

impl TcpConfig {
    /// The combinations the TCP cannot run; the message names the field and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        if self.ssthresh_basis == SsthreshBasis::Pipe && !self.sack {
            // The pipe is RFC 6675's estimate from the SACK scoreboard.
            return Err(
                "ssthresh_basis: pipe needs sack = true (the pipe is RFC 6675's SACK estimate); allowed without sack: flight_size".into()
            );
        }
        if self.prr_variant != PrrVariant::Linux && !self.prr {
            return Err("prr_variant: ns3 is a variant of PRR: needs prr = true; allowed without prr: linux (unset)".into());
        }
        if self.congestion_control == CongestionControl::Dctcp && !self.ecn {
            // RFC 8257 section 3: DCTCP's only congestion signal besides loss is ECN.
            return Err("congestion_control: dctcp needs ecn = true (RFC 8257 reacts to ECN marks)".into());
        }
        if self.congestion_control == CongestionControl::Prague {
            // The draft's Prague requirements: ECN feedback, the L4S identifier ECT(1), pacing.
            if !self.ecn {
                return Err("congestion_control: prague needs ecn = true (it reacts to ECN marks)".into());
            }
            if self.ecn_codepoint != EcnCodepoint::Ect1 {
                return Err("ecn_codepoint: prague needs ect1 (the L4S identifier, RFC 9331); allowed with prague: ect1".into());
            }
            if !self.pacing {
                return Err("pacing: prague needs pacing = true (Prague paces its window); allowed with prague: true".into());
            }
        }
        if self.prague_ecn_fallback && self.congestion_control != CongestionControl::Prague {
            return Err("prague_ecn_fallback: the classic ECN fall-back is Prague's: needs congestion_control = prague; allowed with other controllers: false".into());
        }
        if self.prague_rtt_scaling != PragueRttScaling::Rate && self.congestion_control != CongestionControl::Prague {
            return Err("prague_rtt_scaling: the RTT-independence heuristics are Prague's: needs congestion_control = prague; allowed with other controllers: rate".into());
        }
        if self.congestion_control == CongestionControl::Bbr && !self.pacing {
            // tcp_bbr.c sets the socket's pacing rate and relies on it to send at gain * bw.
            return Err("pacing: bbr needs pacing = true (BBR sends at its pacing rate); allowed with bbr: true".into());
        }
        if self.congestion_control == CongestionControl::Bbr3 && self.ecn {
            // draft-ietf-ccwg-bbr-06 section 3.7: an ECN-capable BBR must treat CE marks as
            // congestion; the simulator's bbr3 has no ECN response.
            return Err(
                "ecn: bbr3 has no ECN response (draft-ietf-ccwg-bbr section 3.7 requires one with ECN); allowed with bbr3: false".into()
            );
        }
        if self.congestion_control == CongestionControl::Bbr3 && !self.pacing {
            // draft-ietf-ccwg-bbr section 5.6.2: the pacing rate is BBR's primary control.
            return Err("pacing: bbr3 needs pacing = true (BBR sends at its pacing rate); allowed with bbr3: true".into());
        }
        if self.ecn_codepoint == EcnCodepoint::Ect1 && !self.ecn {
            return Err("ecn_codepoint: ect1 needs ecn = true (without ECN segments are Not-ECT)".into());
        }
        if self.rack && !self.sack {
            // RFC 8985 section 6: RACK learns what was delivered from SACK blocks.
            return Err("rack: rack = true needs sack = true (RFC 8985 detects losses from SACK); allowed without sack: false".into());
        }
        if self.cubic_hystart && self.congestion_control != CongestionControl::Cubic {
            // The ACK-train and delay tests are tcp_cubic.c's, part of CUBIC in Linux.
            return Err("cubic_hystart: CUBIC's own HyStart needs congestion_control = cubic; allowed with other controllers: false".into());
        }
        if !self.cubic_alpha_to_one && self.congestion_control != CongestionControl::Cubic {
            return Err("cubic_alpha_to_one: a rule of CUBIC's Reno-friendly region: needs congestion_control = cubic; allowed with other controllers: true (unset)".into());
        }
        if self.cubic_hystart && self.hystart {
            return Err(
                "cubic_hystart: one slow-start exit at a time: not with hystart = true (HyStart++); allowed with hystart: false".into()
            );
        }
        if self.quickack && !self.delayed_ack {
            // Without delayed ACKs every segment is acknowledged at once already.
            return Err("quickack: the quick-ACK start belongs to a delayed-ACK receiver: needs delayed_ack = true; allowed without delayed_ack: false".into());
        }
        if self.congestion_control != CongestionControl::Bbr {
            // Parts of tcp_bbr.c: switching them off means something only for BBR v1.
            if !self.bbr_ack_aggregation {
                return Err("bbr_ack_aggregation: a part of BBR v1 (tcp_bbr.c): needs congestion_control = bbr; allowed with other controllers: true (unset)".into());
            }
            if !self.bbr_policer_detection {
                return Err("bbr_policer_detection: a part of BBR v1 (tcp_bbr.c): needs congestion_control = bbr; allowed with other controllers: true (unset)".into());
            }
        }
        if self.hystart && self.congestion_control == CongestionControl::Bbr3 {
            return Err("hystart: bbr3 has its own startup and no slow start for HyStart++ to change; allowed with bbr3: false".into());
        }
        if self.hystart && self.congestion_control == CongestionControl::Bbr {
            // BBR sets cwnd itself on every ACK (its STARTUP replaces slow start).
            return Err("hystart: bbr has its own startup and no slow start for HyStart++ to change; allowed with bbr: false".into());
        }
        Ok(())
    }
}

/// Which congestion controller a TCP sender uses (the simulator's `tcp::cc`; the emulator maps
/// it to the kernel's reno, cubic or bbr, and refuses dctcp and prague).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CongestionControl {
    #[default]
    NewReno,
    Cubic,
    /// Data Center TCP (RFC 8257): a scalable controller that reduces in proportion to the
    /// fraction of CE-marked bytes. Not emulated (the kernel here offers reno, cubic, bbr).
    Dctcp,
    /// BBR v1 as Linux's `tcp_bbr.c` runs it: model-based, paced at gain * the windowed
    /// maximum delivery rate (`aqmlab_sim::tcp::cc::bbr`). Emulated as the kernel's bbr.
    Bbr,
    /// BBRv3 after draft-ietf-ccwg-bbr-06 (`aqmlab_sim::tcp::cc::bbr3`): BBR's model with
    /// loss-bounded inflight and a four-phase ProbeBW. Not emulated (the kernel here has v1).
    Bbr3,
    /// TCP Prague (draft-briscoe-iccrg-prague-congestion-control): DCTCP's scalable response
    /// sent as ECT(1), paced, with reduced RTT-dependence and a classic response to loss
    /// (`aqmlab_sim::tcp::cc::prague`). Not emulated (the kernel here has no prague).
    Prague,
}

/// Prague's RTT-independence heuristic (Linux `tcp_prague.c`'s `prague_rtt_scaling`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PragueRttScaling {
    /// No RTT independence (`RTT_CONTROL_NONE`).
    None,
    /// Every flow below the target grows its rate as one at the target (`RTT_CONTROL_RATE`,
    /// Linux's default).
    #[default]
    Rate,
    /// A floor on the marks per round at very low RTT (`RTT_CONTROL_SCALABLE`).
    Scalable,
    /// As a flow with the target added to its RTT (`RTT_CONTROL_ADDITIVE`).
    Additive,
}

/// What a SACK sender's fast retransmit hands its controller as the amount to reduce from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SsthreshBasis {
    /// FlightSize, the data sent and not cumulatively acknowledged (RFC 6675 (4.2), RFC 5681
    /// equation (4)).
    #[default]
    FlightSize,
    /// The pipe (RFC 6675 section 4's SetPipe at that moment: SACKed and lost segments not
    /// counted), as ns-3 3.44's NewReno halves it.
    Pipe,
    /// The congestion window, as Linux's reno halves it (`tcp_reno_ssthresh`); above FlightSize
    /// when the window grew past what was sent (a send buffer or receiver window holding the
    /// sender back: Linux lets slow start grow cwnd to twice the most ever in flight).
    Cwnd,
}

/// Whose Proportional Rate Reduction a SACK sender runs in fast recovery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PrrVariant {
    /// RFC 6937's PRR-SSRB, RecoverFS the window before the reduction, as Linux's
    /// `tcp_cwnd_reduction` runs it.
    #[default]
    Linux,
    /// ns-3 3.44's `TcpPrrRecovery` (src/internet/model/tcp-prr-recovery.cc at tag ns-3.44),
    /// with the two rules ns-3 later fixed (its issues #1350 and #1351): one segment added to
    /// DeliveredData on every duplicate ACK even with SACK, and RecoverFS the pipe.
    Ns3,
}

/// How a sender turns its RTT samples into the retransmission timeout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RtoEstimator {
    /// RFC 6298 section 2: RTO = max(SRTT + max(G, 4 RTTVAR), min_rto).
    #[default]
    Rfc6298,
    /// Linux's `tcp_rtt_estimator` and `__tcp_set_rto`: RTO = SRTT + RTTVAR, RTTVAR the round
    /// trip's largest 4 x deviation and at least min_rto.
    Linux,
}

/// Which ECN-capable codepoint an ECN TCP sender puts on its data segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EcnCodepoint {
    #[default]
    Ect0,
    Ect1,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dctcp(ecn: bool, ecn_codepoint: EcnCodepoint) -> TcpConfig {
        TcpConfig {
            mss: 1460,
            initial_cwnd_segments: 2,
            initial_rto_ns: 1_000_000_000,
            min_rto_ns: 1_000_000_000,
            max_rto_ns: 60_000_000_000,
            clock_granularity_ns: 1_000_000,
            delayed_ack: false,
            delayed_ack_timeout_ns: 200_000_000,
            rwnd: 1_000_000,
            ecn,
            sack: false,
            frto: false,
            prr: false,
            limited_transmit: false,
            rack: false,
            rto_restart_on_head_retransmit: false,
            rtt_sample_every_ack: false,
            rto_estimator: RtoEstimator::Rfc6298,
            hystart: false,
            cubic_hystart: false,
            rate_estimator: false,
            rwnd_autotuning: false,
            send_buffer: 0,
            cwnd_limited_growth: false,
            cubic_alpha_to_one: true,
            congestion_control: CongestionControl::Dctcp,
            ecn_codepoint,
            pacing: false,
            tso_autosize: false,
            byte_counting: false,
            quickack: false,
            bbr_ack_aggregation: true,
            bbr_policer_detection: true,
            prague_ecn_fallback: false,
            prague_rtt_scaling: Default::default(),
            ssthresh_basis: Default::default(),
            prr_variant: Default::default(),
            handshake: false,
        }
    }

    #[test]
    fn dctcp_and_ect1_need_ecn_and_the_refusal_names_the_field() {
        assert_eq!(dctcp(true, EcnCodepoint::Ect1).validate(), Ok(()));
        let err = dctcp(false, EcnCodepoint::Ect0).validate().unwrap_err();
        assert!(err.starts_with("congestion_control: dctcp needs ecn = true"), "{err}");
        let err = TcpConfig { congestion_control: CongestionControl::Cubic, ..dctcp(false, EcnCodepoint::Ect1) }.validate().unwrap_err();
        assert!(err.starts_with("ecn_codepoint: ect1 needs ecn = true"), "{err}");
    }

    #[test]
    fn ssthresh_basis_pipe_needs_sack_and_the_refusal_names_the_field() {
        let cubic = TcpConfig { congestion_control: CongestionControl::Cubic, ..dctcp(false, EcnCodepoint::Ect0) };
        let pipe = TcpConfig { ssthresh_basis: SsthreshBasis::Pipe, ..cubic.clone() };
        let err = pipe.validate().unwrap_err();
        assert!(err.starts_with("ssthresh_basis: pipe needs sack = true"), "{err}");
        assert_eq!(TcpConfig { sack: true, ..pipe }.validate(), Ok(()));
        assert_eq!(cubic.validate(), Ok(()));
    }

    #[test]
    fn prague_needs_ecn_ect1_and_pacing_and_each_refusal_names_the_field() {
        let ok = TcpConfig { congestion_control: CongestionControl::Prague, pacing: true, ..dctcp(true, EcnCodepoint::Ect1) };
        assert_eq!(ok.validate(), Ok(()));
        let err = TcpConfig { ecn: false, ..ok.clone() }.validate().unwrap_err();
        assert!(err.starts_with("congestion_control: prague needs ecn = true"), "{err}");
        let err = TcpConfig { ecn_codepoint: EcnCodepoint::Ect0, ..ok.clone() }.validate().unwrap_err();
        assert!(err.starts_with("ecn_codepoint: prague needs ect1"), "{err}");
        let err = TcpConfig { pacing: false, ..ok }.validate().unwrap_err();
        assert!(err.starts_with("pacing: prague needs pacing = true"), "{err}");
    }

    #[test]
    fn bbr_needs_pacing_and_the_refusal_names_the_field() {
        let bbr = TcpConfig { congestion_control: CongestionControl::Bbr, ..dctcp(false, EcnCodepoint::Ect0) };
        let err = bbr.clone().validate().unwrap_err();
        assert!(err.starts_with("pacing: bbr needs pacing = true"), "{err}");
        assert_eq!(TcpConfig { pacing: true, ..bbr }.validate(), Ok(()));
    }

    #[test]
    fn the_prague_options_need_prague_and_each_refusal_names_the_field() {
        let prague = TcpConfig { congestion_control: CongestionControl::Prague, pacing: true, ..dctcp(true, EcnCodepoint::Ect1) };
        let fallback = TcpConfig { prague_ecn_fallback: true, ..prague.clone() };
        assert_eq!(fallback.validate(), Ok(()));
        let err = TcpConfig { congestion_control: CongestionControl::Dctcp, ..fallback }.validate().unwrap_err();
        assert!(err.starts_with("prague_ecn_fallback: the classic ECN fall-back is Prague's"), "{err}");
        let scalable = TcpConfig { prague_rtt_scaling: PragueRttScaling::Scalable, ..prague };
        assert_eq!(scalable.validate(), Ok(()));
        let err = TcpConfig { congestion_control: CongestionControl::Dctcp, ..scalable }.validate().unwrap_err();
        assert!(err.starts_with("prague_rtt_scaling: the RTT-independence heuristics are Prague's"), "{err}");
    }

    #[test]
    fn quickack_needs_delayed_acks_and_the_refusal_names_the_field() {
        let quick = TcpConfig { congestion_control: CongestionControl::Cubic, quickack: true, ..dctcp(false, EcnCodepoint::Ect0) };
        let err = quick.clone().validate().unwrap_err();
        assert!(err.starts_with("quickack: the quick-ACK start belongs to a delayed-ACK receiver"), "{err}");
        assert_eq!(TcpConfig { delayed_ack: true, ..quick }.validate(), Ok(()));
    }

    #[test]
    fn bbr3_needs_pacing_refuses_ecn_and_hystart_and_each_refusal_names_the_field() {
        let ok = TcpConfig { congestion_control: CongestionControl::Bbr3, pacing: true, ..dctcp(false, EcnCodepoint::Ect0) };
        assert_eq!(ok.validate(), Ok(()));
        let err = TcpConfig { pacing: false, ..ok.clone() }.validate().unwrap_err();
        assert!(err.starts_with("pacing: bbr3 needs pacing = true"), "{err}");
        let err = TcpConfig { ecn: true, ..ok.clone() }.validate().unwrap_err();
        assert!(err.starts_with("ecn: bbr3 has no ECN response"), "{err}");
        let err = TcpConfig { hystart: true, ..ok }.validate().unwrap_err();
        assert!(err.starts_with("hystart: bbr3 has its own startup"), "{err}");
    }

    #[test]
    fn the_bbr_parts_switch_off_only_with_bbr_and_the_refusal_names_the_field() {
        let bbr = TcpConfig { congestion_control: CongestionControl::Bbr, pacing: true, ..dctcp(false, EcnCodepoint::Ect0) };
        let off = TcpConfig { bbr_ack_aggregation: false, bbr_policer_detection: false, ..bbr };
        assert_eq!(off.clone().validate(), Ok(()));
        let bbr3 = TcpConfig { congestion_control: CongestionControl::Bbr3, ..off.clone() };
        let err = bbr3.validate().unwrap_err();
        assert!(err.starts_with("bbr_ack_aggregation: a part of BBR v1"), "{err}");
        let cubic = TcpConfig { congestion_control: CongestionControl::Cubic, bbr_ack_aggregation: true, ..off };
        let err = cubic.validate().unwrap_err();
        assert!(err.starts_with("bbr_policer_detection: a part of BBR v1"), "{err}");
        // Unset, a scenario's TCP gets both on.
        let json = r#"{"mss":1460,"initial_cwnd_segments":2,"initial_rto_ns":1,"min_rto_ns":1,"max_rto_ns":1,"clock_granularity_ns":1,"delayed_ack":false,"delayed_ack_timeout_ns":1,"rwnd":1,"ecn":false}"#;
        let parsed: TcpConfig = serde_json::from_str(json).unwrap();
        assert!(parsed.bbr_ack_aggregation && parsed.bbr_policer_detection);
    }

    #[test]
    fn hystart_is_refused_with_bbr_and_the_refusal_names_the_field() {
        let bbr = TcpConfig { congestion_control: CongestionControl::Bbr, pacing: true, hystart: true, ..dctcp(false, EcnCodepoint::Ect0) };
        let err = bbr.validate().unwrap_err();
        assert!(err.starts_with("hystart: bbr has its own startup"), "{err}");
        let cubic = TcpConfig { congestion_control: CongestionControl::Cubic, hystart: true, ..dctcp(false, EcnCodepoint::Ect0) };
        assert_eq!(cubic.validate(), Ok(()));
    }
}
