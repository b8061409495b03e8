//! netem's impairments on the emulated link's wire: the simulator's model
//! (`aqmlab_core::link::impairments`, where netem's semantics are cited) applied to real frames.
//!
//! A frame that has finished serializing (from the pacer or a trace's opportunity) meets the
//! model once: lost (its bytes freed, counted in `LinkStats::wire_lost_frames`), sent once, or
//! sent twice (a copy of its bytes under a key of its own). Jitter moves each copy's due time in
//! the delay line; without `reorder` the model never lets a copy be due before the one sent
//! before it (netem with a plain FIFO), with it the delay line's due-time order is netem's
//! tfifo. A flow's own extra delay (its access links, which the router stands in for) is added
//! after the model, since those links are not impaired: two flows with different access delays
//! may still pass each other, as without impairments.
//!
//! The draws come from the streams the simulator uses for the link of the same name
//! (`link/bottleneck/loss`, ...), so the k-th frame the link sends meets the k-th draw in both
//! engines. Wire losses log no packet event, as in the simulator (the packet left the queue).

use super::{Link, Stored};
use aqmlab_core::link::impairments::ImpairmentStreams;
use aqmlab_core::Time;
use aqmlab_model::streams;
use std::cmp::Reverse;

/// The store key of a frame's second copy: its uid with the top bit set (uids count up from
/// zero, so no real frame has it).
const DUPLICATE_KEY: u64 = 1 << 63;

/// The impairment draws of the scenario's link `link` ("bottleneck" or "reverse").
pub fn streams(seed: u64, link: &str) -> ImpairmentStreams {
    let stream = |kind| streams::link_impairment(seed, link, kind);
    ImpairmentStreams { loss: stream("loss"), duplicate: stream("duplicate"), jitter: stream("jitter") }
}

