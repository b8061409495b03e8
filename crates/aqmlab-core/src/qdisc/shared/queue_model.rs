//! A single-bottleneck queue model in simulated time for the tests of the rate-based and RIO
//! disciplines: arrivals from a list of sources, departures at the link rate.

use crate::packet::Packet;
use crate::qdisc::{Queue, Verdict};
use crate::rng::SimRng;
use crate::units::{Rate, Time};

/// One traffic source: `rate_bps` of `size`-byte packets of class `class`, evenly spaced or
/// with exponential gaps.
#[derive(Clone, Copy, Debug)]
pub struct Source {
    pub rate_bps: f64,
    pub size: u32,
    pub class: u8,
    pub poisson: bool,
}

/// Per-class counts over the measured part of a run (index = class 0..=3).
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub arrivals: [u64; 4],
    pub drops: [u64; 4],
    pub verdicts: Vec<(u8, Verdict)>,
    /// Mean of the discipline's average queue sampled at every arrival.
    pub mean_avg: f64,
    pub mean_queue: f64,
}

impl Tally {
    pub fn drop_fraction(&self, class: usize) -> f64 {
        self.drops[class] as f64 / self.arrivals[class].max(1) as f64
    }
}

/// Runs `sources` into `q` on a link of `link` for `duration`; counts from `warmup` on.
pub fn run(q: &mut Queue, link: Rate, sources: &[Source], duration: Time, warmup: Time, seed: u64) -> Tally {
    let mut rng = SimRng::stream(seed, "qdisc");
    let mut src_rng = SimRng::stream(seed, "sources");
    let gap = |s: &Source, r: &mut SimRng| {
        let mean = 8.0 * s.size as f64 / s.rate_bps;
        Time::from_secs_f64(if s.poisson { r.exponential(mean) } else { mean })
    };
    let mut next: Vec<Time> = sources.iter().map(|s| gap(s, &mut src_rng)).collect();
    let mut busy_until: Option<Time> = None;
    let mut tally = Tally::default();
    let (mut n_avg, mut uid) = (0u64, 0u64);
    loop {
        let (i, t_arr) = next.iter().copied().enumerate().min_by_key(|(_, t)| *t).unwrap();
        // Departures due before the next arrival.
        while let Some(done) = busy_until {
            if done > t_arr {
                break;
            }
            q.dequeue(done).packet.unwrap();
            busy_until = if q.len_packets() > 0 { Some(done + link.tx_time(head_size(q))) } else { None };
        }
        if t_arr >= duration {
            break;
        }
        let s = sources[i];
        let pkt = Packet { uid, size: s.size, class: s.class, ..Packet::default() };
        uid += 1;
        let verdict = q.enqueue(pkt, t_arr, &mut rng).verdict;
        if busy_until.is_none() && q.len_packets() > 0 {
            busy_until = Some(t_arr + link.tx_time(s.size as u64));
        }
        if t_arr >= warmup {
            let c = s.class.min(3) as usize;
            tally.arrivals[c] += 1;
            if let Verdict::Dropped(_) = verdict {
                tally.drops[c] += 1;
            }
            tally.verdicts.push((s.class, verdict));
            n_avg += 1;
            tally.mean_avg += (q.average_queue().unwrap_or(0.0) - tally.mean_avg) / n_avg as f64;
            tally.mean_queue += (q.len_packets() as f64 - tally.mean_queue) / n_avg as f64;
        }
        next[i] = t_arr + gap(&s, &mut src_rng);
        q.check_invariants().unwrap();
    }
    tally
}

/// All tests use one packet size per run, so the head's size is the source's size; the
/// wrapper does not expose the head, so peek through the byte backlog.
fn head_size(q: &Queue) -> u64 {
    q.len_bytes() / q.len_packets() as u64
}
