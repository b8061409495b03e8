//! A seeded random driver for every discipline: the fuzzer behind
//! `examples/fuzz_disciplines.rs` (10^7 operations per discipline) and the short run in
//! `tests/accounting.rs`.
//!
//! libFuzzer (cargo-fuzz) needs a nightly toolchain, which CI does not have, so the driver
//! draws its operations from [`SimRng`] instead: an *episode* is a fresh queue fed a random
//! sequence of arrivals, departures, drains and clock steps, generated from one `u64` seed, so
//! that any failure is reproduced exactly by rerunning that seed. Arrivals take arbitrary
//! sizes (0 bytes, jumbo, up to `u32::MAX`), flows (one, a few, thousands), classes and DSCP
//! values (all 256 byte values, not only the valid ones), ECN codepoints, ports, protocols
//! and frame types; the clock only moves forward but stands still for many steps (equal
//! timestamps), crawls by nanoseconds, leaps by seconds and jumps to within a second of
//! `u64::MAX` ns, where it saturates.
//!
//! After every operation [`run_episode`] checks:
//! * the accounting identities of [`Queue::check_invariants`];
//! * the backlog within the discipline's physical limit ([`QdiscConfig::limit`]) in its own
//!   unit, and, with a byte limit, at most that many packets (so even 0-byte packets cannot
//!   grow a byte-limited buffer without bound);
//! * per-flow state bounded by the backlog ([`Queue::flow_states`] <= packets queued);
//! * the discipline's average queue, if it has one, finite and non-negative, and its named
//!   statistics finite;
//! * no stall: a dequeue that returns nothing while packets are queued must name a later
//!   instant at which it may send ([`Queue::next_dequeue_time`] > now).
//!
//! The list of disciplines fuzzed is [`disciplines`]: add each new discipline there.

use crate::packet::{Ecn, FrameType, Packet, Proto};
use crate::qdisc::cake::{AckFilter, Atm, CakeConfig, Diffserv, FlowMode};
use crate::qdisc::classful::classifier::Classifier;
use crate::qdisc::cobalt::CobaltConfig;
use crate::qdisc::codel::CodelConfig;
use crate::qdisc::droptail::DropTailConfig;
use crate::qdisc::drr::DrrConfig;
use crate::qdisc::dualpi2::{Dualpi2Config, Dualpi2EcnMask};
use crate::qdisc::fq_codel::FqCodelConfig;
use crate::qdisc::fq_pie::FqPieConfig;
use crate::qdisc::pels_feedback::PelsFeedbackConfig;
use crate::qdisc::pfq::PfqConfig;
use crate::qdisc::pie::{PieConfig, PieEstimator};
use crate::qdisc::prio::PrioConfig;
use crate::qdisc::rb_red::RbRedConfig;
use crate::qdisc::rb_rio::RbRioConfig;
use crate::qdisc::red::{RedConfig, RedMode};
use crate::qdisc::rio::{RioConfig, RioCurve};
use crate::qdisc::shared::flow_key::{FlowField, FlowKeyConfig};
use crate::qdisc::sqf::SqfConfig;
use crate::qdisc::tbf::TbfConfig;
use crate::qdisc::wrr::{WrrBand, WrrConfig};
use crate::qdisc::{build_qdisc, QdiscConfig, Queue};
use crate::rng::SimRng;
use crate::units::{Limit, Rate, Time};

/// The link rate every fuzzed discipline is built for (RED's idle decay, Rb-RED's service
/// rate, PELS's capacity depend on it).
pub const LINK_RATE: Rate = Rate(10_000_000);

fn red(limit: Limit, mode: RedMode, gentle: bool, ecn: bool) -> QdiscConfig {
    QdiscConfig::Red(RedConfig {
        limit,
        min_th: 3.0,
        max_th: 9.0,
        w_q: 0.2,
        max_p: 0.3,
        gentle,
        mode,
        ecn,
        mean_pkt_size: 500,
        wait: false,
    })
}

