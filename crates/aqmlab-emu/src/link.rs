//! One direction of the emulated link, free of I/O and clocks: discipline, pacer, delay line.
//!
//! A frame arrives with its parsed `Packet`; the packet goes to the discipline (through
//! `aqmlab_core::Queue`, unchanged from the simulator) while the frame's bytes wait in a side
//! store keyed by the packet's uid, since disciplines only ever see `Packet`s. The pacer
//! serializes from an absolute clock: a packet starts when the previous one has finished
//! (`free_at`), and finishes `size / rate` later, so lateness of the caller's wake-ups never
//! accumulates into rate error (the next departure is computed from the previous departure,
//! not from when the router happened to wake). A busy period restarts the clock at the
//! arrival that ends an idle spell, so idle time is never banked as credit. A finished packet
//! then waits `delay` (plus its flow's extra delay) in the delay line, a min-heap on due time
//! with the uid as tie-break (FIFO among equal due times), before its frame is handed back for
//! transmission.
//!
//! Times are the run's `Time` (ns since the run's epoch); the caller passes `now`.
//!
//! A link that follows a delivery trace replaces the pacer by the trace's opportunities
//! (`trace.rs`); the discipline, the delay line and the records are the same. A link with
//! netem's impairments (`impaired.rs`) loses, duplicates or jitters what leaves it on its way
//! into the delay line, with the simulator's model (`aqmlab_core::link::impairments`).
//!
//! A link with a rate and delay schedule (`aqmlab_core::link::schedule`, the simulator's
//! semantics): the pacer takes the rate in force when a packet starts and does not start one
//! during an outage (`free_at` moves to its end), and a packet gets the delay in force when it
//! finishes, held behind the packet ahead so that a delay decrease never reorders.

pub mod impaired;
mod trace;

use crate::config::LinkConfig;
use crate::parse::{parse_frame, set_ce, IpInfo, Parsed};
use aqmlab_core::link::impairments::{ImpairmentStreams, Impairments};
use aqmlab_core::link::{Schedule, TraceServer};
use aqmlab_core::{build_qdisc, DropReason, Packet, Queue, Rate, SimRng, Time, Verdict};
use aqmlab_model::record::{event, PacketEvents, QueueSamples};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// Frame bytes waiting in the queue or in the delay line.
struct Stored {
    bytes: Vec<u8>,
    extra_delay: Time,
}

/// Counters of one direction, besides the discipline's own (`Queue::stats`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct LinkStats {
    /// Non-IP frames (ARP) passed around the discipline.
    pub bypassed_frames: u64,
    pub delivered_frames: u64,
    pub delivered_bytes: u64,
    /// Most frames ever held at once (queue + delay line): the memory bound under overload.
    pub peak_stored_frames: u64,
    /// How late frames were handed out after their due time: counts per power-of-two bucket
    /// of nanoseconds (bucket k holds lateness in [2^(k-1), 2^k), bucket 0 exactly 0), and the
    /// largest. The router's own contribution to latency beyond the configured delay.
    pub lateness_log2_ns: Vec<u64>,
    pub max_lateness_ns: u64,
    /// Impairments: frames lost on the wire, and extra copies sent (duplication).
    pub wire_lost_frames: u64,
    pub duplicated_frames: u64,
}

pub struct Link {
    queue: Queue,
    rng: SimRng,
    /// None: unshaped (a packet leaves as soon as the discipline releases it).
    rate: Option<Rate>,
    delay: Time,
    /// When the packet now being serialized finishes; the next may start then.
    free_at: Time,
    store: HashMap<u64, Stored>,
    delay_line: BinaryHeap<Reverse<(Time, u64)>>,
    /// Frame buffers returned by the caller after transmission, reused for arrivals.
    pool: Vec<Vec<u8>>,
    pub stats: LinkStats,
    /// Packet events, when recorded (the forward direction).
    pub events: Option<PacketEvents>,
    /// Records are stamped relative to this time (the run's epoch); traffic before it (the
    /// RTT probe, ARP) is forwarded but not logged, so records start at t = 0 with the flows.
    pub record_origin: Time,
    /// Delivery opportunities from a trace, when the link follows one instead of a rate.
    trace: Option<TraceServer>,
    /// netem's loss, duplication and jitter on the wire, when the link has any.
    impairments: Option<Impairments>,
    /// The rate and delay schedule, when the link has one; it starts with the run's epoch.
    schedule: Option<Schedule>,
    /// When the last packet the schedule put on the delay line arrives (none before it may).
    last_due: Time,
}

