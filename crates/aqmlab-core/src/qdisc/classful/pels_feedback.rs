//! PELS router feedback: a wrapper around any discipline that measures the PELS arrival rate
//! and labels PELS packets with the router's loss estimate (S. Kang, Y. Zhang, M. Dai and D.
//! Loguinov, "Multi-layer Active Queue Management and Congestion Control for Scalable Video
//! Streaming", ICDCS 2004, section 5.2).
//!
//! * **Measurement**, equation (11): every arriving PELS packet adds its size to a byte counter
//!   S; once every T the router computes R = S/T, p = (R - C)/R for the PELS share C of the
//!   link, increments its epoch z and resets S. p is negative while the PELS queue is
//!   under-loaded, which is what lets MKC (eq. 8) grow exponentially into free capacity.
//! * **Labels**: every passing PELS packet of any colour carries a label (router id, z, p). A
//!   router overrides a label written upstream only when its own p is larger, so the label
//!   that reaches the receiver comes from the most congested resource on the path
//!   ([`FeedbackLabel::merge`]).
//!
//! The wrapper only measures and labels; scheduling and dropping are the wrapped discipline's
//! (normally `WRR[PRIO[green, yellow, red], FIFO]`, see [`super::wrr`]). A [`Packet`] has no
//! room for a label (it is kept at 80 bytes), so the engine keeps labels beside packets, keyed
//! by uid, and asks [`crate::qdisc::Queue::feedback_label`] after each accepted arrival.
//!
//! Choices where the paper is silent (written here and in `docs/reproductions/pels.md`):
//! * PELS packets are the coloured ones (class 1 = red, 2 = yellow, 3 = green); everything
//!   else is Internet traffic and neither counted nor labelled.
//! * S counts every PELS *arrival*, dropped or not: p must estimate the loss the offered load
//!   causes, and counting only accepted packets would hide it once the queue is full.
//! * Epochs are aligned on multiples of T from time 0 and rolled lazily at the next arrival.
//!   An interval without PELS arrivals leaves z and p unchanged (eq. 11 is undefined at R = 0,
//!   and no source is sending to react to it).
//! * Before the first complete interval the label is (router id, 0, 0); sources start at epoch
//!   0 and ignore it.

use super::children::take;
use crate::packet::Packet;
use crate::qdisc::{build_qdisc, Dequeued, Evicted, FeedbackLabeller, NamedStat, Qdisc, QdiscConfig, Queue, Verdict};
use crate::rng::SimRng;
use crate::units::{Limit, Rate, Time};
use serde::{Deserialize, Serialize};

/// The label a PELS router writes into passing packets (section 5.2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FeedbackLabel {
    pub router_id: u32,
    /// The router's epoch z: incremented once per measurement interval with arrivals.
    pub epoch: u64,
    /// The loss estimate p of eq. (11); negative when the PELS share is under-loaded.
    pub loss: f64,
}

impl FeedbackLabel {
    /// The label a packet leaves a router with: `mine` replaces the label written upstream only
    /// when its loss is strictly larger (section 5.2: "overrides the existing value only if its
    /// packet loss is larger").
    pub fn merge(existing: Option<FeedbackLabel>, mine: FeedbackLabel) -> FeedbackLabel {
        match existing {
            Some(e) if e.loss >= mine.loss => e,
            _ => mine,
        }
    }
}

/// Whether a packet belongs to the PELS queue: it carries one of the three colours.
pub fn is_pels_packet(p: &Packet) -> bool {
    (1..=3).contains(&p.class)
}

/// The loss estimate of eq. (11): R = S/T, p = (R - C)/R, for `bytes` > 0 arrived in `interval`.
pub fn loss_estimate(bytes: u64, interval: Time, capacity: Rate) -> f64 {
    let arrival_bps = bytes as f64 * 8.0 / interval.as_secs_f64();
    (arrival_bps - capacity.as_bps_f64()) / arrival_bps
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PelsFeedbackConfig {
    /// The router id written into labels; distinct per router on a path.
    pub router_id: u32,
    /// Measurement interval T in nanoseconds (the paper uses 30 ms, section 6.5).
    pub interval_ns: u64,
    /// The PELS share of the link rate, 0 < share <= 1: C = share x link rate (0.5 in
    /// section 6.1, where the other half belongs to the Internet queue).
    pub share: f64,
    /// The discipline that queues and schedules (normally WRR[PRIO[g, y, r], FIFO]).
    pub qdisc: Box<QdiscConfig>,
}

impl PelsFeedbackConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.interval_ns == 0 {
            return Err("interval: must be positive (the paper uses 30ms)".into());
        }
        if !(self.share > 0.0 && self.share <= 1.0) {
            return Err(format!("share: {} is outside (0, 1] (the PELS fraction of the link rate)", self.share));
        }
        self.qdisc.validate().map_err(|e| format!("qdisc.{e}"))
    }

    pub fn limit(&self) -> Limit {
        self.qdisc.limit()
    }
}

