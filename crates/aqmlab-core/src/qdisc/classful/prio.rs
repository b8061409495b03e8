//! PRIO: a classful strict-priority scheduler over child disciplines, as Linux `sch_prio`
//! (tc-prio(8)).
//!
//! * **Bands**: `bands[0]` is the highest priority. Each band is a full child discipline
//!   (Drop-Tail, RED, another PRIO, ...) built with [`build_qdisc`](crate::qdisc::build_qdisc), so it keeps its own
//!   buffer, its own drop policy and its own [`QdiscStats`](crate::qdisc::QdiscStats).
//! * **Classification** ([`Classifier`]): every arrival goes to exactly one band, chosen from
//!   `Packet::class` (`"by": "class"`, or its alias `"color"` for PELS), or from
//!   `Packet::dscp` (`"by": "dscp"`). The child decides acceptance: its verdict (with its
//!   `DropReason`) is PRIO's verdict, and packets it pushes out are reported as PRIO's
//!   evictions with the child's reason.
//! * **Scheduling**: `dequeue` serves the highest-priority band that yields a packet. As in
//!   Linux, a band that holds packets but yields none (a shaper child such as [`crate::qdisc::tbf`]
//!   whose head is not conformant yet) is passed over for the next band, so a shaped band
//!   never blocks the others. Lower bands starve while a higher band is backlogged: that is
//!   the point (PELS, Kang, Zhang, Dai and Loguinov, section 4.1: "network routers must use
//!   queuing mechanisms that do not allow low-priority packets to pass until *all*
//!   high-priority packets are fully transmitted").
//!
//! Children are built for the same `link_rate` as the parent (RED uses it only for its
//! idle-time decay).

use super::children::{build_children, offer, sum_limits, take, validate_children};
use super::classifier::{BandTable, Classifier};
use super::pels_feedback::FeedbackLabel;
use crate::packet::Packet;
use crate::qdisc::{Dequeued, Evicted, FeedbackLabeller, Qdisc, QdiscConfig, Queue, Verdict};
use crate::rng::SimRng;
use crate::units::{Limit, Rate, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrioConfig {
    /// Child disciplines, highest priority first.
    pub bands: Vec<QdiscConfig>,
    /// Band selection (default: by class, 3 -> 0, 2 -> 1, 1 -> 2, others to the last band).
    #[serde(default)]
    pub classifier: Classifier,
}

impl PrioConfig {
    pub fn validate(&self) -> Result<(), String> {
        validate_children("bands", self.bands.iter(), "")?;
        self.classifier.validate("classifier", self.bands.len())
    }

    /// Sum of the bands' limits (see `children::sum_limits` for mixed units).
    pub fn limit(&self) -> Limit {
        sum_limits(self.bands.iter())
    }
}

pub struct Prio {
    bands: Vec<Queue>,
    table: BandTable,
}

impl Prio {
    /// Builds the children; fails only on a configuration that does not validate.
    pub fn new(cfg: &PrioConfig, link_rate: Rate) -> Result<Prio, String> {
        cfg.validate()?;
        let bands = build_children("bands", cfg.bands.iter(), "", link_rate)?;
        Ok(Prio { table: cfg.classifier.table(bands.len()), bands })
    }

    /// The band an arrival would join.
    pub fn classify(&self, p: &Packet) -> usize {
        self.table.band(p)
    }

    /// Each band's own queue, for per-band statistics and backlog.
    pub fn bands(&self) -> &[Queue] {
        &self.bands
    }
}

impl Qdisc for Prio {
    fn enqueue(&mut self, pkt: Packet, now: Time, rng: &mut SimRng, evicted: &mut Vec<Evicted>) -> Verdict {
        let b = self.table.band(&pkt).min(self.bands.len().saturating_sub(1));
        offer(&mut self.bands[b], pkt, now, rng, evicted)
    }

    fn dequeue(&mut self, now: Time, dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        self.bands.iter_mut().find_map(|b| if b.len_packets() > 0 { take(b, now, dropped) } else { None })
    }

    fn len_packets(&self) -> usize {
        self.bands.iter().map(|b| b.len_packets()).sum()
    }
    fn len_bytes(&self) -> u64 {
        self.bands.iter().map(|b| b.len_bytes()).sum()
    }
    fn kind(&self) -> &'static str {
        "prio"
    }
    fn flow_states(&self) -> usize {
        self.bands.iter().map(|b| b.flow_states()).sum()
    }
    fn next_dequeue_time(&self, now: Time) -> Option<Time> {
        self.bands.iter().filter_map(|b| b.next_dequeue_time(now)).min()
    }
    /// A labeller when a band holds one, so that a feedback discipline
    /// ([`super::pels_feedback`]) may sit inside a band as well as around the whole.
    fn feedback_labeller(&self) -> Option<&dyn FeedbackLabeller> {
        self.bands.iter().any(Queue::is_feedback_labeller).then_some(self as &dyn FeedbackLabeller)
    }
}