impl Link {
    /// `impairments` are the draws of the link's impairments (`impaired::streams`), used only
    /// when its config has some.
    pub fn new(cfg: &LinkConfig, rng: SimRng, impairments: ImpairmentStreams, record_events: bool) -> Result<Link, String> {
        let impairments = match &cfg.impairments {
            Some(imp) => Some(Impairments::new(imp.clone(), impairments).map_err(|e| format!("impairments.{e}"))?),
            None => None,
        };
        cfg.validate_service().map_err(|(field, e)| format!("{field}: {e}"))?;
        let rate = (cfg.rate_bps > 0).then_some(Rate(cfg.rate_bps));
        // An unshaped link has no rate for RED's idle decay; 10 Gbit/s stands in for "fast". A
        // trace link's discipline gets the trace's mean rate, as in the simulator.
        let nominal = if cfg.trace.is_some() { cfg.nominal_rate() } else { rate.unwrap_or(Rate(10_000_000_000)) };
        let queue = build_qdisc(&cfg.qdisc, nominal)?;
        let schedule = match &cfg.schedule {
            Some(s) => Some(Schedule::new(s, Time::ZERO).map_err(|e| format!("schedule.{e}"))?),
            None => None,
        };
        Ok(Link {
            queue,
            rng,
            rate,
            delay: Time(cfg.delay_ns),
            free_at: Time::ZERO,
            store: HashMap::new(),
            delay_line: BinaryHeap::new(),
            pool: Vec::new(),
            stats: LinkStats::default(),
            events: record_events.then(PacketEvents::default),
            record_origin: Time::ZERO,
            trace: cfg.trace.as_ref().map(|t| TraceServer::new(t, Time::ZERO)),
            impairments,
            schedule,
            last_due: Time::ZERO,
        })
    }

    /// A buffer for the next received frame (recycled when possible).
    pub fn take_buffer(&mut self) -> Vec<u8> {
        self.pool.pop().unwrap_or_default()
    }

    /// Returns a transmitted frame's buffer for reuse (the pool is bounded).
    pub fn recycle(&mut self, mut buf: Vec<u8>) {
        if self.pool.len() < 4096 {
            buf.clear();
            self.pool.push(buf);
        }
    }

    /// Offers an IP packet that arrived at `now`. `ip` is needed to set CE when the discipline
    /// marks instead of dropping.
    pub fn arrive(&mut self, now: Time, pkt: Packet, mut frame: Vec<u8>, ip: &IpInfo, extra_delay: Time) {
        let uid = pkt.uid;
        if self.trace.is_some() {
            self.serve_opportunities(now); // before the arrival joins, as mahimahi's read_packet
        }
        let was_empty = self.queue.len_packets() == 0;
        if was_empty && self.free_at < now {
            self.free_at = now; // idle link: the clock restarts at this arrival
        }
        self.log(now, event::ARRIVE, &pkt, None, false);
        let outcome = self.queue.enqueue(pkt, now, &mut self.rng);
        let verdict = outcome.verdict;
        let evicted: Vec<(Packet, DropReason)> = outcome.evicted.iter().map(|e| (e.packet, e.reason)).collect();
        match verdict {
            Verdict::Enqueued | Verdict::Marked => {
                let marked = verdict == Verdict::Marked && set_ce(&mut frame, ip);
                self.log(now, event::ENQUEUE, &pkt, None, marked);
                self.store.insert(uid, Stored { bytes: frame, extra_delay });
            }
            Verdict::Dropped(reason) => {
                self.log(now, event::DROP, &pkt, Some(reason), false);
                self.recycle(frame);
            }
        }
        for (victim, reason) in evicted {
            self.log(now, event::DROP, &victim, Some(reason), false);
            if let Some(s) = self.store.remove(&victim.uid) {
                self.recycle(s.bytes);
            }
        }
        self.note_peak();
    }