pub struct PelsFeedback {
    inner: Queue,
    router_id: u32,
    interval: Time,
    capacity: Rate,
    /// S: PELS bytes arrived in the current interval.
    bytes: u64,
    /// End of the current interval.
    interval_end: Time,
    epoch: u64,
    loss: f64,
}

impl PelsFeedback {
    pub fn new(cfg: &PelsFeedbackConfig, link_rate: Rate) -> Result<PelsFeedback, String> {
        cfg.validate()?;
        let inner = build_qdisc(&cfg.qdisc, link_rate).map_err(|e| format!("qdisc.{e}"))?;
        let interval = Time(cfg.interval_ns);
        Ok(PelsFeedback {
            inner,
            router_id: cfg.router_id,
            interval,
            capacity: Rate((link_rate.as_bps_f64() * cfg.share).round() as u64),
            bytes: 0,
            interval_end: interval,
            epoch: 0,
            loss: 0.0,
        })
    }

    /// The PELS capacity C.
    pub fn capacity(&self) -> Rate {
        self.capacity
    }

    /// The wrapped discipline.
    pub fn inner(&self) -> &Queue {
        &self.inner
    }

    /// The current label (router id, z, p) as of the last roll.
    pub fn label(&self) -> FeedbackLabel {
        FeedbackLabel { router_id: self.router_id, epoch: self.epoch, loss: self.loss }
    }

    /// Closes every interval that ended by `now` (eq. 11).
    fn roll(&mut self, now: Time) {
        if now < self.interval_end {
            return;
        }
        if self.bytes > 0 {
            self.loss = loss_estimate(self.bytes, self.interval, self.capacity);
            self.epoch += 1;
        }
        self.bytes = 0;
        // Whole intervals that passed without arrivals change nothing.
        let behind = (now - self.interval_end).as_nanos() / self.interval.as_nanos();
        self.interval_end += Time(self.interval.as_nanos() * (behind + 1));
    }
}

impl Qdisc for PelsFeedback {
    fn enqueue(&mut self, pkt: Packet, now: Time, rng: &mut SimRng, evicted: &mut Vec<Evicted>) -> Verdict {
        self.roll(now);
        if is_pels_packet(&pkt) {
            self.bytes += pkt.size as u64;
        }
        let out = self.inner.enqueue(pkt, now, rng);
        evicted.extend_from_slice(out.evicted);
        out.verdict
    }

    fn dequeue(&mut self, now: Time, dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        take(&mut self.inner, now, dropped)
    }
    fn len_packets(&self) -> usize {
        self.inner.len_packets()
    }
    fn len_bytes(&self) -> u64 {
        self.inner.len_bytes()
    }
    fn average_queue(&self) -> Option<f64> {
        self.inner.average_queue()
    }
    /// The wrapped discipline's: the labeller adds no state of its own to the queue.
    fn named_stats(&self, out: &mut Vec<NamedStat>) {
        self.inner.named_stats(out)
    }
    fn kind(&self) -> &'static str {
        "pels_feedback"
    }
    fn flow_states(&self) -> usize {
        self.inner.flow_states()
    }
    fn next_dequeue_time(&self, now: Time) -> Option<Time> {
        self.inner.next_dequeue_time(now)
    }
    fn feedback_labeller(&self) -> Option<&dyn FeedbackLabeller> {
        Some(self)
    }
}

