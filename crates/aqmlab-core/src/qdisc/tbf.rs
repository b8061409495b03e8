//! TBF: a token bucket filter, the shaper of Linux `sch_tbf` (tc-tbf(8); A. Kuznetsov, 1999).
//!
//! * **Bucket**: tokens accrue at `rate` bit/s up to `burst` bytes; the bucket starts full
//!   (as Linux's, whose `t_c` starts at creation with a full bucket), so after an idle period
//!   up to `burst` bytes leave back to back.
//! * **Conformance**: the head packet may leave when the bucket holds at least its size in
//!   tokens; leaving takes its size out of the bucket. Packets leave in FIFO order; a head
//!   packet that does not conform holds back everything behind it.
//! * **Buffer**: arrivals wait in a FIFO of at most `limit` (tc's `limit`, in bytes; packets
//!   are accepted too for uniformity with the other disciplines). An arrival that does not fit
//!   is an `Overflow` drop.
//! * **Oversized packets**: a packet larger than `burst` can never conform (the bucket never
//!   holds more than `burst` bytes of tokens), so it would block the queue forever. It is
//!   refused at enqueue as an `Overflow` drop. Linux refuses it the same way at enqueue
//!   (`tbf_enqueue`: `qdisc_pkt_len(skb) > q->max_size` drops, unless the packet is GSO and
//!   can be segmented, which aqmlab packets never are). Choose `burst` at least one MTU.
//!
//! Tokens are kept exactly, as integers in units of bit-nanoseconds (one byte of tokens is
//! `8 * 10^9` units; `rate` adds `rate` units per nanosecond), so no rounding drift builds up
//! over long runs and the long-run output rate is exactly `rate`.
//!
//! Not modelled: tc-tbf's second bucket (`peakrate`/`mtu`), and its `latency` form of the
//! limit (convert: `limit = rate * latency / 8 + burst`).
//!
//! **Engine contract.** A shaper is not work-conserving: `dequeue(now)` may return `None`
//! while packets are queued, because the head packet is not conformant yet. The engines call
//! `dequeue` only when the link goes idle or a packet arrives, so they must ask the shaper
//! when to retry: [`Tbf::next_ready`] returns the time the head packet becomes conformant
//! (`None` when the queue is empty). The proposed trait method
//! `Qdisc::next_dequeue_time(&self, now) -> Option<Time>` (default `None` for
//! work-conserving disciplines) forwards to it; after a `dequeue` that returned `None` on an
//! idle link the engine schedules a retry at that time.

use super::{Dequeued, DropReason, Evicted, Qdisc, Verdict};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Limit, Rate, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Token units per byte: tokens are bit-nanoseconds.
const UNITS_PER_BYTE: u128 = 8 * 1_000_000_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TbfConfig {
    /// Token rate in bit/s: the long-run output rate under backlog.
    pub rate: Rate,
    /// Bucket size in bytes: the most that may leave back to back after an idle period, and
    /// the largest packet that can ever conform.
    pub burst: u64,
    /// Capacity of the waiting queue (tc's `limit`, in bytes; packets are accepted too).
    pub limit: Limit,
}

impl TbfConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.rate.0 == 0 {
            return Err("rate: must be at least 1 bit/s".into());
        }
        if self.burst == 0 {
            return Err("burst: must be at least 1 byte (one MTU, e.g. 1600, is usual)".into());
        }
        self.limit.validate()?;
        Ok(())
    }
}

pub struct Tbf {
    cfg: TbfConfig,
    q: VecDeque<Packet>,
    bytes: u64,
    /// Tokens at `t_c`, in bit-nanoseconds, at most `cap`.
    tokens: u128,
    /// Bucket size in bit-nanoseconds.
    cap: u128,
    /// When `tokens` was last brought up to date.
    t_c: Time,
}

impl Tbf {
    /// A shaper whose bucket is full at time zero.
    pub fn new(cfg: TbfConfig) -> Tbf {
        let cap = cfg.burst as u128 * UNITS_PER_BYTE;
        Tbf { cfg, q: VecDeque::new(), bytes: 0, tokens: cap, cap, t_c: Time::ZERO }
    }

