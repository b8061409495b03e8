//! The discipline seam keeps its promises: every packet a dequeue drops at the head and every
//! mark it sets reaches the caller through `DequeueOutcome`, also through classful containers;
//! the capabilities a discipline declares hold of its behaviour; and the named statistics say
//! what their names say.

use aqmlab_core::fuzz;
use aqmlab_core::qdisc::codel::CodelConfig;
use aqmlab_core::qdisc::droptail::DropTailConfig;
use aqmlab_core::qdisc::fq_codel::FqCodelConfig;
use aqmlab_core::qdisc::pels_feedback::PelsFeedbackConfig;
use aqmlab_core::qdisc::pie::PieConfig;
use aqmlab_core::qdisc::prio::PrioConfig;
use aqmlab_core::qdisc::red::{RedConfig, RedMode};
use aqmlab_core::qdisc::wrr::{WrrBand, WrrConfig};
use aqmlab_core::qdisc::{NamedStat, AVERAGE_QUEUE};
use aqmlab_core::{build_qdisc, Ecn, Limit, Packet, QdiscConfig, Queue, Rate, SimRng, Time, Verdict};
use std::collections::HashSet;

const LINK: Rate = Rate::mbps(8);

fn codel(ecn: bool) -> QdiscConfig {
    QdiscConfig::Codel(CodelConfig { limit: Limit::Packets(300), ecn, ..CodelConfig::default() })
}

fn fq_codel(ecn: bool) -> QdiscConfig {
    QdiscConfig::FqCodel(FqCodelConfig { ecn, ..FqCodelConfig::default() })
}

/// The head-dropping (and head-marking) disciplines, bare and inside every container.
fn head_droppers(ecn: bool) -> Vec<(String, QdiscConfig)> {
    let droptail = QdiscConfig::Droptail(DropTailConfig { limit: Limit::Packets(50) });
    vec![
        ("codel".into(), codel(ecn)),
        ("fq_codel".into(), fq_codel(ecn)),
        ("prio[codel]".into(), QdiscConfig::Prio(PrioConfig { bands: vec![codel(ecn)], classifier: Default::default() })),
        (
            // Unclassified packets go to the last band.
            "wrr[droptail, codel]".into(),
            QdiscConfig::Wrr(WrrConfig {
                bands: vec![WrrBand { weight: 1500, qdisc: droptail }, WrrBand { weight: 1500, qdisc: codel(ecn) }],
                classifier: Default::default(),
            }),
        ),
        (
            "pels_feedback[fq_codel]".into(),
            QdiscConfig::PelsFeedback(PelsFeedbackConfig {
                router_id: 1,
                interval_ns: 30_000_000,
                share: 0.5,
                qdisc: Box::new(fq_codel(ecn)),
            }),
        ),
    ]
}

/// What the caller of `Queue::dequeue` saw over a run.
#[derive(Default, Debug)]
struct Seen {
    accepted: u64,
    departures: u64,
    dropped: u64,
    marked: u64,
}

/// A standing queue of 200 packets of 1000 B (class 0: the last band of a container), one
/// departure per millisecond for 600 ms: CoDel's sojourn stays far above target, so it drops
/// (or marks) at the head again and again. Checks every outcome as it comes.
fn standing_queue(name: &str, q: &mut Queue, ecn: Ecn) -> Seen {
    let mut rng = SimRng::stream(3, "seam");
    let mut seen = Seen::default();
    let mut gone = HashSet::new();
    let mut uid = 0u64;
    for ms in 0..600u64 {
        let now = Time::from_millis(ms);
        while q.len_packets() < 200 {
            let p = Packet { uid, flow: (uid % 3) as u32, size: 1000, ecn, ..Packet::default() };
            uid += 1;
            let out = q.enqueue(p, now, &mut rng);
            assert!(out.evicted.is_empty(), "{name}: evicted on arrival");
            seen.accepted += matches!(out.verdict, Verdict::Enqueued | Verdict::Marked) as u64;
        }
        let out = q.dequeue(now);
        for e in out.dropped {
            assert!(gone.insert(e.packet.uid), "{name}: packet {} reported twice", e.packet.uid);
        }
        seen.dropped += out.dropped.len() as u64;
        if let Some(p) = out.packet {
            assert!(gone.insert(p.uid), "{name}: packet {} sent after it was dropped", p.uid);
            seen.departures += 1;
            // Every packet arrived unmarked: CE on the way out is this dequeue's mark.
            assert_eq!(p.ecn == Ecn::Ce, out.marked, "{name}: packet {} CE {:?}, reported marked {}", p.uid, p.ecn, out.marked);
            seen.marked += out.marked as u64;
        } else {
            assert!(!out.marked, "{name}: a mark without a packet");
        }
    }
    seen
}

