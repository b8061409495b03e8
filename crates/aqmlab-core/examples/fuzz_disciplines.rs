//! Long seeded fuzz run of every discipline (see `aqmlab_core::fuzz`).
//!
//! ```text
//! cargo run --release -p aqmlab-core --example fuzz_disciplines -- [--ops N] [--seed S] [--only NAME] [--episode SEED]
//! ```
//! Runs N operations (default 10^7) per discipline of `fuzz::disciplines()` in episodes of up
//! to 200 000 operations and prints one line per discipline with the count. A broken property
//! or a panic prints the discipline, the episode seed and the operation; `--only NAME
//! --episode SEED --ops K` replays exactly that episode. Exit status 1 on any failure.

use aqmlab_core::fuzz::{disciplines, run, run_episode, Failure, Tally};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

const MAX_EPISODE: u64 = 200_000;

struct Args {
    ops: u64,
    seed: u64,
    only: Option<String>,
    episode: Option<u64>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args { ops: 10_000_000, seed: 1, only: None, episode: None };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag}: missing value"));
        match flag.as_str() {
            "--ops" => a.ops = value()?.parse().map_err(|e| format!("--ops: {e}"))?,
            "--seed" => a.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--only" => a.only = Some(value()?),
            "--episode" => a.episode = Some(value()?.parse().map_err(|e| format!("--episode: {e}"))?),
            _ => return Err(format!("unknown argument {flag:?}; allowed: --ops N --seed S --only NAME --episode SEED")),
        }
    }
    Ok(a)
}

/// The run, with a panic turned into a failure (its episode is found by replaying the episodes
/// one by one, each under `catch_unwind`).
fn fuzz_one(cfg: &aqmlab_core::QdiscConfig, a: &Args) -> Result<Tally, Failure> {
    let attempt = |f: &dyn Fn() -> Result<Tally, Failure>| match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(e) => {
            let msg = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
            Err(Failure { seed: a.episode.unwrap_or(a.seed), operation: 0, message: format!("panic: {}", msg.unwrap_or_default()) })
        }
    };
    match a.episode {
        Some(s) => attempt(&|| run_episode(cfg, s, a.ops)),
        None => attempt(&|| run(cfg, a.seed, a.ops, MAX_EPISODE)),
    }
}

fn main() {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    std::panic::set_hook(Box::new(|_| {})); // panics are reported below, with their seed
    let mut failed = 0;
    let mut total = 0u64;
    let started = Instant::now();
    println!(
        "{:<28} {:>12} {:>11} {:>10} {:>10} {:>9} {:>10} {:>6}  secs",
        "discipline", "operations", "arrivals", "accepted", "evicted", "max pkts", "max bytes", "flows"
    );
    for (name, cfg) in disciplines() {
        if a.only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let t0 = Instant::now();
        match fuzz_one(&cfg, &a) {
            Ok(t) => {
                total += t.operations;
                println!(
                    "{name:<28} {:>12} {:>11} {:>10} {:>10} {:>9} {:>10} {:>6}  {:.1}",
                    t.operations,
                    t.arrivals,
                    t.accepted,
                    t.evicted,
                    t.max_packets,
                    t.max_bytes,
                    t.max_flow_states,
                    t0.elapsed().as_secs_f64()
                );
            }
            Err(f) => {
                failed += 1;
                println!("{name:<28} FAILED at operation {} of episode {}: {}", f.operation, f.seed, f.message);
                println!(
                    "    replay: cargo run --release -p aqmlab-core --example fuzz_disciplines -- --only {name} --episode {} --ops {}",
                    f.seed,
                    f.operation.max(1)
                );
            }
        }
    }
    println!("total: {total} operations, {failed} failing disciplines, {:.0} s", started.elapsed().as_secs_f64());
    if failed > 0 {
        std::process::exit(1);
    }
}
