//! TCP NewReno with optional SACK, as pure state machines: events in (ACKs, data, timer
//! expiries, the clock), segments and ACK decisions out. The engine turns them into packets.
//!
//! * congestion control ([`cc`]): NewReno's slow start and congestion avoidance (RFC 5681
//!   section 3.1) or CUBIC's (RFC 9438), chosen by `TcpConfig::congestion_control`; the loss
//!   recovery below is the same for both;
//! * loss recovery: fast retransmit / fast recovery (RFC 5681 section 3.2) with NewReno's
//!   partial-ACK handling (RFC 6582 section 3.2);
//! * retransmission timer: RFC 6298 ([`rtt::RttEstimator`]) with Karn's rule (no RTT sample
//!   from a retransmitted segment) and go-back-N after a timeout;
//! * optional ECN reaction: one window reduction per window of data on ECN-Echo (RFC 3168
//!   section 6.1.2); with DCTCP the reduction is scaled by the marked fraction (RFC 8257,
//!   [`cc::dctcp`]) and the receiver echoes CE by [`ecn_feedback`]'s two-state machine;
//! * receiver: cumulative ACKs, out-of-order data held, immediate ACK for out-of-order or
//!   gap-filling segments, optional delayed ACKs (every second segment or a timeout, RFC 5681
//!   section 4.2).
//! * optional SACK (`TcpConfig::sack`, both ends): the receiver reports up to three SACK
//!   blocks (RFC 2018 section 4, [`sack::SackReporter`]); the sender keeps a scoreboard and
//!   replaces fast recovery by RFC 6675's conservative SACK-based loss recovery (IsLost,
//!   SetPipe, NextSeg, RecoveryPoint); after a timeout it forgets the scoreboard (RFC 2018
//!   section 8) and its go-back-N skips only what later ACKs SACK (RFC 6675 section 5.1).
//!   CUBIC with SACK reduces at most cwnd, and a timeout does not reduce again for a loss
//!   already reduced for ([`TcpSender::on_timer`]). Without SACK, every rule above is
//!   unchanged.
//! * optional F-RTO (`TcpConfig::frto`): the basic detection algorithm of RFC 5682 section
//!   2.1 decides, from the two ACKs after a timeout's retransmission, whether the timeout was
//!   spurious; if so the sender stops go-back-N and continues with new data (conservative
//!   response, see [`TcpSender::frto_after_ack`]). The basic algorithm is used with SACK too
//!   (RFC 5682 section 3's SACK-enhanced variant is not implemented). Without F-RTO every
//!   rule above is unchanged.
//! * optional Proportional Rate Reduction (`TcpConfig::prr`, with SACK): in RFC 6675 recovery,
//!   cwnd = pipe + RFC 6937's sndcnt on every ACK ([`prr`]), and cwnd = ssthresh when recovery
//!   ends. Off, or without SACK, every rule above is unchanged.
//! * optional Limited Transmit (`TcpConfig::limited_transmit`): one new segment on each of the
//!   first two duplicate ACKs (RFC 3042, [`limited_transmit`]). Off, every rule above is
//!   unchanged.
//!
//! * optional RACK-TLP (`TcpConfig::rack`, with SACK): RACK's time-based loss detection
//!   ([`rack`], RFC 8985 section 6) marks segments lost in addition to RFC 6675's IsLost, with
//!   its reorder timer, and in recovery finds lost retransmissions, which leave the pipe and are
//!   sent again before anything else; tail loss probes ([`tlp`], section 7) fire before the RTO. Both timers
//!   share the retransmission timer ([`TcpSender::rto_deadline`] is the earliest). Off, every
//!   rule above is unchanged.
//!
//! * optional restart of the retransmission timer at each retransmission of the first
//!   unacknowledged segment (`TcpConfig::rto_restart_on_head_retransmit`, Linux's
//!   `tcp_xmit_retransmit_queue`, [`rto_restart`]). Off, RFC 6298 (5.3) alone restarts it.
//!
//! * optional RTT sample from every ACK that newly acknowledges data
//!   (`TcpConfig::rtt_sample_every_ack`, Linux's `tcp_ack_update_rtt` with timestamps,
//!   [`rtt_every_ack`]), each clearing the RTO's backoff. Off, RFC 6298's one timed segment a
//!   round with Karn's rule.
//!
//! * optional RTO from Linux's estimator (`TcpConfig::rto_estimator`, `tcp_rtt_estimator`,
//!   [`rto_linux`]): RTO = SRTT + max(the round trip's largest 4 x deviation, min_rto). Off, RFC
//!   6298 section 2's max(SRTT + 4 RTTVAR, min_rto).
//!
//! * optional HyStart++ (`TcpConfig::hystart`, not with BBR): in the initial slow start,
//!   [`hystart`] (RFC 9406) takes the place of the controller's slow-start rule, leaving it for
//!   Conservative Slow Start when the RTT rises and for congestion avoidance (ssthresh = cwnd)
//!   after CSS_ROUNDS rounds of it; any loss, timeout or ECN-Echo ends it. Off, every rule
//!   above is unchanged.
//!
//! * optional send buffer (`TcpConfig::send_buffer`, [`send_buffer`]): the application writes
//!   again only when at most two thirds of the buffer is queued, so a window larger than the
//!   buffer is not filled. Off (0), the application always has data, every rule above unchanged.
//!
//! * optional growth only while the window limits sending (`TcpConfig::cwnd_limited_growth`,
//!   [`cwnd_limited`], Linux's `tcp_is_cwnd_limited`). Off, every ACK grows the window.
//!
//! * optional sender pacing (`TcpConfig::pacing`, [`pacing`]): the send loops stop while the
//!   pacing timer holds the next segment back ([`TcpSender::pacing_deadline`],
//!   [`TcpSender::on_pacing_timer`]). Off, every rule above is unchanged.
//! * BBR (`CongestionControl::Bbr`, [`cc::bbr`]): the delivery-rate estimator ([`rate_sample`])
//!   runs beside the sender, and after every ACK BBR sets cwnd and the pacing rate
//!   ([`TcpSender::bbr_on_ack`]); which segments loss recovery sends is unchanged. BBRv3
//!   (`CongestionControl::Bbr3`, [`cc::bbr3`]) runs in the same step, with the estimator's
//!   P.tx_in_flight and C.lost. With any other controller neither runs.
//!
//! Sequence numbers are 64-bit byte offsets starting at 1 (the SYN's), never wrapping. Data is
//! always sent in full-sized segments at `ISS_DATA + k * mss`, so SACK blocks fall on segment
//! boundaries.

pub mod cc;
pub mod cubic_hystart;
pub mod cwnd_limited;
pub mod ecn_feedback;
pub mod fuzz;
pub mod handshake;
pub mod hystart;
pub mod limited_transmit;
pub mod pacing;
pub mod prr;
pub mod quickack;
pub mod rack;
pub mod rate_sample;
pub mod receive_window;
pub mod rto_linux;
pub mod rto_restart;
pub mod rtt;
pub mod rtt_every_ack;
pub mod rxt_in_flight;
pub mod sack;
pub mod send_buffer;
pub mod send_times;
pub mod tlp;
pub mod tso;

use aqmlab_core::{SackBlocks, SimRng, Time};
use aqmlab_model::app::tcp_config::{CongestionControl, PrrVariant, RtoEstimator, SsthreshBasis, TcpConfig};
use cc::bbr::{AckInput, Bbr, BbrParts, CaState};
use cc::bbr3::{Bbr3, V3Sample};
use cc::Controller;
use cubic_hystart::CubicHyStart;
use cwnd_limited::CwndUsage;
use ecn_feedback::DctcpEcho;
use hystart::HyStart;
use pacing::Pacer;
use prr::{Ns3Ack, Prr};
use quickack::QuickAck;
use rack::Rack;
use rate_sample::DeliveryRate;
use receive_window::ReceiveWindow;
use rtt::RttEstimator;
use rtt_every_ack::EveryAckRtt;
use sack::{RangeSet, SackReporter, DUP_THRESH};
use send_buffer::SendBuffer;
use std::collections::BTreeSet;
use tlp::{ProbeOutcome, Tlp};

/// A segment the sender wants on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub seq: u64,
    pub len: u32,
    pub retransmission: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub segments_sent: u64,
    pub retransmissions: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub ecn_reductions: u64,
    /// Timeouts F-RTO declared spurious (RFC 5682 section 2.1 step 3b).
    pub spurious_timeouts: u64,
    /// Tail loss probes sent (RFC 8985 section 7.3).
    pub tlp_probes: u64,
    /// Retransmitted probes whose ACK showed they repaired a loss (section 7.4.2).
    pub tlp_repairs: u64,
    /// RACK reorder timer expiries (section 6.2 step 5).
    pub rack_reorder_timeouts: u64,
}

/// The timer RACK-TLP runs in place of the retransmission timer until it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RackTimer {
    /// RFC 8985 section 6.2 step 5.
    Reorder,
    /// Section 7.2's PTO.
    Probe,
}

/// The first byte of data (byte 0 is taken by the SYN).
pub const ISS_DATA: u64 = 1;

