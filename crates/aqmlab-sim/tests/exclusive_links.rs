//! Links only one flow uses, crossed by arithmetic instead of events (`link/exclusive.rs`),
//! against the event-per-step model (`Simulation::disable_exclusive_links`).

use aqmlab_sim::{config, Simulation};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64};

/// A lossy 12-flow dumbbell (SACK, delayed ACKs, initial window 10, a 30-packet bottleneck
/// FIFO, starts over the first second) whose rates and delays are odd numbers of bits per
/// second and nanoseconds, so that no two events of different flows fall on one nanosecond:
/// where nothing ties, the order of events cannot differ between the two models.
fn untied(access_limit: Value) -> Value {
    let tcp = json!({"mss": 1460, "initial_cwnd_segments": 10, "initial_rto_ns": 1_000_000_000u64,
        "min_rto_ns": 200_000_000u64, "max_rto_ns": 60_000_000_000u64, "clock_granularity_ns": 1_000_000u64,
        "delayed_ack": true, "delayed_ack_timeout_ns": 40_000_000u64, "rwnd": 100_000_000u64,
        "ecn": false, "sack": true});
    let droptail = |limit: Value| json!({"kind": "droptail", "limit": limit});
    json!({
        "seed": 3,
        "duration_ns": 8_000_000_000u64,
        "topology": {
            "bottleneck": {"rate_bps": 10_000_019u64, "delay_ns": 10_000_019u64, "qdisc": droptail(json!({"packets": 30}))},
            "reverse": {"rate_bps": 10_000_079u64, "delay_ns": 10_000_079u64, "qdisc": droptail(json!({"packets": 1000}))},
            "access_qdisc": droptail(access_limit),
        },
        "flow_groups": [{
            "name": "bulk", "count": 12, "start_ns": 0, "start_jitter_ns": 1_000_000_000u64,
            "stop_ns": 8_000_000_000u64, "access_rate_bps": 100_000_007u64,
            "sender_delay_ns": [5_000_003u64, 20_000_017u64], "receiver_delay_ns": 1_000_037u64,
            "class_weights": [0.0, 0.0, 0.0], "dscp": 0, "app": {"kind": "bulk", "tcp": tcp}
        }],
        "records": {"packet_events": false, "queue_sample_ns": 10_000_000u64, "flow_sample_ns": 100_000_000u64, "pcap": true}
    })
}

fn run(v: &Value, exclusive_links: bool) -> Simulation {
    let mut sim = Simulation::new(config::parse(&v.to_string()).expect("valid config")).unwrap();
    if !exclusive_links {
        sim.disable_exclusive_links();
    }
    sim.run(&AtomicBool::new(false), &AtomicU64::new(0)).unwrap();
    sim.check_invariants().unwrap();
    sim
}

