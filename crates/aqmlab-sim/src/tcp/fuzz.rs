//! A seeded random driver for the TCP state machines: the fuzzer behind
//! `examples/fuzz_tcp.rs` (10^5 data segments per stack by default, 11.0 x 10^6 in all over 109 stacks) and
//! the short run in `tests/tcp_fuzz.rs`, beside `aqmlab_core::fuzz` for the disciplines.
//!
//! An *episode* is one [`TcpSender`] and one [`TcpReceiver`] moving a transfer of random
//! length over a path drawn from one `u64` seed, so that a failure is reproduced exactly by
//! rerunning that seed. The path (all probabilities drawn per episode, some of them zero):
//! * data: single random losses, bursts of consecutive losses, and tail loss (the first
//!   transmission of each of the transfer's last segments dropped); reordering (a random
//!   extra delay on some packets), duplication (a second copy a little later) and, with ECN,
//!   CE marks; a link rate serializes the data, with no queue limit;
//! * ACKs: random loss and the same reordering.
//!
//! The stacks are every combination the simulator runs ([`stacks`]): NewReno or CUBIC, SACK on
//! or off (with SACK, PRR on or off), Limited Transmit on or off, F-RTO on or off, ECN on or
//! off, DCTCP (always with ECN) with SACK (and PRR) and F-RTO on or off, and BBR (always
//! paced, without ECN, which BBR v1 ignores) with SACK, Limited Transmit and F-RTO on or off,
//! Prague (always with ECN, ECT(1) and pacing) with SACK (and PRR) and F-RTO on or off;
//! RACK-TLP, HyStart++, byte-counting, CUBIC-HyStart, quick-ACK, BBRv3 and Prague classic-ECN
//! fall-back stacks (see [`stacks`]); the receiver's
//! delayed ACKs, the initial window,
//! the receiver window and the minimum RTO are drawn per episode.
//!
//! After every event (a data or ACK arrival, a timer) [`run_episode`] checks:
//! * delivery: the receiver delivers in order and exactly once (its delivered count is its
//!   in-order edge minus the first byte, the edge never moves back nor beyond what was sent,
//!   and every byte it passes arrived in some segment); the sender never has more than the
//!   receiver window outstanding, never sees more acknowledged than was delivered, and at the
//!   end all of the transfer is delivered and acknowledged;
//! * no stall beyond RTO backoff: with data outstanding the retransmission timer is armed and
//!   due within the maximum RTO; a timer that fires sends a segment; with nothing outstanding
//!   and data left, the sender has sent; the transfer ends within a bound of events;
//! * window bounds: cwnd >= 1 SMSS, outside loss recovery cwnd <= the receiver window (or
//!   the initial window), ssthresh >= 2 SMSS once set; and at every reduction (fast
//!   retransmit, timeout, ECN-Echo) the new ssthresh is no more than the window before it
//!   (cwnd, or in slow start after an earlier reduction the ssthresh it was heading for, at
//!   least 2 SMSS; where the sender reduces FlightSize by design, at least FlightSize: see
//!   [`window_before`]), an ECN-Echo never raises cwnd, and with PRR the ACK that ends a
//!   recovery leaves cwnd = ssthresh;
//! * retransmissions: each one either repairs a loss (every earlier copy of the segment was
//!   dropped on the path) or is spurious for a reason the run names (a timeout's
//!   retransmission or go-back-N, or a recovery retransmission of a segment delayed or whose
//!   ACK was lost); a retransmission of data the sender had been told arrived (cumulatively
//!   acknowledged, or SACKed on an ACK it received since its last timeout cleared the
//!   scoreboard) is a failure. So retransmissions = repairs + named spurious, repairs <=
//!   losses.
//!
//! BBR sets no ssthresh at a loss (Linux leaves it "infinite"; BBR records one BDP there when
//! it enters DRAIN, a model estimate rather than a reduction), so the ssthresh-after-reduction
//! bound, which is about classic loss responses, is not checked for it; every other check is.
//! With pacing, a sender with data left and nothing outstanding may be waiting for its pacing
//! timer, which the episode runs as one more timer.

use super::sack::RangeSet;
use super::{AckAction, Segment, TcpReceiver, TcpSender, ISS_DATA};
use aqmlab_core::{SimRng, Time};
use aqmlab_model::app::tcp_config::{
    CongestionControl, EcnCodepoint, PragueRttScaling, PrrVariant, RtoEstimator, SsthreshBasis, TcpConfig,
};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// One combination of the sender's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stack {
    pub cc: CongestionControl,
    pub sack: bool,
    pub frto: bool,
    pub ecn: bool,
    /// Proportional Rate Reduction (only with SACK: it shapes SACK-based recovery).
    pub prr: bool,
    pub limited_transmit: bool,
    /// RACK-TLP (RFC 8985; only with SACK).
    pub rack: bool,
    /// HyStart++ (RFC 9406) in the initial slow start (not with BBR).
    pub hystart: bool,
    /// Window growth by acknowledged bytes (RFC 3465, L = 2; `TcpConfig::byte_counting`).
    pub byte_counting: bool,
    /// CUBIC's own HyStart (`tcp_cubic.c`; CUBIC only, not with `hystart`).
    pub cubic_hystart: bool,
    /// The receiver's quick-ACK start (`TcpConfig::quickack`; its episodes always delay ACKs).
    pub quickack: bool,
    /// BBR v1 without its ACK-aggregation allowance (`TcpConfig::bbr_ack_aggregation` false;
    /// BBR only).
    pub no_bbr_aggregation: bool,
    /// BBR v1 without its policer detection (`TcpConfig::bbr_policer_detection` false; BBR
    /// only).
    pub no_bbr_policer: bool,
    /// Prague's classic ECN AQM detection and fall-back (`TcpConfig::prague_ecn_fallback`;
    /// Prague only).
    pub prague_ecn_fallback: bool,
    /// Prague's RTT-independence heuristic (`TcpConfig::prague_rtt_scaling`; Prague only;
    /// every other stack keeps the default, Linux's `rate`).
    pub prague_rtt_scaling: PragueRttScaling,
    /// SACK recovery halves the pipe instead of FlightSize (`TcpConfig::ssthresh_basis` =
    /// `pipe`, ns-3 3.44's rule; SACK only).
    pub ssthresh_pipe: bool,
    /// SACK recovery halves cwnd instead of FlightSize (`TcpConfig::ssthresh_basis` = `cwnd`,
    /// Linux's rule; SACK only; not with `ssthresh_pipe`).
    pub ssthresh_cwnd: bool,
    /// PRR as ns-3 3.44 runs it (`TcpConfig::prr_variant` = `ns3`; with `prr` only).
    pub prr_ns3: bool,
    /// CUBIC's Reno-friendly estimate keeps alpha_cubic (`TcpConfig::cubic_alpha_to_one` false;
    /// CUBIC only).
    pub cubic_constant_alpha: bool,
}

