//! Runs one simulator config (the JSON `Scenario.to_sim_config()` produces) without Python,
//! so that profilers (callgrind, perf) see only the simulator.
//!
//!     cargo run --release -p aqmlab-sim --example run_config -- config.json [--records] [--event-per-step]
//!
//! `--event-per-step` gives links only one flow uses their events again
//! (`Simulation::disable_exclusive_links`), the model before they were crossed by arithmetic.
//!
//! Prints simulated events (the model's, and those taken from the event list), bottleneck
//! packets, wall time and their rates; `--records` also collects the records the config asks
//! for (as a normal run does), otherwise per-packet records are switched off, as in
//! benches/bench_tcp_dumbbell.py's timed run. With `--records` it also prints a digest
//! (FNV-1a) of every record table's bytes and of the summary: equal digests before and after
//! a change to the engine mean byte-identical results.

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
    let (rate_bps, duration_ns) = (cfg.topology.bottleneck.rate_bps, cfg.duration_ns);
    let built = Instant::now();
    let mut sim = Simulation::new(cfg).expect("invalid config");
    if args.iter().any(|a| a == "--event-per-step") {
        sim.disable_exclusive_links();
    }
    let build_s = built.elapsed().as_secs_f64();
    let started = Instant::now();
    let cpu_before = thread_cpu_ns();
    sim.run(&AtomicBool::new(false), &AtomicU64::new(0)).expect("run failed");
    let wall = started.elapsed().as_secs_f64();
    if let (Some(a), Some(b)) = (cpu_before, thread_cpu_ns()) {
        // CPU time of this thread: on a shared machine the wall time depends on the load.
        println!("cpu_s {:.6}", (b - a) as f64 / 1e9);
    }
    if let Some(kb) = peak_rss_kb() {
        println!("peak_rss_mb {:.1}", kb as f64 / 1024.0);
    }
    let (events, dispatched) = (sim.counters().events, sim.counters().dispatched);
    let stats = sim.bottleneck_stats();
    let pkts = stats.dequeued_packets;
    // Over the whole run, start-up included.
    let utilization = 100.0 * stats.dequeued_bytes as f64 * 8e9 / duration_ns as f64 / rate_bps as f64;
    let drop_rate = 100.0 * stats.total_dropped_packets() as f64 / stats.received_packets.max(1) as f64;
    println!("utilization_pct {utilization:.2}");
    println!("drop_rate_pct {drop_rate:.3}");
    println!("pending_events_at_end {}", sim.pending_events());
    println!("build_s {build_s:.3}");
    println!("wall_s {wall:.6}");
    // The model's events (summary.json's count) and those that went through the event list:
    // fewer, as transmissions that end with nothing queued behind them need no event.
    println!("events {events}");
    println!("dispatched_events {dispatched}");
    println!("bottleneck_packets {pkts}");
    println!("dispatched_events_per_s {:.0}", dispatched as f64 / wall);
    println!("bottleneck_pkts_per_s {:.0}", pkts as f64 / wall);
    println!("ns_per_bottleneck_pkt {:.0}", wall * 1e9 / pkts as f64);
    if keep_records {
        let summary = sim.summary().to_string();
        let (tables, pcap) = sim.take_records();
        for (name, table) in tables {
            let mut h = Fnv::default();
            for (column, data) in table {
                h.write(column.as_bytes());
                h.write(&data.to_le_bytes());
            }
            println!("digest {name} {:016x}", h.0);
        }
        let mut h = Fnv::default();
        h.write(summary.as_bytes());
        h.write(&pcap.unwrap_or_default());
        println!("digest summary+pcap {:016x}", h.0);
    }
}

/// Nanoseconds this thread has run on a CPU (Linux's schedstat), None elsewhere.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Peak resident set size of the process in KiB (Linux's VmHWM), None elsewhere.
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// FNV-1a, 64 bits: a digest for comparing runs, not for security.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}
