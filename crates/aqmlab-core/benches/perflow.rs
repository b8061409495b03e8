//! Per-packet cost of the per-flow disciplines as the number of active flows grows.
//!
//! For n in {10, 100, 1000, 10000} flows, every flow is kept backlogged (4 packets each, a
//! buffer large enough that nothing is dropped): each step dequeues one packet and enqueues a
//! new one for the same flow, with sizes drawn from a fixed mix (40, 576, 1500 B and uniform
//! 40..1500), so SQF's shortest flow keeps changing. Disciplines run behind `Queue`, as the
//! engines drive them. A second table fills the buffer and offers every arrival to a random
//! flow, so that each arrival goes through longest queue drop.
//!
//! Run with `cargo bench -p aqmlab-core --bench perflow`. Reported: ns per packet (one enqueue
//! plus one dequeue), best of 3 runs.
//!
//! The clock stands still, so CoDel, FQ-CoDel and PIE take their no-drop path (sojourn 0): the
//! figures are their bookkeeping cost per packet (FQ-CoDel's hash, DRR lists and per-queue CoDel
//! state; PIE's update check), not the cost of a drop decision.

use aqmlab_core::qdisc::cake::{Cake, CakeConfig, FlowMode};
use aqmlab_core::qdisc::cobalt::{Cobalt, CobaltConfig};
use aqmlab_core::qdisc::codel::{Codel, CodelConfig};
use aqmlab_core::qdisc::droptail::{DropTail, DropTailConfig};
use aqmlab_core::qdisc::drr::{Drr, DrrConfig};
use aqmlab_core::qdisc::dualpi2::{Dualpi2, Dualpi2Config};
use aqmlab_core::qdisc::fq_codel::{FqCodel, FqCodelConfig};
use aqmlab_core::qdisc::fq_pie::{FqPie, FqPieConfig};
use aqmlab_core::qdisc::pfq::{Pfq, PfqConfig};
use aqmlab_core::qdisc::pie::{Pie, PieConfig};
use aqmlab_core::qdisc::shared::flow_key::FlowKeyConfig;
use aqmlab_core::qdisc::sqf::{Sqf, SqfConfig};
use aqmlab_core::qdisc::{Qdisc, Queue};
use aqmlab_core::{Limit, Packet, SimRng, Time};
use std::hint::black_box;
use std::time::Instant;

const FLOWS: [u32; 4] = [10, 100, 1_000, 10_000];
const PER_FLOW: u32 = 4;
const STEPS: u64 = 400_000;
/// The mean of `size`'s mix: (40 + 576 + 1500 + (40 + 1500) / 2) / 4 bytes.
const MEAN_SIZE: u64 = 722;

type Make = fn(Limit) -> Box<dyn Qdisc>;

fn disciplines() -> Vec<(&'static str, Make)> {
    vec![
        ("fifo", |limit| Box::new(DropTail::new(DropTailConfig { limit }))),
        ("sqf", |limit| Box::new(Sqf::new(SqfConfig { limit, flow_key: FlowKeyConfig::default() }))),
        ("drr", |limit| Box::new(Drr::new(DrrConfig { limit, quantum: 1500, flow_key: FlowKeyConfig::default() }))),
        ("pfq", |limit| {
            Box::new(Pfq::new(PfqConfig { limit, quantum: 1500, priority_threshold: 1500, flow_key: FlowKeyConfig::default() }))
        }),
        ("codel", |limit| Box::new(Codel::new(CodelConfig { limit, ..CodelConfig::default() }))),
        ("fq_codel", |limit| Box::new(FqCodel::new(FqCodelConfig { limit, ..FqCodelConfig::default() }))),
        ("pie", |limit| Box::new(Pie::new(PieConfig { limit, ..PieConfig::default() }))),
        ("dualpi2", |limit| Box::new(Dualpi2::new(Dualpi2Config { limit, ..Dualpi2Config::default() }))),
        ("cobalt", |limit| Box::new(Cobalt::new(CobaltConfig { limit, ..CobaltConfig::default() }))),
        ("fq_pie", |limit| Box::new(FqPie::new(FqPieConfig { limit, ..FqPieConfig::default() }))),
        // CAKE limits bytes only: the packet limit times the size mix's mean (about 720 B),
        // so that its full buffer holds about as many packets as the others'. Shaper unlimited.
        // Its default triple-isolate divides a flow's quantum by its host's flow count, and
        // every flow here goes to one destination host; "flows" mode is plain DRR++.
        ("cake", |limit| Box::new(Cake::new(CakeConfig { memlimit: Some(cake_memlimit(limit)), ..CakeConfig::default() }))),
        ("cake_flows", |limit| {
            Box::new(Cake::new(CakeConfig { memlimit: Some(cake_memlimit(limit)), flowmode: FlowMode::Flows, ..CakeConfig::default() }))
        }),
    ]
}

