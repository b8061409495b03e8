//! Runs one simulator config (the JSON `Scenario.to_sim_config()` produces) without Python,
//! so that profilers (callgrind, perf) see only the simulator.
//!
//!     cargo run --release -p aqmlab-sim --example run_config -- config.json [--records]
//!
//! Prints simulated events, bottleneck packets, wall time and their rates; `--records` also
//! collects the records the config asks for (as a normal run does), otherwise per-packet
//! records are switched off, as in benches/bench_tcp_dumbbell.py's timed run.

use aqmlab_sim::{SimConfig, Simulation};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: run_config CONFIG.json [--records]");
    let keep_records = args.iter().any(|a| a == "--records");
    let text = std::fs::read_to_string(path).expect("cannot read the config");
    let mut cfg: SimConfig = aqmlab_sim::config::parse(&text).expect("not a simulator config");
    if !keep_records {
        cfg.records.packet_events = false;
        cfg.records.pcap = false;
    }
    let built = Instant::now();
    let mut sim = Simulation::new(cfg).expect("invalid config");
    let build_s = built.elapsed().as_secs_f64();
    let started = Instant::now();
    sim.run(&AtomicBool::new(false), &AtomicU64::new(0)).expect("run failed");
    let wall = started.elapsed().as_secs_f64();
    let events = sim.counters.events;
    let pkts = sim.bottleneck_stats().dequeued_packets;
    println!("pending_events_at_end {}", sim.pending_events());
    println!("build_s {build_s:.3}");
    println!("wall_s {wall:.3}");
    println!("events {events}");
    println!("bottleneck_packets {pkts}");
    println!("events_per_s {:.0}", events as f64 / wall);
    println!("bottleneck_pkts_per_s {:.0}", pkts as f64 / wall);
    println!("ns_per_bottleneck_pkt {:.0}", wall * 1e9 / pkts as f64);
}