impl FeedbackLabeller for Prio {
    /// The label of the band `p` was classified to.
    fn feedback_label(&self, p: &Packet) -> Option<FeedbackLabel> {
        self.bands.get(self.table.band(p))?.feedback_label(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::droptail::DropTailConfig;
    use crate::qdisc::drr::DrrConfig;
    use crate::qdisc::red::{RedConfig, RedMode};
    use crate::qdisc::shared::flow_key::{FlowField, FlowKeyConfig};
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::{build_qdisc, DropReason, QdiscConfig};

    fn dt(n: u64) -> QdiscConfig {
        QdiscConfig::Droptail(DropTailConfig { limit: Limit::Packets(n) })
    }

    fn colored(uid: u64, class: u8) -> Packet {
        Packet { class, ..pkt(uid, 0, 500) }
    }

    fn prio(bands: Vec<QdiscConfig>, classifier: Classifier) -> Queue {
        let cfg = QdiscConfig::Prio(PrioConfig { bands, classifier });
        build_qdisc(&cfg, Rate::mbps(10)).unwrap()
    }

    #[test]
    fn serves_the_highest_backlogged_band_first() {
        let mut q = prio(vec![dt(10), dt(10), dt(10)], Classifier::default());
        let mut rng = SimRng::stream(1, "t");
        // Arrivals red, yellow, green, unclassified (to the last band), interleaved.
        for (uid, class) in [(0, 1), (1, 2), (2, 3), (3, 0), (4, 1), (5, 3), (6, 2)] {
            assert_eq!(q.enqueue(colored(uid, class), Time::ZERO, &mut rng).verdict, Verdict::Enqueued);
        }
        let order: Vec<u64> = std::iter::from_fn(|| q.dequeue(Time::ZERO).packet).map(|p| p.uid).collect();
        assert_eq!(order, vec![2, 5, 1, 6, 0, 3, 4]);
        q.check_invariants().unwrap();
    }

    #[test]
    fn classifiers_map_class_color_and_dscp() {
        let bands = vec![dt(1), dt(1), dt(1)];
        let class = Prio::new(&PrioConfig { bands: bands.clone(), classifier: Classifier::default() }, Rate::mbps(1)).unwrap();
        let bands_of = |p: &Prio| (0..4).map(|c| p.classify(&colored(0, c))).collect::<Vec<_>>();
        assert_eq!(bands_of(&class), vec![2, 2, 1, 0]);
        let c: PrioConfig = serde_json::from_str(
            r#"{"bands": [{"kind":"droptail","limit":{"packets":1}},{"kind":"droptail","limit":{"packets":1}},{"kind":"droptail","limit":{"packets":1}}],
                "classifier": {"by": "color", "default_band": 0}}"#,
        )
        .unwrap();
        assert_eq!(bands_of(&Prio::new(&c, Rate::mbps(1)).unwrap()), vec![0, 2, 1, 0]);
        // Two bands: red clamps to the last band.
        let two = Prio::new(&PrioConfig { bands: vec![dt(1), dt(1)], classifier: Classifier::default() }, Rate::mbps(1)).unwrap();
        assert_eq!(bands_of(&two), vec![1, 1, 1, 0]);
        // An explicit class map: every color to band 0, the rest to the default (last) band.
        let m = Classifier::Class { map: Some(vec![(3, 0), (2, 0), (1, 0)]), default_band: None };
        let pels = Prio::new(&PrioConfig { bands: vec![dt(1), dt(1)], classifier: m }, Rate::mbps(1)).unwrap();
        assert_eq!(bands_of(&pels), vec![1, 0, 0, 0]);
        // DSCP: EF (46) to 0, AF11 (10) to 1, everything else to 2.
        let d = Classifier::Dscp { map: vec![(46, 0), (10, 1)], default_band: Some(2) };
        let p = Prio::new(&PrioConfig { bands, classifier: d }, Rate::mbps(1)).unwrap();
        let with = |dscp| Packet { dscp, class: 3, ..pkt(0, 0, 100) };
        assert_eq!([p.classify(&with(46)), p.classify(&with(10)), p.classify(&with(0)), p.classify(&with(63))], [0, 1, 2, 2]);
    }

    #[test]
    fn childrens_drops_and_evictions_propagate_with_their_reasons() {
        let mut rng = SimRng::stream(1, "t");
        // Band 0 Drop-Tail of 2 packets, band 1 RED that drops early, band 2 DRR with LQD.
        let red = QdiscConfig::Red(RedConfig {
            limit: Limit::Packets(100),
            min_th: 0.0,
            max_th: 0.5,
            w_q: 1.0,
            max_p: 1.0,
            gentle: false,
            mode: RedMode::Packets,
            ecn: false,
            mean_pkt_size: 500,
            wait: false,
        });
        let drr = QdiscConfig::Drr(DrrConfig {
            limit: Limit::Packets(3),
            flow_key: FlowKeyConfig::of(&[FlowField::Flow]),
            ..DrrConfig::default()
        });
        let mut q = prio(vec![dt(2), red, drr], Classifier::default());
        let at = Time::ZERO;
        assert_eq!(q.enqueue(colored(0, 3), at, &mut rng).verdict, Verdict::Enqueued);
        assert_eq!(q.enqueue(colored(1, 3), at, &mut rng).verdict, Verdict::Enqueued);
        assert_eq!(q.enqueue(colored(2, 3), at, &mut rng).verdict, Verdict::Dropped(DropReason::Overflow));
        assert_eq!(q.enqueue(colored(3, 2), at, &mut rng).verdict, Verdict::Enqueued);
        // RED's average is now 1 > max_th: forced drop.
        assert_eq!(q.enqueue(colored(4, 2), at, &mut rng).verdict, Verdict::Dropped(DropReason::Forced));
        // DRR: flow 7 fills the buffer, then flow 8 pushes flow 7's tail out.
        for uid in 5..8 {
            let p = Packet { flow: 7, ..colored(uid, 1) };
            assert_eq!(q.enqueue(p, at, &mut rng).verdict, Verdict::Enqueued);
        }
        let out = q.enqueue(Packet { flow: 8, ..colored(8, 1) }, at, &mut rng);
        assert_eq!(out.verdict, Verdict::Enqueued);
        assert_eq!(out.evicted.len(), 1);
        assert_eq!((out.evicted[0].packet.uid, out.evicted[0].reason), (7, DropReason::Evicted));
        q.check_invariants().unwrap();
        let s = q.stats();
        assert_eq!(s.dropped_packets[DropReason::Overflow as usize], 1);
        assert_eq!(s.dropped_packets[DropReason::Forced as usize], 1);
        assert_eq!(s.evicted_packets[DropReason::Evicted as usize], 1);
        while q.dequeue(at).packet.is_some() {}
        q.check_invariants().unwrap();
        assert_eq!(q.len_packets(), 0);
    }

    #[test]
    fn a_shaped_band_that_is_not_ready_does_not_block_lower_bands() {
        use crate::qdisc::tbf::TbfConfig;
        let tbf = QdiscConfig::Tbf(TbfConfig { rate: Rate(8_000), burst: 500, limit: Limit::Bytes(10_000) });
        let mut q = prio(vec![tbf, dt(10)], Classifier::default());
        let mut rng = SimRng::stream(1, "t");
        for uid in 0..2 {
            q.enqueue(colored(uid, 3), Time::ZERO, &mut rng);
        }
        q.enqueue(colored(2, 0), Time::ZERO, &mut rng);
        assert_eq!(q.dequeue(Time::ZERO).packet.unwrap().uid, 0);
        // The shaper's bucket is empty for 0.5 s: band 1 is served meanwhile.
        assert_eq!(q.dequeue(Time::ZERO).packet.unwrap().uid, 2);
        assert_eq!(q.dequeue(Time::ZERO).packet, None);
        assert_eq!(q.next_dequeue_time(Time::ZERO), Some(Time::from_millis(500)));
        assert_eq!(q.len_packets(), 1);
        assert_eq!(q.dequeue(Time::from_millis(500)).packet.unwrap().uid, 1);
        q.check_invariants().unwrap();
    }

    #[test]
    fn validation_names_the_band_and_the_field() {
        let bad = QdiscConfig::Droptail(DropTailConfig { limit: Limit::Packets(0) });
        let e = PrioConfig { bands: vec![dt(1), bad.clone()], classifier: Classifier::default() }.validate().unwrap_err();
        assert!(e.starts_with("bands.1.limit:"), "{e}");
        // Nested: a PRIO inside a PRIO.
        let inner = QdiscConfig::Prio(PrioConfig { bands: vec![dt(1), dt(1), bad], classifier: Classifier::default() });
        let e = PrioConfig { bands: vec![inner, dt(1)], classifier: Classifier::default() }.validate().unwrap_err();
        assert!(e.starts_with("bands.0.bands.2.limit:"), "{e}");
        assert!(PrioConfig { bands: vec![], classifier: Classifier::default() }.validate().unwrap_err().starts_with("bands:"));
        let e = PrioConfig { bands: vec![dt(1); 2], classifier: Classifier::Class { map: None, default_band: Some(2) } }
            .validate()
            .unwrap_err();
        assert!(e.starts_with("classifier.default_band:"), "{e}");
        let e = PrioConfig { bands: vec![dt(1); 2], classifier: Classifier::Dscp { map: vec![(46, 0), (64, 1)], default_band: None } }
            .validate()
            .unwrap_err();
        assert!(e.starts_with("classifier.map.1:"), "{e}");
        let e = PrioConfig { bands: vec![dt(1); 2], classifier: Classifier::Dscp { map: vec![(46, 0), (46, 1)], default_band: None } }
            .validate()
            .unwrap_err();
        assert!(e.contains("twice"), "{e}");
        let e = PrioConfig { bands: vec![dt(1); 2], classifier: Classifier::Class { map: Some(vec![(3, 5)]), default_band: None } }
            .validate()
            .unwrap_err();
        assert!(e.starts_with("classifier.map.0:"), "{e}");
        assert!(build_qdisc(&QdiscConfig::Prio(PrioConfig { bands: vec![], classifier: Classifier::default() }), Rate::mbps(1)).is_err());
    }

    #[test]
    fn config_round_trips_through_json_and_refuses_unknown_fields() {
        let json = r#"{"kind": "prio", "bands": [
                {"kind": "droptail", "limit": {"packets": 10}},
                {"kind": "red", "limit": {"bytes": 9000}, "min_th": 3, "max_th": 9, "w_q": 0.002,
                 "max_p": 0.1, "gentle": true, "mode": "packets", "ecn": false, "mean_pkt_size": 500}],
              "classifier": {"by": "dscp", "map": [[46, 0]], "default_band": 1}}"#;
        let cfg: QdiscConfig = serde_json::from_str(json).unwrap();
        cfg.validate().unwrap();
        let back: QdiscConfig = serde_json::from_str(&serde_json::to_string(&cfg).unwrap()).unwrap();
        assert_eq!(cfg, back);
        // Mixed units: a byte bound that holds.
        assert!(matches!(cfg.limit(), Limit::Bytes(b) if b >= 9000));
        let cfg: QdiscConfig = serde_json::from_str(r#"{"kind": "prio", "bands": [{"kind": "fifo", "limit": {"packets": 10}}]}"#).unwrap();
        assert_eq!(cfg.limit(), Limit::Packets(10));
        assert!(serde_json::from_str::<QdiscConfig>(r#"{"kind": "prio", "bands": [], "bnads": 1}"#).is_err());
        assert!(serde_json::from_str::<QdiscConfig>(r#"{"kind": "prio", "bands": [], "classifier": {"by": "class", "dflt": 1}}"#).is_err());
        assert!(serde_json::from_str::<QdiscConfig>(r#"{"kind": "prio", "bands": [], "classifier": {"by": "flow"}}"#).is_err());
    }
}
