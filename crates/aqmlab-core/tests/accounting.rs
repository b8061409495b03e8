//! One property test for every discipline: drive it with arbitrary arrivals, departures and
//! clock steps, and check after every step that the accounting wrapper's identities hold
//! (received = enqueued + dropped on arrival; backlog = enqueued - dequeued - evicted) in
//! packets and in bytes, and that a discipline never exceeds its physical limit.
//! Add each new discipline to `configs()`.

use aqmlab_core::qdisc::codel::CodelConfig;
use aqmlab_core::qdisc::drr::DrrConfig;
use aqmlab_core::qdisc::fq_codel::FqCodelConfig;
use aqmlab_core::qdisc::pie::{PieConfig, PieEstimator};
use aqmlab_core::qdisc::fifo::DropTailConfig;
use aqmlab_core::qdisc::flowid::{FlowField, FlowKeyConfig};
use aqmlab_core::qdisc::pfq::PfqConfig;
use aqmlab_core::qdisc::pels_feedback::PelsFeedbackConfig;
use aqmlab_core::qdisc::prio::{Classifier, PrioConfig};
use aqmlab_core::qdisc::tbf::TbfConfig;
use aqmlab_core::qdisc::wrr::{WrrBand, WrrConfig};
use aqmlab_core::qdisc::sqf::SqfConfig;
use aqmlab_core::qdisc::rb_red::RbRedConfig;
use aqmlab_core::qdisc::rb_rio::RbRioConfig;
use aqmlab_core::qdisc::red::{RedConfig, RedMode};
use aqmlab_core::qdisc::rio::{RioConfig, RioCurve};
use aqmlab_core::{build_qdisc, Ecn, Limit, Packet, QdiscConfig, Rate, SimRng, Time};
use proptest::prelude::*;

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
    })
}

/// CoDel with a 1 ms target and 5 ms interval, so that the property's waits (up to 5 ms)
/// reach its dropping state and re-entries.
fn codel(limit: Limit, ecn: bool) -> QdiscConfig {
    QdiscConfig::Codel(CodelConfig { limit, target_ns: 1_000_000, interval_ns: 5_000_000, mtu: 500, ecn })
}

/// PIE updating every 2 ms with a 1 ms target and a 4 ms burst allowance, for the same reason.
fn pie(limit: Limit, estimator: PieEstimator, ecn: bool, bytemode: bool, derandomize: bool) -> QdiscConfig {
    QdiscConfig::Pie(PieConfig {
        limit,
        target_ns: 1_000_000,
        t_update_ns: 2_000_000,
        max_burst_ns: 4_000_000,
        alpha: 20.0,
        beta: 200.0,
        ecn,
        bytemode,
        derandomize,
        estimator,
        mtu: 500,
        dq_threshold: 2_000,
        ..PieConfig::default()
    })
}

fn fq_codel(limit: Limit, flows: u32, quantum: u32, ecn: bool) -> QdiscConfig {
    QdiscConfig::FqCodel(FqCodelConfig {
        limit,
        flows,
        quantum,
        ecn,
        target_ns: 1_000_000,
        interval_ns: 5_000_000,
        mtu: 500,
        drop_batch: 2,
        flow_key: FlowKeyConfig::of(&[FlowField::Flow]),
        ..FqCodelConfig::default()
    })
}