/// A head drop or a mark that does not reach the caller breaks one of these: every accepted
/// packet is sent, reported dropped, or still queued; the wrapper's counters (built from the
/// outcomes) agree with the caller's count; and CE on a sent packet is exactly a reported mark.
#[test]
fn head_drops_and_marks_from_dequeue_reach_the_caller() {
    for ecn in [false, true] {
        let input = if ecn { Ecn::Ect0 } else { Ecn::NotEct };
        for (name, cfg) in head_droppers(ecn) {
            let mut q = build_qdisc(&cfg, LINK).unwrap();
            let seen = standing_queue(&name, &mut q, input);
            let s = q.stats();
            assert_eq!(seen.accepted, seen.departures + seen.dropped + q.len_packets() as u64, "{name} ecn {ecn}: {seen:?}");
            assert_eq!(s.evicted_packets.iter().sum::<u64>(), seen.dropped, "{name} ecn {ecn}");
            assert_eq!(s.marked_packets, seen.marked, "{name} ecn {ecn}");
            assert_eq!(s.dequeued_packets, seen.departures, "{name} ecn {ecn}");
            if ecn {
                assert!(seen.marked > 5 && seen.dropped == 0, "{name}: ECN-capable packets are marked, not dropped: {seen:?}");
            } else {
                assert!(seen.dropped > 5 && seen.marked == 0, "{name}: {seen:?}");
            }
            q.check_invariants().unwrap();
        }
    }
}

fn arrival(rng: &mut SimRng, uid: u64) -> Packet {
    let size = match rng.next_u64() % 10 {
        0 => 9_500, // larger than a 9000-byte limit: refused even by an empty buffer
        1 => 40,
        _ => 200 + (rng.next_u64() % 1300) as u32,
    };
    let class = (rng.next_u64() % 4) as u8;
    Packet { uid, flow: (rng.next_u64() % 5) as u32, size, class, ..Packet::default() }
}

/// One step of the twin runs below: what the caller can observe of it.
#[derive(Debug, PartialEq)]
enum Step {
    Arrived(Verdict, Vec<u64>),
    Departed(Option<u64>, bool, Vec<u64>),
}

fn departed(q: &mut Queue, now: Time) -> Step {
    let out = q.dequeue(now);
    Step::Departed(out.packet.map(|p| p.uid), out.marked, out.dropped.iter().map(|e| e.packet.uid).collect())
}

fn arrived(q: &mut Queue, p: Packet, now: Time, rng: &mut SimRng) -> Step {
    let out = q.enqueue(p, now, rng);
    Step::Arrived(out.verdict, out.evicted.iter().map(|e| e.packet.uid).collect())
}

/// How the second twin departs from the first.
#[derive(Clone, Copy, PartialEq)]
enum Twist {
    /// It also dequeues its empty buffer after every step.
    EmptyDequeues,
    /// An arrival to its empty buffer on an idle link passes through (`Queue::pass_through`)
    /// where the first twin enqueues it and dequeues it at once, as an engine does.
    PassThrough,
}

