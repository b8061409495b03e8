//! The three-way handshake (`TcpConfig::handshake`, `aqmlab_sim::tcp::handshake`) on the wire:
//! one bulk flow on `common::one_flow_in_a_deep_fifo`'s dumbbell (40 ms base RTT, the sender
//! 5 ms from the bottleneck), the bottleneck's packet records read per flow. Losses are placed
//! with netem's Gilbert-Elliott model made deterministic: the chain starts Good, where every
//! packet is lost, and moves to Bad (never lost) after the first packet for good, so exactly
//! the link's first packet is lost.

mod common;

use aqmlab_model::record::event;
use common::{column, one_flow_in_a_deep_fifo, run, u32s, u64s, u8s};
use serde_json::{json, Value};

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
const SYN_BYTES: u32 = 52;

/// Exactly the first packet the link sends is lost.
fn first_packet_lost() -> Value {
    json!({"loss": {"kind": "gilbert_elliott", "p": 1.0, "r": 0.0, "loss_bad": 0.0, "loss_good": 1.0}})
}

fn scenario(secs: u64, handshake: bool) -> Value {
    one_flow_in_a_deep_fifo(secs, json!({"congestion_control": "newreno", "handshake": handshake}), true)
}

/// `scenario` for 1.3 s: after a SYN lost at the start, about six rounds of slow start from one
/// segment, too few to fill the 300-packet queue, so the only retransmission is the SYN's.
fn short_scenario() -> Value {
    let mut sc = scenario(2, true);
    sc["duration_ns"] = json!(1_300 * MS);
    sc["flow_groups"][0]["stop_ns"] = json!(1_300 * MS);
    sc
}

/// (time, size) of every packet of the flow arriving at the bottleneck.
fn arrivals(t: &[(&'static str, aqmlab_model::record::Table)]) -> Vec<(u64, u32)> {
    let events = u8s(column(t, "packets", "event"));
    let times = u64s(column(t, "packets", "t_ns"));
    let sizes = u32s(column(t, "packets", "size"));
    (0..events.len()).filter(|&i| events[i] == event::ARRIVE).map(|i| (times[i], sizes[i])).collect()
}

fn flows_total(t: &[(&'static str, aqmlab_model::record::Table)], name: &str) -> u64 {
    u64s(column(t, "flows", name))[0]
}

#[test]
fn the_data_starts_one_round_trip_after_the_syn() {
    let with = arrivals(&run(scenario(2, true)));
    let (syn_at, syn_size) = with[0];
    assert_eq!(syn_size, SYN_BYTES);
    assert!(with[1..].iter().all(|&(_, size)| size == 1500), "one SYN, then data");
    // The SYN's trip to the receiver and the SYN-ACK's back: one base RTT (40 ms) and the
    // serialization of two 52-byte packets and the first data packet, well under a millisecond.
    let first_data = with[1].0;
    assert!((40 * MS..41 * MS).contains(&(first_data - syn_at)), "{}", first_data - syn_at);
    // The full initial window of 10 segments in the first round.
    assert_eq!(with.iter().filter(|&&(t, size)| size == 1500 && t < first_data + 20 * MS).count(), 10);
    // Without the handshake the data leaves when the SYN did, and reaches the bottleneck later
    // only by its longer serialization on the 100 Mbit/s access link: (1500 - 52) x 80 ns.
    let without = arrivals(&run(scenario(2, false)));
    assert_eq!(without[0], (syn_at + (1500 - 52) * 80, 1500));
}

#[test]
fn a_lost_syn_is_sent_again_after_one_second_and_the_data_starts_with_one_segment() {
    let mut sc = short_scenario();
    sc["topology"]["bottleneck"]["impairments"] = first_packet_lost();
    let t = run(sc);
    let got = arrivals(&t);
    // Both SYNs reached the bottleneck (the first is lost on its wire, after the queue).
    let syns: Vec<u64> = got.iter().filter(|a| a.1 == SYN_BYTES).map(|a| a.0).collect();
    assert_eq!(syns.len(), 2);
    assert_eq!(syns[1] - syns[0], S, "the initial RTO");
    let first_data = got.iter().find(|a| a.1 == 1500).unwrap().0;
    assert!((40 * MS..41 * MS).contains(&(first_data - syns[1])));
    // RFC 5681 section 3.1: one segment in the first round, not the initial window of 10.
    assert_eq!(got.iter().filter(|&&(t, size)| size == 1500 && t < first_data + 20 * MS).count(), 1);
    assert_eq!((flows_total(&t, "retransmissions"), flows_total(&t, "timeouts")), (1, 1));
}

#[test]
fn a_lost_syn_ack_is_repaired_by_the_syn_sent_again() {
    let mut sc = short_scenario();
    sc["topology"]["reverse"]["impairments"] = first_packet_lost();
    let got = arrivals(&run(sc));
    let syns: Vec<u64> = got.iter().filter(|a| a.1 == SYN_BYTES).map(|a| a.0).collect();
    assert_eq!(syns.len(), 2);
    let first_data = got.iter().find(|a| a.1 == 1500).unwrap().0;
    assert!((40 * MS..41 * MS).contains(&(first_data - syns[1])));
    assert_eq!(got.iter().filter(|&&(t, size)| size == 1500 && t < first_data + 20 * MS).count(), 1);
}

#[test]
fn without_any_syn_ack_the_client_gives_up_after_six_retransmissions() {
    let mut sc = scenario(130, true);
    sc["topology"]["reverse"]["impairments"] = json!({"loss": {"kind": "bernoulli", "p": 1.0}});
    let t = run(sc);
    let got = arrivals(&t);
    assert!(got.iter().all(|a| a.1 == SYN_BYTES), "no data ever");
    let offsets: Vec<u64> = got.iter().map(|a| (a.0 - got[0].0) / S).collect();
    assert_eq!(offsets, vec![0, 1, 3, 7, 15, 31, 63], "the timer doubles from 1 s");
    assert_eq!(flows_total(&t, "packets_sent"), 7);
    assert_eq!(flows_total(&t, "retransmissions"), 6);
    assert_eq!(flows_total(&t, "timeouts"), 7, "six expiries with a retransmission, the seventh gives up");
    assert_eq!(flows_total(&t, "delivered_bytes"), 0);
}