fn droptail(limit: Limit) -> QdiscConfig {
    QdiscConfig::Droptail(DropTailConfig { limit })
}

/// The PELS router of section 6.1, WRR[PRIO[green, yellow, red], FIFO] 50/50, with `limit`
/// per band.
fn pels_router(limit: Limit) -> WrrConfig {
    WrrConfig {
        bands: vec![
            WrrBand {
                weight: 500,
                qdisc: QdiscConfig::Prio(PrioConfig { bands: vec![droptail(limit); 3], classifier: Classifier::default() }),
            },
            WrrBand { weight: 500, qdisc: droptail(limit) },
        ],
        classifier: Classifier::Class { map: Some(vec![(3, 0), (2, 0), (1, 0)]), default_band: None },
    }
}

/// Every discipline of this crate, each in packet and in byte limit mode, and the composed
/// ones (PRIO and WRR with children, a shaper, the PELS feedback wrapper around WRR), with
/// small buffers and thresholds so that random runs reach every state (drops, marks,
/// evictions, empty). Names are unique; each new discipline is one more line.
pub fn disciplines() -> Vec<(&'static str, QdiscConfig)> {
    let p12 = Limit::Packets(12);
    let b9k = Limit::Bytes(9_000);
    let by_flow = || FlowKeyConfig::of(&[FlowField::Flow]);
    vec![
        ("droptail/packets", droptail(p12)),
        ("droptail/bytes", droptail(b9k)),
        ("red/packets", red(p12, RedMode::Packets, false, false)),
        ("red/packets-gentle-ecn", red(p12, RedMode::Packets, true, true)),
        ("red/bytes-gentle", red(b9k, RedMode::Bytes, true, false)),
        ("red/bytes-ecn", red(b9k, RedMode::Bytes, false, true)),
        ("red/packets-gentle-wait", {
            let QdiscConfig::Red(c) = red(p12, RedMode::Packets, true, false) else { unreachable!() };
            QdiscConfig::Red(RedConfig { wait: true, ..c })
        }),
        // Rate-based: a 2 ms time constant and w_q 0.2 so that short runs reach every stage.
        (
            "rb_red/packets",
            QdiscConfig::RbRed(RbRedConfig {
                limit: p12,
                time_constant_ns: 2_000_000,
                w_q: 0.2,
                mean_pkt_size: 500,
                ..RbRedConfig::default()
            }),
        ),
        (
            "rb_red/bytes",
            QdiscConfig::RbRed(RbRedConfig {
                limit: b9k,
                time_constant_ns: 2_000_000,
                aggressiveness: 3.0,
                target_queue: Some(4.0),
                w_q: 0.2,
                mean_pkt_size: 500,
            }),
        ),
        (
            "rb_rio/packets",
            QdiscConfig::RbRio(RbRioConfig {
                limit: p12,
                time_constant_ns: 2_000_000,
                w_q: 0.2,
                mean_pkt_size: 500,
                ..RbRioConfig::default()
            }),
        ),
        (
            "rb_rio/bytes",
            QdiscConfig::RbRio(RbRioConfig {
                limit: b9k,
                time_constant_ns: 2_000_000,
                w_q: 0.2,
                mean_pkt_size: 500,
                ..RbRioConfig::default()
            }),
        ),
        (
            "rio/packets",
            QdiscConfig::Rio(RioConfig {
                limit: p12,
                class1: RioCurve { min_th: 1.0, max_th: 4.0, max_p: 0.3 },
                class2: RioCurve { min_th: 2.0, max_th: 6.0, max_p: 0.2 },
                class3: RioCurve { min_th: 3.0, max_th: 9.0, max_p: 0.1 },
                w_q: 0.2,
                mean_pkt_size: 500,
            }),
        ),
        ("rio/bytes", QdiscConfig::Rio(RioConfig { limit: b9k, w_q: 0.2, mean_pkt_size: 500, ..RioConfig::default() })),
        // Per-flow: one entry of each keyed on the engine's flow index, one on the 5-tuple.
        ("sqf/packets", QdiscConfig::Sqf(SqfConfig { limit: p12, flow_key: by_flow() })),
        ("sqf/bytes-5tuple", QdiscConfig::Sqf(SqfConfig { limit: b9k, ..SqfConfig::default() })),
        ("drr/packets", QdiscConfig::Drr(DrrConfig { limit: p12, flow_key: by_flow(), ..DrrConfig::default() })),
        ("drr/bytes-small-quantum", QdiscConfig::Drr(DrrConfig { limit: b9k, quantum: 300, flow_key: by_flow() })),
        ("drr/packets-5tuple", QdiscConfig::Drr(DrrConfig { limit: p12, ..DrrConfig::default() })),
        ("pfq/packets", QdiscConfig::Pfq(PfqConfig { limit: p12, flow_key: by_flow(), ..PfqConfig::default() })),
        ("pfq/bytes", QdiscConfig::Pfq(PfqConfig { limit: b9k, quantum: 500, priority_threshold: 3000, flow_key: by_flow() })),
        ("pfq/bytes-5tuple", QdiscConfig::Pfq(PfqConfig { limit: b9k, ..PfqConfig::default() })),
        // Shaper: a 1600-byte bucket that random waits both refill and leave short.
        ("tbf/bytes", QdiscConfig::Tbf(TbfConfig { rate: Rate(1_000_000), burst: 1600, limit: b9k })),
        ("tbf/packets", QdiscConfig::Tbf(TbfConfig { rate: Rate(100_000), burst: 1400, limit: p12 })),
        (
            "prio/packets",
            QdiscConfig::Prio(PrioConfig {
                bands: vec![droptail(Limit::Packets(4)), red(Limit::Packets(6), RedMode::Packets, true, true), droptail(Limit::Packets(3))],
                classifier: Classifier::default(),
            }),
        ),
        (
            "prio/bytes-class-map",
            QdiscConfig::Prio(PrioConfig {
                bands: vec![red(Limit::Bytes(4_000), RedMode::Bytes, false, false), droptail(Limit::Bytes(3_000))],
                classifier: Classifier::Class { map: Some(vec![(3, 0), (1, 0)]), default_band: Some(1) },
            }),
        ),
        (
            "prio/dscp-mixed-units",
            QdiscConfig::Prio(PrioConfig {
                bands: vec![
                    droptail(Limit::Packets(4)),
                    droptail(Limit::Bytes(3_000)),
                    QdiscConfig::Sqf(SqfConfig { limit: Limit::Packets(5), flow_key: by_flow() }),
                ],
                classifier: Classifier::Dscp { map: vec![(46, 0), (34, 1), (0, 2)], default_band: Some(1) },
            }),
        ),
        (
            "wrr/packets",
            QdiscConfig::Wrr(WrrConfig {
                bands: vec![
                    WrrBand { weight: 1500, qdisc: droptail(Limit::Packets(5)) },
                    WrrBand { weight: 300, qdisc: red(Limit::Packets(7), RedMode::Packets, true, false) },
                ],
                classifier: Classifier::Class { map: Some(vec![(3, 0), (2, 0)]), default_band: None },
            }),
        ),
        // WRR[PRIO[fifo, RED, DRR], TBF]: evictions, marks and a shaped band under one parent.
        (
            "wrr/bytes-prio-drr-tbf",
            QdiscConfig::Wrr(WrrConfig {
                bands: vec![
                    WrrBand {
                        weight: 50,
                        qdisc: QdiscConfig::Prio(PrioConfig {
                            bands: vec![
                                droptail(Limit::Bytes(3_000)),
                                red(Limit::Bytes(3_000), RedMode::Bytes, true, true),
                                QdiscConfig::Drr(DrrConfig { limit: Limit::Bytes(3_000), quantum: 300, flow_key: by_flow() }),
                            ],
                            classifier: Classifier::default(),
                        }),
                    },
                    WrrBand {
                        weight: 50,
                        qdisc: QdiscConfig::Tbf(TbfConfig { rate: Rate(2_000_000), burst: 1500, limit: Limit::Bytes(4_000) }),
                    },
                ],
                classifier: Classifier::Class { map: Some(vec![(3, 0), (2, 0), (1, 0)]), default_band: None },
            }),
        ),
        // The modern AQMs (RFC 8289, 8290, 8033): 1 ms target and 5 ms interval / 2 ms update so that
        // random runs reach their dropping states; packet and byte limits, ECN on and off.
        (
            "codel/packets",
            QdiscConfig::Codel(CodelConfig { limit: p12, target_ns: 1_000_000, interval_ns: 5_000_000, mtu: 500, ecn: false }),
        ),
        (
            "codel/bytes-ecn",
            QdiscConfig::Codel(CodelConfig { limit: b9k, target_ns: 1_000_000, interval_ns: 5_000_000, mtu: 500, ecn: true }),
        ),
        (
            "pie/packets",
            QdiscConfig::Pie(PieConfig {
                limit: p12,
                target_ns: 1_000_000,
                t_update_ns: 2_000_000,
                max_burst_ns: 4_000_000,
                alpha: 20.0,
                beta: 200.0,
                mtu: 500,
                ..PieConfig::default()
            }),
        ),
        (
            "pie/bytes-rate-ecn-derand",
            QdiscConfig::Pie(PieConfig {
                limit: b9k,
                target_ns: 1_000_000,
                t_update_ns: 2_000_000,
                max_burst_ns: 4_000_000,
                alpha: 20.0,
                beta: 200.0,
                ecn: true,
                bytemode: true,
                derandomize: true,
                estimator: PieEstimator::Rate,
                mtu: 500,
                dq_threshold: 2_000,
                ..PieConfig::default()
            }),
        ),
        (
            "fq_codel/packets",
            QdiscConfig::FqCodel(FqCodelConfig {
                limit: p12,
                target_ns: 1_000_000,
                interval_ns: 5_000_000,
                mtu: 500,
                ecn: false,
                drop_batch: 2,
                flow_key: by_flow(),
                ..FqCodelConfig::default()
            }),
        ),
        (
            "fq_codel/bytes-3-buckets",
            QdiscConfig::FqCodel(FqCodelConfig {
                limit: b9k,
                flows: 3,
                quantum: 300,
                target_ns: 1_000_000,
                interval_ns: 5_000_000,
                mtu: 500,
                drop_batch: 2,
                flow_key: by_flow(),
                ..FqCodelConfig::default()
            }),
        ),
        (
            "fq_codel/memory-5tuple",
            QdiscConfig::FqCodel(FqCodelConfig { limit: Limit::Packets(50), memory_limit: Some(6_000), ..FqCodelConfig::default() }),
        ),
        // DualPI2 (RFC 9332): 1 ms target and 2 ms update with high gains so that random runs
        // reach overload; at dequeue and on arrival, time and packet step, both ECN masks.
        (
            "dualpi2/packets",
            QdiscConfig::Dualpi2(Dualpi2Config {
                limit: p12,
                target_ns: 1_000_000,
                tupdate_ns: 2_000_000,
                alpha: 20.0,
                beta: 200.0,
                mtu: 500,
                ..Dualpi2Config::default()
            }),
        ),
        (
            "dualpi2/bytes-enqueue-step-packets",
            QdiscConfig::Dualpi2(Dualpi2Config {
                limit: b9k,
                target_ns: 1_000_000,
                tupdate_ns: 2_000_000,
                alpha: 20.0,
                beta: 200.0,
                step_thresh_packets: Some(2),
                min_qlen_step: 1,
                drop_enqueue: true,
                drop_on_overload: false,
                ecn_mask: Dualpi2EcnMask::AnyEct,
                classic_protection: 50,
                coupling_factor: 3,
                mtu: 500,
                ..Dualpi2Config::default()
            }),
        ),
        // COBALT: 1 ms target, 5 ms interval and a 3 ms BLUE threshold with large BLUE steps so
        // that random runs reach both halves' states.
        (
            "cobalt/packets",
            QdiscConfig::Cobalt(CobaltConfig {
                limit: p12,
                target_ns: 1_000_000,
                interval_ns: 5_000_000,
                p_inc: 0.25,
                p_dec: 0.125,
                blue_threshold_ns: 3_000_000,
                ecn: false,
            }),
        ),
        (
            "cobalt/bytes-ecn",
            QdiscConfig::Cobalt(CobaltConfig {
                limit: b9k,
                target_ns: 1_000_000,
                interval_ns: 5_000_000,
                p_inc: 0.25,
                p_dec: 0.125,
                blue_threshold_ns: 3_000_000,
                ecn: true,
            }),
        ),
        // FQ-PIE: PIE's fuzzing parameters in 3 or 1024 buckets, ECN, rate estimator.
        (
            "fq_pie/packets",
            QdiscConfig::FqPie(FqPieConfig {
                limit: p12,
                target_ns: 1_000_000,
                t_update_ns: 2_000_000,
                max_burst_ns: 4_000_000,
                alpha: 20.0,
                beta: 200.0,
                mtu: 500,
                flow_key: by_flow(),
                ..FqPieConfig::default()
            }),
        ),
        (
            "fq_pie/bytes-3-buckets-ecn-rate",
            QdiscConfig::FqPie(FqPieConfig {
                limit: b9k,
                flows: 3,
                quantum: 300,
                target_ns: 1_000_000,
                t_update_ns: 2_000_000,
                max_burst_ns: 4_000_000,
                alpha: 20.0,
                beta: 200.0,
                ecn: true,
                bytemode: true,
                derandomize: true,
                estimator: PieEstimator::Rate,
                dq_threshold: 2_000,
                mtu: 500,
                flow_key: by_flow(),
                ..FqPieConfig::default()
            }),
        ),
        // CAKE: 9 kB of memory, 5 ms rtt; shaped at the link rate with diffserv4, triple
        // isolation, framing compensation and the aggressive ACK filter; unlimited with 8 tins
        // and per-source-host fairness; flow-blind precedence with washing; ingress mode.
        (
            "cake/shaped-diffserv4-triple-ackfilter",
            QdiscConfig::Cake(CakeConfig {
                bandwidth: LINK_RATE,
                rtt_ns: 5_000_000,
                diffserv: Diffserv::Diffserv4,
                flowmode: FlowMode::TripleIsolate,
                overhead: 38,
                mpu: 84,
                memlimit: Some(9_000),
                ack_filter: AckFilter::AckFilterAggressive,
                ..CakeConfig::default()
            }),
        ),
        (
            "cake/unlimited-diffserv8-dual-srchost-atm",
            QdiscConfig::Cake(CakeConfig {
                rtt_ns: 5_000_000,
                diffserv: Diffserv::Diffserv8,
                flowmode: FlowMode::DualSrchost,
                overhead: -64,
                atm: Atm::Atm,
                memlimit: Some(9_000),
                ack_filter: AckFilter::AckFilter,
                ..CakeConfig::default()
            }),
        ),
        (
            "cake/slow-precedence-flowblind-wash-ptm",
            QdiscConfig::Cake(CakeConfig {
                bandwidth: Rate(100_000),
                rtt_ns: 5_000_000,
                diffserv: Diffserv::Precedence,
                flowmode: FlowMode::Flowblind,
                atm: Atm::Ptm,
                memlimit: Some(9_000),
                wash: true,
                ..CakeConfig::default()
            }),
        ),
        (
            "cake/besteffort-dual-dsthost-ingress",
            QdiscConfig::Cake(CakeConfig {
                ingress: true,
                ack_filter: AckFilter::AckFilter,
                bandwidth: Rate(2_000_000),
                rtt_ns: 5_000_000,
                diffserv: Diffserv::Besteffort,
                flowmode: FlowMode::DualDsthost,
                memlimit: Some(9_000),
                ..CakeConfig::default()
            }),
        ),
        // The modern AQMs inside classful parents: head drops passed up through PRIO and WRR.
        (
            "prio/codel-fq_codel",
            QdiscConfig::Prio(PrioConfig {
                bands: vec![
                    QdiscConfig::Codel(CodelConfig {
                        limit: Limit::Packets(5),
                        target_ns: 1_000_000,
                        interval_ns: 5_000_000,
                        mtu: 500,
                        ecn: true,
                    }),
                    QdiscConfig::FqCodel(FqCodelConfig {
                        limit: Limit::Packets(6),
                        flows: 4,
                        quantum: 500,
                        target_ns: 1_000_000,
                        interval_ns: 5_000_000,
                        mtu: 500,
                        drop_batch: 2,
                        flow_key: by_flow(),
                        ..FqCodelConfig::default()
                    }),
                ],
                classifier: Classifier::Class { map: Some(vec![(3, 0), (2, 0)]), default_band: None },
            }),
        ),
        (
            "wrr/codel-pie",
            QdiscConfig::Wrr(WrrConfig {
                bands: vec![
                    WrrBand {
                        weight: 1500,
                        qdisc: QdiscConfig::Codel(CodelConfig {
                            limit: Limit::Bytes(5_000),
                            target_ns: 1_000_000,
                            interval_ns: 5_000_000,
                            mtu: 500,
                            ecn: false,
                        }),
                    },
                    WrrBand {
                        weight: 600,
                        qdisc: QdiscConfig::Pie(PieConfig {
                            limit: Limit::Packets(7),
                            target_ns: 1_000_000,
                            t_update_ns: 2_000_000,
                            max_burst_ns: 4_000_000,
                            alpha: 20.0,
                            beta: 200.0,
                            ecn: true,
                            mtu: 500,
                            ..PieConfig::default()
                        }),
                    },
                ],
                classifier: Classifier::Class { map: Some(vec![(3, 0), (2, 0)]), default_band: None },
            }),
        ),
        // The PELS feedback wrapper (eq. 11) around the PELS router, 5 ms interval.
        (
            "pels_feedback/packets",
            QdiscConfig::PelsFeedback(PelsFeedbackConfig {
                router_id: 1,
                interval_ns: 5_000_000,
                share: 0.5,
                qdisc: Box::new(QdiscConfig::Wrr(pels_router(Limit::Packets(3)))),
            }),
        ),
        (
            "pels_feedback/bytes",
            QdiscConfig::PelsFeedback(PelsFeedbackConfig {
                router_id: 2,
                interval_ns: 1_000_000,
                share: 1.0,
                qdisc: Box::new(QdiscConfig::Wrr(pels_router(Limit::Bytes(3_000)))),
            }),
        ),
    ]
}