    /// Logs one packet event with the queue as it is now, in record time (since the origin).
    fn log(&mut self, now: Time, ev: u8, pkt: &Packet, reason: Option<DropReason>, marked: bool) {
        let origin = self.record_origin;
        let Some(events) = self.events.as_mut() else { return };
        if now < origin {
            return;
        }
        let mut shifted = *pkt;
        shifted.enqueued_at = pkt.enqueued_at.saturating_sub(origin);
        events.push(now - origin, ev, &shifted, reason, marked, self.queue.len_packets(), self.queue.len_bytes());
    }

    /// A non-IP frame (ARP): around the discipline, straight into the delay line.
    pub fn bypass(&mut self, now: Time, uid: u64, frame: Vec<u8>) {
        self.stats.bypassed_frames += 1;
        self.store.insert(uid, Stored { bytes: frame, extra_delay: Time::ZERO });
        let delay = self.schedule.as_ref().map_or(self.delay, |s| s.delay_at(now));
        self.delay_line.push(Reverse((now + delay, uid)));
        self.note_peak();
    }

    fn note_lateness(&mut self, late: Time) {
        let ns = late.as_nanos();
        let bucket = (64 - ns.leading_zeros()) as usize;
        if self.stats.lateness_log2_ns.len() <= bucket {
            self.stats.lateness_log2_ns.resize(bucket + 1, 0);
        }
        self.stats.lateness_log2_ns[bucket] += 1;
        self.stats.max_lateness_ns = self.stats.max_lateness_ns.max(ns);
    }

    fn note_peak(&mut self) {
        self.stats.peak_stored_frames = self.stats.peak_stored_frames.max(self.store.len() as u64);
    }

    /// Serializes what the pacer allows by `now`, then hands every frame whose delay has
    /// elapsed to `out`, in due-time order.
    pub fn service(&mut self, now: Time, out: &mut Vec<Vec<u8>>) {
        if self.trace.is_some() {
            self.serve_opportunities(now);
        } else {
            self.release_from_queue(now);
        }
        while let Some(&Reverse((due, uid))) = self.delay_line.peek() {
            if due > now {
                break;
            }
            self.delay_line.pop();
            self.note_lateness(now - due);
            if let Some(s) = self.store.remove(&uid) {
                self.stats.delivered_frames += 1;
                self.stats.delivered_bytes += s.bytes.len() as u64;
                out.push(s.bytes);
            }
        }
    }

    fn release_from_queue(&mut self, now: Time) {
        while self.queue.len_packets() > 0 && self.free_at <= now {
            if let Some(s) = &self.schedule {
                // An outage: nothing starts before it ends (`next_due` wakes the router then).
                let from = s.sending_from(self.free_at);
                if from > self.free_at {
                    self.free_at = from;
                    continue;
                }
            }
            // A shaper (tbf) may hold packets back; it says when to ask again.
            let out = self.queue.dequeue(now);
            let (packet, marked) = (out.packet, out.marked);
            if !out.dropped.is_empty() {
                let dropped: Vec<(Packet, DropReason)> = out.dropped.iter().map(|e| (e.packet, e.reason)).collect();
                self.forget_head_drops(now, dropped);
            }
            let Some(pkt) = packet else { break };
            let start = self.free_at.max(pkt.enqueued_at);
            // A head that arrived after `free_at` (the router woke late) may find an outage.
            let start = self.schedule.as_ref().map_or(start, |s| s.sending_from(start));
            let marked = marked && self.mark_stored(pkt.uid);
            self.log(start, event::DEQUEUE, &pkt, None, marked);
            let finish = match (&self.schedule, self.rate) {
                (Some(s), _) => s.finish(start, pkt.size as u64),
                (None, Some(rate)) => start + rate.tx_time(pkt.size as u64),
                (None, None) => start,
            };
            self.free_at = finish;
            self.put_on_delay_line(finish, pkt.uid);
        }
    }

