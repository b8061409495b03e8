//! A bottleneck that follows a mahimahi delivery trace: it sends exactly at the trace's
//! opportunities when saturated, loses them when idle, and refuses a trace beside a rate.

use aqmlab_model::record::{event, Column};
use aqmlab_sim::{config, Simulation};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64};

const MS: u64 = 1_000_000;

fn droptail(limit: u64) -> serde_json::Value {
    json!({"kind": "droptail", "limit": {"packets": limit}})
}

/// CBR flow groups of 1500-byte packets `(name, rate, start ms, stop ms)` over a bottleneck
/// following `trace` (ms), the reverse at a fixed rate.
fn scenario(trace: &[u64], groups: &[(&str, u64, u64, u64)], secs: u64) -> serde_json::Value {
    let groups: Vec<_> = groups
        .iter()
        .map(|&(name, rate, start, stop)| {
            json!({
                "name": name, "count": 1, "start_ns": start * MS, "start_jitter_ns": 0,
                "stop_ns": stop * MS, "access_rate_bps": 1_000_000_000u64,
                "sender_delay_ns": [1_000_000u64, 1_000_000u64], "receiver_delay_ns": 1_000_000u64,
                "class_weights": [0.0, 0.0, 0.0], "dscp": 0,
                "app": {"kind": "cbr", "rate_bps": rate, "packet_size": 1500}
            })
        })
        .collect();
    json!({
        "seed": 1,
        "duration_ns": secs * 1_000_000_000,
        "topology": {
            "bottleneck": {"rate_bps": 0, "delay_ns": 5 * MS, "qdisc": droptail(100_000),
                           "trace": {"opportunities_ms": trace}},
            "reverse": {"rate_bps": 10_000_000u64, "delay_ns": 5 * MS, "qdisc": droptail(1000)},
            "access_qdisc": droptail(10_000),
        },
        "flow_groups": groups,
        "records": {"packet_events": true, "queue_sample_ns": 10 * MS, "flow_sample_ns": 100 * MS, "pcap": false}
    })
}

fn run(v: serde_json::Value) -> Simulation {
    let cfg = config::parse(&v.to_string()).expect("valid config");
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run(&AtomicBool::new(false), &AtomicU64::new(0)).unwrap();
    sim.check_invariants().unwrap();
    sim
}

/// The bottleneck's packet events: (time, event) in record order.
fn bottleneck_events(sim: &mut Simulation) -> Vec<(u64, u8)> {
    let (tables, _) = sim.take_records();
    let (_, packets) = tables.into_iter().find(|(name, _)| *name == "packets").expect("packets table");
    let col = |name: &str| packets.iter().find(|(n, _)| *n == name).map(|(_, c)| c).unwrap();
    let (Column::U64(t), Column::U8(ev)) = (col("t_ns"), col("event")) else { panic!("column types") };
    t.iter().copied().zip(ev.iter().copied()).collect()
}

fn times_of(events: &[(u64, u8)], kind: u8) -> Vec<u64> {
    events.iter().filter(|&&(_, e)| e == kind).map(|&(t, _)| t).collect()
}

/// Every opportunity time of `trace` in (`after`, `before`), written out pass by pass as the
/// format's definition says, independently of the engine's cursor.
fn opportunities(trace: &[u64], after: u64, before: u64) -> Vec<u64> {
    let period = trace.last().unwrap() * MS;
    let mut out = Vec::new();
    for pass in 0.. {
        for &ms in trace {
            let t = pass * period + ms * MS;
            if t >= before {
                return out;
            }
            if t > after {
                out.push(t);
            }
        }
    }
    unreachable!()
}

#[test]
fn a_saturated_trace_link_sends_at_exactly_the_trace_s_opportunities() {
    // 9 opportunities per 10 ms (10.8 Mbit/s of 1500-byte packets), some sharing a
    // millisecond, under a 20 Mbit/s CBR flow: the queue never empties after the first packet.
    let trace = [1, 1, 2, 5, 5, 5, 8, 9, 10];
    let mut sim = run(scenario(&trace, &[("cbr", 20_000_000, 0, 2_000)], 2));
    let events = bottleneck_events(&mut sim);
    let first_arrival = times_of(&events, event::ARRIVE)[0];
    let sent = times_of(&events, event::DEQUEUE);
    let end = 2_000 * MS - 10 * MS; // leave the run's last instants out
    let sent: Vec<u64> = sent.into_iter().filter(|&t| t < end).collect();
    let expected = opportunities(&trace, first_arrival, end);
    assert_eq!(sent.len(), expected.len(), "count of deliveries");
    assert_eq!(sent, expected, "times of deliveries");
    assert!(expected.len() > 1700, "about 9 per 10 ms over 2 s: {}", expected.len());
}

#[test]
fn an_idle_trace_link_loses_its_opportunities() {
    // One opportunity per ms. A 20 Mbit/s flow for 100 ms, silence until 300 ms, then another:
    // the 200 opportunities of the silence are gone, so after it the link still sends one
    // packet per ms from the first opportunity after the first arrival, never a burst.
    let trace = [1];
    let mut sim = run(scenario(&trace, &[("a", 20_000_000, 0, 100), ("b", 20_000_000, 300, 400)], 1));
    let events = bottleneck_events(&mut sim);
    let arrivals = times_of(&events, event::ARRIVE);
    let second_burst = *arrivals.iter().find(|&&t| t >= 300 * MS).unwrap();
    let sent: Vec<u64> = times_of(&events, event::DEQUEUE).into_iter().filter(|&t| t >= 300 * MS).collect();
    let first = second_burst.div_ceil(MS) * MS + if second_burst % MS == 0 { MS } else { 0 };
    assert_eq!(sent[0], first, "the first opportunity strictly after the arrival at {second_burst} ns");
    for (k, w) in sent.windows(2).enumerate().take(150) {
        assert_eq!(w[1] - w[0], MS, "delivery {k} after the silence: one per opportunity");
    }
    // The backlog of the first burst is cleared at one per ms and no later one leaves early.
    assert!(times_of(&events, event::DEQUEUE).iter().all(|t| t % MS == 0));
}

#[test]
fn a_link_with_a_trace_and_a_rate_is_refused_naming_the_field() {
    let mut v = scenario(&[1], &[("cbr", 1_000_000, 0, 100)], 1);
    v["topology"]["bottleneck"]["rate_bps"] = json!(10_000_000u64);
    let e = config::parse(&v.to_string()).unwrap_err();
    assert_eq!(e.path, "bottleneck.rate", "{e}");
    assert!(e.message.contains("either a rate or a trace"), "{e}");
    let mut v = scenario(&[1], &[("cbr", 1_000_000, 0, 100)], 1);
    v["topology"]["reverse"]["trace"] = json!({"opportunities_ms": [3, 2]});
    v["topology"]["reverse"]["rate_bps"] = json!(0);
    let e = config::parse(&v.to_string()).unwrap_err();
    assert_eq!(e.path, "reverse.trace", "{e}");
}