/// `Stack::OPTION(self, on)`: the stack with that option set, for chaining.
macro_rules! setters {
    ($($option:ident),*) => {
        $(pub fn $option(self, on: bool) -> Stack {
            Stack { $option: on, ..self }
        })*
    };
}

impl Stack {
    setters!(
        sack,
        frto,
        ecn,
        prr,
        limited_transmit,
        rack,
        hystart,
        byte_counting,
        cubic_hystart,
        quickack,
        no_bbr_aggregation,
        no_bbr_policer,
        prague_ecn_fallback,
        ssthresh_pipe,
        ssthresh_cwnd,
        prr_ns3,
        cubic_constant_alpha
    );

    /// `cc` with every option off; the setters (one per option, named as its field) turn options
    /// on, as in `Stack::new(CongestionControl::Cubic).sack(true).frto(true)`.
    pub fn new(cc: CongestionControl) -> Stack {
        Stack {
            cc,
            sack: false,
            frto: false,
            ecn: false,
            prr: false,
            limited_transmit: false,
            rack: false,
            hystart: false,
            byte_counting: false,
            cubic_hystart: false,
            quickack: false,
            no_bbr_aggregation: false,
            no_bbr_policer: false,
            prague_ecn_fallback: false,
            prague_rtt_scaling: PragueRttScaling::Rate,
            ssthresh_pipe: false,
            ssthresh_cwnd: false,
            prr_ns3: false,
            cubic_constant_alpha: false,
        }
    }

    /// The stack with Prague's RTT-independence heuristic `scaling`.
    pub fn prague_rtt_scaling(self, scaling: PragueRttScaling) -> Stack {
        Stack { prague_rtt_scaling: scaling, ..self }
    }

    /// A name such as `cubic+sack+frto` (`newreno` alone when every option is off).
    pub fn name(&self) -> String {
        let mut n = String::from(match self.cc {
            CongestionControl::NewReno => "newreno",
            CongestionControl::Cubic => "cubic",
            CongestionControl::Dctcp => "dctcp",
            CongestionControl::Bbr => "bbr",
            CongestionControl::Bbr3 => "bbr3",
            CongestionControl::Prague => "prague",
        });
        let tags = [
            (self.sack, "+sack"),
            (self.prr, "+prr"),
            (self.limited_transmit, "+lt"),
            (self.rack, "+rack"),
            (self.hystart, "+hystart"),
            (self.byte_counting, "+abc"),
            (self.cubic_hystart, "+chystart"),
            (self.quickack, "+qack"),
            (self.no_bbr_aggregation, "-aggr"),
            (self.no_bbr_policer, "-lt"),
            (self.prague_ecn_fallback, "+ecnfb"),
            (self.ssthresh_pipe, "+pipe"),
            (self.ssthresh_cwnd, "+cwnd-basis"),
            (self.prr_ns3, "+prr-ns3"),
            (self.cubic_constant_alpha, "+alpha"),
            (self.frto, "+frto"),
            (self.ecn, "+ecn"),
        ];
        for (on, tag) in tags {
            if on {
                n.push_str(tag);
            }
        }
        n.push_str(match self.prague_rtt_scaling {
            PragueRttScaling::Rate => "",
            PragueRttScaling::None => "+rtt-none",
            PragueRttScaling::Scalable => "+rtt-scalable",
            PragueRttScaling::Additive => "+rtt-additive",
        });
        n
    }
}