/// Each record table's name and bytes.
type TableBytes = Vec<(&'static str, Vec<u8>)>;

/// Every record table, byte for byte, and the pcap.
fn records(sim: &mut Simulation) -> (TableBytes, Option<Vec<u8>>) {
    let (tables, pcap) = sim.take_records();
    let tables = tables.into_iter().map(|(name, t)| (name, t.into_iter().flat_map(|(_, c)| c.to_le_bytes()).collect())).collect();
    (tables, pcap)
}

/// The summary without the count of the model's events, which is what the shortcut changes.
fn summary_but_events(sim: &Simulation) -> Value {
    let mut s = sim.summary();
    s.as_object_mut().unwrap().remove("events");
    s
}

/// Where no events tie, crossing the access links by arithmetic changes no result: the same
/// tables, pcap, summary (but its event count) and access-link counters as an event for every
/// step, with losses at the bottleneck, and in the second case at the senders' access buffers
/// too (3 packets, or 4,500 bytes, against initial bursts of 10), while taking at least a
/// third fewer events from the event list.
#[test]
fn exclusive_links_change_no_result_where_no_events_tie() {
    for access_limit in [json!({"packets": 10_000}), json!({"packets": 3}), json!({"bytes": 4500})] {
        let v = untied(access_limit.clone());
        let (mut fast, mut slow) = (run(&v, true), run(&v, false));
        let case = format!("access limit {access_limit}");
        assert!(fast.bottleneck_stats().total_dropped_packets() > 0, "losses must exercise recovery");
        let access_drops: u64 = (0..12).map(|f| fast.link_stats(&format!("flow{f}/up")).unwrap().total_dropped_packets()).sum();
        assert_eq!(access_drops > 0, access_limit != json!({"packets": 10_000}), "access drops {access_drops}, {case}");
        for f in 0..12 {
            for name in [format!("flow{f}/up"), format!("flow{f}/down-rev")] {
                // Links a host sends on count each packet's arrival and fate when it is sent, in
                // both models; the arithmetic counts its departure at once too, so at the end
                // of the run the packets still waiting in the buffer (3 at most) count as sent.
                let (a, b) = (fast.link_stats(&name).unwrap(), slow.link_stats(&name).unwrap());
                assert_eq!(
                    (a.received_bytes, a.enqueued_bytes, a.dropped_bytes),
                    (b.received_bytes, b.enqueued_bytes, b.dropped_bytes),
                    "{name}, {case}"
                );
                let waiting_at_the_end = a.dequeued_packets - b.dequeued_packets;
                assert!(waiting_at_the_end <= 3, "{name}: {waiting_at_the_end} more sent, {case}");
            }
        }
        let (fewer, all) = (fast.counters().dispatched, slow.counters().dispatched);
        assert!(fewer * 3 < all * 2, "events dispatched: {fewer} against {all}, {case}");
        assert_eq!(summary_but_events(&fast), summary_but_events(&slow), "{case}");
        let ((fast_tables, fast_pcap), (slow_tables, slow_pcap)) = (records(&mut fast), records(&mut slow));
        for ((name, a), (_, b)) in fast_tables.iter().zip(&slow_tables) {
            assert!(a == b, "table {name} differs, {case}");
        }
        assert!(fast_pcap.is_some() && fast_pcap == slow_pcap, "pcap differs, {case}");
    }
}

/// Where events tie (every flow starts on the same nanosecond, the rates are round and the
/// senders' access delays 2-25 ms in steps of 1 ms),
/// the two models may order them differently (a packet arrival is scheduled when its
/// transmission starts instead of when it ends) and their results part in detail: here the
/// bottleneck's packet records differ. What the links carry does not: the same bytes through
/// the bottleneck within 1 % and the same drop rate within 10 %.
#[test]
fn exclusive_links_keep_the_totals_where_events_tie() {
    let mut v = untied(json!({"packets": 10_000}));
    v["records"]["packet_events"] = json!(true);
    v["topology"]["bottleneck"]["rate_bps"] = json!(10_000_000u64);
    v["topology"]["bottleneck"]["delay_ns"] = json!(10_000_000u64);
    v["topology"]["reverse"]["rate_bps"] = json!(10_000_000u64);
    v["topology"]["reverse"]["delay_ns"] = json!(10_000_000u64);
    let group = &mut v["flow_groups"][0];
    group["start_jitter_ns"] = json!(0);
    group["count"] = json!(24);
    group["sender_delay_ns"] = json!([2_000_000u64, 25_000_000u64]);
    group["receiver_delay_ns"] = json!(1_000_000u64);
    group["access_rate_bps"] = json!(100_000_000u64);
    let (mut fast, mut slow) = (run(&v, true), run(&v, false));
    let (a, b) = (fast.bottleneck_stats().clone(), slow.bottleneck_stats().clone());
    let sent = |s: &aqmlab_core::QdiscStats| s.dequeued_bytes as f64;
    let drops = |s: &aqmlab_core::QdiscStats| s.total_dropped_packets() as f64 / s.received_packets as f64;
    assert!(records(&mut fast).0 != records(&mut slow).0, "ties must reorder events for this test to mean anything");
    assert!((sent(&a) / sent(&b) - 1.0).abs() < 0.01, "bytes sent {} against {}", sent(&a), sent(&b));
    assert!((drops(&a) / drops(&b) - 1.0).abs() < 0.10, "drop rate {:.4} against {:.4}", drops(&a), drops(&b));
}
