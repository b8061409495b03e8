//! BBRv3 (`tcp::cc::bbr3`) on the 10 Mbit/s, 40 ms dumbbell of `common`, with SACK, seed 1:
//! * one flow with a 1-BDP Drop-Tail FIFO (33 packets of 1500 B; BDP = 50 kB) fills the link;
//! * two flows with a shallow FIFO (0.5 BDP, 17 packets), against BBR v1 on the same path:
//!   shares (Jain's index) and retransmission rates of both, measured and printed; docs/tcp.md
//!   has the numbers.

mod common;

use serde_json::json;

const SECS: u64 = 60;
const WARMUP_NS: u64 = 10_000_000_000;
const RATE_BPS: f64 = 10e6;

struct Outcome {
    /// Bottleneck utilization after the warm-up (wire bytes).
    utilization: f64,
    /// Jain's fairness index of the flows' deliveries after the warm-up.
    jain: f64,
    /// Retransmitted segments over segments sent, whole run.
    retransmission_rate: f64,
}

fn measure(cc: &str, count: u32, limit_packets: u64) -> Outcome {
    let tables = common::run(common::flows_in_a_fifo(SECS, count, limit_packets, json!({"congestion_control": cc, "pacing": true})));
    let t = common::u64s(common::column(&tables, "flow_samples", "t_ns"));
    let flow = common::u32s(common::column(&tables, "flow_samples", "flow"));
    let delivered = common::u64s(common::column(&tables, "flow_samples", "delivered_bytes"));
    let end = *t.iter().max().unwrap();
    let at = |f: u32, x: u64| -> f64 {
        t.iter().zip(&flow).zip(&delivered).filter(|((t, g), _)| **g == f && **t <= x).map(|(_, d)| *d as f64).next_back().unwrap_or(0.0)
    };
    let shares: Vec<f64> = (0..count).map(|f| at(f, end) - at(f, WARMUP_NS)).collect();
    let payload: f64 = shares.iter().sum();
    let utilization = payload * 1500.0 / 1460.0 * 8.0 / ((end - WARMUP_NS) as f64 / 1e9) / RATE_BPS;
    let jain = payload.powi(2) / (count as f64 * shares.iter().map(|x| x * x).sum::<f64>());
    let sent: u64 = common::u64s(common::column(&tables, "flows", "packets_sent")).iter().sum();
    let retransmitted: u64 = common::u64s(common::column(&tables, "flows", "retransmissions")).iter().sum();
    let o = Outcome { utilization, jain, retransmission_rate: retransmitted as f64 / sent as f64 };
    eprintln!(
        "{cc} x{count}, {limit_packets}-packet FIFO: utilization {:.3}, Jain {:.3}, retransmissions {retransmitted} of {sent} ({:.2} %), shares {shares:?}",
        o.utilization,
        o.jain,
        100.0 * o.retransmission_rate
    );
    o
}

#[test]
fn one_bbr3_flow_fills_a_one_bdp_fifo() {
    let o = measure("bbr3", 1, 33);
    assert!(o.utilization > 0.90, "utilization {}", o.utilization);
}

#[test]
fn two_bbr3_flows_against_bbr_v1_in_a_shallow_fifo() {
    let v3 = measure("bbr3", 2, 17);
    let v1 = measure("bbr", 2, 17);
    assert!(v3.utilization > 0.85, "bbr3 utilization {}", v3.utilization);
    assert!(v3.jain >= v1.jain - 0.01, "bbr3 Jain {} below v1's {}", v3.jain, v1.jain);
    assert!(
        v3.retransmission_rate < v1.retransmission_rate,
        "bbr3 retransmits {} vs v1 {}",
        v3.retransmission_rate,
        v1.retransmission_rate
    );
}
