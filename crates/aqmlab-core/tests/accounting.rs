//! One property test for every discipline: drive it with arbitrary arrivals, departures and
//! clock steps, and check after every step that the accounting wrapper's identities hold
//! (received = enqueued + dropped on arrival; backlog = enqueued - dequeued - evicted) in
//! packets and in bytes, and that a discipline never exceeds its physical limit.
//! Add each new discipline to `aqmlab_core::fuzz::disciplines()`.

use aqmlab_core::fuzz;
use aqmlab_core::{build_qdisc, Ecn, Limit, Packet, QdiscConfig, Rate, SimRng, Time};
use proptest::prelude::*;

/// The one list of disciplines, shared with the long fuzz run (`examples/fuzz_disciplines.rs`).
fn configs() -> Vec<QdiscConfig> {
    fuzz::disciplines().into_iter().map(|(_, c)| c).collect()
}

#[derive(Clone, Debug)]
enum Op {
    Arrive { size: u32, flow: u32, class: u8, ect: bool },
    Depart,
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (size(), 0u32..6, 0u8..4, any::<bool>())
            .prop_map(|(size, flow, class, ect)| Op::Arrive { size, flow, class, ect }),
        3 => Just(Op::Depart),
        1 => (0u64..5_000_000).prop_map(Op::Wait),
    ]
}

/// Mostly ordinary sizes, with empty, jumbo and the largest representable packets.
fn size() -> impl Strategy<Value = u32> {
    prop_oneof![20 => 40u32..1500, 1 => Just(0u32), 1 => 9_000u32..65_536, 1 => Just(u32::MAX)]
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

/// A short run of the seeded driver (the long one is `examples/fuzz_disciplines.rs`): wider
/// packets, flows, classes and clock jumps than the property above, plus the per-flow state,
/// average-queue and no-stall checks of `aqmlab_core::fuzz`.
#[test]
fn seeded_fuzz_short_run_finds_nothing() {
    for (name, cfg) in fuzz::disciplines() {
        let t = fuzz::run(&cfg, 7, 100_000, 20_000)
            .unwrap_or_else(|f| panic!("{name}: {} (episode {}, operation {})", f.message, f.seed, f.operation));
        assert_eq!(t.operations, 100_000, "{name}");
        assert!(t.arrivals > 0 && t.departures > 0, "{name}: {t:?}");
    }
}

#[test]
fn fuzzed_disciplines_have_unique_names_and_cover_both_limit_modes() {
    let list = fuzz::disciplines();
    let mut names: Vec<&str> = list.iter().map(|(n, _)| *n).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), list.len());
    let kinds = [
        "droptail",
        "red",
        "rb_red",
        "rb_rio",
        "rio",
        "sqf",
        "drr",
        "pfq",
        "tbf",
        "prio",
        "wrr",
        "pels_feedback",
        "codel",
        "fq_codel",
        "pie",
        "dualpi2",
        "cobalt",
        "fq_pie",
        "cake",
    ];
    // Linux cake limits buffer memory only (`memlimit`; its 10240-packet `limit` only caps the
    // default memory), so it has no packet-limit mode.
    let bytes_only = ["cake"];
    // Every fuzzed entry is of a listed kind, so the list below cannot silently fall behind.
    for (name, _) in &list {
        assert!(kinds.contains(&name.split('/').next().unwrap()), "{name}: add its kind to this test");
    }
    for kind in kinds {
        let modes: Vec<Limit> = list.iter().filter(|(n, _)| n.split('/').next() == Some(kind)).map(|(_, c)| c.limit()).collect();
        assert!(bytes_only.contains(&kind) || modes.iter().any(|l| matches!(l, Limit::Packets(_))), "{kind} has no packet-limit entry");
        assert!(modes.iter().any(|l| matches!(l, Limit::Bytes(_))), "{kind} has no byte-limit entry");
    }
}
