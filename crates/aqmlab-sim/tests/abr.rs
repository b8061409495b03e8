//! The ABR client (`sim/apps/abr.rs`) on small dumbbells: convergence to the top rung on a
//! fast link and to a lower one on a narrow link, for every algorithm; stalls when even the
//! lowest rung does not fit; several clients starting at different times; determinism.

mod common;

use aqmlab_sim::config;
use common::{column, f64s, run, u32s, u64s};
use serde_json::{json, Value};

const S: u64 = 1_000_000_000;
const RUNGS_KBPS: [u64; 6] = [300, 750, 1200, 1850, 2850, 4300];
const ALGORITHMS: [&str; 6] = ["throughput", "bba", "bola", "mpc", "robust_mpc", "bola_e"];

fn tcp() -> Value {
    json!({"mss": 1460, "initial_cwnd_segments": 10, "initial_rto_ns": S, "min_rto_ns": 200_000_000u64,
           "max_rto_ns": 60 * S, "clock_granularity_ns": 1_000_000u64, "delayed_ack": false,
           "delayed_ack_timeout_ns": 200_000_000u64, "rwnd": 4_000_000u64, "ecn": false, "sack": true})
}

/// 2 s segments at constant bitrate, `segments` of them; SSIM rising with the rung.
fn ladder(rungs_kbps: &[u64], segments: usize) -> Value {
    let sizes: Vec<Vec<u64>> = rungs_kbps.iter().map(|k| vec![k * 1000 * 2 / 8; segments]).collect();
    let ssim: Vec<Vec<f64>> = (0..rungs_kbps.len()).map(|r| vec![8.0 + r as f64; segments]).collect();
    json!({"segment_duration_ns": 2 * S, "bitrates_bps": rungs_kbps.iter().map(|k| k * 1000).collect::<Vec<_>>(),
           "sizes_bytes": sizes, "ssim_db": ssim})
}

fn abr_app(algorithm: &str, ladder: Value) -> Value {
    let max_buffer_s = 30.0;
    json!({"kind": "abr", "abr": {"algorithm": algorithm, "safety_factor": 0.9, "throughput_window": 4,
            "bba_reservoir_s": 0.375 * max_buffer_s, "bba_cushion_s": 0.525 * max_buffer_s, "bola_gamma_p": 5.0,
            "bola_buffer_target_s": max_buffer_s, "mpc_horizon": 5},
           "ladder": ladder, "max_buffer_ns": 30 * S, "startup_ns": 2 * S, "request_size": 300,
           "request_timeout_ns": S, "tcp": tcp()})
}

fn scenario(rate_bps: u64, secs: u64, clients: u32, jitter_ns: u64, app: Value) -> Value {
    let droptail = |limit: u64| json!({"kind": "droptail", "limit": {"packets": limit}});
    json!({
        "seed": 7, "duration_ns": secs * S,
        "topology": {
            "bottleneck": {"rate_bps": rate_bps, "delay_ns": 10_000_000u64, "qdisc": droptail(100)},
            "reverse": {"rate_bps": rate_bps, "delay_ns": 10_000_000u64, "qdisc": droptail(100)},
            "access_qdisc": droptail(10_000),
        },
        "flow_groups": [{
            "name": "abr", "count": clients, "start_ns": 0, "start_jitter_ns": jitter_ns, "stop_ns": secs * S,
            "access_rate_bps": 1_000_000_000u64, "sender_delay_ns": [5_000_000u64, 5_000_000u64],
            "receiver_delay_ns": 1_000_000u64, "class_weights": [0.0, 0.0, 0.0], "dscp": 0, "app": app
        }],
        "records": {"packet_events": false, "queue_sample_ns": 100_000_000u64, "flow_sample_ns": S, "pcap": false}
    })
}

#[test]
fn every_algorithm_reaches_the_top_rung_on_a_fast_free_link() {
    for algorithm in ALGORITHMS {
        let t = run(scenario(100_000_000, 120, 1, 0, abr_app(algorithm, ladder(&RUNGS_KBPS, 60))));
        let rungs = u32s(column(&t, "abr_segments", "rung"));
        assert!(rungs.len() >= 50, "{algorithm}: only {} segments in 120 s", rungs.len());
        let last = &rungs[rungs.len() - 10..];
        assert!(last.iter().all(|&r| r == 5), "{algorithm}: last rungs {last:?}");
        assert_eq!(u32s(column(&t, "abr_sessions", "stalls")), vec![0], "{algorithm}");
    }
}

#[test]
fn every_algorithm_settles_below_a_narrow_link() {
    // 2 Mbit/s: 1850 kbit/s fits only with a little headroom, 2850 does not.
    for algorithm in ALGORITHMS {
        let t = run(scenario(2_000_000, 300, 1, 0, abr_app(algorithm, ladder(&RUNGS_KBPS, 200))));
        let rungs = u32s(column(&t, "abr_segments", "rung"));
        let bitrates = u64s(column(&t, "abr_segments", "bitrate_bps"));
        let half = rungs.len() / 2;
        assert!(half >= 40, "{algorithm}: only {} segments", rungs.len());
        let mean = bitrates[half..].iter().sum::<u64>() as f64 / (rungs.len() - half) as f64;
        assert!(mean <= 2.0e6, "{algorithm}: mean bitrate {mean} over a 2 Mbit/s link");
        assert!(mean >= 0.75e6, "{algorithm}: mean bitrate {mean} wastes the link");
        assert!(rungs[half..].iter().all(|&r| r < 5), "{algorithm}: the top rung under a narrow link");
    }
}