/// Runs the same random arrivals and departures on two fresh copies of `cfg`, the second with
/// `twist`, and requires both to be seen doing the same, step by step.
fn twins(name: &str, cfg: &QdiscConfig, seed: u64, twist: Twist) {
    let (mut a, mut b) = (build_qdisc(cfg, LINK).unwrap(), build_qdisc(cfg, LINK).unwrap());
    let mut ops = SimRng::stream(seed, "seam/ops");
    let (mut rng_a, mut rng_b) = (SimRng::stream(seed, "seam/qdisc"), SimRng::stream(seed, "seam/qdisc"));
    let mut now = Time::ZERO;
    let mut passed = 0;
    for uid in 0..3_000u64 {
        now += Time::from_micros(ops.next_u64() % 1_500);
        let (sa, sb) = if ops.bernoulli(0.5) {
            let p = arrival(&mut ops, uid);
            // The link is idle for a third of the arrivals to an empty buffer (busy sending the
            // packet before for the others, which then queue behind it).
            let idle = ops.bernoulli(1.0 / 3.0);
            if twist == Twist::PassThrough && idle && a.is_empty() {
                let sa = (arrived(&mut a, p, now, &mut rng_a), departed(&mut a, now));
                let sb = match b.pass_through(p, now) {
                    Ok(sent) => {
                        passed += 1;
                        (Step::Arrived(Verdict::Enqueued, vec![]), Step::Departed(Some(sent.uid), false, vec![]))
                    }
                    Err(p) => (arrived(&mut b, p, now, &mut rng_b), departed(&mut b, now)),
                };
                assert_eq!(sa, sb, "{name}: the twins part at step {uid}");
                assert_eq!(stats_of(&a), stats_of(&b), "{name}: state parts at step {uid}");
                continue;
            }
            (arrived(&mut a, p, now, &mut rng_a), arrived(&mut b, p, now, &mut rng_b))
        } else {
            (departed(&mut a, now), departed(&mut b, now))
        };
        assert_eq!(sa, sb, "{name}: the twins part at step {uid}");
        if twist == Twist::EmptyDequeues && b.is_empty() {
            assert_eq!(departed(&mut b, now), Step::Departed(None, false, vec![]), "{name}");
        }
        assert_eq!(a.stats(), b.stats(), "{name}: counters part at step {uid}");
        assert_eq!(stats_of(&a), stats_of(&b), "{name}: state parts at step {uid}");
    }
    assert!(twist != Twist::PassThrough || passed > 20, "{name}: only {passed} packets passed through");
}

/// `empty_dequeue_is_noop`: extra dequeues of the empty buffer change nothing that follows.
/// `pass_through_limit`: on an empty buffer, `pass_through` admits exactly the packets that
/// `enqueue` would accept and `dequeue` would hand straight back, with the same counters, and
/// what follows is the same either way.
#[test]
fn declared_capabilities_hold_of_the_behaviour() {
    let (mut noop, mut pass) = (0, 0);
    for (name, cfg) in fuzz::disciplines() {
        let caps = *build_qdisc(&cfg, LINK).unwrap().capabilities();
        if caps.empty_dequeue_is_noop {
            noop += 1;
            twins(name, &cfg, 1, Twist::EmptyDequeues);
        }
        if let Some(limit) = caps.pass_through_limit {
            pass += 1;
            twins(name, &cfg, 2, Twist::PassThrough);
            // Refused exactly when the limit does not admit the packet into an empty buffer.
            let mut rng = SimRng::stream(2, "seam/qdisc");
            for size in [0, 40, 1500, 8_999, 9_000, 9_001, 65_535] {
                let p = Packet { uid: 1, size, ..Packet::default() };
                let mut q = build_qdisc(&cfg, LINK).unwrap();
                assert_eq!(q.pass_through(p, Time::ZERO).is_ok(), limit.admits(0, 0, size), "{name}: {size} B");
                let mut q = build_qdisc(&cfg, LINK).unwrap();
                let accepted = q.enqueue(p, Time::ZERO, &mut rng).verdict == Verdict::Enqueued;
                assert_eq!(accepted, limit.admits(0, 0, size), "{name}: {size} B");
            }
            // A non-empty buffer never passes a packet by.
            let mut q = build_qdisc(&cfg, LINK).unwrap();
            q.enqueue(Packet { uid: 1, size: 100, ..Packet::default() }, Time::ZERO, &mut rng);
            assert!(q.pass_through(Packet { uid: 2, size: 100, ..Packet::default() }, Time::ZERO).is_err(), "{name}");
        }
    }
    assert!(noop > 0 && pass > 0, "no fuzzed discipline claims the capabilities: the test checks nothing");
}