/// What one or more episodes did, for the report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub operations: u64,
    pub arrivals: u64,
    pub accepted: u64,
    pub departures: u64,
    pub evicted: u64,
    /// Largest backlog seen, packets and bytes.
    pub max_packets: usize,
    pub max_bytes: u64,
    /// Most per-flow state entries held at once.
    pub max_flow_states: usize,
}

impl Tally {
    pub fn add(&mut self, o: &Tally) {
        self.operations += o.operations;
        self.arrivals += o.arrivals;
        self.accepted += o.accepted;
        self.departures += o.departures;
        self.evicted += o.evicted;
        self.max_packets = self.max_packets.max(o.max_packets);
        self.max_bytes = self.max_bytes.max(o.max_bytes);
        self.max_flow_states = self.max_flow_states.max(o.max_flow_states);
    }
}

/// A broken property: which, after how many operations of the episode of `seed`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub seed: u64,
    pub operation: u64,
    pub message: String,
}

/// The packet population of one episode: how many flows and which sizes dominate.
struct Population {
    flows: u32,
    /// Mostly small (ACK-sized) packets, mostly full-size ones, or anything.
    size_profile: u8,
}

fn arbitrary_size(rng: &mut SimRng, profile: u8) -> u32 {
    let r = rng.next_u64();
    match (r % 100, profile) {
        (0, _) => 0,
        (1, _) => u32::MAX - (r >> 40) as u32 % 3,
        (2..=3, _) => 9_000 + (r >> 32) as u32 % 57_000, // jumbo frames up to 64 KiB
        (_, 0) => 40 + (r >> 32) as u32 % 60,
        (_, 1) => 1_400 + (r >> 32) as u32 % 101,
        _ => 1 + (r >> 32) as u32 % 1_600,
    }
}