#[derive(Clone, Debug)]
pub struct TcpSender {
    mss: u64,
    rwnd: u64,
    ecn: bool,
    pub cwnd: u64,
    pub ssthresh: u64,
    /// The window rules (NewReno or CUBIC) behind the loss recovery below.
    cc: Controller,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    dupacks: u32,
    in_recovery: bool,
    /// RFC 6582's `recover`: highest sequence sent when recovery (or a timeout) began.
    recover: u64,
    /// Sequence below which ECN-Echo has already caused a reduction.
    ecn_recover: u64,
    /// Whether a partial ACK in this recovery already restarted the timer (RFC 6582 section
    /// 3.2 step 5, the "Impatient" variant: only the first partial ACK does).
    partial_ack_seen: bool,
    rtt: RttEstimator,
    /// (end sequence, send time) of the one segment being timed.
    timing: Option<(u64, Time)>,
    /// The RTT sample the last ACK gave (`take_latest_rtt_sample`).
    latest_rtt_sample: Option<Time>,
    rto_deadline: Option<Time>,
    /// No new data beyond this sequence: where the application stopped or has written to
    /// ([`Self::write_until`]), or the end of what a send buffer holds (`send_buffer`), the lower.
    data_end: Option<u64>,
    /// The application's own end of data (`stop`, `write_until`); None while it writes without end.
    app_end: Option<u64>,
    /// The socket's send buffer (`TcpConfig::send_buffer`, [`send_buffer`]), when limited.
    send_buffer: Option<SendBuffer>,
    /// How much of the window is used, when it grows only while it limits sending
    /// (`TcpConfig::cwnd_limited_growth`, [`cwnd_limited`]).
    cwnd_usage: Option<CwndUsage>,
    /// SACK-based loss recovery (RFC 6675) instead of NewReno's fast recovery.
    sack: bool,
    /// The scoreboard: SACKed bytes above `snd_una` (always empty without SACK).
    board: RangeSet,
    /// RFC 6675's HighRxt + 1: the end of the highest segment retransmitted in this recovery
    /// (with RACK, or in the last one while its retransmissions are unacknowledged:
    /// [`rxt_in_flight`]; outside recovery it may stay above SND.UNA and is not read).
    high_rxt: u64,
    /// RFC 6675's RescueRxt + 1.
    rescue_rxt: u64,
    /// F-RTO (RFC 5682) enabled.
    frto: bool,
    /// Where the F-RTO algorithm stands after a timeout.
    frto_phase: FrtoPhase,
    /// RFC 5682's "recover": the highest sequence number sent when the last timeout fired
    /// (SND.UNA once a timeout is declared spurious, step 3b); None before any timeout.
    frto_recover: Option<u64>,
    /// Limited Transmit (RFC 3042) enabled.
    limited_transmit: bool,
    /// A retransmission of the head restarts the RTO (`TcpConfig::rto_restart_on_head_retransmit`,
    /// [`rto_restart`]).
    rto_restart_on_head_retransmit: bool,
    /// An RTT sample from every ACK, as Linux with timestamps (`TcpConfig::rtt_sample_every_ack`,
    /// [`rtt_every_ack`]); None: RFC 6298's timed segment (`timing`).
    every_ack_rtt: Option<EveryAckRtt>,
    /// Proportional Rate Reduction (RFC 6937): Some when enabled (with SACK), the state of the
    /// current (or last) recovery.
    prr: Option<Prr>,
    /// PRR runs as ns-3 3.44's `TcpPrrRecovery` (`TcpConfig::prr_variant`, [`Prr::ns3_on_ack`]).
    prr_ns3: bool,
    /// Sender pacing: Some when `TcpConfig::pacing` (always with BBR).
    pacer: Option<Pacer>,
    /// The pacer sends Linux's skb-sized bursts (`TcpConfig::tso_autosize`, [`tso`]).
    tso_autosize: bool,
    /// A send loop stopped because the pacer held the next segment back.
    pacing_blocked: bool,
    /// Segments the next send loop may send regardless of the pacer (a timeout's
    /// retransmission leaves at once).
    pacing_free: u32,
    /// The delivery-rate estimator, with BBR or `rate_estimator`.
    rate: Option<DeliveryRate>,
    /// Bytes newly marked lost since BBR's last ACK step without SACK (fast retransmit and
    /// NewReno partial ACKs each mark the head segment lost).
    newly_lost: u64,
    /// With SACK: the IsLost boundary BBR's loss count has reached.
    lost_mark: u64,
    /// RACK (RFC 8985 section 6): Some when `TcpConfig::rack` (with SACK).
    rack: Option<Rack>,
    /// RACK's loss boundary: every un-SACKed byte below it that was not retransmitted in this
    /// recovery is lost.
    rack_lost_until: u64,
    /// Segments retransmitted in this recovery (below HighRxt) whose retransmission RACK found
    /// lost ([`Rack::detect_lost_retransmissions`]) and that wait to be sent again: out of the
    /// pipe, and NextSeg's first choice.
    rack_lost_rxt: BTreeSet<u64>,
    /// When RACK's reorder timer is due.
    reo_at: Option<Time>,
    /// The TLP episode (section 7), with RACK.
    tlp: Tlp,
    /// The RACK-TLP timer armed ahead of the RTO.
    rack_timer: Option<(Time, RackTimer)>,
    /// New data was sent or newly acknowledged since the PTO was last armed (section 7.2).
    pto_restart: bool,
    /// HyStart++ (RFC 9406): Some when `TcpConfig::hystart`, until the end of the connection
    /// (it stays, inactive, after its initial slow start).
    hystart: Option<HyStart>,
    /// CUBIC's own HyStart (`tcp_cubic.c`): Some when `TcpConfig::cubic_hystart`.
    cubic_hystart: Option<CubicHyStart>,
    /// Whether a sent segment updates more than the counters, the RTT timing and the timer:
    /// HyStart++, CUBIC's HyStart, Prague's detector, BBR's rate sampler, RACK, the pacer or
    /// PRR (`on_sent_hooks`). Each is chosen when the sender is built, so this is fixed; without
    /// any (the rfc profile), the send loop tests this flag once per segment instead of each
    /// (benches/README.md, issue 21).
    send_hooks: bool,
    /// What SACK recovery reduces from (`TcpConfig::ssthresh_basis`; FlightSize without SACK).
    ssthresh_basis: SsthreshBasis,
    pub stats: SenderStats,
}

/// RFC 5682 section 2.1: which ACK after the timeout's retransmission the sender waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FrtoPhase {
    /// Not in F-RTO: conventional behaviour.
    Idle,
    /// Step 2: waiting for the first ACK after the RTO retransmission.
    FirstAck,
    /// Step 3: two new segments were sent (step 2b); waiting for the second ACK.
    SecondAck,
}

/// What F-RTO decided about an ACK before the ordinary ACK processing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FrtoAction {
    None,
    /// Step 2b: send up to two new segments.
    SendNew,
    /// Step 3a: back to conventional RTO recovery with cwnd = 3 SMSS.
    Revert,
    /// Step 3b: the timeout was spurious.
    Spurious,
}

/// Which rule of RFC 6675's NextSeg() chose a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NextSeg {
    /// (1) the first un-SACKed, lost segment above HighRxt.
    Lost(u64),
    /// (2) new data.
    New,
    /// (3) the first un-SACKed segment above HighRxt below the highest SACKed byte.
    Unsacked(u64),
    /// (4) the rescue retransmission of the highest un-SACKed segment.
    Rescue(u64),
    /// With RACK, ahead of (1): a segment below HighRxt whose retransmission was lost.
    LostRetransmission(u64),
}

impl TcpSender {
    /// A sender whose BBR (if it runs BBR) draws from flow 0's stream of seed 0; the simulator
    /// uses [`Self::with_rng`] with the flow's own.
    pub fn new(cfg: &TcpConfig) -> TcpSender {
        TcpSender::with_rng(cfg, || aqmlab_model::streams::flow_bbr(0, 0))
    }

    /// A sender whose BBR draws its random PROBE_BW phases from `rng()` (called only for BBR).
    pub fn with_rng(cfg: &TcpConfig, rng: impl FnOnce() -> SimRng) -> TcpSender {
        let mss = cfg.mss as u64;
        let is_bbr = matches!(cfg.congestion_control, CongestionControl::Bbr | CongestionControl::Bbr3);
        let iw = cfg.initial_cwnd_segments.max(1) as u64;
        // The application's first writes, before anything is sent.
        let send_buffer = (cfg.send_buffer > 0).then(|| {
            let mut b = SendBuffer::new(cfg.send_buffer, ISS_DATA);
            b.refill(ISS_DATA, mss);
            b
        });
        let cc = match cfg.congestion_control {
            CongestionControl::Bbr => {
                let parts = BbrParts { ack_aggregation: cfg.bbr_ack_aggregation, policer_detection: cfg.bbr_policer_detection };
                Controller::Bbr(Box::new(Bbr::with_parts(mss, iw, rng(), parts)))
            }
            // v3 draws its probe waits from the flow's BBR stream: a flow runs one BBR.
            CongestionControl::Bbr3 => Controller::Bbr3(Box::new(Bbr3::new(mss, iw, rng()))),
            CongestionControl::Prague => {
                let p = cc::prague::Prague::new(mss).with_rtt_scaling(cfg.prague_rtt_scaling);
                let p = if cfg.prague_ecn_fallback { p.with_classic_ecn_detection(true) } else { p };
                Controller::Prague(p).with_byte_counting(cfg.byte_counting)
            }
            _ => Controller::new(cfg.congestion_control, mss)
                .with_byte_counting(cfg.byte_counting)
                .with_cubic_alpha_to_one(cfg.cubic_alpha_to_one),
        };
        let pacer = (cfg.pacing || is_bbr).then(Pacer::default);
        let initial_rate = match &cc {
            Controller::Bbr(b) => Some(b.pacing_rate()),
            Controller::Bbr3(b) => Some(b.pacing_rate()),
            _ => None,
        };
        let mut sender = TcpSender {
            mss,
            // An autotuning receiver's SYN-ACK window; the ACKs then carry its growth.
            rwnd: if cfg.rwnd_autotuning { ReceiveWindow::first_window(cfg.rwnd, mss) } else { cfg.rwnd },
            ecn: cfg.ecn,
            cwnd: mss * cfg.initial_cwnd_segments.max(1) as u64,
            ssthresh: cc::SSTHRESH_UNSET,
            cc,
            snd_una: ISS_DATA,
            snd_nxt: ISS_DATA,
            snd_max: ISS_DATA,
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            ecn_recover: 0,
            partial_ack_seen: false,
            rtt: match cfg.rto_estimator {
                RtoEstimator::Rfc6298 => {
                    RttEstimator::new(Time(cfg.initial_rto_ns), Time(cfg.min_rto_ns), Time(cfg.max_rto_ns), Time(cfg.clock_granularity_ns))
                }
                RtoEstimator::Linux => RttEstimator::linux(Time(cfg.initial_rto_ns), Time(cfg.min_rto_ns), Time(cfg.max_rto_ns)),
            },
            timing: None,
            latest_rtt_sample: None,
            rto_deadline: None,
            data_end: send_buffer.as_ref().map(SendBuffer::written),
            app_end: None,
            send_buffer,
            cwnd_usage: cfg.cwnd_limited_growth.then(CwndUsage::default),
            sack: cfg.sack,
            board: RangeSet::default(),
            high_rxt: ISS_DATA,
            rescue_rxt: ISS_DATA,
            frto: cfg.frto,
            frto_phase: FrtoPhase::Idle,
            frto_recover: None,
            limited_transmit: cfg.limited_transmit,
            rto_restart_on_head_retransmit: cfg.rto_restart_on_head_retransmit,
            every_ack_rtt: cfg.rtt_sample_every_ack.then(|| EveryAckRtt::new(mss, ISS_DATA)),
            prr: (cfg.prr && cfg.sack).then(Prr::default),
            prr_ns3: cfg.prr_variant == PrrVariant::Ns3,
            pacer,
            tso_autosize: cfg.tso_autosize,
            pacing_blocked: false,
            pacing_free: 0,
            rate: (is_bbr || cfg.rate_estimator).then(|| DeliveryRate::new(mss, ISS_DATA)),
            newly_lost: 0,
            lost_mark: 0,
            rack: (cfg.rack && cfg.sack).then(|| Rack::new(mss, ISS_DATA)),
            rack_lost_until: 0,
            rack_lost_rxt: BTreeSet::new(),
            reo_at: None,
            tlp: Tlp::default(),
            rack_timer: None,
            pto_restart: false,
            hystart: (cfg.hystart && !is_bbr).then(|| HyStart::new(mss, cfg.pacing, ISS_DATA)),
            cubic_hystart: cfg.cubic_hystart.then(|| CubicHyStart::new(mss, cfg.pacing, ISS_DATA, Time::ZERO)),
            send_hooks: false,
            ssthresh_basis: if cfg.sack { cfg.ssthresh_basis } else { SsthreshBasis::FlightSize },
            stats: SenderStats::default(),
        };
        sender.send_hooks = sender.hystart.is_some()
            || sender.cubic_hystart.is_some()
            || matches!(sender.cc, Controller::Prague(_))
            || sender.rate.is_some()
            || sender.rack.is_some()
            || sender.pacer.is_some()
            || sender.prr.is_some()
            || sender.every_ack_rtt.is_some();
        if let Some(rate) = initial_rate {
            sender.set_pacing_rate(rate);
        }
        sender
    }

    /// BBR's state, when the sender runs BBR.
    pub fn bbr(&self) -> Option<&Bbr> {
        match &self.cc {
            Controller::Bbr(b) => Some(b),
            _ => None,
        }
    }

    /// BBRv3's state, when the sender runs it.
    pub fn bbr3(&self) -> Option<&Bbr3> {
        match &self.cc {
            Controller::Bbr3(b) => Some(b),
            _ => None,
        }
    }

    /// HyStart++'s state, when `TcpConfig::hystart` is on.
    pub fn hystart(&self) -> Option<&HyStart> {
        self.hystart.as_ref()
    }

    /// CUBIC's own HyStart, when `TcpConfig::cubic_hystart` is on.
    pub fn cubic_hystart(&self) -> Option<&CubicHyStart> {
        self.cubic_hystart.as_ref()
    }