fn stats_of(q: &Queue) -> Vec<NamedStat> {
    let mut out = Vec::new();
    q.named_stats(&mut out);
    out
}

fn value(stats: &[NamedStat], name: &str) -> f64 {
    stats.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no {name} in {stats:?}")).value
}

#[test]
fn named_stats_say_what_they_are() {
    // RED: its average queue, the same as `average_queue`.
    let red = RedConfig {
        limit: Limit::Packets(100),
        min_th: 5.0,
        max_th: 15.0,
        w_q: 0.5,
        max_p: 0.1,
        gentle: false,
        mode: RedMode::Packets,
        ecn: false,
        mean_pkt_size: 1000,
        wait: false,
    };
    let mut q = build_qdisc(&QdiscConfig::Red(red), LINK).unwrap();
    let mut rng = SimRng::stream(1, "t");
    for uid in 0..4 {
        q.enqueue(Packet { uid, size: 1000, ..Packet::default() }, Time::ZERO, &mut rng);
    }
    let s = stats_of(&q);
    assert_eq!(s.len(), 1);
    assert_eq!(Some(value(&s, AVERAGE_QUEUE)), q.average_queue());
    assert!(value(&s, AVERAGE_QUEUE) > 1.0);

    // PIE: no average queue; its drop probability under its own name, rising under overload.
    let mut q = build_qdisc(&QdiscConfig::Pie(PieConfig::default()), LINK).unwrap();
    assert_eq!(value(&stats_of(&q), "drop_probability"), 0.0);
    for uid in 0..3_000u64 {
        let now = Time::from_micros(uid * 500); // 16 Mbit/s of 1000 B into 8 Mbit/s
        q.enqueue(Packet { uid, size: 1000, ..Packet::default() }, now, &mut rng);
        if uid % 2 == 0 {
            q.dequeue(now);
        }
    }
    assert_eq!(q.average_queue(), None, "PIE keeps no average queue length");
    let p = value(&stats_of(&q), "drop_probability");
    assert!(p > 0.0 && p <= 1.0, "drop probability {p}");

    // CoDel: in its dropping state with a count once a standing queue lasted an interval.
    let mut q = build_qdisc(&codel(false), LINK).unwrap();
    assert_eq!((value(&stats_of(&q), "dropping"), value(&stats_of(&q), "drop_count")), (0.0, 0.0));
    standing_queue("codel", &mut q, Ecn::NotEct);
    let s = stats_of(&q);
    assert_eq!(value(&s, "dropping"), 1.0);
    assert!(value(&s, "drop_count") > 1.0, "{s:?}");

    // FQ-CoDel: arrivals of three flows make three new flows; serving them moves them on.
    let mut q = build_qdisc(&fq_codel(false), LINK).unwrap();
    for uid in 0..6u64 {
        let sport = 1000 + (uid % 3) as u16; // the default key is the 5-tuple
        q.enqueue(Packet { uid, flow: (uid % 3) as u32, sport, size: 1000, ..Packet::default() }, Time::ZERO, &mut rng);
    }
    let s = stats_of(&q);
    assert_eq!((value(&s, "new_flows"), value(&s, "old_flows")), (3.0, 0.0));
    for _ in 0..3 {
        q.dequeue(Time::ZERO);
    }
    let s = stats_of(&q);
    assert_eq!(value(&s, "new_flows") + value(&s, "old_flows"), 3.0, "{s:?}");
    assert!(value(&s, "old_flows") >= 1.0, "{s:?}");
}