fn arbitrary_packet(rng: &mut SimRng, uid: u64, pop: &Population) -> Packet {
    let r = rng.next_u64();
    let s = rng.next_u64();
    let ecn = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce][(r & 3) as usize];
    let frame_type = [FrameType::None, FrameType::I, FrameType::P, FrameType::B][((r >> 2) & 3) as usize];
    // Classes 0..3 most of the time (every band of the classful disciplines), any byte else.
    let class = if (r >> 4).is_multiple_of(8) { (r >> 8) as u8 } else { ((r >> 8) % 4) as u8 };
    let flow = ((s >> 32) as u32) % pop.flows;
    Packet {
        uid,
        size: arbitrary_size(rng, pop.size_profile),
        flow,
        // Header fields follow the flow, so 5-tuple keys see the same flows as `flow` keys.
        src: flow.wrapping_mul(2_654_435_761),
        dst: flow % 7,
        sport: (flow % 65_536) as u16,
        dport: if (r >> 16).is_multiple_of(2) { 80 } else { 5004 },
        proto: if (r >> 17).is_multiple_of(2) { Proto::Tcp } else { Proto::Udp },
        class,
        dscp: if (r >> 18).is_multiple_of(4) { (r >> 24) as u8 } else { [0u8, 34, 46][((r >> 24) % 3) as usize] },
        ecn,
        seq: s,
        payload: (s & 0xffff) as u32,
        frame_id: (s >> 16) as u32,
        frame_type,
        frag_count: 1 + (r >> 40) as u16 % 8,
        ..Packet::default()
    }
}