/// Every controller x recovery combination the simulator has: each new controller or recovery
/// option multiplies this list. PRR is combined with SACK only: without SACK it changes
/// nothing, and the list stays at 48 stacks.
pub fn stacks() -> Vec<Stack> {
    use CongestionControl::{Bbr, Bbr3, Cubic, Dctcp, NewReno, Prague};
    // SACK's recovery variants: none, RFC 6675, RFC 6675 shaped by PRR.
    const RECOVERY: [(bool, bool); 3] = [(false, false), (true, false), (true, true)];
    const BOTH: [bool; 2] = [false, true];
    // The ECN-only controllers (DCTCP, Prague): recovery x F-RTO.
    let ecn_only = |cc: CongestionControl| {
        RECOVERY.into_iter().flat_map(move |(sack, prr)| BOTH.map(|frto| Stack::new(cc).ecn(true).sack(sack).prr(prr).frto(frto)))
    };
    let mut v = Vec::new();
    for cc in [NewReno, Cubic] {
        for (sack, prr) in RECOVERY {
            for limited_transmit in BOTH {
                for frto in BOTH {
                    for ecn in BOTH {
                        v.push(Stack::new(cc).sack(sack).prr(prr).limited_transmit(limited_transmit).frto(frto).ecn(ecn));
                    }
                }
            }
        }
    }
    // DCTCP runs only with ECN (RFC 8257; the config refuses it without), appended so that the
    // classic stacks keep their indices.
    v.extend(ecn_only(Dctcp));
    // BBR: PRR does not apply (BBR sets the window in recovery itself, as Linux's cong_control
    // hook bypasses PRR), nor ECN (BBR v1 does not respond to it). Appended, as DCTCP.
    for sack in BOTH {
        for limited_transmit in BOTH {
            for frto in BOTH {
                v.push(Stack::new(Bbr).sack(sack).limited_transmit(limited_transmit).frto(frto));
            }
        }
    }
    // RACK-TLP, with SACK only (the config refuses it without), on the stacks Linux runs it
    // with: NewReno and CUBIC with and without PRR, and BBR; each with and without F-RTO.
    // Appended, as DCTCP.
    for (cc, prr) in [(NewReno, false), (NewReno, true), (Cubic, false), (Cubic, true), (Bbr, false)] {
        for frto in BOTH {
            v.push(Stack::new(cc).sack(true).rack(true).prr(prr).frto(frto));
        }
    }
    // HyStart++ (RFC 9406), appended as DCTCP: NewReno and CUBIC without SACK, with ECN (an
    // ECN-Echo ends it), with SACK, and with everything a current kernel runs (SACK, PRR,
    // Limited Transmit, RACK-TLP, F-RTO); DCTCP with ECN and SACK. Not BBR (refused).
    for cc in [NewReno, Cubic] {
        let hystart = Stack::new(cc).hystart(true);
        for ecn in BOTH {
            v.push(hystart.ecn(ecn));
        }
        v.push(hystart.sack(true));
        v.push(hystart.sack(true).prr(true).limited_transmit(true).rack(true).frto(true));
    }
    v.push(Stack::new(Dctcp).hystart(true).ecn(true).sack(true));
    // Prague runs only with ECN, ECT(1) and pacing (the config refuses it without), with SACK
    // (and PRR) and F-RTO on or off, as DCTCP. Appended, as DCTCP.
    v.extend(ecn_only(Prague));
    // Byte counting (RFC 3465), appended as DCTCP: NewReno and CUBIC without SACK, with SACK,
    // with everything a current kernel runs (SACK, PRR, Limited Transmit, RACK-TLP, F-RTO), and
    // with HyStart++ (whose slow start then grows instead); DCTCP and Prague with SACK.
    for cc in [NewReno, Cubic] {
        let abc = Stack::new(cc).byte_counting(true);
        v.push(abc);
        v.push(abc.sack(true));
        v.push(abc.sack(true).prr(true).limited_transmit(true).rack(true).frto(true));
        v.push(abc.sack(true).hystart(true));
    }
    v.push(Stack::new(Dctcp).byte_counting(true).ecn(true).sack(true));
    v.push(Stack::new(Prague).byte_counting(true).ecn(true).sack(true));
    // CUBIC's own HyStart (tcp_cubic.c), appended as DCTCP: alone, with ECN, with SACK, with
    // byte counting and SACK, and with everything a kernel runs.
    let chystart = Stack::new(Cubic).cubic_hystart(true);
    v.extend([
        chystart,
        chystart.ecn(true),
        chystart.sack(true),
        chystart.sack(true).byte_counting(true),
        chystart.sack(true).prr(true).limited_transmit(true).rack(true).frto(true).byte_counting(true),
    ]);
    // The receiver's quick-ACK start, appended as DCTCP (its episodes always delay ACKs, which
    // it needs): NewReno and CUBIC alone and with SACK, the full kernel stack (CUBIC with SACK,
    // PRR, Limited Transmit, RACK-TLP, F-RTO, byte counting and its HyStart), DCTCP with ECN and
    // SACK (whose extra ACK before a CE change spends nothing), and BBR with SACK (paced).
    v.extend([
        Stack::new(NewReno).quickack(true),
        Stack::new(NewReno).quickack(true).sack(true),
        Stack::new(Cubic).quickack(true),
        Stack::new(Cubic).quickack(true).sack(true),
        chystart.sack(true).prr(true).limited_transmit(true).rack(true).frto(true).byte_counting(true).quickack(true),
        Stack::new(Dctcp).quickack(true).ecn(true).sack(true),
        Stack::new(Bbr).quickack(true).sack(true),
    ]);
    // BBRv3, appended as DCTCP: without SACK, with SACK, with SACK and RACK-TLP, each with and
    // without F-RTO (no PRR, HyStart++ or ECN, as for BBR v1).
    for frto in BOTH {
        v.push(Stack::new(Bbr3).frto(frto));
        v.push(Stack::new(Bbr3).sack(true).frto(frto));
        v.push(Stack::new(Bbr3).sack(true).rack(true).frto(frto));
    }
    // BBR v1 with a part of tcp_bbr.c switched off (both are on in every BBR stack above),
    // appended as DCTCP: without the ACK-aggregation allowance, without the policer detection,
    // each with SACK, and without both and without SACK.
    v.extend([
        Stack::new(Bbr).sack(true).no_bbr_aggregation(true),
        Stack::new(Bbr).sack(true).no_bbr_policer(true),
        Stack::new(Bbr).no_bbr_aggregation(true).no_bbr_policer(true),
    ]);
    // Prague's classic ECN detection and fall-back, appended as DCTCP: without SACK, with SACK,
    // PRR and F-RTO, and with SACK and byte counting.
    let fallback = Stack::new(Prague).ecn(true).prague_ecn_fallback(true);
    v.extend([fallback, fallback.sack(true).prr(true).frto(true), fallback.sack(true).byte_counting(true)]);
    // Prague's RTT-independence heuristics other than the default (rate), appended as DCTCP:
    // each with ECN and SACK, the stack every other Prague option runs with.
    for scaling in [PragueRttScaling::None, PragueRttScaling::Scalable, PragueRttScaling::Additive] {
        v.push(Stack::new(Prague).ecn(true).sack(true).prague_rtt_scaling(scaling));
    }
    // ssthresh from the pipe (ns-3's SACK sender), appended as DCTCP: NewReno with SACK alone,
    // with Limited Transmit (the pair a cross-check of ns-3's NewReno sets), with PRR, with
    // RACK-TLP and F-RTO; CUBIC with SACK and with the full kernel stack; DCTCP with ECN and SACK
    // (its reduction on loss goes through the same basis).
    let pipe = |cc: CongestionControl| Stack::new(cc).sack(true).ssthresh_pipe(true);
    v.extend([
        pipe(NewReno),
        pipe(NewReno).limited_transmit(true),
        pipe(NewReno).prr(true),
        pipe(NewReno).rack(true).frto(true),
        pipe(Cubic),
        pipe(Cubic).prr(true).limited_transmit(true).rack(true).frto(true).byte_counting(true),
        pipe(Dctcp).ecn(true),
    ]);
    // ns-3 3.44's PRR, appended as DCTCP: the ns3 profile's stacks (NewReno and CUBIC with the
    // pipe basis and Limited Transmit), with RACK-TLP and F-RTO (RACK's reorder timer enters
    // recovery without DeliveredData, a path ns-3 lacks), and with the FlightSize basis.
    let ns3_prr = |cc: CongestionControl| pipe(cc).prr(true).prr_ns3(true);
    v.extend([
        ns3_prr(NewReno).limited_transmit(true),
        ns3_prr(Cubic).limited_transmit(true),
        ns3_prr(Cubic).limited_transmit(true).rack(true).frto(true),
        Stack::new(NewReno).sack(true).prr(true).prr_ns3(true),
    ]);
    // CUBIC with a constant alpha_cubic (Linux's and ns-3's Reno-friendly rule), appended as
    // DCTCP: plain, with ECN, the ns3 profile's stack and the full kernel stack.
    let alpha = Stack::new(Cubic).cubic_constant_alpha(true);
    v.extend([
        alpha,
        alpha.ecn(true),
        ns3_prr(Cubic).limited_transmit(true).cubic_constant_alpha(true),
        alpha.sack(true).prr(true).limited_transmit(true).rack(true).frto(true).byte_counting(true).cubic_hystart(true),
    ]);
    // ssthresh from cwnd (Linux's reno and CUBIC), appended as DCTCP: NewReno with SACK alone
    // and with the kernel's stack (whose send buffer lets cwnd outgrow what is in flight),
    // CUBIC with the kernel's stack.
    let cwnd_basis = |cc: CongestionControl| Stack::new(cc).sack(true).ssthresh_cwnd(true);
    v.extend([
        cwnd_basis(NewReno),
        cwnd_basis(NewReno).prr(true).limited_transmit(true).rack(true).frto(true).byte_counting(true),
        cwnd_basis(Cubic).prr(true).limited_transmit(true).rack(true).frto(true).byte_counting(true).cubic_hystart(true),
    ]);
    v
}

