//! Shared by the simulator's integration tests that run a JSON config and read its tables
//! (`abr.rs`, `gcc.rs`, `bbr.rs`, `hystart.rs`); each test binary uses only some of these.
#![allow(dead_code)]

use aqmlab_model::record::{Column, Table};
use aqmlab_sim::{config, Simulation};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64};

/// One bulk TCP flow alone on a dumbbell for `secs` seconds, seed 1: a 10 Mbit/s bottleneck with a
/// deep Drop-Tail FIFO (300 packets, about 9 BDP), a 40 ms base RTT, and TCP with an MSS of
/// 1460 B, SACK, an initial window of 10, no delayed ACKs and ECN off. `tcp` is added to those
/// settings and names the controller (`congestion_control`, also the flow group's name) and
/// whatever the test varies (`pacing`, `hystart`...); `packet_events` records every packet.
pub fn one_flow_in_a_deep_fifo(secs: u64, tcp: Value, packet_events: bool) -> Value {
    let mut settings = json!({"mss": 1460, "initial_cwnd_segments": 10, "initial_rto_ns": 1_000_000_000u64,
        "min_rto_ns": 200_000_000u64, "max_rto_ns": 60_000_000_000u64,
        "clock_granularity_ns": 1_000_000u64, "delayed_ack": false,
        "delayed_ack_timeout_ns": 40_000_000u64, "rwnd": 100_000_000u64, "ecn": false,
        "sack": true});
    for (k, v) in tcp.as_object().expect("tcp settings are an object") {
        settings[k] = v.clone();
    }
    let name = settings["congestion_control"].as_str().expect("tcp names its congestion_control").to_string();
    let droptail = |limit: u64| json!({"kind": "droptail", "limit": {"packets": limit}});
    // Base RTT: 2 x (14 ms bottleneck + 5 ms sender access + 1 ms receiver access) = 40 ms.
    json!({
        "seed": 1,
        "duration_ns": secs * 1_000_000_000,
        "topology": {
            "bottleneck": {"rate_bps": 10_000_000u64, "delay_ns": 14_000_000u64, "qdisc": droptail(300)},
            "reverse": {"rate_bps": 10_000_000u64, "delay_ns": 14_000_000u64, "qdisc": droptail(1000)},
            "access_qdisc": droptail(10_000),
        },
        "flow_groups": [{
            "name": name, "count": 1, "start_ns": 0, "start_jitter_ns": 0,
            "stop_ns": secs * 1_000_000_000, "access_rate_bps": 100_000_000u64,
            "sender_delay_ns": [5_000_000u64, 5_000_000u64], "receiver_delay_ns": 1_000_000u64,
            "class_weights": [0.0, 0.0, 0.0], "dscp": 0, "app": {"kind": "bulk", "tcp": settings}
        }],
        "records": {"packet_events": packet_events, "queue_sample_ns": 10_000_000u64, "flow_sample_ns": 100_000_000u64, "pcap": false}
    })
}

/// Runs a simulator config to its end, checks the network's invariants and returns the records.
pub fn run(v: Value) -> Vec<(&'static str, Table)> {
    let cfg = config::parse(&v.to_string()).expect("valid config");
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run(&AtomicBool::new(false), &AtomicU64::new(0)).unwrap();
    sim.check_invariants().unwrap();
    sim.take_records().0
}

/// Column `name` of table `table`; panics naming what is missing.
pub fn column<'a>(tables: &'a [(&'static str, Table)], table: &str, name: &str) -> &'a Column {
    let t = &tables.iter().find(|(n, _)| *n == table).unwrap_or_else(|| panic!("no table {table}")).1;
    &t.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no column {table}.{name}")).1
}

pub fn u8s(c: &Column) -> Vec<u8> {
    match c {
        Column::U8(v) => v.clone(),
        _ => panic!("not u8"),
    }
}

pub fn u32s(c: &Column) -> Vec<u32> {
    match c {
        Column::U32(v) => v.clone(),
        _ => panic!("not u32"),
    }
}

pub fn u64s(c: &Column) -> Vec<u64> {
    match c {
        Column::U64(v) => v.clone(),
        _ => panic!("not u64"),
    }
}

pub fn f64s(c: &Column) -> Vec<f64> {
    match c {
        Column::F64(v) => v.clone(),
        _ => panic!("not f64"),
    }
}

/// `count` bulk TCP flows on [`one_flow_in_a_deep_fifo`]'s dumbbell (10 Mbit/s, 40 ms base RTT,
/// the same TCP settings with `tcp` added) but with a Drop-Tail FIFO of `limit_packets` and each
/// flow starting at a uniform time in the first 0.5 s (the group's start stream, seed 1).
pub fn flows_in_a_fifo(secs: u64, count: u32, limit_packets: u64, tcp: Value) -> Value {
    let mut v = one_flow_in_a_deep_fifo(secs, tcp, false);
    v["topology"]["bottleneck"]["qdisc"]["limit"]["packets"] = json!(limit_packets);
    let group = &mut v["flow_groups"][0];
    group["count"] = json!(count);
    group["start_jitter_ns"] = json!(500_000_000u64);
    v
}