/// One clock step, always forward: often none (equal timestamps), usually up to a few packet
/// times, sometimes seconds, rarely a jump next to the end of time.
fn clock_step(rng: &mut SimRng, now: Time) -> Time {
    let r = rng.next_u64();
    let step = match r % 1000 {
        0..=399 => 0,
        400..=899 => (r >> 20) % 2_000_000,
        900..=989 => (r >> 20) % 5_000_000_000,
        990..=998 => (r >> 20) % (1 << 40),
        _ => u64::MAX - 1_000_000_000 - now.0.min(u64::MAX - 1_000_000_000) + (r >> 40) % 1_000,
    };
    now + Time(step)
}

fn check_after_step(q: &Queue, cfg: &QdiscConfig) -> Result<(), String> {
    q.check_invariants()?;
    let (packets, bytes) = (q.len_packets(), q.len_bytes());
    match cfg.limit() {
        Limit::Packets(n) if packets as u64 > n => return Err(format!("{packets} packets queued, limit {n} packets")),
        Limit::Bytes(b) if bytes > b || packets as u64 > b => {
            return Err(format!("{packets} packets / {bytes} bytes queued, limit {b} bytes"));
        }
        _ => {}
    }
    let states = q.flow_states();
    if states > packets {
        return Err(format!("{states} per-flow state entries for {packets} packets queued"));
    }
    if let Some(avg) = q.average_queue() {
        if !(avg.is_finite() && avg >= 0.0) {
            return Err(format!("average queue {avg}"));
        }
    }
    let mut stats = Vec::new();
    q.named_stats(&mut stats);
    if let Some(s) = stats.iter().find(|s| !s.value.is_finite()) {
        return Err(format!("named statistic {} = {}", s.name, s.value));
    }
    Ok(())
}