/// A broken property: the episode seed that replays it, the event count at which it broke.
#[derive(Clone, Debug)]
pub struct Failure {
    pub seed: u64,
    pub event: u64,
    pub message: String,
}

/// What the episodes did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub episodes: u64,
    pub events: u64,
    /// Data segments put on the path (first transmissions and retransmissions).
    pub segments: u64,
    /// Data segments the path dropped.
    pub losses: u64,
    pub ack_losses: u64,
    pub duplicated: u64,
    pub reordered: u64,
    pub ce_marks: u64,
    pub retransmissions: u64,
    /// Retransmissions whose every earlier copy had been dropped.
    pub repairs: u64,
    /// Spurious retransmissions sent by a timeout or its go-back-N.
    pub spurious_after_timeout: u64,
    /// Spurious retransmissions sent in fast or SACK recovery (an earlier copy was delayed
    /// by reordering, or arrived and its ACK was lost or not yet back).
    pub spurious_in_recovery: u64,
    pub timeouts: u64,
    pub fast_retransmits: u64,
    pub ecn_reductions: u64,
    pub frto_spurious_timeouts: u64,
    pub tlp_probes: u64,
    pub rack_reorder_timeouts: u64,
    /// HyStart++ entries into Conservative Slow Start.
    pub hystart_css_entries: u64,
    /// Quick-ACK budgets granted after the first (idle gaps, duplicate data).
    pub quickack_regrants: u64,
}

impl Tally {
    pub fn add(&mut self, o: &Tally) {
        self.episodes += o.episodes;
        self.events += o.events;
        self.segments += o.segments;
        self.losses += o.losses;
        self.ack_losses += o.ack_losses;
        self.duplicated += o.duplicated;
        self.reordered += o.reordered;
        self.ce_marks += o.ce_marks;
        self.retransmissions += o.retransmissions;
        self.repairs += o.repairs;
        self.spurious_after_timeout += o.spurious_after_timeout;
        self.spurious_in_recovery += o.spurious_in_recovery;
        self.timeouts += o.timeouts;
        self.fast_retransmits += o.fast_retransmits;
        self.ecn_reductions += o.ecn_reductions;
        self.frto_spurious_timeouts += o.frto_spurious_timeouts;
        self.tlp_probes += o.tlp_probes;
        self.rack_reorder_timeouts += o.rack_reorder_timeouts;
        self.hystart_css_entries += o.hystart_css_entries;
        self.quickack_regrants += o.quickack_regrants;
    }
}

const MSS: u64 = 1000;
/// Backoff cap of the fuzzed senders: short, so that long loss runs cost little simulated time.
const MAX_RTO: Time = Time(4_000_000_000);

/// The path and transfer of one episode, drawn from its seed.
#[derive(Clone, Debug)]
struct Path {
    segments: u64,
    one_way: Time,
    /// Serialization time of a data segment.
    tx: Time,
    p_loss: f64,
    p_burst: f64,
    burst_len: u64,
    tail: u64,
    p_reorder: f64,
    reorder_max: Time,
    p_dup: f64,
    p_ack_loss: f64,
    p_ce: f64,
}

