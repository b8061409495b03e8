//! Classes by frame type (`mark_frames`, `aqmlab_model::app::frame_classes`): on a loss-free
//! link every packet arrives in order, so the bottleneck's class sequence of a flow must be,
//! for an ABR client, each segment's IDR packets (class3) then the rest (class2), and for a
//! call each frame's packets in its type's class; with the marking off every packet stays
//! unclassified (class 0), as before the option existed.

mod common;

use aqmlab_model::app::frame_classes::segment_key_bytes;
use aqmlab_model::record::event;
use common::{column, run, u32s, u64s, u8s};
use serde_json::{json, Value};

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
const MSS: u64 = 1460;

fn tcp() -> Value {
    json!({"mss": MSS, "initial_cwnd_segments": 10, "initial_rto_ns": S, "min_rto_ns": 200 * MS,
           "max_rto_ns": 60 * S, "clock_granularity_ns": MS, "delayed_ack": false,
           "delayed_ack_timeout_ns": 200 * MS, "rwnd": 4_000_000u64, "ecn": false, "sack": true})
}

/// Ten 2 s segments at 300 and 1200 kbit/s, sizes varying with the segment so that the IDR
/// spans a different number of packets.
fn abr_app(mark: bool) -> Value {
    let rungs = [300u64, 1200];
    let sizes: Vec<Vec<u64>> = rungs.iter().map(|k| (0..10u64).map(|s| k * 250 + 997 * s).collect()).collect();
    let ladder = json!({"segment_duration_ns": 2 * S, "bitrates_bps": rungs.iter().map(|k| k * 1000).collect::<Vec<_>>(),
                        "sizes_bytes": sizes});
    let mut app = json!({"kind": "abr", "abr": {"algorithm": "bba", "safety_factor": 0.9, "throughput_window": 4,
            "bba_reservoir_s": 3.0, "bba_cushion_s": 4.0, "bola_gamma_p": 5.0, "bola_buffer_target_s": 10.0,
            "mpc_horizon": 5},
           "ladder": ladder, "max_buffer_ns": 10 * S, "startup_ns": 2 * S, "request_size": 300,
           "request_timeout_ns": S, "tcp": tcp()});
    if mark {
        app["mark_frames"] = json!(true);
    }
    app
}

/// A call with a key frame every 15 frames (0.5 s), four times a delta frame.
fn call_app(controller: &str, mark: bool) -> Value {
    let mut app = json!({"kind": "rtp", "media": {"kind": "video", "mean_rate_bps": 1_000_000u64, "fps": 30.0,
           "size_cv": 0.0, "trace": null, "mtu": 1200, "burst": false, "shaping_ns": 0},
           "jitter_sd_ns": 0});
    app[controller] = json!({"start_rate_bps": 1_000_000u64, "min_rate_bps": 100_000u64, "max_rate_bps": 2_000_000u64,
           "feedback_interval_ns": 40 * MS, "key_interval": 15, "key_ratio": 4.0, "fluctuation": 0.1,
           "reaction_lag_ns": 0, "deadline_ns": 150 * MS});
    if mark {
        app["mark_frames"] = json!(true);
    }
    app
}

/// One flow on a 50 Mbit/s bottleneck with a queue too deep to overflow: no loss, no reordering.
fn scenario(secs: u64, app: Value) -> Value {
    let droptail = |limit: u64| json!({"kind": "droptail", "limit": {"packets": limit}});
    json!({
        "seed": 5, "duration_ns": secs * S,
        "topology": {
            "bottleneck": {"rate_bps": 50_000_000u64, "delay_ns": 10 * MS, "qdisc": droptail(100_000)},
            "reverse": {"rate_bps": 50_000_000u64, "delay_ns": 10 * MS, "qdisc": droptail(100_000)},
            "access_qdisc": droptail(100_000),
        },
        "flow_groups": [{
            "name": "video", "count": 1, "start_ns": 0, "start_jitter_ns": 0, "stop_ns": secs * S,
            "access_rate_bps": 1_000_000_000u64, "sender_delay_ns": [5 * MS, 5 * MS],
            "receiver_delay_ns": MS, "class_weights": [0.0, 0.0, 0.0], "dscp": 0, "app": app
        }],
        "records": {"packet_events": true, "queue_sample_ns": 100 * MS, "flow_sample_ns": S, "pcap": false}
    })
}

/// The classes of the packets arriving at the bottleneck, in order; asserts nothing was dropped.
fn arrival_classes(t: &[(&'static str, aqmlab_model::record::Table)]) -> Vec<u8> {
    let events = u8s(column(t, "packets", "event"));
    assert!(!events.contains(&event::DROP), "the test needs a loss-free link");
    let classes = u8s(column(t, "packets", "class"));
    events.iter().zip(classes).filter(|(e, _)| **e == event::ARRIVE).map(|(_, c)| c).collect()
}

#[test]
fn an_abr_segment_s_idr_packets_are_class3_and_the_rest_class2() {
    let t = run(scenario(40, abr_app(true)));
    let sizes = u64s(column(&t, "abr_segments", "size_bytes"));
    assert_eq!(sizes.len(), 10, "every segment fetched");
    let mut expected = Vec::new();
    for size in &sizes {
        // Each response starts on a packet boundary (whole MSS per response).
        let key = segment_key_bytes(*size, 2 * S).div_ceil(MSS) as usize;
        let all = size.div_ceil(MSS) as usize;
        assert!(key >= 1 && key < all);
        expected.extend(std::iter::repeat_n(3u8, key).chain(std::iter::repeat_n(2u8, all - key)));
    }
    assert_eq!(arrival_classes(&t), expected);
}

#[test]
fn a_call_s_packets_carry_their_frame_s_class() {
    for controller in ["gcc", "scream"] {
        let t = run(scenario(10, call_app(controller, true)));
        let keys = u8s(column(&t, "rtc_frames", "key"));
        let packets = u32s(column(&t, "rtc_frames", "packets"));
        assert!(keys.iter().filter(|k| **k == 1).count() >= 19, "{controller}: a key frame every 0.5 s");
        let expected: Vec<u8> =
            keys.iter().zip(&packets).flat_map(|(k, n)| std::iter::repeat_n(if *k == 1 { 3u8 } else { 2 }, *n as usize)).collect();
        let got = arrival_classes(&t);
        // Every packet sent arrived in order; the last frames' may not have been sent by the end.
        assert!(got.len() + 2 * *packets.last().unwrap() as usize >= expected.len(), "{controller}");
        assert_eq!(got, expected[..got.len()], "{controller}");
    }
}

#[test]
fn without_the_marking_every_packet_stays_unclassified() {
    for app in [abr_app(false), call_app("gcc", false), call_app("scream", false)] {
        let t = run(scenario(10, app));
        let got = arrival_classes(&t);
        assert!(got.len() > 100);
        assert!(got.iter().all(|c| *c == 0));
    }
}