    /// Tokens the bucket holds at `now` (a `now` before the last update counts as no time).
    fn tokens_at(&self, now: Time) -> u128 {
        let dt = now.saturating_sub(self.t_c).as_nanos() as u128;
        self.tokens.saturating_add(dt.saturating_mul(self.cfg.rate.0 as u128)).min(self.cap)
    }

    /// Tokens at `now`, in bytes (rounded down), for inspection and tests.
    pub fn tokens_bytes(&self, now: Time) -> u64 {
        (self.tokens_at(now) / UNITS_PER_BYTE) as u64
    }

    /// When the head packet becomes conformant: `now` if it already is, `None` when the queue
    /// is empty. The engine schedules a retry of `dequeue` at this time (never earlier than
    /// `now`; the result is rounded up to the next nanosecond, so a retry at it succeeds).
    pub fn next_ready(&self, now: Time) -> Option<Time> {
        let head = self.q.front()?;
        let need = head.size as u128 * UNITS_PER_BYTE;
        let have = self.tokens_at(now);
        if have >= need {
            return Some(now);
        }
        let rate = (self.cfg.rate.0 as u128).max(1);
        let wait = (need - have).div_ceil(rate);
        Some(now + Time(wait.min(u64::MAX as u128) as u64))
    }

    pub fn config(&self) -> &TbfConfig {
        &self.cfg
    }
}

impl Qdisc for Tbf {
    fn enqueue(&mut self, pkt: Packet, _now: Time, _rng: &mut SimRng, _ev: &mut Vec<Evicted>) -> Verdict {
        if pkt.size as u64 > self.cfg.burst || !self.cfg.limit.admits(self.q.len(), self.bytes, pkt.size) {
            return Verdict::Dropped(DropReason::Overflow);
        }
        self.bytes += pkt.size as u64;
        self.q.push_back(pkt);
        Verdict::Enqueued
    }

    fn dequeue(&mut self, now: Time, _dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        let need = self.q.front()?.size as u128 * UNITS_PER_BYTE;
        let have = self.tokens_at(now);
        if have < need {
            return None;
        }
        self.tokens = have - need;
        self.t_c = self.t_c.max(now);
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        Some(Dequeued::unmarked(p))
    }