fn configs() -> Vec<QdiscConfig> {
    vec![
        // The modern AQMs, packet and byte limits, ECN on and off, and inside classful parents.
        codel(Limit::Packets(12), false),
        codel(Limit::Bytes(9_000), true),
        pie(Limit::Packets(12), PieEstimator::Timestamp, false, false, false),
        pie(Limit::Bytes(9_000), PieEstimator::Rate, true, true, true),
        fq_codel(Limit::Packets(12), 1024, 1514, false),
        fq_codel(Limit::Bytes(9_000), 3, 300, true),
        QdiscConfig::FqCodel(FqCodelConfig { limit: Limit::Packets(50), memory_limit: Some(6_000), ..FqCodelConfig::default() }),
        QdiscConfig::Prio(PrioConfig {
            bands: vec![codel(Limit::Packets(5), true), fq_codel(Limit::Packets(6), 4, 500, false)],
            classifier: Classifier::Class { map: Some(vec![(3, 0), (2, 0)]), default_band: None },
        }),
        QdiscConfig::Wrr(WrrConfig {
            bands: vec![
                WrrBand { weight: 1500, qdisc: codel(Limit::Bytes(5_000), false) },
                WrrBand { weight: 600, qdisc: pie(Limit::Packets(7), PieEstimator::Timestamp, true, false, false) },
            ],
            classifier: Classifier::Class { map: Some(vec![(3, 0), (2, 0)]), default_band: None },
        }),
        QdiscConfig::Droptail(DropTailConfig { limit: Limit::Packets(12) }),
        QdiscConfig::Droptail(DropTailConfig { limit: Limit::Bytes(9_000) }),
        red(Limit::Packets(12), RedMode::Packets, false, false),
        red(Limit::Packets(12), RedMode::Packets, true, true),
        red(Limit::Bytes(9_000), RedMode::Bytes, true, false),
        red(Limit::Bytes(9_000), RedMode::Bytes, false, true),
        // Rate-based: a 2 ms time constant and w_q 0.2 so that short random runs reach every
        // stage (the property drives 10 Mbit/s with up to 5 ms steps).
        QdiscConfig::RbRed(RbRedConfig { limit: Limit::Packets(12), time_constant_ns: 2_000_000, w_q: 0.2, mean_pkt_size: 500, ..RbRedConfig::default() }),
        QdiscConfig::RbRed(RbRedConfig { limit: Limit::Bytes(9_000), time_constant_ns: 2_000_000, aggressiveness: 3.0, target_queue: Some(4.0), w_q: 0.2, mean_pkt_size: 500 }),
        QdiscConfig::RbRio(RbRioConfig { limit: Limit::Packets(12), time_constant_ns: 2_000_000, w_q: 0.2, mean_pkt_size: 500, ..RbRioConfig::default() }),
        QdiscConfig::RbRio(RbRioConfig { limit: Limit::Bytes(9_000), time_constant_ns: 2_000_000, w_q: 0.2, mean_pkt_size: 500, ..RbRioConfig::default() }),
        QdiscConfig::Rio(RioConfig {
            limit: Limit::Packets(12),
            class1: RioCurve { min_th: 1.0, max_th: 4.0, max_p: 0.3 },
            class2: RioCurve { min_th: 2.0, max_th: 6.0, max_p: 0.2 },
            class3: RioCurve { min_th: 3.0, max_th: 9.0, max_p: 0.1 },
            w_q: 0.2,
            mean_pkt_size: 500,
        }),
        QdiscConfig::Rio(RioConfig { limit: Limit::Bytes(9_000), w_q: 0.2, mean_pkt_size: 500, ..RioConfig::default() }),
        // Per-flow: the test's packets differ only in `flow`, so most entries key on it; one
        // keeps the 5-tuple default on purpose (every packet is then one flow).
        QdiscConfig::Sqf(SqfConfig { limit: Limit::Packets(12), flow_key: FlowKeyConfig::of(&[FlowField::Flow]) }),
        QdiscConfig::Sqf(SqfConfig { limit: Limit::Bytes(9_000), ..SqfConfig::default() }),
        QdiscConfig::Drr(DrrConfig { limit: Limit::Packets(12), flow_key: FlowKeyConfig::of(&[FlowField::Flow]), ..DrrConfig::default() }),
        QdiscConfig::Drr(DrrConfig { limit: Limit::Bytes(9_000), quantum: 300, flow_key: FlowKeyConfig::of(&[FlowField::Flow]) }),
        QdiscConfig::Pfq(PfqConfig { limit: Limit::Packets(12), flow_key: FlowKeyConfig::of(&[FlowField::Flow]), ..PfqConfig::default() }),
        QdiscConfig::Pfq(PfqConfig { limit: Limit::Bytes(9_000), quantum: 500, priority_threshold: 3000, flow_key: FlowKeyConfig::of(&[FlowField::Flow]) }),
        // Shaper: 1 Mbit/s with a 1600-byte bucket, so the random waits both refill it and
        // leave it short; arrivals above 1600 bytes are refused (never conformant).
        QdiscConfig::Tbf(TbfConfig { rate: Rate(1_000_000), burst: 1600, limit: Limit::Bytes(9_000) }),
        QdiscConfig::Tbf(TbfConfig { rate: Rate(100_000), burst: 1400, limit: Limit::Packets(12) }),
        // Classful: children Drop-Tail and RED; the test's classes 0..3 reach every band.
        QdiscConfig::Prio(PrioConfig {
            bands: vec![
                QdiscConfig::Droptail(DropTailConfig { limit: Limit::Packets(4) }),
                red(Limit::Packets(6), RedMode::Packets, true, true),
                QdiscConfig::Droptail(DropTailConfig { limit: Limit::Packets(3) }),
            ],
            classifier: Classifier::default(),
        }),
        QdiscConfig::Prio(PrioConfig {
            bands: vec![
                red(Limit::Bytes(4_000), RedMode::Bytes, false, false),
                QdiscConfig::Droptail(DropTailConfig { limit: Limit::Bytes(3_000) }),
            ],
            classifier: Classifier::Class { map: Some(vec![(3, 0), (1, 0)]), default_band: Some(1) },
        }),
        QdiscConfig::Wrr(WrrConfig {
            bands: vec![
                WrrBand { weight: 1500, qdisc: QdiscConfig::Droptail(DropTailConfig { limit: Limit::Packets(5) }) },
                WrrBand { weight: 300, qdisc: red(Limit::Packets(7), RedMode::Packets, true, false) },
            ],
            classifier: Classifier::Class { map: Some(vec![(3, 0), (2, 0)]), default_band: None },
        }),
        // PELS router: WRR[PRIO[green, yellow, red], FIFO] 50/50, with a shaped band and a
        // DRR (LQD evictions) band thrown in for composition; bytes throughout.
        QdiscConfig::Wrr(WrrConfig {
            bands: vec![
                WrrBand {
                    weight: 50,
                    qdisc: QdiscConfig::Prio(PrioConfig {
                        bands: vec![
                            QdiscConfig::Droptail(DropTailConfig { limit: Limit::Bytes(3_000) }),
                            red(Limit::Bytes(3_000), RedMode::Bytes, true, true),
                            QdiscConfig::Drr(DrrConfig { limit: Limit::Bytes(3_000), quantum: 300, flow_key: FlowKeyConfig::of(&[FlowField::Flow]) }),
                        ],
                        classifier: Classifier::default(),
                    }),
                },
                WrrBand { weight: 50, qdisc: QdiscConfig::Tbf(TbfConfig { rate: Rate(2_000_000), burst: 1500, limit: Limit::Bytes(4_000) }) },
            ],
            classifier: Classifier::Class { map: Some(vec![(3, 0), (2, 0), (1, 0)]), default_band: None },
        }),
        // The PELS feedback wrapper (eq. 11) around WRR with a 5 ms interval, so that the
        // random waits close many epochs.
        QdiscConfig::PelsFeedback(PelsFeedbackConfig {
            router_id: 1,
            interval_ns: 5_000_000,
            share: 0.5,
            qdisc: Box::new(QdiscConfig::Wrr(WrrConfig {
                bands: vec![
                    WrrBand { weight: 500, qdisc: QdiscConfig::Prio(PrioConfig {
                        bands: vec![QdiscConfig::Droptail(DropTailConfig { limit: Limit::Packets(3) }); 3],
                        classifier: Classifier::default(),
                    }) },
                    WrrBand { weight: 500, qdisc: QdiscConfig::Droptail(DropTailConfig { limit: Limit::Packets(4) }) },
                ],
                classifier: Classifier::Class { map: Some(vec![(3, 0), (2, 0), (1, 0)]), default_band: None },
            })),
        }),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Arrive { size: u32, flow: u32, class: u8, ect: bool },
    Depart,
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (40u32..1500, 0u32..6, 0u8..4, any::<bool>())
            .prop_map(|(size, flow, class, ect)| Op::Arrive { size, flow, class, ect }),
        3 => Just(Op::Depart),
        1 => (0u64..5_000_000).prop_map(Op::Wait),
    ]
}