fn cake_memlimit(limit: Limit) -> u64 {
    match limit {
        Limit::Packets(p) => p.saturating_mul(MEAN_SIZE),
        Limit::Bytes(b) => b,
    }
}

fn size(rng: &mut SimRng) -> u32 {
    match rng.next_u64() % 4 {
        0 => 40,
        1 => 576,
        2 => 1500,
        _ => 40 + (rng.next_u64() % 1461) as u32,
    }
}

fn packet(uid: u64, flow: u32, size: u32) -> Packet {
    Packet { uid, size, flow, src: flow % 251, dst: 1_000, sport: 10_000 + (flow / 251) as u16, dport: 80, ..Packet::default() }
}

/// ns per packet with `n` flows kept backlogged; `lqd`: full buffer, arrivals to random flows.
fn measure(make: Make, n: u32, lqd: bool) -> f64 {
    let mut best = f64::INFINITY;
    for run in 0..3 {
        let mut rng = SimRng::stream(run, "bench");
        let limit = if lqd { Limit::Packets((n * PER_FLOW) as u64) } else { Limit::Packets(u64::MAX) };
        let mut q = Queue::new(make(limit));
        let mut uid = 0u64;
        for _ in 0..PER_FLOW {
            for f in 0..n {
                let s = size(&mut rng);
                q.enqueue(packet(uid, f, s), Time::ZERO, &mut rng);
                uid += 1;
            }
        }
        let step = |q: &mut Queue, rng: &mut SimRng, uid: &mut u64| {
            let out = q.dequeue(Time::ZERO).packet.expect("backlogged");
            // Two arrivals per departure in the LQD case keep the buffer full.
            let arrivals = if lqd { 2 } else { 1 };
            for _ in 0..arrivals {
                let f = if lqd { (rng.next_u64() % n as u64) as u32 } else { out.flow };
                let s = size(rng);
                black_box(q.enqueue(packet(*uid, f, s), Time::ZERO, rng).verdict);
                *uid += 1;
            }
            black_box(out.uid);
        };
        for _ in 0..STEPS / 10 {
            step(&mut q, &mut rng, &mut uid);
        }
        let t0 = Instant::now();
        for _ in 0..STEPS {
            step(&mut q, &mut rng, &mut uid);
        }
        let ns = t0.elapsed().as_nanos() as f64 / STEPS as f64;
        best = best.min(ns);
        assert!(q.check_invariants().is_ok());
    }
    best
}

fn table(title: &str, lqd: bool) {
    println!("{title}");
    print!("{:>8}", "flows");
    for (name, _) in disciplines() {
        print!("{name:>11}");
    }
    println!();
    for n in FLOWS {
        print!("{n:>8}");
        for (_, make) in disciplines() {
            print!("{:>11.0}", measure(make, n, lqd));
        }
        println!();
    }
    println!();
}

fn main() {
    table("enqueue + dequeue, ns per packet, all flows backlogged, no drops:", false);
    table("full buffer, 2 arrivals per departure to random flows (LQD on every other arrival), ns per departure:", true);
}