#[test]
fn too_narrow_a_link_stalls_and_the_books_balance() {
    // 250 kbit/s below the lowest rung's 300: the player must stall, again and again.
    let t = run(scenario(250_000, 120, 1, 0, abr_app("throughput", ladder(&RUNGS_KBPS, 100))));
    let stalls = u32s(column(&t, "abr_sessions", "stalls"))[0];
    let stall_ns = u64s(column(&t, "abr_sessions", "stall_ns"))[0];
    let played_ns = u64s(column(&t, "abr_sessions", "played_ns"))[0];
    let startup_ns = u64s(column(&t, "abr_sessions", "startup_ns"))[0];
    assert!(stalls >= 3, "stalls {stalls}");
    assert!(u32s(column(&t, "abr_segments", "rung")).iter().all(|&r| r == 0));
    // The video never ends here, so the session is startup + played + stalled, exactly.
    assert_eq!(startup_ns + played_ns + stall_ns, 120 * S);
    // Media played never exceeds media downloaded.
    let segments = u32s(column(&t, "abr_sessions", "segments"))[0] as u64;
    assert!(played_ns <= segments * 2 * S);
    let ratio = f64s(column(&t, "abr_sessions", "stall_ratio"))[0];
    assert!((ratio - stall_ns as f64 / (stall_ns + played_ns) as f64).abs() < 1e-12);
}

#[test]
fn many_clients_start_apart_share_and_repeat_exactly() {
    let v = scenario(10_000_000, 60, 4, 20 * S, abr_app("bola", ladder(&RUNGS_KBPS, 30)));
    let t = run(v.clone());
    let flows = u32s(column(&t, "abr_segments", "flow"));
    let requests = u64s(column(&t, "abr_segments", "request_ns"));
    let starts = u64s(column(&t, "flows", "start_ns"));
    assert_eq!(u32s(column(&t, "abr_sessions", "flow")), vec![0, 1, 2, 3]);
    assert!(starts.iter().any(|&s| s > 5 * S), "start times {starts:?} are not spread");
    for (f, start) in starts.iter().enumerate() {
        let mine: Vec<u64> = flows.iter().zip(&requests).filter(|(g, _)| **g as usize == f).map(|(_, r)| *r).collect();
        assert!(!mine.is_empty(), "client {f} fetched nothing");
        assert_eq!(mine[0], *start, "client {f}'s first request is at its start");
        assert!(mine.windows(2).all(|w| w[0] < w[1]));
    }
    // The same scenario and seed give the same tables.
    let again = run(v);
    for (name, table) in &t {
        let other = &again.iter().find(|(n, _)| n == name).unwrap().1;
        for ((c, a), (_, b)) in table.iter().zip(other) {
            assert_eq!(a.to_le_bytes(), b.to_le_bytes(), "{name}.{c} differs between runs");
        }
    }
}

#[test]
fn bad_config_is_refused_naming_the_field() {
    let mut app = abr_app("bba", ladder(&RUNGS_KBPS, 10));
    app["max_buffer_ns"] = json!(3 * S);
    let e = config::parse(&scenario(10_000_000, 10, 1, 0, app).to_string()).unwrap_err();
    assert!(format!("{e:?}").contains("max_buffer"), "{e:?}");
    let app = abr_app("pensieve", ladder(&RUNGS_KBPS, 10));
    let e = config::parse(&scenario(10_000_000, 10, 1, 0, app).to_string()).unwrap_err();
    assert!(format!("{e:?}").contains("robust_mpc"), "{e:?}");
}

#[test]
fn lost_requests_are_sent_again_and_the_session_goes_on() {
    // A 64 kbit/s reverse link with a 2-packet queue: the ACKs of a 10 Mbit/s download overflow
    // it, so some requests (300 B, 37.5 ms to serialize) are dropped there; the client must
    // send them again after its timeout and keep fetching.
    let mut v = scenario(10_000_000, 120, 1, 0, abr_app("throughput", ladder(&RUNGS_KBPS, 60)));
    v["topology"]["reverse"] = json!({"rate_bps": 64_000u64, "delay_ns": 10_000_000u64,
                                      "qdisc": {"kind": "droptail", "limit": {"packets": 2}}});
    let t = run(v);
    let requests = u32s(column(&t, "abr_segments", "requests"));
    assert!(requests.iter().any(|&r| r > 1), "no request was lost: {requests:?}");
    assert!(requests.len() >= 20, "only {} segments fetched", requests.len());
    // A resent request's download time runs from its first copy, so it includes the timeout.
    let downloads = u64s(column(&t, "abr_segments", "download_ns"));
    for (r, d) in requests.iter().zip(&downloads) {
        if *r > 1 {
            assert!(*d >= S, "a resent request answered in {d} ns, before its 1 s timeout");
        }
    }
}
