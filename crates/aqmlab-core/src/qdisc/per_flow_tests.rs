//! The property test over every per-flow discipline (SQF, DRR, PFQ, FQ-CoDel, CAKE): the books
//! balance, the buffer stays within its limit, packets of one 5-tuple keep their order, and no
//! discipline holds more flow entries than packets.

use super::cake::{Cake, CakeConfig, Diffserv, FlowMode};
use super::drr::{Drr, DrrConfig};
use super::fq_codel::{FqCodel, FqCodelConfig};
use super::pfq::{Pfq, PfqConfig};
use super::shared::flow_key::{FlowField, FlowKeyConfig};
use super::shared::flow_table::within;
use super::sqf::{Sqf, SqfConfig};
use super::{Dequeued, Evicted, Qdisc, Queue, Verdict};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Limit, Time};
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the property test needs from a per-flow discipline besides `Qdisc`.
pub(crate) trait Inspect: Qdisc {
    fn active_flows(&self) -> usize;
    fn check(&self) -> Result<(), String>;
}

/// Forwards to a discipline inside `Queue` and checks, after every operation, its internal
/// consistency and that it holds no more flow entries than packets.
struct Probe<Q> {
    inner: Q,
    fault: Fault,
}

impl<Q: Inspect> Probe<Q> {
    fn audit(&self) {
        let r = self.inner.check().and_then(|_| {
            if self.inner.active_flows() > self.inner.len_packets() {
                Err(format!("{} flow entries for {} packets", self.inner.active_flows(), self.inner.len_packets()))
            } else {
                Ok(())
            }
        });
        if let Err(e) = r {
            self.fault.lock().unwrap().get_or_insert(e);
        }
    }
}

impl<Q: Inspect> Qdisc for Probe<Q> {
    fn enqueue(&mut self, pkt: Packet, now: Time, rng: &mut SimRng, ev: &mut Vec<Evicted>) -> Verdict {
        let v = self.inner.enqueue(pkt, now, rng, ev);
        self.audit();
        v
    }
    fn dequeue(&mut self, now: Time, dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        let p = self.inner.dequeue(now, dropped);
        self.audit();
        p
    }
    fn len_packets(&self) -> usize {
        self.inner.len_packets()
    }
    fn len_bytes(&self) -> u64 {
        self.inner.len_bytes()
    }
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
}

fn probed<Q: Inspect + 'static>(q: Q) -> (Queue, Fault) {
    let fault = Arc::new(Mutex::new(None));
    (Queue::new(Box::new(Probe { inner: q, fault: fault.clone() })), fault)
}

#[derive(Clone, Debug)]
enum Op {
    Arrive { size: u32, flow: u16, port: u16 },
    Depart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (prop_oneof![Just(40u32), Just(1500u32), 1u32..1600], 0u16..60, 0u16..3)
            .prop_map(|(size, flow, port)| Op::Arrive { size, flow, port }),
        3 => Just(Op::Depart),
    ]
}

type Fault = Arc<Mutex<Option<String>>>;
type Make = Box<dyn Fn() -> (Queue, Fault)>;