fn draw_path(rng: &mut SimRng, stack: Stack) -> Path {
    // Each impairment is absent in about a third of the episodes, so that single causes are
    // seen alone as well as mixed.
    let maybe = |rng: &mut SimRng, hi: f64| if rng.bernoulli(0.35) { 0.0 } else { rng.uniform_range(0.0, hi) };
    let p_loss = maybe(rng, 0.08);
    let p_burst = maybe(rng, 0.02);
    let p_reorder = maybe(rng, 0.1);
    let p_dup = maybe(rng, 0.05);
    let p_ack_loss = maybe(rng, 0.2);
    let p_ce = if stack.ecn { maybe(rng, 0.05) } else { 0.0 };
    let one_way = Time::from_millis(1 + rng.next_u64() % 60);
    Path {
        segments: 1 + rng.next_u64() % 3000,
        one_way,
        tx: Time(MSS * 8 * 1_000_000_000 / (1_000_000 * (1 + rng.next_u64() % 100))),
        p_loss,
        p_burst,
        burst_len: 2 + rng.next_u64() % 30,
        tail: if rng.bernoulli(0.3) { 1 + rng.next_u64() % 6 } else { 0 },
        p_reorder,
        reorder_max: Time(one_way.0 * (1 + rng.next_u64() % 4)),
        p_dup,
        p_ack_loss,
        p_ce,
    }
}

fn draw_config(rng: &mut SimRng, stack: Stack) -> TcpConfig {
    TcpConfig {
        mss: MSS as u32,
        initial_cwnd_segments: 1 + (rng.next_u64() % 10) as u32,
        initial_rto_ns: 1_000_000_000,
        min_rto_ns: [10_000_000, 200_000_000, 1_000_000_000][(rng.next_u64() % 3) as usize],
        max_rto_ns: MAX_RTO.0,
        clock_granularity_ns: 1_000_000,
        // Drawn for every stack, so that the others' episodes stay as they were; the quick-ACK
        // start needs delayed ACKs.
        delayed_ack: rng.bernoulli(0.5) || stack.quickack,
        delayed_ack_timeout_ns: 40_000_000 + rng.next_u64() % 160_000_000,
        rwnd: MSS * [4, 16, 64, 1_000, 100_000][(rng.next_u64() % 5) as usize],
        ecn: stack.ecn,
        sack: stack.sack,
        frto: stack.frto,
        prr: stack.prr,
        limited_transmit: stack.limited_transmit,
        rack: stack.rack,
        hystart: stack.hystart,
        cubic_hystart: stack.cubic_hystart,
        cubic_alpha_to_one: !stack.cubic_constant_alpha,
        // The estimator for the records, in the stacks that run RACK as the linux profile does
        // (no draw: the other stacks' episodes stay as they were).
        rate_estimator: stack.rack,
        // Linux's receive window in the same stacks (no draw, as the estimator).
        rwnd_autotuning: stack.rack,
        // Linux's send buffer, small enough to hold the window back at times (two thirds of 256 KiB
        // is 116 segments of 1,448 B; no draw either).
        send_buffer: if stack.rack { 256 * 1024 } else { 0 },
        // And its window growth only while the window limits sending (no draw either).
        cwnd_limited_growth: stack.rack,
        // And its restart of the RTO at each retransmission of the head (no draw either).
        rto_restart_on_head_retransmit: stack.rack,
        // And its RTT samples from every ACK with its RTO estimator (no draw either).
        rtt_sample_every_ack: stack.rack,
        rto_estimator: if stack.rack { RtoEstimator::Linux } else { RtoEstimator::Rfc6298 },
        congestion_control: stack.cc,
        ecn_codepoint: if stack.cc == CongestionControl::Prague { EcnCodepoint::Ect1 } else { Default::default() },
        pacing: matches!(stack.cc, CongestionControl::Bbr | CongestionControl::Bbr3 | CongestionControl::Prague),
        // Linux's skb-sized bursts in the same stacks (no draw either; only the paced send them).
        tso_autosize: stack.rack,
        byte_counting: stack.byte_counting,
        quickack: stack.quickack,
        bbr_ack_aggregation: !stack.no_bbr_aggregation,
        bbr_policer_detection: !stack.no_bbr_policer,
        prague_ecn_fallback: stack.prague_ecn_fallback,
        prague_rtt_scaling: stack.prague_rtt_scaling,
        ssthresh_basis: if stack.ssthresh_pipe {
            SsthreshBasis::Pipe
        } else if stack.ssthresh_cwnd {
            SsthreshBasis::Cwnd
        } else {
            SsthreshBasis::FlightSize
        },
        prr_variant: if stack.prr_ns3 { PrrVariant::Ns3 } else { PrrVariant::Linux },
        // the fuzzer drives the sender and receiver from their first segment
        handshake: false,
    }
}

/// A packet on its way.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Packet {
    /// Copy `copy` of the segment at `seq`.
    Data { seq: u64, copy: usize, ce: bool },
    Ack {
        ack: u64,
        ece: bool,
        sack: Vec<(u64, u64)>,
        /// The receiver's advertised window, with `rwnd_autotuning`.
        window: Option<u64>,
    },
}

/// What became of one transmitted copy of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    InFlight,
    Dropped,
    Arrived,
}

/// The episode's world: the path, its packets in flight and what the fuzzer knows that the
/// sender may not.
struct World {
    path: Path,
    end: u64,
    now: Time,
    queue: BinaryHeap<Reverse<(Time, u64, Packet)>>,
    order: u64,
    link_free: Time,
    burst_left: u64,
    path_rng: SimRng,
    /// Every copy of every segment sent, by sequence number.
    copies: BTreeMap<u64, Vec<Fate>>,
    /// Bytes that reached the receiver (any copy).
    arrived: RangeSet,
    /// What the sender has been told: the highest cumulative ACK and (SACK) the blocks on the
    /// ACKs it received since its last timeout.
    told_ack: u64,
    told_sacked: RangeSet,
    t: Tally,
}