impl Link {
    /// The frame `uid` finished sending at `sent`: into the delay line, through the
    /// impairments when the link has them.
    pub(super) fn put_on_delay_line(&mut self, sent: Time, uid: u64) {
        let extra = self.store.get(&uid).map_or(Time::ZERO, |s| s.extra_delay);
        let delay = self.schedule.as_ref().map_or(self.delay, |s| s.delay_at(sent));
        let Some(imp) = self.impairments.as_mut() else {
            let mut due = sent + delay;
            if let Some(s) = &self.schedule {
                // Held behind the packet ahead: a delay decrease never reorders the link.
                due = s.arrival(sent, self.last_due);
                self.last_due = due;
            }
            self.delay_line.push(Reverse((due + extra, uid)));
            return;
        };
        // Impairments keep the order themselves unless they are asked to reorder.
        let copies = imp.transmit(sent, delay);
        match *copies.as_slice() {
            [] => {
                self.stats.wire_lost_frames += 1;
                if let Some(s) = self.store.remove(&uid) {
                    self.recycle(s.bytes);
                }
            }
            [due] => self.delay_line.push(Reverse((due + extra, uid))),
            [first, second] => {
                self.delay_line.push(Reverse((first + extra, uid)));
                if let Some(s) = self.store.get(&uid) {
                    let copy = Stored { bytes: s.bytes.clone(), extra_delay: s.extra_delay };
                    self.store.insert(uid | DUPLICATE_KEY, copy);
                    self.delay_line.push(Reverse((second + extra, uid | DUPLICATE_KEY)));
                    self.stats.duplicated_frames += 1;
                }
            }
            _ => unreachable!("a packet has at most two copies"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::streams;
    use crate::classify::{Classifier, Direction};
    use crate::config::ClassifyConfig;
    use crate::parse::{parse_frame, tests::ipv4_frame, Parsed, IPPROTO_UDP};
    use aqmlab_core::link::impairments::{Impairments, ImpairmentsConfig, LossConfig};
    use aqmlab_core::QdiscConfig;

    /// A 12 Mbit/s link (1500-byte packets take 1 ms) with 10 ms of delay and `imp`.
    fn impaired_link(imp: ImpairmentsConfig) -> Link {
        let qdisc: QdiscConfig = serde_json::from_str(r#"{"kind":"droptail","limit":{"packets":100000}}"#).unwrap();
        let cfg = LinkConfig { rate_bps: 12_000_000, delay_ns: 10_000_000, qdisc, trace: None, impairments: Some(imp), schedule: None };
        Link::new(&cfg, SimRng::stream(1, "test"), streams(7, "bottleneck"), true).unwrap()
    }

    /// Offers `n` 1500-byte UDP frames at time 0, frame i carrying i in its first payload bytes,
    /// serves the link at every time it asks for, and returns the indices in delivery order.
    fn send_and_collect(link: &mut Link, n: u32) -> Vec<u32> {
        let mut cls = Classifier::new(&ClassifyConfig::default(), &[]);
        for i in 0..n {
            let mut payload = vec![0u8; 1500 - 28];
            payload[..4].copy_from_slice(&i.to_be_bytes());
            let frame = ipv4_frame(IPPROTO_UDP, 1, 9, 0, &payload);
            let Parsed::Ip(info) = parse_frame(&frame).unwrap() else { panic!() };
            let c = cls.classify(&info, Direction::Forward, u64::from(i), Time::ZERO);
            link.arrive(Time::ZERO, c.packet, frame, &info, c.extra_delay);
        }
        let (mut now, mut sent, mut order) = (Time::ZERO, Vec::new(), Vec::new());
        loop {
            link.service(now, &mut sent);
            // The payload starts after Ethernet (14), IP (20) and UDP (8) headers.
            order.extend(sent.drain(..).map(|f: Vec<u8>| u32::from_be_bytes(f[42..46].try_into().unwrap())));
            match link.next_due(now) {
                Some(t) => now = t.max(now),
                None => return order,
            }
        }
    }

    #[test]
    fn the_kth_frame_meets_the_kth_draw_of_the_simulators_loss_stream() {
        let cfg = ImpairmentsConfig { loss: Some(LossConfig::Bernoulli { p: 0.1 }), ..Default::default() };
        let mut link = impaired_link(cfg.clone());
        let delivered = send_and_collect(&mut link, 20_000);
        // The same model on the same named streams, asked once per frame in sending order.
        let mut model = Impairments::new(cfg, streams(7, "bottleneck")).unwrap();
        let expected: Vec<u32> = (0..20_000).filter(|_| !model.transmit(Time::ZERO, Time::ZERO).as_slice().is_empty()).collect();
        assert_eq!(delivered, expected);
        assert_eq!(link.stats.wire_lost_frames, 20_000 - expected.len() as u64);
        assert!((1_800..2_200).contains(&link.stats.wire_lost_frames), "{} lost", link.stats.wire_lost_frames);
        assert_eq!(link.stored_frames(), 0, "lost frames' bytes are freed");
    }

    #[test]
    fn duplication_sends_every_frame_twice_and_frees_both_copies() {
        let mut link = impaired_link(ImpairmentsConfig { duplicate: 1.0, ..Default::default() });
        let delivered = send_and_collect(&mut link, 500);
        let doubled: Vec<u32> = (0..500).flat_map(|i| [i, i]).collect();
        assert_eq!(delivered, doubled);
        assert_eq!(link.stats.duplicated_frames, 500);
        assert_eq!(link.stored_frames(), 0);
    }

    #[test]
    fn jitter_reorders_only_when_asked() {
        // 20 ms of jitter against 1 ms between frames: the time-ordered line reorders, the
        // FIFO line keeps the order.
        let jitter = |reorder| ImpairmentsConfig { jitter_ns: 20_000_000, reorder, ..Default::default() };
        let in_order = send_and_collect(&mut impaired_link(jitter(false)), 2_000);
        assert_eq!(in_order, (0..2_000).collect::<Vec<u32>>());
        let shuffled = send_and_collect(&mut impaired_link(jitter(true)), 2_000);
        let mut sorted = shuffled.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..2_000).collect::<Vec<u32>>(), "every frame delivered once");
        let inversions = shuffled.windows(2).filter(|w| w[0] > w[1]).count();
        assert!(inversions > 500, "only {inversions} adjacent inversions with reordering on");
    }

    #[test]
    fn a_bad_impairment_is_refused_naming_the_link_and_field() {
        let json = r#"{"seed":1,"sender_iface":"a","receiver_iface":"b",
            "forward":{"rate_bps":1000000,"delay_ns":0,"qdisc":{"kind":"droptail","limit":{"packets":10}},
                       "impairments":{"loss":{"kind":"bernoulli","p":1.5}}},
            "reverse":{"rate_bps":0,"delay_ns":0,"qdisc":{"kind":"droptail","limit":{"packets":10}}}}"#;
        let err = crate::config::parse(json).unwrap_err();
        assert_eq!(err.path, "forward.impairments", "{err:?}");
        assert!(err.message.contains("loss.p"), "{err:?}");
    }
}
