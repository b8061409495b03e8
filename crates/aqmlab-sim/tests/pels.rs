//! PELS in the simulator without the Python front end: labels go out with data packets, come
//! back in ACKs and drive MKC; the parking lot's path validation.

use aqmlab_model::record::Column;
use aqmlab_sim::{config, Simulation};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64};

const SEC: u64 = 1_000_000_000;

fn droptail(limit: u64) -> serde_json::Value {
    json!({"kind": "droptail", "limit": {"packets": limit}})
}

fn pels_app() -> serde_json::Value {
    json!({"kind": "pels", "fps": 10.0, "packet_size": 500, "base_packets": 3, "max_packets": 126,
           "initial_rate_bps": 128000.0, "alpha_bps": 20000.0, "beta": 0.5, "sigma": 0.5, "p_thr": 0.75,
           "gamma_low": 0.05, "gamma_init": 0.5, "partition": true})
}

fn group(name: &str, count: u32, start_s: u64, secs: u64, path: Option<[u32; 2]>) -> serde_json::Value {
    let mut g = json!({
        "name": name, "count": count, "start_ns": start_s * SEC, "start_jitter_ns": 0,
        "stop_ns": secs * SEC, "access_rate_bps": 10_000_000u64,
        "sender_delay_ns": [5_000_000u64, 5_000_000u64], "receiver_delay_ns": 5_000_000u64,
        "class_weights": [0.0, 0.0, 0.0], "dscp": 0, "app": pels_app()
    });
    if let Some(p) = path {
        g["path"] = json!(p);
    }
    g
}

/// A 2 mb/s bottleneck whose whole rate is the PELS share: PRIO[green, yellow, red] inside
/// the feedback wrapper.
fn scenario(secs: u64, groups: Vec<serde_json::Value>, chain: serde_json::Value) -> serde_json::Value {
    let pels = json!({"kind": "pels_feedback", "router_id": 1, "interval_ns": 30_000_000u64, "share": 1.0,
                      "qdisc": {"kind": "prio", "bands": [droptail(50), droptail(50), droptail(50)]}});
    json!({
        "seed": 1,
        "duration_ns": secs * SEC,
        "topology": {
            "bottleneck": {"rate_bps": 2_000_000u64, "delay_ns": 10_000_000u64, "qdisc": pels},
            "reverse": {"rate_bps": 2_000_000u64, "delay_ns": 10_000_000u64, "qdisc": droptail(1000)},
            "access_qdisc": droptail(10_000),
            "chain": chain,
        },
        "flow_groups": groups,
        "records": {"packet_events": false, "queue_sample_ns": 100_000_000u64, "flow_sample_ns": 100_000_000u64, "pcap": false}
    })
}

fn run(v: serde_json::Value) -> Simulation {
    let cfg = config::parse(&v.to_string()).expect("valid config");
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run(&AtomicBool::new(false), &AtomicU64::new(0)).unwrap();
    sim.check_invariants().unwrap();
    sim
}

fn f64_column(tables: &[(&'static str, Vec<(&'static str, Column)>)], table: &str, column: &str) -> Vec<f64> {
    let t = &tables.iter().find(|(n, _)| *n == table).unwrap().1;
    match &t.iter().find(|(n, _)| *n == column).unwrap().1 {
        Column::F64(v) => v.clone(),
        Column::U64(v) => v.iter().map(|&x| x as f64).collect(),
        Column::U32(v) => v.iter().map(|&x| x as f64).collect(),
        Column::U8(v) => v.iter().map(|&x| x as f64).collect(),
        Column::OptU64(v) => v.iter().map(|x| x.map_or(f64::NAN, |x| x as f64)).collect(),
    }
}

#[test]
fn one_flow_settles_at_c_plus_alpha_over_beta_through_echoed_labels() {
    let mut sim = run(scenario(20, vec![group("pels", 1, 0, 20, None)], json!([])));
    let (tables, _) = sim.take_records();
    let t = f64_column(&tables, "pels_control", "t_ns");
    let rate = f64_column(&tables, "pels_control", "rate_bps");
    let epoch = f64_column(&tables, "pels_control", "epoch");
    // About one control step per 30 ms router epoch, in increasing epochs.
    assert!(epoch.windows(2).all(|w| w[1] > w[0]));
    assert!((550..=667).contains(&rate.len()), "{} steps in 20 s", rate.len());
    // Eq. (10) with N = 1: C + alpha/beta = 2.04 mb/s, averaged over the last 10 s.
    let late: Vec<f64> = t.iter().zip(&rate).filter(|(t, _)| **t >= 10e9).map(|(_, r)| *r).collect();
    let mean = late.iter().sum::<f64>() / late.len() as f64;
    assert!((mean - 2.04e6).abs() < 0.05 * 2.04e6, "{mean}");
}

#[test]
fn a_chain_adds_routers_and_paths_must_lie_on_it() {
    let hop = json!([{"forward": {"rate_bps": 2_000_000u64, "delay_ns": 10_000_000u64, "qdisc": droptail(100)},
                      "reverse": {"rate_bps": 2_000_000u64, "delay_ns": 10_000_000u64, "qdisc": droptail(100)}}]);
    let sim = run(scenario(3, vec![group("long", 1, 0, 3, None), group("short", 1, 0, 3, Some([1, 2]))], hop.clone()));
    let flows = sim.flows_table();
    let rtt = match &flows.iter().find(|(n, _)| *n == "base_rtt_ns").unwrap().1 {
        Column::U64(v) => v.clone(),
        _ => unreachable!(),
    };
    assert_eq!(rtt, vec![60_000_000, 40_000_000], "the long flow crosses both hops");
    assert!(sim.delivered_bytes().iter().all(|&b| b > 0));
    let bad = scenario(3, vec![group("x", 1, 0, 3, Some([1, 3]))], hop);
    let err = config::parse(&bad.to_string()).unwrap_err();
    assert_eq!(err.path, "flows.x.path", "{err}");
}