impl FeedbackLabeller for PelsFeedback {
    /// The current label, for PELS packets only.
    fn feedback_label(&self, p: &Packet) -> Option<FeedbackLabel> {
        is_pels_packet(p).then(|| self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::classful::classifier::Classifier;
    use crate::qdisc::droptail::DropTailConfig;
    use crate::qdisc::prio::PrioConfig;
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::wrr::{WrrBand, WrrConfig};

    fn dt(n: u64) -> QdiscConfig {
        QdiscConfig::Droptail(DropTailConfig { limit: Limit::Packets(n) })
    }

    fn router(id: u32, inner: QdiscConfig) -> Queue {
        let cfg = QdiscConfig::PelsFeedback(PelsFeedbackConfig {
            router_id: id,
            interval_ns: Time::from_millis(30).as_nanos(),
            share: 0.5,
            qdisc: Box::new(inner),
        });
        build_qdisc(&cfg, Rate::mbps(4)).unwrap()
    }

    fn colored(uid: u64, class: u8) -> Packet {
        Packet { class, ..pkt(uid, 0, 500) }
    }

    /// Offers `n` packets of `class` spread evenly over [from, from + 30 ms).
    fn offer_interval(q: &mut Queue, rng: &mut SimRng, from: Time, n: u64, class: u8) {
        for i in 0..n {
            let at = from + Time(Time::from_millis(30).as_nanos() * i / n);
            q.enqueue(colored(i, class), at, rng);
            while q.dequeue(at).packet.is_some() {}
        }
    }

    #[test]
    fn equation_11_rate_loss_and_epoch_once_per_interval() {
        // C = 2 Mb/s; 30 ms at 3 Mb/s is 11 250 bytes = 22.5 packets of 500 B.
        let mut q = router(7, dt(10_000));
        let mut rng = SimRng::stream(1, "t");
        let probe = colored(999, 2);
        assert_eq!(q.feedback_label(&probe), Some(FeedbackLabel { router_id: 7, epoch: 0, loss: 0.0 }));
        // 30 packets in the first interval: R = 15000 B * 8 / 30 ms = 4 Mb/s, p = 0.5.
        offer_interval(&mut q, &mut rng, Time::ZERO, 30, 2);
        assert_eq!(q.feedback_label(&probe).unwrap().epoch, 0, "interval not closed yet");
        // 10 packets in the second: R = 4/3 Mb/s, p = (4/3 - 2)/(4/3) = -0.5.
        offer_interval(&mut q, &mut rng, Time::from_millis(30), 10, 1);
        // Internet packets (class 0) are not counted: the second interval's p ignores them.
        for i in 0..50 {
            q.enqueue(colored(1000 + i, 0), Time::from_millis(45), &mut rng);
        }
        let l = q.feedback_label(&probe).unwrap();
        assert_eq!((l.router_id, l.epoch), (7, 1));
        assert!((l.loss - 0.5).abs() < 1e-12, "{}", l.loss);
        q.enqueue(colored(5000, 3), Time::from_millis(60), &mut rng);
        let l = q.feedback_label(&probe).unwrap();
        assert_eq!(l.epoch, 2);
        assert!((l.loss + 0.5).abs() < 1e-12, "{}", l.loss);
        assert_eq!(q.feedback_label(&colored(1, 0)), None, "Internet packets carry no label");
        q.check_invariants().unwrap();
    }

    #[test]
    fn idle_intervals_do_not_advance_the_epoch() {
        let mut q = router(1, dt(10_000));
        let mut rng = SimRng::stream(1, "t");
        offer_interval(&mut q, &mut rng, Time::ZERO, 30, 2);
        // Nothing for 10 s, then one packet: only the interval with arrivals counts, and the
        // following one (one packet) is measured on its own.
        q.enqueue(colored(1, 2), Time::from_millis(10_000), &mut rng);
        let l = q.feedback_label(&colored(2, 2)).unwrap();
        assert_eq!(l.epoch, 1);
        assert!((l.loss - 0.5).abs() < 1e-12);
        q.enqueue(colored(3, 2), Time::from_millis(10_031), &mut rng);
        let l = q.feedback_label(&colored(2, 2)).unwrap();
        assert_eq!(l.epoch, 2);
        // One 500-byte packet in 30 ms is 133 kb/s against C = 2 Mb/s.
        assert!((l.loss - (133_333.333 - 2e6) / 133_333.333).abs() < 1e-3, "{}", l.loss);
    }

    #[test]
    fn override_only_when_the_loss_is_larger() {
        let up = FeedbackLabel { router_id: 1, epoch: 40, loss: 0.2 };
        let less = FeedbackLabel { router_id: 2, epoch: 9, loss: 0.1 };
        let more = FeedbackLabel { router_id: 2, epoch: 9, loss: 0.3 };
        let equal = FeedbackLabel { router_id: 2, epoch: 9, loss: 0.2 };
        assert_eq!(FeedbackLabel::merge(None, less), less);
        assert_eq!(FeedbackLabel::merge(Some(up), less), up);
        assert_eq!(FeedbackLabel::merge(Some(up), more), more);
        assert_eq!(FeedbackLabel::merge(Some(up), equal), up, "a tie keeps the upstream label");
        // Negative losses (under-load) compare the same way: the less under-loaded router wins.
        let a = FeedbackLabel { router_id: 1, epoch: 1, loss: -3.0 };
        let b = FeedbackLabel { router_id: 2, epoch: 1, loss: -0.5 };
        assert_eq!(FeedbackLabel::merge(Some(a), b), b);
        assert_eq!(FeedbackLabel::merge(Some(b), a), b);
    }

    #[test]
    fn wraps_the_pels_router_composition_without_changing_its_scheduling() {
        // WRR[PRIO[green, yellow, red], FIFO] as in section 4.1, inside the feedback wrapper.
        let pels = QdiscConfig::Prio(PrioConfig { bands: vec![dt(50), dt(50), dt(50)], classifier: Classifier::default() });
        let wrr = QdiscConfig::Wrr(WrrConfig {
            bands: vec![WrrBand { weight: 500, qdisc: pels }, WrrBand { weight: 500, qdisc: dt(50) }],
            classifier: Classifier::Class { map: Some(vec![(3, 0), (2, 0), (1, 0)]), default_band: None },
        });
        let mut q = router(3, wrr.clone());
        let mut plain = build_qdisc(&wrr, Rate::mbps(4)).unwrap();
        let mut r1 = SimRng::stream(1, "t");
        let mut r2 = SimRng::stream(1, "t");
        let mut order = (Vec::new(), Vec::new());
        for uid in 0..400u64 {
            let p = colored(uid, (uid % 4) as u8);
            let at = Time(uid * 100_000);
            assert_eq!(q.enqueue(p, at, &mut r1).verdict, plain.enqueue(p, at, &mut r2).verdict);
            if uid % 3 == 0 {
                order.0.extend(q.dequeue(at).packet.map(|p| p.uid));
                order.1.extend(plain.dequeue(at).packet.map(|p| p.uid));
            }
        }
        assert_eq!(order.0, order.1);
        assert_eq!(q.len_packets(), plain.len_packets());
        assert!(q.stats().dropped_packets.iter().sum::<u64>() > 0, "the test should exercise drops");
        q.check_invariants().unwrap();
        assert_eq!(q.kind(), "pels_feedback");
    }

    #[test]
    fn a_feedback_discipline_inside_a_band_still_labels() {
        // WRR[feedback(PRIO[g, y, r]), FIFO]: the feedback wraps only the PELS band, where it
        // sees only PELS packets; WRR forwards the label of the band a packet belongs to.
        let pels = QdiscConfig::Prio(PrioConfig { bands: vec![dt(50), dt(50), dt(50)], classifier: Classifier::default() });
        let inner = QdiscConfig::PelsFeedback(PelsFeedbackConfig {
            router_id: 9,
            interval_ns: Time::from_millis(30).as_nanos(),
            share: 0.5,
            qdisc: Box::new(pels),
        });
        let wrr = QdiscConfig::Wrr(WrrConfig {
            bands: vec![WrrBand { weight: 500, qdisc: inner }, WrrBand { weight: 500, qdisc: dt(50) }],
            classifier: Classifier::Class { map: Some(vec![(3, 0), (2, 0), (1, 0)]), default_band: None },
        });
        let mut q = build_qdisc(&wrr, Rate::mbps(4)).unwrap();
        let mut rng = SimRng::stream(1, "t");
        offer_interval(&mut q, &mut rng, Time::ZERO, 30, 2);
        q.enqueue(colored(100, 3), Time::from_millis(31), &mut rng);
        let l = q.feedback_label(&colored(0, 1)).unwrap();
        assert_eq!((l.router_id, l.epoch), (9, 1));
        assert!((l.loss - 0.5).abs() < 1e-12, "{}", l.loss);
        assert_eq!(q.feedback_label(&colored(0, 0)), None);
    }

    #[test]
    fn validation_names_the_field() {
        let cfg = |interval_ns, share, inner| PelsFeedbackConfig { router_id: 1, interval_ns, share, qdisc: Box::new(inner) };
        assert!(cfg(0, 0.5, dt(1)).validate().unwrap_err().starts_with("interval:"));
        assert!(cfg(1, 0.0, dt(1)).validate().unwrap_err().starts_with("share:"));
        assert!(cfg(1, 1.5, dt(1)).validate().unwrap_err().starts_with("share:"));
        assert!(cfg(1, f64::NAN, dt(1)).validate().unwrap_err().starts_with("share:"));
        assert!(cfg(1, 0.5, dt(0)).validate().unwrap_err().starts_with("qdisc.limit:"));
        let json = r#"{"kind": "pels_feedback", "router_id": 2, "interval_ns": 30000000, "share": 0.5,
                       "qdisc": {"kind": "droptail", "limit": {"packets": 10}}}"#;
        let c: QdiscConfig = serde_json::from_str(json).unwrap();
        assert_eq!(c.limit(), Limit::Packets(10));
        assert!(serde_json::from_str::<QdiscConfig>(&json.replace("share", "shares")).is_err());
    }
}
