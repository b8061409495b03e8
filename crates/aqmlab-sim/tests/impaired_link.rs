//! A bottleneck with netem's impairments in the simulator: its loss rate is the model's, and
//! jitter reorders packets only when asked.

use aqmlab_sim::{config, Simulation};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64};

const MS: u64 = 1_000_000;

/// One CBR flow of 1000-byte packets at 8 Mbit/s (1000 packets/s) for `secs` - 1 s (the last
/// second lets every packet arrive, jittered or not) over a 100 Mbit/s
/// bottleneck with `impairments`.
fn run(impairments: serde_json::Value, secs: u64) -> Simulation {
    let droptail = json!({"kind": "droptail", "limit": {"packets": 1000}});
    let v = json!({
        "seed": 5,
        "duration_ns": secs * 1_000_000_000,
        "topology": {
            "bottleneck": {"rate_bps": 100_000_000u64, "delay_ns": 10 * MS, "qdisc": droptail, "impairments": impairments},
            "reverse": {"rate_bps": 100_000_000u64, "delay_ns": 10 * MS, "qdisc": droptail},
            "access_qdisc": droptail,
        },
        "flow_groups": [{
            "name": "cbr", "count": 1, "start_ns": 0, "start_jitter_ns": 0, "stop_ns": (secs - 1) * 1_000_000_000,
            "access_rate_bps": 1_000_000_000u64, "sender_delay_ns": [MS, MS], "receiver_delay_ns": MS,
            "class_weights": [0.0, 0.0, 0.0], "dscp": 0,
            "app": {"kind": "cbr", "rate_bps": 8_000_000u64, "packet_size": 1000}
        }],
        "records": {"packet_events": false, "queue_sample_ns": 100 * MS, "flow_sample_ns": 1000 * MS, "pcap": false}
    });
    let cfg = config::parse(&v.to_string()).expect("valid config");
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run(&AtomicBool::new(false), &AtomicU64::new(0)).unwrap();
    sim.check_invariants().unwrap();
    sim
}

/// Packets the receiver got, from its delivered bytes (1000 - 28 bytes of payload each).
fn received(sim: &Simulation) -> f64 {
    sim.delivered_bytes()[0] as f64 / 972.0
}

#[test]
fn a_lossy_bottleneck_loses_packets_at_its_rate() {
    let clean = received(&run(json!({}), 20));
    let p = 0.1;
    let lossy = received(&run(json!({"loss": {"kind": "bernoulli", "p": p}}), 20));
    let rate = 1.0 - lossy / clean;
    let half = 1.96 * (p * (1.0 - p) / clean).sqrt();
    assert!((rate - p).abs() < half, "loss {rate} over {clean} packets, expected {p} +- {half}");
}

#[test]
fn duplication_delivers_extra_copies() {
    let clean = received(&run(json!({}), 20));
    let d = 0.2;
    let doubled = received(&run(json!({"duplicate": d}), 20));
    let extra = doubled / clean - 1.0;
    let half = 1.96 * (d * (1.0 - d) / clean).sqrt();
    assert!((extra - d).abs() < half, "duplicated {extra}, expected {d} +- {half}");
}

#[test]
fn jitter_keeps_every_packet_and_reordering_jitter_too() {
    // 1 ms between packets, jitter up to 5 ms: a time-ordered line reorders, and the delay
    // line's out-of-order inserts must still deliver every packet once, each at its due time.
    let clean = received(&run(json!({}), 5));
    assert_eq!(received(&run(json!({"jitter_ns": 5 * MS}), 5)), clean);
    assert_eq!(received(&run(json!({"jitter_ns": 5 * MS, "reorder": true}), 5)), clean);
}

#[test]
fn bad_impairments_are_refused_naming_the_field() {
    let v = json!({"loss": {"kind": "bernoulli", "p": 2.0}});
    let droptail = json!({"kind": "droptail", "limit": {"packets": 10}});
    let cfg = json!({
        "seed": 1, "duration_ns": MS,
        "topology": {"bottleneck": {"rate_bps": 1_000_000u64, "delay_ns": 0, "qdisc": droptail, "impairments": v},
                     "reverse": {"rate_bps": 1_000_000u64, "delay_ns": 0, "qdisc": droptail}, "access_qdisc": droptail},
        "flow_groups": [],
        "records": {"packet_events": false, "queue_sample_ns": MS, "flow_sample_ns": MS, "pcap": false}
    });
    let e = config::parse(&cfg.to_string()).unwrap_err();
    assert_eq!(e.path, "bottleneck.impairments", "{e}");
    assert!(e.message.starts_with("loss.p"), "{e}");
}
