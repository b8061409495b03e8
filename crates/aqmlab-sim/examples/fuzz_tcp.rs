//! Long seeded fuzz run of the TCP sender and receiver (see `aqmlab_sim::tcp::fuzz`).
//!
//! ```text
//! cargo run --release -p aqmlab-sim --example fuzz_tcp -- [--segments N] [--seed S] [--only NAME] [--episode SEED]
//! ```
//! Runs episodes of every stack of `fuzz::stacks()` until each has sent N data segments
//! (default 10^5, so 1.6 x 10^6 in all) and prints one line per stack with what the paths did
//! and what the sender answered. A broken property or a panic prints the stack and the episode
//! seed; `--only NAME --episode SEED` replays exactly that episode. Exit status 1 on any
//! failure.

use aqmlab_sim::tcp::fuzz::{run, run_episode, stacks, Failure, Stack, Tally};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

struct Args {
    segments: u64,
    seed: u64,
    only: Option<String>,
    episode: Option<u64>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args { segments: 100_000, seed: 1, only: None, episode: None };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag}: missing value"));
        match flag.as_str() {
            "--segments" => a.segments = value()?.parse().map_err(|e| format!("--segments: {e}"))?,
            "--seed" => a.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--only" => a.only = Some(value()?),
            "--episode" => a.episode = Some(value()?.parse().map_err(|e| format!("--episode: {e}"))?),
            _ => return Err(format!("unknown argument {flag:?}; allowed: --segments N --seed S --only NAME --episode SEED")),
        }
    }
    if a.episode.is_some() && a.only.is_none() {
        return Err("--episode: needs --only NAME (the stack the episode ran)".into());
    }
    Ok(a)
}

/// The run, with a panic turned into a failure that names its episode: episodes are rerun one
/// by one under `catch_unwind`, so a panic is attributed to the seed that caused it.
fn fuzz_one(stack: Stack, a: &Args) -> Result<Tally, Failure> {
    let guard = |seed: u64, f: &dyn Fn() -> Result<Tally, Failure>| match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(e) => {
            let msg = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
            Err(Failure { seed, event: 0, message: format!("panic: {}", msg.unwrap_or_default()) })
        }
    };
    if let Some(seed) = a.episode {
        return guard(seed, &|| run_episode(stack, seed));
    }
    match catch_unwind(AssertUnwindSafe(|| run(stack, a.seed, a.segments))) {
        Ok(r) => r,
        Err(_) => {
            let mut total = Tally::default();
            let mut i = 0;
            while total.segments < a.segments {
                let seed = aqmlab_sim::tcp::fuzz::episode_seed(a.seed, i);
                total.add(&guard(seed, &|| run_episode(stack, seed))?);
                i += 1;
            }
            Ok(total)
        }
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
        "{:<22} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>8} {:>8} {:>6} {:>6}  secs",
        "stack",
        "episodes",
        "segments",
        "lost",
        "ack lost",
        "retrans",
        "repairs",
        "spur rto",
        "spur rec",
        "timeouts",
        "fast rx",
        "ecn",
        "frto"
    );
    for stack in stacks() {
        let name = stack.name();
        if a.only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let t0 = Instant::now();
        match fuzz_one(stack, &a) {
            Ok(t) => {
                total += t.segments;
                println!(
                    "{name:<22} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>8} {:>8} {:>6} {:>6}  {:.1}",
                    t.episodes,
                    t.segments,
                    t.losses,
                    t.ack_losses,
                    t.retransmissions,
                    t.repairs,
                    t.spurious_after_timeout,
                    t.spurious_in_recovery,
                    t.timeouts,
                    t.fast_retransmits,
                    t.ecn_reductions,
                    t.frto_spurious_timeouts,
                    t0.elapsed().as_secs_f64()
                );
            }
            Err(f) => {
                failed += 1;
                println!("{name:<22} FAILED at event {} of episode {}: {}", f.event, f.seed, f.message);
                println!("    replay: cargo run --release -p aqmlab-sim --example fuzz_tcp -- --only {name} --episode {}", f.seed);
            }
        }
    }
    println!("total: {total} data segments, {failed} failing stacks, {:.0} s", started.elapsed().as_secs_f64());
    if failed > 0 {
        std::process::exit(1);
    }
}