fn disciplines() -> Vec<(String, Limit, Make)> {
    let mut v: Vec<(String, Limit, Make)> = Vec::new();
    let sport = FlowKeyConfig::of(&[FlowField::Sport]);
    for limit in [Limit::Packets(1), Limit::Packets(7), Limit::Packets(25), Limit::Bytes(1600), Limit::Bytes(9000)] {
        for key in [FlowKeyConfig::default(), sport.clone()] {
            let k = key.clone();
            v.push((format!("sqf {limit:?} {key:?}"), limit, Box::new(move || probed(Sqf::new(SqfConfig { limit, flow_key: k.clone() })))));
            for quantum in [1500u32, 300] {
                let k = key.clone();
                v.push((
                    format!("drr {limit:?} q{quantum} {key:?}"),
                    limit,
                    Box::new(move || probed(Drr::new(DrrConfig { limit, quantum, flow_key: k.clone() }))),
                ));
                for threshold in [0u32, 1500, 3000] {
                    let k = key.clone();
                    v.push((
                        format!("pfq {limit:?} q{quantum} t{threshold} {key:?}"),
                        limit,
                        Box::new(move || {
                            probed(Pfq::new(PfqConfig { limit, quantum, priority_threshold: threshold, flow_key: k.clone() }))
                        }),
                    ));
                }
                for flows in [4u32, 1024] {
                    let k = key.clone();
                    v.push((
                        format!("fq_codel {limit:?} q{quantum} {flows} buckets {key:?}"),
                        limit,
                        Box::new(move || {
                            probed(FqCodel::new(FqCodelConfig {
                                limit,
                                quantum,
                                flows,
                                drop_batch: 3,
                                flow_key: k.clone(),
                                ..FqCodelConfig::default()
                            }))
                        }),
                    ));
                }
            }
        }
    }
    // CAKE limits memory only; unlimited (no shaper), so that it is work conserving.
    for memlimit in [1600u64, 9000] {
        for (diffserv, flowmode) in [
            (Diffserv::Besteffort, FlowMode::Flows),
            (Diffserv::Diffserv4, FlowMode::TripleIsolate),
            (Diffserv::Diffserv8, FlowMode::DualSrchost),
        ] {
            let cfg = CakeConfig { diffserv, flowmode, memlimit: Some(memlimit), rtt_ns: 10_000_000, ..CakeConfig::default() };
            v.push((
                format!("cake {memlimit} B {diffserv:?} {flowmode:?}"),
                Limit::Bytes(memlimit),
                Box::new(move || probed(Cake::new(cfg.clone()))),
            ));
        }
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn per_flow_disciplines_keep_books_limits_and_bounded_state(ops in prop::collection::vec(op(), 1..400)) {
        for (name, limit, make) in disciplines() {
            let (mut q, fault) = make();
            let mut rng = SimRng::stream(1, "prop");
            let mut last_out: HashMap<u64, u64> = HashMap::new();
            // A clock of 2 ms per operation, so that FQ-CoDel's CoDel drops at the head.
            let at = |i: usize| Time::from_millis(2 * i as u64);
            for (uid, op) in ops.iter().enumerate() {
                match *op {
                    Op::Arrive { size, flow, port } => {
                        let p = Packet {
                            uid: uid as u64, size, flow: flow as u32,
                            src: (flow % 7) as u32, dst: 100, sport: 1000 + flow, dport: 80 + port,
                            ecn: if port == 2 { crate::packet::Ecn::Ect0 } else { crate::packet::Ecn::NotEct },
                            ..Packet::default()
                        };
                        q.enqueue(p, at(uid), &mut rng);
                    }
                    Op::Depart => {
                        if let Some(p) = q.dequeue(at(uid)).packet {
                            // Packets of one 5-tuple never overtake each other.
                            let k = ((p.flow as u64) << 16) | p.dport as u64;
                            if let Some(prev) = last_out.insert(k, p.uid) {
                                prop_assert!(prev < p.uid, "{}: reordered {} after {}", name, p.uid, prev);
                            }
                        }
                    }
                }
                prop_assert!(q.check_invariants().is_ok(), "{}: {}", name, q.check_invariants().unwrap_err());
                prop_assert!(within(limit, q.len_packets(), q.len_bytes()), "{} over its limit", name);
                let f = fault.lock().unwrap().clone();
                prop_assert!(f.is_none(), "{}: {:?}", name, f);
            }
            // Work conserving: everything queued can be served, then no state remains.
            let mut n = 0;
            while q.dequeue(at(ops.len())).packet.is_some() {
                n += 1;
                prop_assert!(n <= 100_000, "{}: dequeue does not terminate", name);
            }
            prop_assert_eq!((q.len_packets(), q.len_bytes()), (0, 0), "{}", name);
            prop_assert!(q.check_invariants().is_ok());
            let fault = fault.lock().unwrap().clone();
            prop_assert!(fault.is_none(), "{}: {:?}", name, fault);
        }
    }
}