    /// Logs and frees the packets a dequeue dropped at the head (CoDel, FQ-CoDel).
    fn forget_head_drops(&mut self, now: Time, dropped: Vec<(Packet, DropReason)>) {
        for (victim, reason) in dropped {
            self.log(now, event::DROP, &victim, Some(reason), false);
            if let Some(s) = self.store.remove(&victim.uid) {
                self.recycle(s.bytes);
            }
        }
    }

    /// Sets CE in the stored frame of a packet the discipline marked at dequeue.
    fn mark_stored(&mut self, uid: u64) -> bool {
        let Some(s) = self.store.get_mut(&uid) else { return false };
        match parse_frame(&s.bytes) {
            Ok(Parsed::Ip(info)) => set_ce(&mut s.bytes, &info),
            _ => false,
        }
    }

    /// When `service` next has something to do, if anything is waiting.
    pub fn next_due(&self, now: Time) -> Option<Time> {
        let line = self.delay_line.peek().map(|Reverse((due, _))| *due);
        let queue = if let Some(server) = &self.trace {
            server.next_due(self.queue.len_packets() == 0)
        } else if self.queue.len_packets() > 0 {
            let shaper = self.queue.next_dequeue_time(now).unwrap_or(Time::ZERO);
            Some(self.free_at.max(shaper))
        } else {
            None
        };
        match (line, queue) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn sample_queue(&self, now: Time, samples: &mut QueueSamples) {
        samples.push_queue(now.saturating_sub(self.record_origin), &self.queue);
    }

    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// Frames held (queue and delay line).
    pub fn stored_frames(&self) -> usize {
        self.store.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{Classifier, Direction};
    use crate::config::ClassifyConfig;
    use crate::parse::{parse_frame, tests::ipv4_frame, Parsed, IPPROTO_TCP, IPPROTO_UDP};
    use aqmlab_core::QdiscConfig;

    fn fifo_link(rate_bps: u64, delay_ns: u64, limit_packets: u64) -> Link {
        let qdisc: QdiscConfig = serde_json::from_str(&format!(r#"{{"kind":"droptail","limit":{{"packets":{limit_packets}}}}}"#)).unwrap();
        let cfg = LinkConfig { rate_bps, delay_ns, qdisc, trace: None, impairments: None, schedule: None };
        Link::new(&cfg, SimRng::stream(1, "test"), impaired::streams(1, "test"), true).unwrap()
    }

    /// Offers a `size`-byte UDP/IP packet of flow port `dport` at `now`.
    pub(super) fn offer(link: &mut Link, cls: &mut Classifier, uid: u64, now: Time, size: usize, dport: u16) {
        let frame = ipv4_frame(IPPROTO_UDP, 1, dport, 0, &vec![0u8; size - 28]);
        let Parsed::Ip(info) = parse_frame(&frame).unwrap() else { panic!() };
        let c = cls.classify(&info, Direction::Forward, uid, now);
        link.arrive(now, c.packet, frame, &info, c.extra_delay);
    }

    /// Runs the link with wake-ups at exactly the times it asks for (an ideal router).
    pub(super) fn drain(link: &mut Link, from: Time) -> Vec<(Time, usize)> {
        let mut out = Vec::new();
        let mut now = from;
        let mut sent = Vec::new();
        loop {
            link.service(now, &mut sent);
            out.extend(sent.drain(..).map(|f| (now, f.len())));
            match link.next_due(now) {
                Some(t) => now = t.max(now),
                None => return out,
            }
        }
    }

    #[test]
    fn departures_are_paced_back_to_back_then_delayed() {
        // 1500-byte IP packets at 12 Mbit/s take exactly 1 ms each (frames are 1514 bytes).
        let mut link = fifo_link(12_000_000, 5_000_000, 100);
        let mut cls = Classifier::new(&ClassifyConfig::default(), &[]);
        for uid in 0..5 {
            offer(&mut link, &mut cls, uid, Time::ZERO, 1500, 9);
        }
        let out = drain(&mut link, Time::ZERO);
        let times: Vec<u64> = out.iter().map(|(t, _)| t.as_nanos()).collect();
        assert_eq!(times, vec![6_000_000, 7_000_000, 8_000_000, 9_000_000, 10_000_000]);
        assert!(out.iter().all(|(_, len)| *len == 1514));
    }

    fn scheduled_link(steps: &[(u64, u64, u64)]) -> Link {
        use aqmlab_core::link::schedule::{ScheduleConfig, ScheduleStep};
        let qdisc: QdiscConfig = serde_json::from_str(r#"{"kind":"droptail","limit":{"packets":1000}}"#).unwrap();
        let steps: Vec<ScheduleStep> =
            steps.iter().map(|&(at_ns, rate_bps, delay_ns)| ScheduleStep { at_ns, rate_bps, delay_ns }).collect();
        let (rate_bps, delay_ns) = (steps[0].rate_bps, steps[0].delay_ns);
        let cfg = LinkConfig {
            rate_bps,
            delay_ns,
            qdisc,
            trace: None,
            impairments: None,
            schedule: Some(ScheduleConfig { steps, period_ns: None }),
        };
        Link::new(&cfg, SimRng::stream(1, "test"), impaired::streams(1, "test"), true).unwrap()
    }

    #[test]
    fn a_scheduled_link_sends_at_the_rate_of_the_step_a_packet_starts_in() {
        // 12 Mbit/s (1 ms per 1500-byte packet) until 2.5 ms, then 1.2 Mbit/s (10 ms): the
        // packet started at 2 ms finishes at 3 ms at the old rate, the next ones 10 ms apart.
        let mut link = scheduled_link(&[(0, 12_000_000, 0), (2_500_000, 1_200_000, 0)]);
        let mut cls = Classifier::new(&ClassifyConfig::default(), &[]);
        for uid in 0..5 {
            offer(&mut link, &mut cls, uid, Time::ZERO, 1500, 9);
        }
        let ms: Vec<u64> = drain(&mut link, Time::ZERO).iter().map(|(t, _)| t.as_nanos() / 1_000_000).collect();
        assert_eq!(ms, vec![1, 2, 3, 13, 23]);
    }

    #[test]
    fn a_delay_decrease_holds_packets_behind_the_one_ahead() {
        // 80 ms of delay until 1.5 ms, then 10 ms: the packets finishing at 2, 3 ms would be due
        // at 12, 13 ms, before the first (81 ms); they leave right behind it, in order.
        let mut link = scheduled_link(&[(0, 12_000_000, 80_000_000), (1_500_000, 12_000_000, 10_000_000)]);
        let mut cls = Classifier::new(&ClassifyConfig::default(), &[]);
        for uid in 0..3 {
            offer(&mut link, &mut cls, uid, Time::ZERO, 1500 + uid as usize, 9);
        }
        let out = drain(&mut link, Time::ZERO);
        assert_eq!(out.iter().map(|(t, _)| t.as_nanos() / 1_000_000).collect::<Vec<_>>(), vec![81, 81, 81]);
        assert_eq!(out.iter().map(|(_, len)| *len).collect::<Vec<_>>(), vec![1514, 1515, 1516], "in order");
        // Once the line has drained, a new packet gets the new delay alone.
        offer(&mut link, &mut cls, 3, Time::from_millis(100), 1500, 9);
        assert_eq!(drain(&mut link, Time::from_millis(100))[0].0, Time::from_millis(111));
    }

    #[test]
    fn an_outage_starts_nothing_until_it_ends() {
        let mut link = scheduled_link(&[(0, 12_000_000, 0), (1_500_000, 0, 0), (50_000_000, 12_000_000, 0)]);
        let mut cls = Classifier::new(&ClassifyConfig::default(), &[]);
        for uid in 0..3 {
            offer(&mut link, &mut cls, uid, Time::ZERO, 1500, 9);
        }
        let ms: Vec<u64> = drain(&mut link, Time::ZERO).iter().map(|(t, _)| t.as_nanos() / 1_000_000).collect();
        assert_eq!(ms, vec![1, 2, 51], "the packet started at 1 ms finishes; the next waits for 50 ms");
    }

    #[test]
    fn late_wakeups_do_not_lower_the_rate() {
        // The router wakes 300 us late every time; the absolute clock still sends 100 packets
        // in 100 ms of link time (the last one due at 100 ms + delay), not later.
        let mut link = fifo_link(12_000_000, 0, 1000);
        let mut cls = Classifier::new(&ClassifyConfig::default(), &[]);
        for uid in 0..100 {
            offer(&mut link, &mut cls, uid, Time::ZERO, 1500, 9);
        }
        let mut now = Time::ZERO;
        let mut sent = Vec::new();
        let mut last = Time::ZERO;
        while let Some(due) = {
            link.service(now, &mut sent);
            link.next_due(now)
        } {
            if !sent.is_empty() {
                last = now;
                sent.clear();
            }
            now = due.max(now) + Time::from_micros(300);
        }
        if !sent.is_empty() {
            last = now;
        }
        assert!(last <= Time::from_micros(100_000 + 300), "last departure at {last}");
        assert_eq!(link.stats.delivered_frames, 100);
    }

    #[test]
    fn idle_time_is_not_banked_as_credit() {
        let mut link = fifo_link(12_000_000, 0, 100);
        let mut cls = Classifier::new(&ClassifyConfig::default(), &[]);
        offer(&mut link, &mut cls, 0, Time::ZERO, 1500, 9);
        drain(&mut link, Time::ZERO);
        // 50 ms idle, then two packets together: the second leaves 1 ms after the first.
        let t = Time::from_millis(50);
        offer(&mut link, &mut cls, 1, t, 1500, 9);
        offer(&mut link, &mut cls, 2, t, 1500, 9);
        let out = drain(&mut link, t);
        assert_eq!(out[0].0, Time::from_millis(51));
        assert_eq!(out[1].0, Time::from_millis(52));
    }

    #[test]
    fn overflow_drops_are_recorded_and_their_frames_freed() {
        let mut link = fifo_link(1_000_000, 0, 3);
        let mut cls = Classifier::new(&ClassifyConfig::default(), &[]);
        for uid in 0..10 {
            offer(&mut link, &mut cls, uid, Time::ZERO, 1000, 9);
        }
        // Nothing is served before `service` runs: three queued, seven refused.
        assert_eq!(link.queue().stats().dropped_packets[DropReason::Overflow as usize], 7);
        assert_eq!(link.stored_frames(), 3);
        link.queue().check_invariants().unwrap();
        let out = drain(&mut link, Time::ZERO);
        assert_eq!(out.len(), 3);
        assert_eq!(link.stored_frames(), 0);
    }

    #[test]
    fn records_start_at_the_origin_and_are_stamped_from_it() {
        let mut link = fifo_link(12_000_000, 0, 100);
        link.record_origin = Time::from_secs(10);
        let mut cls = Classifier::new(&ClassifyConfig::default(), &[]);
        offer(&mut link, &mut cls, 0, Time::from_secs(9), 1500, 9); // before the origin: forwarded, not logged
        drain(&mut link, Time::from_secs(9));
        offer(&mut link, &mut cls, 1, Time::from_secs(10) + Time::from_millis(5), 1500, 9);
        let out = drain(&mut link, Time::from_secs(10) + Time::from_millis(5));
        assert_eq!(out.len(), 1);
        assert_eq!(link.stats.delivered_frames, 2);
        let table = link.events.take().unwrap().into_table();
        let col = |name: &str| table.iter().find(|(n, _)| *n == name).map(|(_, c)| c.to_le_bytes()).unwrap();
        let t: Vec<u64> = col("t_ns").chunks(8).map(|b| u64::from_le_bytes(b.try_into().unwrap())).collect();
        let uid: Vec<u64> = col("uid").chunks(8).map(|b| u64::from_le_bytes(b.try_into().unwrap())).collect();
        let sojourn: Vec<u64> = col("sojourn_ns").chunks(8).map(|b| u64::from_le_bytes(b.try_into().unwrap())).collect();
        // arrive, enqueue, dequeue of uid 1 only, 5 ms after the origin, no time in the queue.
        assert_eq!(uid, vec![1, 1, 1]);
        assert_eq!(t, vec![5_000_000; 3]);
        assert_eq!(sojourn, vec![0, 0, 0]);
    }

    #[test]
    fn unshaped_links_forward_at_once_after_the_delay() {
        let mut link = fifo_link(0, 2_000, 100);
        let mut cls = Classifier::new(&ClassifyConfig::default(), &[]);
        for uid in 0..3 {
            offer(&mut link, &mut cls, uid, Time(100), 500, 9);
        }
        let out = drain(&mut link, Time(100));
        assert_eq!(out.iter().map(|(t, _)| t.as_nanos()).collect::<Vec<_>>(), vec![2_100; 3]);
    }

    #[test]
    fn ecn_marking_sets_ce_in_the_forwarded_bytes() {
        // RED with w_q = 1 follows the instantaneous queue; 30 back-to-back ECT(0) arrivals
        // climb through [min_th, max_th) where its early coin marks instead of dropping.
        let qdisc: QdiscConfig = serde_json::from_str(
            r#"{"kind":"red","limit":{"packets":100},"min_th":0.0,"max_th":40.0,"w_q":1.0,"max_p":1.0,"gentle":false,"mode":"packets","ecn":true,"mean_pkt_size":1000}"#,
        )
        .expect("red config");
        let cfg = LinkConfig { rate_bps: 1_000_000, delay_ns: 0, qdisc, trace: None, impairments: None, schedule: None };
        let mut link = Link::new(&cfg, SimRng::stream(1, "t"), impaired::streams(1, "t"), true).unwrap();
        let mut cls = Classifier::new(&ClassifyConfig::default(), &[]);
        for uid in 0..30 {
            let frame = ipv4_frame(IPPROTO_TCP, 1, 2, 0b10, &[0u8; 500]);
            let Parsed::Ip(info) = parse_frame(&frame).unwrap() else { panic!() };
            let c = cls.classify(&info, Direction::Forward, uid, Time::ZERO);
            link.arrive(Time::ZERO, c.packet, frame, &info, Time::ZERO);
        }
        let marked = link.queue().stats().marked_packets;
        assert!(marked > 0, "RED must have marked some of 30 packets");
        let mut sent = Vec::new();
        let mut now = Time::ZERO;
        loop {
            link.service(now, &mut sent);
            match link.next_due(now) {
                Some(t) => now = t,
                None => break,
            }
        }
        let ce_on_wire = sent.iter().filter(|f| f[15] & 3 == 3).count() as u64;
        assert_eq!(ce_on_wire, marked, "every mark reaches the wire as CE");
        for f in &sent {
            assert_eq!(u16::from_be_bytes([f[24], f[25]]), crate::parse::tests::ipv4_checksum(&f[14..34]));
        }
    }
}