/// Runs `operations` random operations from the seed `seed` on a fresh `cfg`, checking the
/// properties of the module docs after each one.
pub fn run_episode(cfg: &QdiscConfig, seed: u64, operations: u64) -> Result<Tally, Failure> {
    let fail = |operation: u64, message: String| Failure { seed, operation, message };
    let mut q = build_qdisc(cfg, LINK_RATE).map_err(|e| fail(0, format!("does not build: {e}")))?;
    let mut ops = SimRng::stream(seed, "fuzz/operations");
    let mut drops = SimRng::stream(seed, "fuzz/qdisc");
    let flows = match ops.next_u64() % 4 {
        0 => 1,
        1 => 6,
        2 => 1_000,
        _ => u32::MAX,
    };
    let pop = Population { flows, size_profile: (ops.next_u64() % 3) as u8 };
    // Arrival share: under, near and over the departure rate, so queues fill and drain.
    let arrive_permille = 300 + ops.next_u64() % 500;
    let mut now = Time::ZERO;
    let mut t = Tally::default();
    let mut uid = 0u64;
    while t.operations < operations {
        t.operations += 1;
        let r = ops.next_u64() % 1000;
        if r < arrive_permille {
            uid += 1;
            let p = arbitrary_packet(&mut ops, uid, &pop);
            let out = q.enqueue(p, now, &mut drops);
            t.arrivals += 1;
            t.accepted += matches!(out.verdict, crate::qdisc::Verdict::Enqueued | crate::qdisc::Verdict::Marked) as u64;
            t.evicted += out.evicted.len() as u64;
            if let Some(label) = q.feedback_label(&p) {
                if !label.loss.is_finite() {
                    return Err(fail(t.operations, format!("feedback label loss {}", label.loss)));
                }
            }
        } else if r < 950 {
            // One departure, or a drain of up to 64 (a link catching up after a pause).
            let n = if r < 930 { 1 } else { 64 };
            for _ in 0..n {
                match q.dequeue(now).packet {
                    Some(_) => t.departures += 1,
                    None => {
                        if q.len_packets() > 0 {
                            match q.next_dequeue_time(now) {
                                Some(at) if at > now => {}
                                // At the end of representable time a shaper earns no tokens.
                                _ if now == Time::MAX => {}
                                other => {
                                    return Err(fail(
                                        t.operations,
                                        format!(
                                            "stall: dequeue refused at {now:?} with {} packets queued, next_dequeue_time {other:?}",
                                            q.len_packets()
                                        ),
                                    ));
                                }
                            }
                        }
                        break;
                    }
                }
            }
        } else {
            now = clock_step(&mut ops, now);
        }
        check_after_step(&q, cfg).map_err(|e| fail(t.operations, e))?;
        t.max_packets = t.max_packets.max(q.len_packets());
        t.max_bytes = t.max_bytes.max(q.len_bytes());
        t.max_flow_states = t.max_flow_states.max(q.flow_states());
    }
    Ok(t)
}

/// The seed of episode `i` of a run seeded `seed` (SplitMix64, so neighbours differ).
pub fn episode_seed(seed: u64, i: u64) -> u64 {
    crate::qdisc::shared::flow_key::splitmix64(seed ^ crate::qdisc::shared::flow_key::splitmix64(i))
}

/// Episodes of random length (1 to `max_episode` operations) until `operations` are done.
pub fn run(cfg: &QdiscConfig, seed: u64, operations: u64, max_episode: u64) -> Result<Tally, Failure> {
    let mut total = Tally::default();
    let mut i = 0;
    while total.operations < operations {
        let s = episode_seed(seed, i);
        let len = (1 + s % max_episode.max(1)).min(operations - total.operations);
        total.add(&run_episode(cfg, s, len)?);
        i += 1;
    }
    Ok(total)
}