impl World {
    fn schedule(&mut self, at: Time, p: Packet) {
        self.order += 1;
        self.queue.push(Reverse((at, self.order, p)));
    }

    /// Puts the sender's segments on the path, classifying each retransmission.
    fn send_data(&mut self, segs: &[Segment], after_timeout: bool) -> Result<(), String> {
        for seg in segs {
            if seg.len as u64 != MSS || !(seg.seq - ISS_DATA).is_multiple_of(MSS) || seg.seq + MSS > self.end {
                return Err(format!("segment {seg:?} is not a whole segment of the transfer"));
            }
            self.t.segments += 1;
            let earlier = self.copies.entry(seg.seq).or_default();
            if seg.retransmission == earlier.is_empty() {
                return Err(format!("segment {seg:?} flagged against its {} earlier copies", earlier.len()));
            }
            if seg.retransmission {
                self.t.retransmissions += 1;
                if seg.seq < self.told_ack || self.told_sacked.covers(seg.seq, seg.seq + MSS) {
                    return Err(format!(
                        "retransmission of {} which the sender was told had arrived (cumulative ACK {}, SACKed {:?})",
                        seg.seq,
                        self.told_ack,
                        self.told_sacked.iter().collect::<Vec<_>>()
                    ));
                }
                if earlier.iter().all(|f| *f == Fate::Dropped) {
                    self.t.repairs += 1;
                } else if after_timeout {
                    self.t.spurious_after_timeout += 1;
                } else {
                    self.t.spurious_in_recovery += 1;
                }
            }
            let first = earlier.is_empty();
            let copy = earlier.len();
            let tail_start = self.end - self.path.tail.min(self.path.segments) * MSS;
            let dropped = if first && seg.seq >= tail_start {
                true
            } else if self.burst_left > 0 {
                self.burst_left -= 1;
                true
            } else if self.path_rng.bernoulli(self.path.p_burst) {
                self.burst_left = self.path.burst_len - 1;
                true
            } else {
                self.path_rng.bernoulli(self.path.p_loss)
            };
            self.copies.get_mut(&seg.seq).unwrap().push(if dropped { Fate::Dropped } else { Fate::InFlight });
            if dropped {
                self.t.losses += 1;
                continue;
            }
            self.link_free = self.link_free.max(self.now) + self.path.tx;
            let mut at = self.link_free + self.path.one_way;
            if self.path_rng.bernoulli(self.path.p_reorder) {
                self.t.reordered += 1;
                at += Time((self.path_rng.uniform() * self.path.reorder_max.0 as f64) as u64);
            }
            let ce = self.path_rng.bernoulli(self.path.p_ce);
            self.t.ce_marks += ce as u64;
            self.schedule(at, Packet::Data { seq: seg.seq, copy, ce });
            if self.path_rng.bernoulli(self.path.p_dup) {
                self.t.duplicated += 1;
                self.schedule(at + self.path.tx, Packet::Data { seq: seg.seq, copy, ce });
            }
        }
        Ok(())
    }

    fn send_ack(&mut self, r: &mut TcpReceiver) {
        let (ack, ece) = r.take_ack();
        self.send_ack_of(r, ack, ece);
    }

    /// Puts one ACK on the path (lost, reordered or delivered as drawn).
    fn send_ack_of(&mut self, r: &mut TcpReceiver, ack: u64, ece: bool) {
        let sack = r.sack_blocks().as_slice().to_vec();
        if self.path_rng.bernoulli(self.path.p_ack_loss) {
            self.t.ack_losses += 1;
            return;
        }
        let mut at = self.now + self.path.one_way;
        if self.path_rng.bernoulli(self.path.p_reorder) {
            self.t.reordered += 1;
            at += Time((self.path_rng.uniform() * self.path.reorder_max.0 as f64) as u64);
        }
        let window = r.offer_window();
        self.schedule(at, Packet::Ack { ack, ece, sack, window });
    }
}

/// The sender's reductions so far: when one of them moves, ssthresh was set by a loss, a
/// timeout or an ECN-Echo.
fn reductions(s: &TcpSender) -> (u64, u64, u64) {
    (s.stats.fast_retransmits, s.stats.timeouts, s.stats.ecn_reductions)
}

/// ssthresh before any reduction (the sender starts "arbitrarily high", RFC 5681 section 3.1).
const UNSET: u64 = u64::MAX / 2;

/// The window a reduction may not exceed: cwnd, or in slow start after an earlier reduction the
/// ssthresh the sender was heading for; at least RFC 5681's floor of 2 SMSS. That holds where
/// the sender reduces the window in use (CUBIC with SACK, issue 27). NewReno reduces
/// FlightSize by RFC 5681's equation (4), kept for the paper reproductions, and FlightSize may
/// exceed cwnd (after RFC 6582's exit from recovery with cwnd = min(ssthresh, FlightSize +
/// SMSS), during a timeout's go-back-N, with SACK while SACKed data is held above a hole); so
/// does CUBIC without SACK, which cannot tell data in the network from data the receiver
/// holds. For those the bound is at least FlightSize (the reduction still halves, or takes
/// 0.7 of, something the sender had sent).
fn window_before(stack: Stack, cwnd: u64, ssthresh: u64, flight: u64) -> u64 {
    let heading = if ssthresh < UNSET && cwnd < ssthresh { ssthresh } else { cwnd };
    let reduces_window_in_use = stack.sack && stack.cc == CongestionControl::Cubic;
    let seen = if reduces_window_in_use { heading } else { heading.max(flight) };
    seen.max(2 * MSS)
}