    fn len_packets(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
    fn kind(&self) -> &'static str {
        "tbf"
    }
    fn next_dequeue_time(&self, now: Time) -> Option<Time> {
        self.next_ready(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::testutil::PopPacket;
    use crate::units::parse_rate;

    fn tbf(rate: Rate, burst: u64, limit: u64) -> Tbf {
        let cfg = TbfConfig { rate, burst, limit: Limit::Bytes(limit) };
        cfg.validate().unwrap();
        Tbf::new(cfg)
    }

    /// Drives a shaper in front of a link of `link` bit/s the way the engines do: dequeue when
    /// the link is idle; when the shaper says "not yet", retry at `next_ready`. The input keeps
    /// the queue saturated with `size`-byte packets. Returns (first departure, last departure
    /// end, bytes sent) over `n` departures.
    fn run_saturated(t: &mut Tbf, link: Rate, size: u32, n: usize) -> Vec<(Time, u32)> {
        let mut rng = SimRng::stream(1, "t");
        let mut now = Time::ZERO;
        let mut out = Vec::with_capacity(n);
        let mut uid = 0;
        while out.len() < n {
            // Saturate: offer packets until one is refused.
            loop {
                uid += 1;
                if t.enqueue(pkt(uid, 0, size), now, &mut rng, &mut Vec::new()) != Verdict::Enqueued {
                    break;
                }
            }
            match t.pop_packet(now) {
                Some(p) => {
                    out.push((now, p.size));
                    now += link.tx_time(p.size as u64);
                }
                None => {
                    let at = t.next_ready(now).expect("backlogged shaper has a next time");
                    assert!(at > now, "next_ready({now:?}) = {at:?} but dequeue refused");
                    now = at;
                }
            }
        }
        out
    }

    #[test]
    fn output_rate_equals_token_rate_over_a_long_run() {
        for (rate, size) in [(600_000, 1000), (75_000, 1500), (35_000, 640), (10_000_000, 1500)] {
            let rate = Rate(rate);
            let mut t = tbf(rate, 1600, 10_000);
            let n = 20_000;
            let out = run_saturated(&mut t, Rate::mbps(100), size, n);
            // Departures after the initial burst: the rate between the first token-paced
            // departure and the last one.
            let (t0, _) = out[1];
            let (t1, _) = out[n - 1];
            let bytes: u64 = out[2..].iter().map(|&(_, s)| s as u64).sum();
            let measured = bytes as f64 * 8.0 / (t1 - t0).as_secs_f64();
            let err = (measured / rate.as_bps_f64() - 1.0).abs();
            assert!(err < 0.001, "rate {rate:?}: measured {measured} bit/s, error {err}");
            // And over the whole run including the initial burst.
            let all: u64 = out.iter().map(|&(_, s)| s as u64).sum();
            let whole = all as f64 * 8.0 / out[n - 1].0.as_secs_f64();
            assert!((whole / rate.as_bps_f64() - 1.0).abs() < 0.001, "whole-run {whole}");
        }
    }

    #[test]
    fn burst_leaves_back_to_back_after_idle_then_tokens_pace() {
        // 8 kbit/s = 1 byte per ms; bucket 3000 bytes; 1000-byte packets.
        let mut t = tbf(Rate(8_000), 3000, 100_000);
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for i in 0..5 {
            assert_eq!(t.enqueue(pkt(i, 0, 1000), Time::ZERO, &mut rng, &mut ev), Verdict::Enqueued);
        }
        // Idle for 10 s: the bucket is (and stays) full at 3000 bytes.
        let at = Time::from_secs(10);
        assert_eq!(t.tokens_bytes(at), 3000);
        assert_eq!(t.next_ready(at), Some(at));
        for i in 0..3 {
            assert_eq!(t.pop_packet(at).map(|p| p.uid), Some(i), "burst packet {i}");
        }
        assert_eq!(t.pop_packet(at), None, "bucket empty after the burst");
        // 1000 bytes of tokens take exactly 1 s at 8 kbit/s.
        let next = t.next_ready(at).unwrap();
        assert_eq!(next, at + Time::from_secs(1));
        assert_eq!(t.pop_packet(next - Time(1)), None, "one nanosecond early");
        assert_eq!(t.pop_packet(next).map(|p| p.uid), Some(3));
        assert_eq!(t.next_ready(next), Some(next + Time::from_secs(1)));
        // A partial wait keeps its tokens: half now, half later.
        assert_eq!(t.pop_packet(next + Time::from_millis(500)), None);
        assert_eq!(t.next_ready(next + Time::from_millis(500)), Some(next + Time::from_secs(1)));
        assert_eq!(t.pop_packet(next + Time::from_secs(1)).map(|p| p.uid), Some(4));
        assert_eq!(t.next_ready(next + Time::from_secs(1)), None, "empty queue");
        assert_eq!(t.pop_packet(next + Time::from_secs(2)), None);
    }

    #[test]
    fn byte_limit_drops_overflow_and_oversized_packets() {
        let mut q = crate::qdisc::Queue::new(Box::new(tbf(Rate(600_000), 1600, 10_000)));
        let mut rng = SimRng::stream(1, "t");
        for i in 0..6 {
            assert_eq!(q.enqueue(pkt(i, 0, 1500), Time::ZERO, &mut rng).verdict, Verdict::Enqueued);
        }
        // 9000 queued: a 1500-byte arrival would exceed 10 000, a 1000-byte one fits exactly.
        assert_eq!(q.enqueue(pkt(6, 0, 1500), Time::ZERO, &mut rng).verdict, Verdict::Dropped(DropReason::Overflow));
        assert_eq!(q.enqueue(pkt(7, 0, 1000), Time::ZERO, &mut rng).verdict, Verdict::Enqueued);
        assert_eq!(q.len_bytes(), 10_000);
        assert_eq!(q.enqueue(pkt(8, 0, 40), Time::ZERO, &mut rng).verdict, Verdict::Dropped(DropReason::Overflow));
        q.check_invariants().unwrap();

        // Larger than the bucket: could never conform, refused even into an empty queue.
        let mut t = tbf(Rate(600_000), 1600, 10_000);
        let v = t.enqueue(pkt(0, 0, 1601), Time::ZERO, &mut rng, &mut Vec::new());
        assert_eq!(v, Verdict::Dropped(DropReason::Overflow));
        assert_eq!(t.len_packets(), 0);
        assert_eq!(t.enqueue(pkt(1, 0, 1600), Time::ZERO, &mut rng, &mut Vec::new()), Verdict::Enqueued);
    }

    #[test]
    fn a_non_conformant_head_blocks_smaller_packets_behind_it() {
        let mut t = tbf(Rate(8_000), 1500, 100_000);
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        t.enqueue(pkt(0, 0, 1000), Time::ZERO, &mut rng, &mut ev);
        t.enqueue(pkt(1, 0, 1000), Time::ZERO, &mut rng, &mut ev);
        t.enqueue(pkt(2, 0, 40), Time::ZERO, &mut rng, &mut ev);
        assert_eq!(t.pop_packet(Time::ZERO).unwrap().uid, 0);
        // 500 bytes left: the 40-byte packet would fit but waits behind packet 1 (FIFO).
        assert_eq!(t.pop_packet(Time::ZERO), None);
        assert_eq!(t.next_ready(Time::ZERO), Some(Time::from_millis(500)));
        assert_eq!(t.pop_packet(Time::from_millis(500)).unwrap().uid, 1);
        assert_eq!(t.next_ready(Time::from_millis(500)), Some(Time::from_millis(540)));
    }

    #[test]
    fn clock_going_backwards_neither_panics_nor_mints_tokens() {
        let mut t = tbf(Rate(8_000), 1000, 100_000);
        let mut rng = SimRng::stream(1, "t");
        t.enqueue(pkt(0, 0, 1000), Time::ZERO, &mut rng, &mut Vec::new());
        t.enqueue(pkt(1, 0, 1000), Time::ZERO, &mut rng, &mut Vec::new());
        assert!(t.pop_packet(Time::from_secs(5)).is_some());
        assert_eq!(t.pop_packet(Time::from_secs(1)), None);
        assert_eq!(t.next_ready(Time::from_secs(1)), Some(Time::from_secs(2)));
        assert_eq!(t.pop_packet(Time::from_secs(6)).unwrap().uid, 1);
        // Extreme values.
        let mut t = tbf(Rate(1), 1, 1);
        t.enqueue(pkt(0, 0, 1), Time::ZERO, &mut rng, &mut Vec::new());
        assert!(t.pop_packet(Time::MAX).is_some());
        let mut t = tbf(Rate(u64::MAX), u32::MAX as u64, u64::MAX);
        t.enqueue(pkt(0, 0, u32::MAX), Time::MAX, &mut rng, &mut Vec::new());
        assert!(t.next_ready(Time::MAX).is_some());
        assert!(t.pop_packet(Time::MAX).is_some());
    }

    #[test]
    fn papers_configurations_validate() {
        // Nichols, Claypool et al., "RealVideo over TCP and UDP" testbed: a Linux TBF with a
        // 10 KB queue and a 1600-byte burst at 600/300/150/75 Kbps; 35 Kbps with a 5 KB queue.
        for r in ["600Kbps", "300Kbps", "150Kbps", "75Kbps"] {
            let cfg = TbfConfig { rate: parse_rate(r).unwrap(), burst: 1600, limit: Limit::Bytes(10_000) };
            cfg.validate().unwrap();
            // The paper's MAX_Q_DELAY is the queue drain time: 10 KB at 600 Kbps is 133 ms.
            let delay_ms = 10_000.0 * 8.0 / cfg.rate.as_bps_f64() * 1e3;
            let expect = match r {
                "600Kbps" => 133.0,
                "300Kbps" => 267.0,
                "150Kbps" => 533.0,
                _ => 1067.0,
            };
            assert!((delay_ms - expect).abs() < 1.0, "{r}: {delay_ms} ms");
        }
        let cfg = TbfConfig { rate: parse_rate("35Kbps").unwrap(), burst: 1600, limit: Limit::Bytes(5_000) };
        cfg.validate().unwrap();
    }

    #[test]
    fn validation_names_the_field() {
        let ok = TbfConfig { rate: Rate(600_000), burst: 1600, limit: Limit::Bytes(10_000) };
        assert!(TbfConfig { rate: Rate(0), ..ok.clone() }.validate().unwrap_err().starts_with("rate:"));
        assert!(TbfConfig { burst: 0, ..ok.clone() }.validate().unwrap_err().starts_with("burst:"));
        assert!(TbfConfig { limit: Limit::Bytes(0), ..ok.clone() }.validate().unwrap_err().starts_with("limit:"));
    }
}