fn max_backlog(cfg: &QdiscConfig) -> (u64, u64) {
    let limit = cfg.limit();
    match limit {
        Limit::Packets(n) => (n, u64::MAX),
        Limit::Bytes(b) => (u64::MAX, b),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn accounting_holds_for_every_discipline(ops in prop::collection::vec(op(), 1..300), seed in any::<u64>()) {
        for cfg in configs() {
            let mut q = build_qdisc(&cfg, Rate::mbps(10)).unwrap();
            let mut rng = SimRng::stream(seed, "prop");
            let mut now = Time::ZERO;
            let (max_p, max_b) = max_backlog(&cfg);
            for (uid, op) in ops.iter().enumerate() {
                match *op {
                    Op::Arrive { size, flow, class, ect } => {
                        let ecn = if ect { Ecn::Ect0 } else { Ecn::NotEct };
                        let p = Packet { uid: uid as u64, size, flow, class, ecn, ..Packet::default() };
                        q.enqueue(p, now, &mut rng);
                    }
                    Op::Depart => { q.dequeue(now); }
                    Op::Wait(ns) => now += Time(ns),
                }
                prop_assert!(q.check_invariants().is_ok(), "{:?}: {}", cfg, q.check_invariants().unwrap_err());
                prop_assert!((q.len_packets() as u64) <= max_p && q.len_bytes() <= max_b, "{:?} over its limit", cfg);
            }
        }
    }
}