/// The properties of the module docs that hold between events.
fn check_state(s: &TcpSender, r: &TcpReceiver, w: &World, cfg: &TcpConfig, rcv_before: u64) -> Result<(), String> {
    let (una, max, nxt) = (s.snd_una(), s.snd_max(), r.rcv_nxt());
    if r.delivered_bytes != nxt - ISS_DATA {
        return Err(format!("receiver delivered {} bytes with its in-order edge at {nxt}", r.delivered_bytes));
    }
    if nxt < rcv_before || nxt > w.end {
        return Err(format!("receiver edge moved from {rcv_before} to {nxt} (transfer ends at {})", w.end));
    }
    if nxt > rcv_before && !w.arrived.covers(rcv_before, nxt) {
        return Err(format!("receiver passed [{rcv_before}, {nxt}) though not all of it arrived"));
    }
    if una > nxt || una > max || max > w.end {
        return Err(format!("sender una {una} max {max}, receiver at {nxt}, end {}", w.end));
    }
    if max - una > cfg.rwnd {
        return Err(format!("{} bytes outstanding beyond the receiver window {}", max - una, cfg.rwnd));
    }
    if s.cwnd < MSS {
        return Err(format!("cwnd {} below one segment", s.cwnd));
    }
    if !s.in_recovery() && s.cwnd > cfg.rwnd.max(MSS * cfg.initial_cwnd_segments as u64) {
        return Err(format!("cwnd {} above the receiver window {} outside recovery", s.cwnd, cfg.rwnd));
    }
    if s.ssthresh < 2 * MSS {
        return Err(format!("ssthresh {} below 2 segments", s.ssthresh));
    }
    if una < max {
        match s.rto_deadline() {
            Some(d) if d >= w.now && d <= w.now + MAX_RTO => {}
            other => return Err(format!("{} bytes outstanding with the timer at {other:?} (now {:?})", max - una, w.now)),
        }
    } else if max < w.end && s.pacing_deadline().is_none() {
        return Err(format!("nothing outstanding at {max} and {} bytes left: the sender stalls", w.end - max));
    }
    Ok(())
}