    /// A congestion signal (fast retransmit, timeout, ECN-Echo reaction, a loss a tail loss
    /// probe repaired): HyStart++ is over (RFC 9406 section 4.2's loss rule, section 4.3's
    /// initial slow start only).
    fn end_hystart(&mut self) {
        if let Some(h) = self.hystart.as_mut() {
            h.end();
        }
    }

    /// The pacer, when pacing is on.
    pub fn pacer(&self) -> Option<&Pacer> {
        self.pacer.as_ref()
    }

    /// When the pacing timer must wake the sender: the pacer's departure time, while a send
    /// loop is held back by it. None without pacing or when nothing waits for it.
    pub fn pacing_deadline(&self) -> Option<Time> {
        self.pacer.as_ref().filter(|_| self.pacing_blocked).map(Pacer::next_send)
    }

    /// The pacing timer fired at `now`: send what the pacer held back.
    pub fn on_pacing_timer(&mut self, now: Time, out: &mut Vec<Segment>) {
        if self.pacing_deadline().is_some_and(|t| t <= now) {
            self.send_available(now, out);
        }
    }

    /// Whether the pacer lets a segment leave at `now` (always without pacing).
    #[inline]
    fn pacing_allows(&mut self, now: Time) -> bool {
        let Some(p) = self.pacer.as_ref() else { return true };
        if self.pacing_free > 0 {
            self.pacing_free -= 1;
            return true;
        }
        if p.may_send(now) {
            return true;
        }
        self.pacing_blocked = true;
        false
    }

    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    pub fn snd_max(&self) -> u64 {
        self.snd_max
    }
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }
    /// When [`Self::on_timer`] must run: the retransmission timer, or RACK-TLP's reorder timer
    /// or probe timeout when it is earlier.
    pub fn rto_deadline(&self) -> Option<Time> {
        match (self.rto_deadline, self.rack_timer) {
            (Some(r), Some((t, _))) => Some(r.min(t)),
            (r, t) => r.or(t.map(|(t, _)| t)),
        }
    }
    /// RACK's state, when `TcpConfig::rack` is on.
    pub fn rack(&self) -> Option<&Rack> {
        self.rack.as_ref()
    }
    /// The IsLost boundary: RFC 6675's from the scoreboard, or RACK's when it is higher.
    fn lost_boundary(&self) -> u64 {
        let b = self.board.lost_boundary(self.mss);
        if self.rack.is_some() {
            b.max(self.rack_lost_until)
        } else {
            b
        }
    }
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }
    fn flight_size(&self) -> u64 {
        self.snd_max - self.snd_una
    }
    /// The SACK scoreboard: SACKed byte ranges above `snd_una`.
    pub fn scoreboard(&self) -> &RangeSet {
        &self.board
    }
    /// RFC 6675 IsLost(seq).
    pub fn is_lost(&self, seq: u64) -> bool {
        self.board.is_lost(seq, self.mss)
            || (self.rack.is_some() && seq < self.rack_lost_until && !self.board.covers(seq, seq + 1))
            || self.rack_lost_rxt.contains(&seq)
    }

    /// RFC 6675 section 4 SetPipe(): of the un-SACKed bytes between HighACK and HighData,
    /// one for each byte not deemed lost (IsLost) and one more for each byte at or below
    /// HighRxt (retransmitted in this recovery). Outside recovery HighRxt is not counted: it
    /// lies below SND.UNA, or with RACK may still mark the last recovery's retransmissions
    /// ([`rxt_in_flight`]), which only a recovery reads.
    pub fn pipe(&self) -> u64 {
        let una = self.snd_una;
        let lost_below = self.lost_boundary().max(una);
        let high_rxt = if self.in_recovery { self.high_rxt.max(una) } else { una };
        let pipe = self.board.uncovered_in(lost_below, self.snd_max) + self.board.uncovered_in(una, high_rxt);
        // A retransmission RACK found lost is no longer in flight, and its segment is lost
        // (Linux's `tcp_mark_skb_lost`: the segment counts neither as retransmitted nor as
        // outstanding). Each one is un-SACKed, at or above SND.UNA and below HighRxt.
        let relost = |from: u64| self.rack_lost_rxt.range(from..).count() as u64 * self.mss;
        pipe - relost(una) - relost(lost_below)
    }

    /// The connection opened (`handshake`): the SYN's RTT, when there is one, is the
    /// estimator's first sample (RFC 6298 section 2.2; it seeds SRTT, RTTVAR and the RTO, not
    /// the controllers' own RTT filters), and after a lost SYN or SYN-ACK the data starts with
    /// one segment (RFC 5681 section 3.1).
    pub fn on_handshake(&mut self, rtt: Option<Time>, syn_lost: bool) {
        if let Some(r) = rtt {
            self.rtt.sample(r, self.snd_una, self.snd_max);
        }
        if syn_lost {
            self.cwnd = self.mss;
        }
    }

    /// The application stops producing data: nothing new is sent after what is queued.
    pub fn stop(&mut self) {
        self.app_end = Some(self.snd_max);
        self.data_end = self.app_end;
    }

    /// An application that writes data as it produces it (app-limited): new data may be sent
    /// up to sequence `end` (exclusive, in whole segments above `ISS_DATA`).
    pub fn write_until(&mut self, end: u64) {
        self.app_end = Some(end);
        self.data_end = self.app_end;
        self.refill_send_buffer();
    }

    /// Sends as much as the windows allow. Inlined, as the steps below, into the per-ACK path
    /// (`on_ack_sack`): out of line, their calls cost about 1 % of the 600-flow run's
    /// instructions (benches/README.md, issue 21).
    #[inline(always)]
    pub fn send_available(&mut self, now: Time, out: &mut Vec<Segment>) {
        let sent_before = self.stats.segments_sent;
        self.send_window(now, out);
        if self.cwnd_usage.is_some() {
            self.note_cwnd_usage(self.stats.segments_sent > sent_before);
        }
        if self.rack.is_some() {
            self.arm_rack_timer(now);
        }
    }

    #[inline(always)]
    fn send_window(&mut self, now: Time, out: &mut Vec<Segment>) {
        self.pacing_blocked = false;
        if self.sack && self.in_recovery {
            self.send_in_sack_recovery(now, out);
            return;
        }
        let window = self.cwnd.min(self.rwnd);
        // Only whole segments: a segment goes out when it fits entirely in the window.
        while self.snd_nxt + self.mss <= self.snd_una + window {
            let retransmission = self.snd_nxt < self.snd_max;
            if !retransmission && self.data_end.is_some_and(|end| self.snd_nxt >= end) {
                self.check_app_limited();
                break;
            }
            // Go-back-N after a timeout skips segments SACKed since (RFC 6675 section 5.1:
            // use the SACK information that arrives during the recovery after an RTO). The
            // scoreboard is always empty without SACK.
            if retransmission && self.board.covers(self.snd_nxt, self.snd_nxt + self.mss) {
                self.snd_nxt += self.mss;
                continue;
            }
            if !self.pacing_allows(now) {
                break;
            }
            let seq = self.snd_nxt;
            self.transmit_inline(seq, retransmission, now, out);
            self.snd_nxt += self.mss;
            self.snd_max = self.snd_max.max(self.snd_nxt);
        }
    }

    fn transmit(&mut self, seq: u64, retransmission: bool, now: Time, out: &mut Vec<Segment>) {
        self.transmit_inline(seq, retransmission, now, out);
        // Recovery's retransmissions come this way (the send loop's go-back-N does not: the ACK
        // that moved SND.UNA restarted the timer there already).
        if self.rto_restart_on_head_retransmit {
            let reorder_armed = matches!(self.rack_timer, Some((_, RackTimer::Reorder)));
            if rto_restart::restarts_timer(retransmission, seq, self.snd_una, reorder_armed) {
                self.rto_deadline = Some(now + self.rtt.rto());
            }
        }
    }

    /// [`Self::transmit`], always inlined: for the send loop of `send_window`, which sends
    /// nearly every segment; the rarer callers (recovery, probes) share one out-of-line copy.
    #[inline(always)]
    fn transmit_inline(&mut self, seq: u64, retransmission: bool, now: Time, out: &mut Vec<Segment>) {
        if retransmission {
            self.stats.retransmissions += 1;
            // Karn: a retransmitted segment must not give an RTT sample.
            self.timing = None;
        } else {
            if self.timing.is_none() {
                self.timing = Some((seq + self.mss, now));
            }
        }
        self.stats.segments_sent += 1;
        if self.send_hooks {
            self.on_sent_hooks(seq, retransmission, now);
        }
        if self.rto_deadline.is_none() {
            // RFC 6298 (5.1): start the timer when data is sent and it is not running.
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        out.push(Segment { seq, len: self.mss as u32, retransmission });
    }

    /// What else a sent segment updates, when the sender has any of it (`send_hooks`).
    #[inline(never)]
    fn on_sent_hooks(&mut self, seq: u64, retransmission: bool, now: Time) {
        if !retransmission {
            if let Some(h) = self.hystart.as_mut() {
                h.on_sent(seq + self.mss, now);
            }
            if let Some(h) = self.cubic_hystart.as_mut() {
                h.on_sent(seq + self.mss, now);
            }
        }
        self.cc.on_sent(seq + self.mss, retransmission, now);
        if self.rate.is_some() {
            self.rate_on_sent(seq, now);
        }
        if let Some(r) = self.rack.as_mut() {
            r.on_sent(seq, now, retransmission);
            self.pto_restart |= !retransmission;
        }
        if let Some(p) = self.pacer.as_mut() {
            p.on_sent(now, self.mss);
        }
        if let Some(r) = self.every_ack_rtt.as_mut() {
            r.on_sent(seq, now, retransmission);
        }
        if self.in_recovery {
            if let Some(p) = self.prr.as_mut() {
                p.on_sent(self.mss); // RFC 6937: prr_out += (data sent)
            }
        }
    }

    fn restart_timer(&mut self, now: Time) {
        // (5.2)/(5.3): stop when all data is acked, else restart.
        self.rto_deadline = (self.snd_una < self.snd_max).then(|| now + self.rtt.rto());
    }

    /// Processes a cumulative ACK (with its ECN-Echo flag) and sends what the new window allows.
    pub fn on_ack(&mut self, ack: u64, ece: bool, now: Time, out: &mut Vec<Segment>) {
        self.on_ack_sack(ack, ece, &[], now, out);
    }

    /// [`Self::on_ack`] with the ACK's SACK blocks (`[left, right)`), which only a SACK sender
    /// uses.
    pub fn on_ack_sack(&mut self, ack: u64, ece: bool, sack: &[(u64, u64)], now: Time, out: &mut Vec<Segment>) {
        if ack > self.snd_max {
            return; // acknowledges data never sent: ignore (RFC 9293 section 3.10.7.4)
        }
        self.cc.on_ack_start(ece, now);
        if let Some(r) = self.every_ack_rtt.as_mut() {
            // Before the ACK's processing, which restarts the timer with the RTO this gives.
            if let Some(sample) = r.on_ack(self.snd_una, ack, sack, self.snd_max, now) {
                self.rtt.sample(sample, ack.max(self.snd_una), self.snd_max);
                self.latest_rtt_sample = Some(sample);
            }
        }
        let frto = self.frto_before_ack(ack);
        let (una_before, cwnd_before, flight_before) = (self.snd_una, self.cwnd, self.flight_size());
        let tlp_outcome = if self.rack.is_some() {
            self.pto_restart |= ack > self.snd_una;
            self.tlp.on_ack(ack, ack == self.snd_una && sack.is_empty())
        } else {
            ProbeOutcome::Pending
        };
        let prior_in_flight = self.is_bbr().then(|| self.bbr_in_flight());
        if let Some(r) = self.rate.as_mut() {
            r.begin_ack();
        }
        if self.sack {
            self.on_sack_ack(ack, sack, cwnd_before, now, out);
        } else if ack > self.snd_una {
            self.on_new_ack(ack, now, out);
        } else if ack == self.snd_una && self.snd_una < self.snd_max {
            self.on_duplicate_ack(now, out);
        }
        // DCTCP's estimate (RFC 8257 section 3.3) sees every ACK before the reaction below.
        self.cc.on_ack_feedback(self.snd_una - una_before, ece, self.snd_una, self.snd_max, now);
        if ece {
            self.on_ecn_echo(cwnd_before, flight_before);
        }
        if tlp_outcome == ProbeOutcome::Repaired {
            self.on_tlp_repair();
        }
        if let Some(prior) = prior_in_flight {
            self.bbr_on_ack(una_before, sack, prior, now);
        } else {
            if self.rate.is_some() {
                // The estimator for the records alone (`rate_estimator`).
                self.rate_deliveries_on_ack(una_before, sack);
                if let Some(r) = self.rate.as_mut() {
                    r.finish_ack(now);
                }
            }
            if self.pacer.is_some() {
                self.update_pacing_rate();
            }
        }
        // After the ACK's own transmissions, as a writer woken by the room it freed writes
        // (`tcp_check_space` runs at the end of `tcp_ack`).
        if self.send_buffer.is_some() {
            self.refill_send_buffer();
        }
        if self.frto_after_ack(frto, now, out) {
            if self.rack.is_some() {
                self.arm_rack_timer(now);
            }
            return; // step 2b sent its (at most) two new segments and nothing else
        }
        self.send_available(now, out);
    }

    /// RFC 8985 section 7.4.2: a retransmitted probe repaired a loss; congestion control
    /// reduces the window once, as for a fast recovery that ended at once (Linux's
    /// `tcp_process_tlp_ack`: CWR entered and left). BBR sets its window itself.
    fn on_tlp_repair(&mut self) {
        self.stats.tlp_repairs += 1;
        self.end_hystart();
        if matches!(self.cc, Controller::Bbr(_) | Controller::Bbr3(_)) || self.in_recovery {
            return;
        }
        self.ssthresh = self.cc.on_congestion_event(self.cwnd, self.reduction_basis());
        self.cwnd = self.ssthresh.min(self.cwnd).max(self.mss);
    }

    /// RACK's steps on an ACK at a SACK sender, after the scoreboard took it: the newly
    /// delivered segments (`[una_before, snd_una)` and the blocks), then RACK_detect_loss.
    fn rack_on_ack(&mut self, una_before: u64, blocks: &[(u64, u64)], now: Time) {
        let (una, max) = (self.snd_una, self.snd_max);
        let Some(r) = self.rack.as_mut() else { return };
        r.on_delivered(una_before, una, now);
        for &(left, right) in blocks {
            r.on_delivered(left.max(una), right.min(max), now);
        }
        r.advance(una);
        // A retransmission found lost that has since been acknowledged needs no resend.
        let (board, mss) = (&self.board, self.mss);
        self.rack_lost_rxt.retain(|&s| s >= una && !board.covers(s, s + mss));
        self.rack_detect(now);
    }

    /// RFC 8985 section 6.2 steps 4-5: the reordering window, the segments lost, the reorder
    /// timer. Segments retransmitted in this recovery (below HighRxt) stay out of RACK's
    /// boundary (NextSeg (1) looks above HighRxt); in recovery, those whose retransmission is
    /// lost join `rack_lost_rxt` to be sent again.
    fn rack_detect(&mut self, now: Time) {
        let in_loss = self.in_recovery || self.snd_una <= self.recover;
        let sacked = self.board.bytes() / self.mss;
        let from = if self.in_recovery { self.high_rxt.max(self.snd_una) } else { self.snd_una };
        let Some(r) = self.rack.as_ref() else { return };
        let reo_wnd = r.reo_wnd(in_loss, sacked, self.rtt.srtt());
        let d = r.detect_loss(from, reo_wnd, now);
        let mut timer = d.timer;
        if self.in_recovery {
            let (relost, board, mss) = (&mut self.rack_lost_rxt, &self.board, self.mss);
            let mut newly = 0;
            let t = r.detect_lost_retransmissions(self.snd_una, from, reo_wnd, now, |seq| {
                if !board.covers(seq, seq + mss) && relost.insert(seq) {
                    newly += mss;
                }
            });
            self.newly_lost += newly;
            timer = timer.max(t);
        }
        if d.lost_until > from {
            self.rack_lost_until = self.rack_lost_until.max(d.lost_until);
        }
        self.reo_at = timer;
    }

    /// Arms RACK-TLP's timer ahead of the RTO: the reorder timer when a segment waits for its
    /// reordering window, else the PTO (RFC 8985 section 7.2: with data outstanding, outside
    /// fast and RTO recovery, nothing SACKed, no probe outstanding), restarted only after new
    /// data was sent or acknowledged.
    fn arm_rack_timer(&mut self, now: Time) {
        let restart = std::mem::take(&mut self.pto_restart);
        if self.snd_una >= self.snd_max {
            self.rack_timer = None;
            return;
        }
        if let Some(at) = self.reo_at {
            self.rack_timer = Some((at, RackTimer::Reorder));
            return;
        }
        let may_probe = !self.in_recovery && self.snd_una > self.recover && self.board.is_empty() && self.tlp.end_seq.is_none();
        if !may_probe {
            self.rack_timer = None;
            return;
        }
        if restart || !matches!(self.rack_timer, Some((_, RackTimer::Probe))) {
            let one_segment = self.flight_size() <= self.mss;
            let at = tlp::pto_deadline(now, self.rtt.srtt(), one_segment, self.rto_deadline);
            self.rack_timer = Some((at, RackTimer::Probe));
        }
    }

    /// RACK-TLP's timer fired at `now` (it was due no later than the RTO).
    fn on_rack_timer(&mut self, kind: RackTimer, now: Time, out: &mut Vec<Segment>) {
        self.rack_timer = None;
        match kind {
            RackTimer::Reorder => {
                // Section 6.2 step 5 / 6.3: look again; enter recovery if the head is lost.
                self.stats.rack_reorder_timeouts += 1;
                self.reo_at = None;
                self.rack_detect(now);
                if !self.in_recovery && self.snd_una > self.recover && self.is_lost(self.snd_una) {
                    let cwnd_before = self.cwnd;
                    let retransmitted = self.enter_sack_recovery(cwnd_before, now, out);
                    if self.prr.is_some() {
                        // No ACK: nothing newly delivered, so no safe one.
                        self.prr_on_recovery_start(0, cwnd_before, Ns3Ack::default(), retransmitted, false);
                    }
                }
                self.send_available(now, out);
            }
            RackTimer::Probe => {
                self.send_probe(now, out);
                self.arm_rack_timer(now);
            }
        }
    }

    /// RFC 8985 section 7.3 TLP_send_probe: new data if the receiver window and the
    /// application allow it, else the highest segment sent again; then the RTO restarts.
    fn send_probe(&mut self, now: Time, out: &mut Vec<Segment>) {
        self.stats.tlp_probes += 1;
        let new_data = self.snd_nxt == self.snd_max
            && self.snd_max + self.mss <= self.snd_una + self.rwnd
            && self.data_end.is_none_or(|end| self.snd_max < end);
        if new_data {
            let seq = self.snd_max;
            self.transmit(seq, false, now, out);
            self.snd_max += self.mss;
            self.snd_nxt = self.snd_max;
            // The probe sent, outside the send loops and at once, the segment a paced loop may
            // have been holding back, and took its room in the window: the pacing timer that
            // loop asked for is still due only if the window admits the next new segment (the
            // loop's own test with SND.NXT = SND.MAX). Without this a full window kept the
            // timer, which then woke a sender with nothing to send (issue 27, found by the TCP
            // fuzzer, `bbr+sack+rack`). Linux instead holds the probe itself back behind the
            // pacer (`tcp_write_xmit` stops at `tcp_pacing_check` before forcing the probe
            // past cwnd); this sender keeps RFC 8985 section 7.3's probe as it was.
            self.pacing_blocked &=
                self.snd_nxt + self.mss <= self.snd_una + self.cwnd.min(self.rwnd) && self.data_end.is_none_or(|end| self.snd_nxt < end);
        } else {
            // A retransmission of the last segment moves neither SND.NXT nor the window.
            let seq = self.snd_max - self.mss;
            self.transmit(seq, true, now, out);
        }
        self.pto_restart = false;
        self.tlp = Tlp { end_seq: Some(self.snd_max), is_retrans: !new_data };
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    /// RFC 5682 section 2.1 steps 2 and 3: classify an ACK (`ack <= snd_max`) that arrives
    /// while F-RTO runs, before the ordinary ACK processing. A "duplicate ACK" is one that does
    /// not advance SND.UNA (with SACK too: the basic algorithm ignores SACK blocks).
    fn frto_before_ack(&mut self, ack: u64) -> FrtoAction {
        let phase = std::mem::replace(&mut self.frto_phase, FrtoPhase::Idle);
        let new_data = ack > self.snd_una;
        match phase {
            FrtoPhase::Idle => FrtoAction::None,
            FrtoPhase::FirstAck => {
                let recover = self.frto_recover.unwrap_or(u64::MAX);
                if new_data && ack <= recover {
                    // (2b) the ACK advances the window and does not cover "recover".
                    FrtoAction::SendNew
                } else {
                    // (2a) a duplicate ACK, or one covering "recover": conventional RTO
                    // recovery (go-back-N is already set up by `on_timer`); no step 3.
                    FrtoAction::None
                }
            }
            FrtoPhase::SecondAck if new_data => FrtoAction::Spurious, // (3b)
            FrtoPhase::SecondAck => FrtoAction::Revert,               // (3a)
        }
    }

    /// Carries out F-RTO's decision after the ordinary ACK processing. Returns true when step
    /// 2b sent new segments, in which case nothing else is sent for this ACK.
    fn frto_after_ack(&mut self, action: FrtoAction, now: Time, out: &mut Vec<Segment>) -> bool {
        match action {
            FrtoAction::None => false,
            FrtoAction::SendNew => {
                // (2b) transmit up to two new (previously unsent) segments, whatever cwnd
                // allows (cwnd is 2 SMSS after the ACK; RFC 5682 sends them in place of
                // retransmissions). If no new data can be sent (receiver window, or the
                // application has none), stay in conventional RTO recovery and do not
                // enter step 3.
                let mut sent = 0;
                while sent < 2 && self.snd_max + self.mss <= self.snd_una + self.rwnd && self.data_end.is_none_or(|end| self.snd_max < end)
                {
                    let seq = self.snd_max;
                    self.transmit(seq, false, now, out);
                    self.snd_max += self.mss;
                    sent += 1;
                }
                if sent == 0 {
                    return false;
                }
                // No retransmissions of the rest of the window until step 3 decides.
                self.snd_nxt = self.snd_max;
                self.frto_phase = FrtoPhase::SecondAck;
                true
            }
            FrtoAction::Revert => {
                // (3a) a duplicate ACK: "set the congestion window to no more than 3 * MSS"
                // and retransmit the unacknowledged segments in slow start (go-back-N).
                self.cwnd = self.cwnd.min(3 * self.mss);
                self.snd_nxt = self.snd_una;
                false
            }
            FrtoAction::Spurious => {
                // (3b) the ACK acknowledges data that was not retransmitted: the timeout was
                // spurious. Set "recover" to SND.UNA (the NewReno guard to just below it, so
                // that three duplicate ACKs for SND.UNA may start a fast retransmit again).
                self.stats.spurious_timeouts += 1;
                self.frto_recover = Some(self.snd_una);
                self.recover = self.snd_una - 1;
                // Response (RFC 5682 section 4, the conservative response when no specific
                // algorithm such as RFC 4015's Eifel response is used): keep the ssthresh
                // the timeout set (half the FlightSize then), set cwnd = ssthresh so the
                // sender continues in congestion avoidance, and send new data, not the
                // rest of the window again (no go-back-N). The RTO backoff is cleared by the
                // next RTT sample (RFC 6298 section 5.7), taken from the new segments.
                match &mut self.cc {
                    Controller::Bbr(b) => b.on_spurious_timeout(), // BBR keeps its own window (Linux bbr_undo_cwnd)
                    Controller::Bbr3(b) => b.on_spurious_loss(),   // draft-ietf-ccwg-bbr section 5.5.11.2
                    _ => self.cwnd = self.ssthresh,
                }
                self.snd_nxt = self.snd_max;
                false
            }
        }
    }

    fn take_rtt_sample(&mut self, ack: u64, now: Time) {
        if self.every_ack_rtt.is_some() {
            return; // sampled in `on_ack_sack` instead
        }
        if let Some((end, sent)) = self.timing {
            if ack >= end {
                self.rtt.sample(now - sent, ack, self.snd_max);
                self.latest_rtt_sample = Some(now - sent);
                self.timing = None;
            }
        }
    }

    /// The receive window the sender holds (the fixed `rwnd`, or the latest ACK's with
    /// `rwnd_autotuning`): `flow_samples.snd_wnd_bytes`, Linux's tcpi_snd_wnd.
    pub fn peer_window(&self) -> u64 {
        self.rwnd
    }

    /// The RTT sample the last ACK gave, if any, once (for an autotuning receiver's RTT,
    /// `receive_window.rs`).
    pub fn take_latest_rtt_sample(&mut self) -> Option<Time> {
        self.latest_rtt_sample.take()
    }

    /// The window the ACK `ack` advertised (`TcpConfig::rwnd_autotuning`), given before the ACK
    /// is processed, as `tcp_ack` updates snd_wnd first. As `tcp_may_update_window` (one-way
    /// data): an ACK that advances SND.UNA sets it, one that does not may only widen it, so an
    /// older ACK that arrives late cannot shrink it.
    pub fn set_peer_window(&mut self, ack: u64, window: u64) {
        if ack > self.snd_una || (ack == self.snd_una && window > self.rwnd) {
            self.rwnd = window;
        }
    }

    fn on_new_ack(&mut self, ack: u64, now: Time, out: &mut Vec<Segment>) {
        self.take_rtt_sample(ack, now);
        let acked = ack - self.snd_una;
        self.snd_una = ack;
        if self.snd_nxt < self.snd_una {
            self.snd_nxt = self.snd_una; // after a go-back-N timeout the receiver had more
        }
        if self.in_recovery {
            if ack > self.recover {
                self.exit_recovery();
            } else {
                self.on_partial_ack(acked, now, out);
                return;
            }
        } else {
            self.dupacks = 0;
            self.grow_window(acked, now);
        }
        self.restart_timer(now);
    }

    /// Slow start or congestion avoidance by the controller ([`cc`]), capped by the receiver
    /// window.
    /// In the initial slow start with HyStart++ on, [`hystart`] grows cwnd instead of the
    /// controller, and sets ssthresh = cwnd when its Conservative Slow Start ends.
    #[inline(always)]
    fn grow_window(&mut self, acked: u64, now: Time) {
        if let Some(h) = self.cubic_hystart.as_mut() {
            let in_slow_start = self.cwnd < self.ssthresh;
            if h.on_ack(self.snd_una, self.cwnd, self.snd_max, in_slow_start, now).is_some() {
                // tcp_cubic.c's hystart_update: snd_ssthresh = cwnd, in `pkts_acked`, before the
                // growth of this ACK, which is then congestion avoidance's.
                self.ssthresh = self.cwnd;
            }
        }
        if self.cwnd_usage.as_ref().is_some_and(|u| !u.allows_growth(self.cwnd, self.ssthresh)) {
            return; // a window the sender does not use does not grow (Linux's tcp_is_cwnd_limited)
        }
        let slow_start = self.cwnd < self.ssthresh;
        if let Some(h) = self.hystart.as_mut().filter(|h| slow_start && h.active()) {
            let step = h.on_ack(self.snd_una, acked, self.snd_max, now);
            self.cwnd = (self.cwnd + step.increase).min(self.rwnd.max(self.mss));
            if step.enter_congestion_avoidance {
                // RFC 9406 section 4.2: ssthresh = cwnd.
                self.ssthresh = self.cwnd;
            }
            return;
        }
        self.cwnd = self.cc.on_ack(self.cwnd, self.ssthresh, acked, self.rtt.srtt(), now);
        self.cwnd = self.cwnd.min(self.rwnd.max(self.mss));
    }

    /// RFC 6582 section 3.2 step 3, full acknowledgment: deflate to
    /// min(ssthresh, max(FlightSize, SMSS) + SMSS).
    fn exit_recovery(&mut self) {
        self.in_recovery = false;
        self.dupacks = 0;
        self.cwnd = self.ssthresh.min(self.flight_size().max(self.mss) + self.mss);
    }

    /// RFC 6582 section 3.2 step 4, partial acknowledgment: retransmit the first unacked
    /// segment, deflate cwnd by the newly acked amount and add back one SMSS if at least one
    /// SMSS was acked; restart the timer on the first partial ACK only.
    fn on_partial_ack(&mut self, acked: u64, now: Time, out: &mut Vec<Segment>) {
        self.newly_lost += self.mss;
        let seq = self.snd_una;
        self.transmit(seq, true, now, out);
        self.cwnd = self.cwnd.saturating_sub(acked);
        if acked >= self.mss {
            self.cwnd += self.mss;
        }
        self.cwnd = self.cwnd.max(self.mss);
        if !self.partial_ack_seen {
            self.partial_ack_seen = true;
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    fn on_duplicate_ack(&mut self, now: Time, out: &mut Vec<Segment>) {
        self.dupacks += 1;
        if self.in_recovery {
            // RFC 5681 section 3.2 step 4: inflate by one SMSS per additional duplicate.
            self.cwnd += self.mss;
        } else if self.dupacks == 3 && self.snd_una > self.recover {
            // RFC 6582 section 3.2 step 1: only when the ACK covers more than `recover`, so
            // that duplicates caused by a timeout's retransmissions do not start a recovery.
            self.enter_fast_recovery(now, out);
        } else {
            self.send_limited_transmit(now, out);
        }
    }

    /// RFC 3042 section 2: on the first or second duplicate ACK outside recovery, one new
    /// segment beyond cwnd (see [`limited_transmit::allows`]). Not while a timeout's go-back-N
    /// still has segments to resend (they come first).
    fn send_limited_transmit(&mut self, now: Time, out: &mut Vec<Segment>) {
        if !self.limited_transmit || self.in_recovery || self.snd_nxt != self.snd_max {
            return;
        }
        if limited_transmit::allows(self.dupacks, self.snd_una, self.snd_max, self.cwnd, self.rwnd, self.mss, self.data_end) {
            let seq = self.snd_max;
            self.transmit(seq, false, now, out);
            self.snd_max += self.mss;
            self.snd_nxt = self.snd_max;
        }
    }

    /// RFC 5681 section 3.2 steps 2-3 with RFC 6582's `recover`.
    fn enter_fast_recovery(&mut self, now: Time, out: &mut Vec<Segment>) {
        self.stats.fast_retransmits += 1;
        self.end_hystart();
        self.newly_lost += self.mss;
        self.ssthresh = self.cc.on_congestion_event(self.cwnd, self.flight_size());
        self.recover = self.snd_max - 1;
        self.in_recovery = true;
        self.partial_ack_seen = false;
        let seq = self.snd_una;
        self.transmit(seq, true, now, out);
        self.cwnd = self.ssthresh + 3 * self.mss;
    }

    /// An ACK at a SACK sender (RFC 6675 section 5). `ack <= snd_max`.
    /// `cwnd_at_ack`: the window before this ACK grew it, for a recovery it starts.
    fn on_sack_ack(&mut self, ack: u64, blocks: &[(u64, u64)], cwnd_at_ack: u64, now: Time, out: &mut Vec<Segment>) {
        // RFC 6937's DeliveredData is measured from here (only with PRR).
        let before = self.prr.is_some().then(|| (self.snd_una, self.board.bytes()));
        let before_una = self.snd_una;
        // What was marked lost before this ACK, for Linux's PRR's safe-ACK test.
        let lost_before = (self.prr.is_some() && !self.prr_ns3).then(|| self.lost_mark_now());
        if ack > self.snd_una {
            self.take_rtt_sample(ack, now);
            let acked = ack - self.snd_una;
            self.snd_una = ack;
            self.snd_nxt = self.snd_nxt.max(ack);
            self.board.remove_below(ack);
            // "If the incoming ACK is a cumulative acknowledgment, the TCP MUST reset DupAcks".
            self.dupacks = 0;
            if self.in_recovery {
                if ack > self.recover {
                    // (A): a cumulative ACK beyond RecoveryPoint ends recovery; cwnd stays at
                    // ssthresh, the scoreboard above HighACK is kept.
                    self.in_recovery = false;
                    self.snd_nxt = self.snd_max;
                    self.rack_lost_rxt.clear();
                    if self.prr.is_some() {
                        // RFC 6937 section 3: at the end of recovery cwnd = ssthresh (Linux's
                        // `tcp_end_cwnd_reduction`).
                        self.cwnd = self.ssthresh;
                    }
                }
            } else {
                self.grow_window(acked, now);
            }
            // RFC 6298 (5.2)/(5.3) on every ACK of new data, in recovery too.
            self.restart_timer(now);
        }
        // Update(): SACK information is advisory; only blocks between HighACK and HighData
        // count (D-SACK and bogus blocks are clipped away).
        let mut newly_sacked = 0;
        for &(left, right) in blocks {
            newly_sacked += self.board.insert(left.max(self.snd_una), right.min(self.snd_max));
        }
        // (B): in recovery the new SACK information only changes the pipe, recomputed when
        // sending. Outside recovery an ACK that SACKs new data is a duplicate ACK (RFC 6675
        // section 2), whether or not it also advanced the cumulative ACK.
        if self.rack.is_some() {
            self.rack_on_ack(before_una, blocks, now);
        }
        let delivered = before.map(|b| self.delivered_data(b));
        // How ns-3's socket would classify this ACK for its PRR (used with `prr_ns3` only).
        let (advanced, mss) = (ack > before_una, self.mss);
        // Linux's PRR: an ACK that advanced SND.UNA and marked nothing lost (`Prr::sndcnt`).
        let safe_ack = advanced && lost_before.is_some_and(|b| !self.marked_lost_since(b));
        let ns3_ack = move |delivered: u64, retransmission_acked: bool| Ns3Ack {
            duplicate: newly_sacked > 0,
            partial: advanced && delivered >= mss,
            retransmission_acked,
        };
        if self.in_recovery {
            if let Some(d) = delivered {
                // A hole below HighRxt that this ACK fills was retransmitted (RFC 6675's
                // NextSeg retransmits lost segments in order up to HighRxt).
                let rxt_acked = advanced && before_una < self.high_rxt;
                self.prr_on_ack(d, ns3_ack(d, rxt_acked), safe_ack);
            }
            return;
        }
        // With RACK a cumulative ACK may show the new head lost without SACKing anything new.
        let rack_loss = self.rack.is_some() && self.is_lost(self.snd_una);
        if (newly_sacked == 0 && !rack_loss) || self.snd_una >= self.snd_max {
            return;
        }
        if newly_sacked > 0 {
            self.dupacks += 1;
        }
        // (2)/(3): DupThresh duplicates, or IsLost(HighACK + 1). Not before a timeout's
        // RecoveryPoint is acknowledged (RFC 6675 section 5.1; RFC 6582's `recover` guard).
        let loss = self.dupacks as u64 >= DUP_THRESH || self.is_lost(self.snd_una);
        if loss && self.snd_una > self.recover {
            let cwnd_before = self.cwnd;
            let retransmitted = self.enter_sack_recovery(cwnd_at_ack, now, out);
            if let Some(d) = delivered {
                // ns-3 sets m_isRetransDataAcked only for an ACK that arrives in recovery.
                self.prr_on_recovery_start(d, cwnd_before, ns3_ack(d, false), retransmitted, safe_ack);
            }
        } else {
            self.send_limited_transmit(now, out);
        }
    }

    /// Where the sender's loss marks stand (for [`Self::marked_lost_since`]): the IsLost boundary
    /// (at least SND.UNA) and `newly_lost`, which grows by the bytes of each retransmission RACK
    /// finds lost (with SACK nothing else adds to it).
    fn lost_mark_now(&self) -> (u64, u64) {
        (self.lost_boundary().max(self.snd_una), self.newly_lost)
    }

    /// Whether an un-SACKed segment was marked lost since [`Self::lost_mark_now`] gave the pair:
    /// the IsLost boundary passed one, or RACK found a retransmission lost (Linux's `newly_lost`
    /// of the ACK, `rs->losses`).
    fn marked_lost_since(&self, (boundary_before, relost_before): (u64, u64)) -> bool {
        let from = boundary_before.max(self.snd_una);
        let boundary = self.lost_boundary();
        self.newly_lost > relost_before || (boundary > from && self.board.uncovered_in(from, boundary) > 0)
    }

    /// RFC 6937's DeliveredData of the ACK just processed: the change in snd.una plus the
    /// change in SACKed bytes (negative when the cumulative ACK covers SACKed data).
    fn delivered_data(&self, (una_before, sacked_before): (u64, u64)) -> u64 {
        (self.snd_una - una_before + self.board.bytes()).saturating_sub(sacked_before)
    }

    /// RFC 6937 section 3, on an ACK in recovery: cwnd = pipe + sndcnt, which RFC 6675's
    /// NextSeg loop (`send_in_sack_recovery`) then spends.
    /// With `prr_ns3`, ns-3 3.44's rules instead ([`Prr::ns3_on_ack`], `ack` its view of the
    /// ACK).
    fn prr_on_ack(&mut self, delivered: u64, ack: Ns3Ack, safe_ack: bool) {
        let pipe = self.pipe();
        let (ssthresh, mss) = (self.ssthresh, self.mss);
        let Some(p) = self.prr.as_mut() else { return };
        let sndcnt = if self.prr_ns3 {
            p.ns3_on_ack(delivered, ack, pipe, ssthresh, mss)
        } else {
            p.on_ack(delivered);
            Some(p.sndcnt(delivered, pipe, ssthresh, mss, safe_ack))
        };
        if let Some(sndcnt) = sndcnt {
            self.cwnd = (pipe + sndcnt).max(self.mss);
        }
    }

    /// PRR on the ACK that started recovery: RecoverFS is the cwnd before the reduction
    /// (`cwnd_before`, see [`Prr::start`]); the fast retransmission `enter_sack_recovery` sent
    /// is part of this ACK's sndcnt, and at least it goes out (Linux's `tcp_cwnd_reduction`
    /// forces it when prr_out is 0).
    ///
    /// With `prr_ns3`, ns-3 3.44's `EnterRecovery`: RecoverFS is the pipe before the fast
    /// retransmission, its first `DoRecovery` runs before the retransmission is counted in
    /// prr_out, and an entering ACK that also advanced snd.una gets the partial-ACK call too,
    /// on the same pipe (ns-3's `m_bytesInFlight` is not recomputed in between). Where ns-3's
    /// calls leave cwnd alone (no DeliveredData: only after RACK's reorder timer, which ns-3
    /// lacks), cwnd stays the ssthresh `enter_sack_recovery` set.
    ///
    /// `retransmitted`: whether `enter_sack_recovery` sent the fast retransmission (it does not
    /// while the last recovery's is in flight); without it nothing has gone out yet, and the
    /// forced segment is the first that NextSeg picks.
    fn prr_on_recovery_start(&mut self, delivered: u64, cwnd_before: u64, ack: Ns3Ack, retransmitted: bool, safe_ack: bool) {
        // pipe before the fast retransmission: it added one SMSS (HighRxt moved past it).
        let pipe = if retransmitted { self.pipe().saturating_sub(self.mss) } else { self.pipe() };
        if self.prr_ns3 {
            let mut p = Prr::start(pipe);
            let sndcnt = p.ns3_on_ack(delivered, ack, pipe, self.ssthresh, self.mss);
            if retransmitted {
                p.on_sent(self.mss);
            }
            self.prr = Some(p);
            if let Some(sndcnt) = sndcnt {
                self.cwnd = (pipe + sndcnt).max(self.mss);
            }
            return;
        }
        let mut p = Prr::start(cwnd_before);
        if retransmitted {
            p.on_sent(self.mss);
        }
        p.on_ack(delivered);
        let sndcnt = p.sndcnt(delivered, pipe, self.ssthresh, self.mss, safe_ack).max(self.mss);
        self.prr = Some(p);
        self.cwnd = (pipe + sndcnt).max(self.mss);
    }

    /// RFC 6675 section 5 step (4): RecoveryPoint = HighData, ssthresh = cwnd = the controller's
    /// reduction (NewReno: FlightSize / 2, RFC 5681 equation (4), at least 2 SMSS; or the pipe
    /// / 2 with `ssthresh_basis = pipe`, as ns-3 3.44's `EnterRecovery`, the pipe taken before
    /// the retransmission; or cwnd / 2 with `ssthresh_basis = cwnd`, as Linux's
    /// `tcp_reno_ssthresh`, of `window_before`: the window before the ACK that starts the
    /// recovery grew it, as Linux enters recovery before that ACK's growth, `tcp_fastretrans_alert`
    /// running before `tcp_cong_control`), retransmit the segment at HighACK + 1 and set HighRxt
    /// and RescueRxt to its end. Step (C) follows in `send_available`. Returns whether it sent
    /// that retransmission: with RACK, not while the last recovery's retransmission of HighACK + 1
    /// is in flight ([`rxt_in_flight`]).
    fn enter_sack_recovery(&mut self, window_before: u64, now: Time, out: &mut Vec<Segment>) -> bool {
        self.stats.fast_retransmits += 1;
        self.end_hystart();
        self.recover = self.snd_max - 1;
        let outstanding = match self.ssthresh_basis {
            SsthreshBasis::FlightSize => self.flight_size(),
            SsthreshBasis::Pipe => self.pipe(),
            SsthreshBasis::Cwnd => window_before.min(self.cwnd),
        };
        self.ssthresh = self.cc.on_congestion_event(self.cwnd, self.window_basis(outstanding));
        self.cwnd = self.ssthresh;
        self.in_recovery = true;
        if rxt_in_flight::keeps_last_recovery_retransmissions(self.rack.is_some(), self.high_rxt, self.snd_una) {
            // HighRxt stays where the last recovery left it; RACK now judges those
            // retransmissions by their own send times, and NextSeg resends the ones it finds lost.
            self.rescue_rxt = self.snd_una + self.mss;
            self.rack_detect(now);
            return false;
        }
        let seq = self.snd_una;
        self.transmit(seq, true, now, out);
        self.high_rxt = seq + self.mss;
        self.rescue_rxt = seq + self.mss;
        true
    }

    /// RFC 6675 section 5 steps (B.2) and (C): while cwnd - pipe >= 1 SMSS, send NextSeg().
    fn send_in_sack_recovery(&mut self, now: Time, out: &mut Vec<Segment>) {
        let mut pipe = self.pipe();
        while self.cwnd >= pipe + self.mss {
            let Some(next) = self.next_seg() else { break };
            if !self.pacing_allows(now) {
                break;
            }
            match next {
                NextSeg::Lost(seq) | NextSeg::Unsacked(seq) => {
                    // (C.2)
                    self.transmit(seq, true, now, out);
                    self.high_rxt = seq + self.mss;
                }
                NextSeg::New => {
                    // (C.3)
                    let seq = self.snd_max;
                    self.transmit(seq, false, now, out);
                    self.snd_max += self.mss;
                    self.snd_nxt = self.snd_max;
                }
                NextSeg::Rescue(seq) => {
                    // NextSeg (4): HighRxt unchanged, RescueRxt = RecoveryPoint.
                    self.transmit(seq, true, now, out);
                    self.rescue_rxt = self.recover + 1;
                }
                NextSeg::LostRetransmission(seq) => {
                    // Below HighRxt, which stays.
                    self.rack_lost_rxt.remove(&seq);
                    self.transmit(seq, true, now, out);
                }
            }
            // (C.4)
            pipe += self.mss;
        }
    }

    /// RFC 6675 section 4 NextSeg(), rules (1) to (4).
    fn next_seg(&self) -> Option<NextSeg> {
        let una = self.snd_una;
        // Before rule (1): a retransmission RACK found lost, lowest first (RFC 8985 section 6.2
        // step 5; Linux's `tcp_xmit_retransmit_queue` resends lost segments in sequence order).
        if let Some(&seq) = self.rack_lost_rxt.first() {
            return Some(NextSeg::LostRetransmission(seq));
        }
        // The smallest un-SACKed sequence number above HighRxt (segments are SMSS-aligned).
        let s = self.board.next_uncovered(self.high_rxt.max(una));
        if s < self.lost_boundary() {
            return Some(NextSeg::Lost(s)); // (1.a)-(1.c); the boundary is below the SACKed top
        }
        let rwnd_allows = self.snd_max + self.mss <= una + self.rwnd;
        if rwnd_allows && self.data_end.is_none_or(|end| self.snd_max < end) {
            return Some(NextSeg::New); // (2)
        }
        if s < self.board.end() {
            return Some(NextSeg::Unsacked(s)); // (3)
        }
        if una > self.rescue_rxt && una < self.snd_max {
            // (4): one segment holding the highest outstanding un-SACKed byte.
            let b = self.board.prev_uncovered(self.snd_max);
            return Some(NextSeg::Rescue(una + (b - una) / self.mss * self.mss));
        }
        None
    }

    /// RFC 3168 section 6.1.2: react to ECN-Echo at most once per window of data.
    /// `cwnd_before` is the window before this ACK's growth (DCTCP reduces from it);
    /// `flight_before` the data outstanding when the ACK arrived. The reduction is of the data
    /// the marks were about: a segment this same ACK released (Limited Transmit's, on a
    /// duplicate ACK) is not counted, or ssthresh could land above the window before it (found
    /// by the TCP fuzzer at 10^6 segments, cubic+lt+ecn: 0.7 x 3 segments against a window of 2).
    fn on_ecn_echo(&mut self, cwnd_before: u64, flight_before: u64) {
        if !self.ecn || self.in_recovery || self.snd_una <= self.ecn_recover {
            return;
        }
        // Prague with RTT independence may skip a reduction (at most one per target RTT); the
        // round trip's ECN-Echo is still answered (Linux stays in CWR without reducing).
        let basis = self.reduction_basis().min(flight_before);
        let Some(ssthresh) = self.cc.on_ecn_echo(self.cwnd, cwnd_before, basis) else {
            self.ecn_recover = self.snd_max;
            return;
        };
        self.stats.ecn_reductions += 1;
        self.end_hystart();
        self.ssthresh = ssthresh;
        // The section's response "halves the congestion window": it never raises it. After a
        // timeout (cwnd of one segment, FlightSize still the go-back-N's) the reduced
        // FlightSize is above cwnd, and the sender stays in slow start below the new ssthresh
        // (found by the TCP fuzzer, `tcp::fuzz`).
        self.cwnd = self.ssthresh.min(self.cwnd);
        self.ecn_recover = self.snd_max;
    }

    /// Whether this sender reduces the window in use rather than FlightSize: CUBIC with SACK.
    /// With SACK, FlightSize (HighData - HighACK) also counts the bytes the receiver SACKed and
    /// the new data RFC 6675's NextSeg (2) sent while a lost retransmission held HighACK, up to
    /// three times cwnd; reducing it set ssthresh above the window in use, and CUBIC's next
    /// slow start overshot the path and stalled again (issue 27). RFC 9438 section 4.6 allows
    /// cwnd in place of flight_size, and Linux reduces cwnd (`bictcp_recalc_ssthresh`).
    /// NewReno keeps RFC 5681's equation (4) on FlightSize, SACK or not: the head-to-head
    /// reproduction (NewReno with SACK) depends on it.
    fn reduces_window_in_use(&self) -> bool {
        self.sack && matches!(self.cc, Controller::Cubic(_))
    }

    /// The bytes a reduction (fast retransmit, ECN-Echo, timeout) starts from: FlightSize, or
    /// at most cwnd where [`Self::reduces_window_in_use`].
    fn reduction_basis(&self) -> u64 {
        self.window_basis(self.flight_size())
    }

    /// `outstanding` (FlightSize or the pipe), at most cwnd where [`Self::reduces_window_in_use`].
    fn window_basis(&self, outstanding: u64) -> u64 {
        if self.reduces_window_in_use() {
            outstanding.min(self.cwnd)
        } else {
            outstanding
        }
    }

    /// Handles the retransmission timer if it has expired at `now` (RFC 6298 section 5.4-5.6,
    /// ssthresh from the controller (RFC 5681 (4) for NewReno, RFC 9438 section 4.8 for CUBIC)
    /// and section 3.1's loss window of one segment).
    ///
    /// Where [`Self::reduces_window_in_use`] (CUBIC with SACK), a timeout while the data of a
    /// loss is still unacknowledged (in RFC 6675 recovery, or in the go-back-N of an earlier
    /// timeout: HighACK <= RecoveryPoint) keeps ssthresh: the reduction for that window was
    /// made when the loss was detected (Linux's `tcp_enter_loss`: "reduce ssthresh if it has
    /// not yet been made inside this window"; RFC 5681 section 3.1 requires one only when the
    /// segment "has not yet been resent by way of the retransmission timer"). Otherwise it
    /// reduces [`Self::reduction_basis`]. Every other sender reduces FlightSize at every
    /// timeout, as before.
    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Segment>) {
        if let Some((at, kind)) = self.rack_timer {
            if at <= now && self.rto_deadline.is_none_or(|r| at <= r) {
                self.on_rack_timer(kind, now, out);
                return;
            }
        }
        match self.rto_deadline {
            Some(d) if d <= now => {}
            _ => return,
        }
        self.stats.timeouts += 1;
        self.end_hystart();
        if let Some(h) = self.cubic_hystart.as_mut() {
            // cubictcp_state(TCP_CA_Loss): HyStart starts over; its round ends at SND.NXT, which
            // in Linux is still the highest sequence sent.
            h.on_timeout(self.snd_max, now);
        }
        // The controller hears of every timeout (CUBIC's next stage starts with K = 0).
        let reduced = self.cc.on_timeout(self.reduction_basis());
        if let Controller::Bbr(b) = &mut self.cc {
            // tcp_enter_loss marks every segment not SACKed lost, then bbr_set_state hands
            // the policer detection a lossy round (before the scoreboard is forgotten below).
            b.on_timeout_marked_lost(self.board.uncovered_in(self.snd_una, self.snd_max));
        }
        let reduction_made = self.reduces_window_in_use() && self.snd_una <= self.recover;
        if !reduction_made {
            self.ssthresh = reduced;
        }
        self.cwnd = self.mss;
        self.rtt.back_off();
        self.recover = self.snd_max - 1; // RFC 6582 section 3.2 step 1's guard after a timeout
        self.in_recovery = false;
        self.dupacks = 0;
        self.timing = None;
        self.snd_nxt = self.snd_una; // go-back-N
                                     // SACK: the scoreboard is advisory and forgotten after a timeout (RFC 2018 section 8,
                                     // RFC 6675 section 5.1): everything not cumulatively acked is presumed lost.
        self.board.clear();
        self.rto_deadline = None;
        self.lost_mark = 0;
        if let Some(r) = self.rate.as_mut() {
            r.on_timeout();
        }
        if let Some(r) = self.rack.as_mut() {
            r.on_timeout();
            self.rack_lost_until = 0;
            self.rack_lost_rxt.clear();
            self.reo_at = None;
            self.rack_timer = None;
            self.tlp = Tlp::default();
        }
        // The timeout's retransmission leaves at once, whatever the pacer says.
        self.pacing_free = 1;
        if self.frto {
            // RFC 5682 section 2.1 step 1: retransmit the first unacknowledged segment (below)
            // and store the highest sequence number sent in "recover". If the sender is
            // already in RTO recovery ("recover" >= SND.UNA: an earlier timeout's data is not
            // all acknowledged, e.g. the timer backed off), do not enter step 2.
            let in_rto_recovery = self.frto_recover.is_some_and(|r| r >= self.snd_una);
            self.frto_phase = if in_rto_recovery { FrtoPhase::Idle } else { FrtoPhase::FirstAck };
            self.frto_recover = Some(self.snd_max - 1);
        }
        self.send_window(now, out);
        self.pacing_free = 0;
        self.rto_deadline = Some(now + self.rtt.rto());
        if self.rack.is_some() {
            self.arm_rack_timer(now);
        }
    }

    /// Linux's `tcp_update_pacing_rate` after an ACK, for a paced controller other than BBR.
    fn update_pacing_rate(&mut self) {
        let rate = match &self.cc {
            Controller::Prague(p) => p.pacing_rate(self.cwnd, self.ssthresh, self.rtt.srtt()),
            _ => Pacer::linux_default_rate(self.cwnd, self.ssthresh, self.flight_size(), self.rtt.srtt()),
        };
        self.set_pacing_rate(rate);
    }

    /// The pacer's rate (payload bytes per second) and, with `tso_autosize`, its burst limit:
    /// the segments of one Linux skb at that rate (`tcp_tso_segs`, [`tso`]), with BBR's floor
    /// for BBR and BBRv3 (`bbr_min_tso_segs`) and net.ipv4.tcp_min_tso_segs for the others.
    fn set_pacing_rate(&mut self, rate: u64) {
        let tso = self.tso_autosize.then(|| {
            let floor = match &self.cc {
                Controller::Bbr(_) | Controller::Bbr3(_) => tso::bbr_min_segments(rate),
                _ => tso::MIN_TSO_SEGS,
            };
            tso::autosize_segments(rate, self.mss, self.min_rtt(), floor)
        });
        if let Some(p) = self.pacer.as_mut() {
            p.set_rate(rate);
            if let Some(segments) = tso {
                p.set_burst_limit(segments);
            }
        }
    }

    /// The smallest RTT the sender has measured (its delivery-rate estimator's, else RACK's);
    /// None without either or before a sample.
    fn min_rtt(&self) -> Option<Time> {
        self.rate.as_ref().and_then(DeliveryRate::min_rtt).or_else(|| self.rack.as_ref().and_then(|r| r.min_rtt()))
    }

    /// The delivery-rate estimator's snapshot of a segment sent (with BBR or `rate_estimator`;
    /// out of line so that `transmit` stays small enough to inline into the send loops of the
    /// senders without it).
    #[inline(never)]
    fn rate_on_sent(&mut self, seq: u64, now: Time) {
        // P.tx_in_flight for BBRv3 (this segment included); v1 does not read it.
        let tx_in_flight = if matches!(self.cc, Controller::Bbr3(_)) { self.bbr_in_flight() + self.mss } else { 0 };
        let nothing_in_flight = self.snd_una >= self.snd_max;
        if let Some(r) = self.rate.as_mut() {
            r.on_sent(seq, now, nothing_in_flight, tx_in_flight);
        }
    }

    /// BBR's view of the sender's loss state (Linux's `icsk_ca_state`): fast recovery, or a
    /// timeout's loss state until what was outstanding at the timeout is acknowledged.
    fn ca_state(&self) -> CaState {
        if self.in_recovery {
            CaState::Recovery
        } else if self.snd_una <= self.recover {
            CaState::Loss
        } else {
            CaState::Open
        }
    }

    /// The delivery rate this sender reports, bits per second, as Linux's tcpi_delivery_rate
    /// ([`DeliveryRate::reported_rate_bps`]); 0 before the first valid sample and when the
    /// sender runs no estimator (neither BBR nor `rate_estimator`).
    pub fn delivery_rate_bps(&self) -> u64 {
        self.rate.as_ref().map_or(0, DeliveryRate::reported_rate_bps)
    }

    /// The pacing rate this sender reports, payload bits per second, as Linux's
    /// tcpi_pacing_rate x 8; 0 without pacing (and before a paced sender's first rate).
    pub fn pacing_rate_bps(&self) -> u64 {
        self.pacer.as_ref().map_or(0, |p| if p.rate() == u64::MAX { 0 } else { p.rate().saturating_mul(8) })
    }

    /// BBR's pacing gain (either variant), as Linux's TCP_CC_INFO reports it; 0 for the other
    /// controllers, which have none.
    pub fn bbr_pacing_gain(&self) -> f64 {
        match &self.cc {
            Controller::Bbr(b) => b.pacing_gain(),
            Controller::Bbr3(b) => b.pacing_gain(),
            _ => 0.0,
        }
    }

    /// Linux's `tcp_packets_in_flight` in bytes: with SACK, RFC 6675's pipe (after a timeout,
    /// what go-back-N has resent and is not SACKed); without SACK, the outstanding data less
    /// what duplicate ACKs reported (Linux's Reno SACK emulation).
    fn bbr_in_flight(&self) -> u64 {
        if self.ca_state() == CaState::Loss {
            return self.board.uncovered_in(self.snd_una, self.snd_nxt.max(self.snd_una));
        }
        if self.sack {
            return self.pipe();
        }
        let reno_sacked = self.rate.as_ref().map_or(0, DeliveryRate::reno_sacked);
        self.flight_size().saturating_sub(reno_sacked)
    }

    /// Bytes newly marked lost since the last ACK step: with SACK, the un-SACKed bytes the
    /// IsLost boundary newly passed; without, the head segments fast retransmit and partial
    /// ACKs retransmitted.
    fn take_newly_lost(&mut self) -> u64 {
        let mut lost = std::mem::take(&mut self.newly_lost);
        if self.sack && self.ca_state() != CaState::Loss {
            let boundary = self.lost_boundary().max(self.snd_una);
            let from = self.lost_mark.max(self.snd_una);
            if boundary > from {
                // `newly_lost` holds only RACK's lost retransmissions here (the SACK paths add
                // nothing else to it).
                lost += self.board.uncovered_in(from, boundary);
            }
            self.lost_mark = self.lost_mark.max(boundary);
        }
        lost
    }

    /// Whether the controller is BBR or BBRv3 (which steer by the delivery-rate estimator;
    /// other controllers run it only for the records, `rate_estimator`).
    fn is_bbr(&self) -> bool {
        matches!(self.cc, Controller::Bbr(_) | Controller::Bbr3(_))
    }

    /// The estimator's deliveries of this ACK (`una_before`: SND.UNA before it; `sack`: its
    /// blocks): cumulatively acknowledged, SACKed, or, without SACK, one segment per duplicate ACK.
    fn rate_deliveries_on_ack(&mut self, una_before: u64, sack: &[(u64, u64)]) {
        let (una, max, flight, sack_on) = (self.snd_una, self.snd_max, self.flight_size(), self.sack);
        let Some(r) = self.rate.as_mut() else { return };
        if una > una_before {
            r.on_cumulative_ack(una);
        }
        if sack_on {
            for &(left, right) in sack {
                r.on_sacked(left.max(una), right.min(max));
            }
        } else if una == una_before && una < max {
            r.on_duplicate_ack(flight);
        }
    }

    /// BBR's step after an ACK (Linux's `tcp_cong_control` with `bbr_main`): the delivery-rate
    /// sample of this ACK (`una_before`: SND.UNA before it; `sack`: its blocks), then BBR's
    /// model, cwnd and pacing rate. cwnd is BBR's window on the data in flight; the send loops
    /// count what is outstanding (SND.NXT - SND.UNA, or RFC 6675's pipe in SACK recovery), so
    /// cwnd here is BBR's plus what they count that is not in flight (SACKed, or reported by
    /// duplicate ACKs), capped by the receiver window outside recovery.
    fn bbr_on_ack(&mut self, una_before: u64, sack: &[(u64, u64)], prior_in_flight: u64, now: Time) {
        self.rate_deliveries_on_ack(una_before, sack);
        let losses = self.take_newly_lost();
        let Some(r) = self.rate.as_mut() else { return };
        r.on_lost(losses);
        let rs = r.finish_ack(now);
        let delivered = r.delivered();
        let in_flight = self.bbr_in_flight();
        let input = AckInput {
            now,
            rate: rs.rate(),
            prior_delivered: rs.prior_delivered,
            is_app_limited: rs.is_app_limited,
            rtt: rs.rtt,
            acked_sacked: rs.acked_sacked,
            losses,
            prior_in_flight,
            delivered,
            in_flight,
            state: self.ca_state(),
            srtt: self.rtt.srtt(),
        };
        let (cwnd, rate, ssthresh, probe_rtt) = match &mut self.cc {
            Controller::Bbr(b) => {
                b.on_ack(&input);
                (b.cwnd_bytes(), b.pacing_rate(), b.ssthresh_or_unset(), b.in_probe_rtt())
            }
            Controller::Bbr3(b) => {
                let x = V3Sample { delivered: rs.delivered, tx_in_flight: rs.tx_in_flight, lost: rs.lost, has_sack: self.sack };
                b.on_ack(&input, &x);
                (b.cwnd_bytes(), b.pacing_rate(), b.ssthresh_or_unset(), b.in_probe_rtt())
            }
            _ => return,
        };
        if probe_rtt {
            // Linux bbr_update_min_rtt: PROBE_RTT's low-rate samples are marked app-limited.
            if let Some(r) = self.rate.as_mut() {
                r.mark_app_limited(in_flight);
            }
        }
        self.set_pacing_rate(rate);
        self.ssthresh = ssthresh;
        let counted = if self.sack && self.in_recovery { self.pipe() } else { self.snd_nxt.max(self.snd_una) - self.snd_una };
        let mut window = cwnd + counted.saturating_sub(in_flight);
        if !self.in_recovery {
            window = window.min(self.rwnd.max(self.mss));
        }
        self.cwnd = window.max(self.mss);
    }

    /// Draft-cheng-iccrg-delivery-rate-estimation's CheckIfApplicationLimited, when a send loop
    /// found no new data to send while the window had room: the estimator marks the samples
    /// from here on app-limited (with the estimator; lost data waiting for retransmission means
    /// the sender is not app-limited).
    fn check_app_limited(&mut self) {
        if self.rate.is_none() || self.in_recovery || self.ca_state() == CaState::Loss {
            return;
        }
        let in_flight = self.bbr_in_flight();
        if let Some(r) = self.rate.as_mut() {
            r.mark_app_limited(in_flight);
        }
    }
}

/// What the receiver does after a data segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckAction {
    /// Send an ACK now.
    Now,
    /// Hold the ACK until the delayed-ACK deadline (or the next segment).
    Delay(Time),
}

#[derive(Clone, Debug)]
pub struct TcpReceiver {
    rcv_nxt: u64,
    /// Out-of-order data, merged into contiguous blocks.
    ooo: RangeSet,
    /// SACK blocks are reported only when the connection uses SACK.
    sack: Option<SackReporter>,
    delayed_ack: bool,
    delack_timeout: Time,
    /// In-order segments received since the last ACK.
    unacked_segments: u32,
    pub delack_deadline: Option<Time>,
    /// Echo CE back to the sender until it is acknowledged (simplified RFC 3168 6.1.3: on the
    /// next ACK only).
    ce_pending: bool,
    /// DCTCP's ECN-Echo (RFC 8257 section 3.2) in place of `ce_pending`'s rule.
    dctcp_echo: Option<DctcpEcho>,
    /// Linux's quick-ACK start (`quickack.rs`): Some when `TcpConfig::quickack`. Boxed, so
    /// that a receiver without it stays as small as before.
    quickack: Option<Box<QuickAck>>,
    /// Linux's advertised window with receive-buffer autotuning (`receive_window.rs`): Some
    /// when `TcpConfig::rwnd_autotuning`. Boxed, as `quickack`.
    window: Option<Box<ReceiveWindow>>,
    pub delivered_bytes: u64,
}

impl TcpReceiver {
    pub fn new(cfg: &TcpConfig) -> TcpReceiver {
        TcpReceiver {
            rcv_nxt: ISS_DATA,
            ooo: RangeSet::default(),
            sack: cfg.sack.then(SackReporter::default),
            delayed_ack: cfg.delayed_ack,
            delack_timeout: Time(cfg.delayed_ack_timeout_ns),
            unacked_segments: 0,
            delack_deadline: None,
            ce_pending: false,
            dctcp_echo: matches!(cfg.congestion_control, CongestionControl::Dctcp | CongestionControl::Prague).then(DctcpEcho::default),
            quickack: cfg.quickack.then(|| Box::new(QuickAck::new(cfg.rwnd, cfg.mss, Time(cfg.min_rto_ns)))),
            window: cfg.rwnd_autotuning.then(|| Box::new(ReceiveWindow::new(cfg.rwnd, cfg.mss as u64, ISS_DATA))),
            delivered_bytes: 0,
        }
    }

    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// The quick-ACK start's state, when `TcpConfig::quickack` is on.
    pub fn quickack(&self) -> Option<&QuickAck> {
        self.quickack.as_deref()
    }

    /// The window to advertise on the ACK being sent, when `TcpConfig::rwnd_autotuning` is on
    /// (the fixed `rwnd` otherwise, which the sender knows from its own configuration); it
    /// remembers the right edge offered (`ReceiveWindow::offer`).
    pub fn offer_window(&mut self) -> Option<u64> {
        self.window.as_mut().map(|w| w.offer(self.rcv_nxt, &self.ooo))
    }

    /// One of the sender's RTT samples, for the autotuning receiver's RTT (`receive_window.rs`
    /// says why the sender's).
    pub fn on_rtt_sample(&mut self, sample: Time) {
        if let Some(w) = self.window.as_mut() {
            w.on_rtt_sample(sample);
        }
    }

    /// The SACK blocks to put on the next ACK (RFC 2018 section 4): up to three held blocks,
    /// the one holding the most recently received segment first, then the most recently
    /// reported others. Empty without SACK or without out-of-order data.
    pub fn sack_blocks(&self) -> SackBlocks {
        self.sack.as_ref().map_or_else(SackBlocks::default, |r| r.blocks(&self.ooo))
    }

    /// The ACK to send now: (cumulative ack, ECN-Echo). Clears the delayed-ACK state.
    pub fn take_ack(&mut self) -> (u64, bool) {
        self.unacked_segments = 0;
        self.delack_deadline = None;
        if let Some(q) = self.quickack.as_mut() {
            q.on_ack_sent();
        }
        let ece = match &self.dctcp_echo {
            Some(echo) => echo.ece(),
            None => std::mem::take(&mut self.ce_pending),
        };
        (self.rcv_nxt, ece)
    }

    /// The ACK (cumulative ack, ECN-Echo) a DCTCP receiver owes for segments received before
    /// the last CE state change, to send before the ACK [`Self::on_data`] asked for.
    pub fn take_prior_ack(&mut self) -> Option<(u64, bool)> {
        self.dctcp_echo.as_mut().and_then(DctcpEcho::take_prior_ack)
    }

    pub fn on_data(&mut self, seq: u64, len: u32, ce: bool, now: Time) -> AckAction {
        let ecn_ack_now = match self.dctcp_echo.as_mut() {
            Some(echo) => echo.on_segment(ce, self.rcv_nxt, self.unacked_segments > 0),
            None => {
                self.ce_pending |= ce;
                ce
            }
        };
        let end = seq + len as u64;
        let mut quick = self.quickack.as_mut().is_some_and(|q| q.on_segment(seq, end, self.rcv_nxt, now));
        if end <= self.rcv_nxt {
            return AckAction::Now; // duplicate: ACK at once so the sender learns
        }
        if seq > self.rcv_nxt {
            let new_bytes = self.ooo.insert(seq, end);
            if let Some(r) = self.sack.as_mut() {
                r.on_out_of_order(seq, &self.ooo);
            }
            if let Some(w) = self.window.as_mut() {
                let grew = w.on_out_of_order(new_bytes, self.rcv_nxt, &self.ooo, self.sack.is_some());
                if let (true, Some(q)) = (grew, self.quickack.as_mut()) {
                    q.on_window_grown(); // spent by the ACK that goes now, as in the kernel
                }
            }
            return AckAction::Now; // out of order: immediate duplicate ACK (RFC 5681 4.2)
        }
        let filled_gap = !self.ooo.is_empty();
        let before = self.rcv_nxt;
        self.advance(end);
        if let Some(w) = self.window.as_mut() {
            // The segment's own new bytes (`end - before`), not what filling a hole merged in:
            // the kernel grows the window by the arriving skb (`tcp_grow_window`).
            let grew = w.on_in_order(end - before, self.rcv_nxt, &self.ooo, now);
            if let (true, Some(q)) = (grew, self.quickack.as_mut()) {
                q.on_window_grown();
                quick = true;
            }
        }
        if !self.delayed_ack || filled_gap || ecn_ack_now || quick {
            return AckAction::Now;
        }
        self.unacked_segments += 1;
        if self.unacked_segments >= 2 {
            return AckAction::Now;
        }
        let deadline = *self.delack_deadline.get_or_insert(now + self.delack_timeout);
        AckAction::Delay(deadline)
    }

    fn advance(&mut self, end: u64) {
        let mut new_nxt = end.max(self.rcv_nxt);
        // Pull in every held block that now touches the in-order edge.
        while let Some((s, e)) = self.ooo.first() {
            if s > new_nxt {
                break;
            }
            new_nxt = new_nxt.max(e);
            self.ooo.pop_first();
        }
        self.delivered_bytes += new_nxt - self.rcv_nxt;
        self.rcv_nxt = new_nxt;
        if let Some(r) = self.sack.as_mut() {
            r.on_advance(new_nxt);
        }
    }
}

#[cfg(test)]
mod tests;