/// Runs one episode of `stack` from `seed`, checking the module's properties after every event.
pub fn run_episode(stack: Stack, seed: u64) -> Result<Tally, Failure> {
    let mut draw = SimRng::stream(seed, "fuzz/tcp/episode");
    let path = draw_path(&mut draw, stack);
    let cfg = draw_config(&mut draw, stack);
    let end = ISS_DATA + path.segments * MSS;
    // A bound far beyond any healthy transfer: every segment sent 40 times over.
    let max_events = 40 * (path.segments + 10) * 4;
    let mut w = World {
        path,
        end,
        now: Time::ZERO,
        queue: BinaryHeap::new(),
        order: 0,
        link_free: Time::ZERO,
        burst_left: 0,
        path_rng: SimRng::stream(seed, "fuzz/tcp/path"),
        copies: BTreeMap::new(),
        arrived: RangeSet::default(),
        told_ack: ISS_DATA,
        told_sacked: RangeSet::default(),
        t: Tally { episodes: 1, ..Tally::default() },
    };
    let mut s = TcpSender::new(&cfg);
    let mut r = TcpReceiver::new(&cfg);
    s.write_until(end);
    let mut out = Vec::new();
    let fail = |event: u64, message: String| Failure { seed, event, message };
    s.send_available(Time::ZERO, &mut out);
    w.send_data(&out, false).map_err(|m| fail(0, m))?;
    out.clear();
    while s.snd_una() < end {
        w.t.events += 1;
        let event = w.t.events;
        if event > max_events {
            return Err(fail(event, format!("not done after {max_events} events (una {}, end {end})", s.snd_una())));
        }
        let next_packet = w.queue.peek().map(|Reverse((t, _, _))| *t);
        let rto = s.rto_deadline();
        let delack = r.delack_deadline;
        let pacing = s.pacing_deadline();
        let first = [next_packet, rto, delack, pacing].into_iter().flatten().min();
        let Some(now) = first else {
            return Err(fail(event, "nothing scheduled: no packet, no timer".into()));
        };
        w.now = now;
        let rcv_before = r.rcv_nxt();
        let (cwnd_before, ssthresh_before, reduced_before) = (s.cwnd, s.ssthresh, reductions(&s));
        let flight_before = s.snd_max() - s.snd_una();
        let in_recovery_before = s.in_recovery();
        let spurious_before = s.stats.spurious_timeouts;
        let mut after_timeout = false;
        if next_packet == Some(now) {
            let Reverse((_, _, p)) = w.queue.pop().unwrap();
            match p {
                Packet::Data { seq, copy, ce } => {
                    let fate = &mut w.copies.get_mut(&seq).unwrap()[copy];
                    *fate = Fate::Arrived;
                    w.arrived.insert(seq, seq + MSS);
                    let action = r.on_data(seq, MSS as u32, ce, now);
                    // DCTCP's ACK for the segments before a CE state change goes first.
                    if let Some((ack, ece)) = r.take_prior_ack() {
                        w.send_ack_of(&mut r, ack, ece);
                    }
                    match action {
                        AckAction::Now => w.send_ack(&mut r),
                        AckAction::Delay(_) => {}
                    }
                }
                Packet::Ack { ack, ece, sack, window } => {
                    w.told_ack = w.told_ack.max(ack);
                    for &(a, b) in &sack {
                        w.told_sacked.insert(a, b);
                    }
                    if let Some(window) = window {
                        s.set_peer_window(ack, window);
                    }
                    s.on_ack_sack(ack, ece, &sack, now, &mut out);
                    if let Some(sample) = s.take_latest_rtt_sample() {
                        r.on_rtt_sample(sample);
                    }
                    // Outside fast or SACK recovery, only a timeout's go-back-N retransmits.
                    after_timeout = s.stats.timeouts > 0 && !s.in_recovery();
                }
            }
        } else if delack == Some(now) {
            w.send_ack(&mut r);
        } else if rto != Some(now) {
            // The pacing timer: what it releases is sent as an ACK's would be.
            s.on_pacing_timer(now, &mut out);
            if out.is_empty() {
                return Err(fail(event, format!("the pacing timer at {now:?} sent nothing")));
            }
            after_timeout = s.stats.timeouts > 0 && !s.in_recovery();
        } else {
            let rack_before = (s.stats.tlp_probes, s.stats.rack_reorder_timeouts);
            s.on_timer(now, &mut out);
            let rack_fired = (s.stats.tlp_probes, s.stats.rack_reorder_timeouts) != rack_before;
            if s.stats.timeouts == reduced_before.1 && !rack_fired {
                return Err(fail(event, format!("timer due at {now:?} did not fire")));
            }
            if rack_fired {
                // A probe sends exactly one segment (RFC 8985 section 7.3); the reorder timer
                // sends what recovery allows, possibly nothing.
                if s.stats.tlp_probes != rack_before.0 && out.len() != 1 {
                    return Err(fail(event, format!("a tail loss probe at {now:?} sent {} segments", out.len())));
                }
                after_timeout = s.stats.timeouts > 0 && !s.in_recovery();
            } else {
                if out.is_empty() {
                    return Err(fail(event, format!("a timeout at {now:?} sent nothing")));
                }
                // The scoreboard is forgotten at a timeout (RFC 2018 section 8): what the
                // sender was told by SACK before it no longer binds it.
                w.told_sacked = RangeSet::default();
                after_timeout = true;
            }
        }
        if !matches!(stack.cc, CongestionControl::Bbr | CongestionControl::Bbr3)
            && reductions(&s) != reduced_before
            && s.ssthresh != ssthresh_before
        {
            let bound = window_before(stack, cwnd_before, ssthresh_before, flight_before);
            if s.ssthresh > bound {
                return Err(fail(
                    event,
                    format!(
                        "ssthresh {} after a reduction (fast retransmits, timeouts, ECN: {:?} -> {:?}) above the window before it {bound} (cwnd {cwnd_before}, ssthresh {ssthresh_before})",
                        s.ssthresh,
                        reduced_before,
                        reductions(&s)
                    ),
                ));
            }
        }
        // The ACK carrying the ECN-Echo may first grow cwnd by at most one segment (slow start,
        // RFC 5681 (2); congestion avoidance grows less); the reduction may not add to that.
        let ecn_only = s.stats.ecn_reductions > reduced_before.2 && reductions(&s).1 == reduced_before.1;
        // The same ACK may end F-RTO with a spurious timeout, whose response sets cwnd =
        // ssthresh (RFC 5682 section 4, applied after the ECN-Echo's reduction): then cwnd may
        // rise from the timeout's one segment, but not above the ssthresh the ECN-Echo set.
        let frto_spurious = s.stats.spurious_timeouts > spurious_before;
        if ecn_only && frto_spurious && s.cwnd > s.ssthresh {
            return Err(fail(event, format!("an ECN-Echo ending F-RTO left cwnd {} above ssthresh {}", s.cwnd, s.ssthresh)));
        }
        if ecn_only && !frto_spurious && s.cwnd > (cwnd_before + MSS).max(2 * MSS) {
            return Err(fail(event, format!("an ECN-Echo raised cwnd from {cwnd_before} to {}", s.cwnd)));
        }
        // PRR (RFC 6937 section 3): the ACK that ends a SACK recovery leaves cwnd = ssthresh.
        let recovery_ended = in_recovery_before && !s.in_recovery() && reductions(&s) == reduced_before;
        if stack.prr && recovery_ended && s.cwnd != s.ssthresh {
            return Err(fail(event, format!("PRR recovery ended with cwnd {} != ssthresh {}", s.cwnd, s.ssthresh)));
        }
        w.send_data(&out, after_timeout && !s.in_recovery()).map_err(|m| fail(event, m))?;
        out.clear();
        check_state(&s, &r, &w, &cfg, rcv_before).map_err(|m| fail(event, m))?;
    }
    if r.rcv_nxt() != end || r.delivered_bytes != end - ISS_DATA {
        return Err(fail(w.t.events, format!("done with the receiver at {} of {end}", r.rcv_nxt())));
    }
    let t = &mut w.t;
    if t.retransmissions != t.repairs + t.spurious_after_timeout + t.spurious_in_recovery || t.repairs > t.losses {
        return Err(fail(t.events, format!("retransmissions do not add up: {t:?}")));
    }
    if t.retransmissions != s.stats.retransmissions || t.segments != s.stats.segments_sent {
        return Err(fail(t.events, format!("sender counted {:?}, the path {t:?}", s.stats)));
    }
    t.timeouts = s.stats.timeouts;
    t.fast_retransmits = s.stats.fast_retransmits;
    t.ecn_reductions = s.stats.ecn_reductions;
    t.frto_spurious_timeouts = s.stats.spurious_timeouts;
    t.tlp_probes = s.stats.tlp_probes;
    t.rack_reorder_timeouts = s.stats.rack_reorder_timeouts;
    t.hystart_css_entries = s.hystart().map_or(0, |h| h.css_entries as u64);
    t.quickack_regrants = r.quickack().map_or(0, |q| q.regrants);
    Ok(w.t)
}

/// The seed of episode `i` of a run seeded `seed` (SplitMix64, so neighbours differ).
pub fn episode_seed(seed: u64, i: u64) -> u64 {
    aqmlab_core::fuzz::episode_seed(seed, i)
}

/// Episodes of `stack` until at least `segments` data segments have been sent.
pub fn run(stack: Stack, seed: u64, segments: u64) -> Result<Tally, Failure> {
    let mut total = Tally::default();
    let mut i = 0;
    while total.segments < segments {
        total.add(&run_episode(stack, episode_seed(seed, i))?);
        i += 1;
    }
    Ok(total)
}
