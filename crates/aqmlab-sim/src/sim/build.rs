//! Building a simulation from its configuration: the dumbbell (or parking lot) of routers,
//! each flow's two hosts with their access links, and each flow's application.

use super::apps::{self, AppSetup, Application};
use super::network::{Flow, Network, UidMap, TCP_PORT, UDP_PORT};
use super::{Event, RunCounters, Simulation};
use crate::config::{FlowGroup, LinkConfig, SimConfig};
use crate::engine::EventList;
use crate::link::{ExclusiveLink, Link, PacketStore};
use crate::pcap::PcapWriter;
use crate::topology::{NodeId, Topology};
use aqmlab_core::link::impairments::{ImpairmentStreams, Impairments};
use aqmlab_core::link::{Schedule, TraceServer};
use aqmlab_core::qdisc::build_qdisc;
use aqmlab_core::{Proto, QdiscConfig, Rate, SimRng, Time};
use aqmlab_model::record::{FlowSamples, PacketEvents, QueueSamples};
use aqmlab_model::streams;

fn access_link(from: NodeId, to: NodeId, rate: u64, delay: u64, qdisc: &QdiscConfig, seed: u64, name: String) -> Result<Link, String> {
    let rate = Rate(rate);
    let queue = build_qdisc(qdisc, rate).map_err(|e| format!("{name}: {e}"))?;
    let rng = streams::link(seed, &name);
    Ok(Link::new(from, to, rate, Time(delay), queue, rng, name))
}

/// A router-to-router link: at its rate, or following its trace (whose mean rate the
/// discipline is built for, see `LinkConfig::nominal_rate`), its first pass starting with the run.
fn link_from(cfg: &LinkConfig, from: NodeId, to: NodeId, seed: u64, name: &str) -> Result<Link, String> {
    let mut link = access_link(from, to, cfg.nominal_rate().0, cfg.delay_ns, &cfg.qdisc, seed, name.to_string())?;
    link.trace = cfg.trace.as_ref().map(|t| Box::new(TraceServer::new(t, Time::ZERO)));
    if let Some(s) = &cfg.schedule {
        link.schedule = Some(Box::new(Schedule::new(s, Time::ZERO).map_err(|e| format!("{name}.schedule: {e}"))?));
    }
    if let Some(imp) = &cfg.impairments {
        let stream = |kind| streams::link_impairment(seed, name, kind);
        let rng = ImpairmentStreams { loss: stream("loss"), duplicate: stream("duplicate"), jitter: stream("jitter") };
        link.impairments = Some(Box::new(Impairments::new(imp.clone(), rng).map_err(|e| format!("{name}.impairments: {e}"))?));
    }
    Ok(link)
}

impl Simulation {
    pub fn new(cfg: SimConfig) -> Result<Simulation, String> {
        cfg.validate()?;
        let seed = cfg.seed;
        let mut topo = Topology::default();
        let r1 = topo.add_node();
        let r2 = topo.add_node();
        let t = &cfg.topology;
        let bottleneck = topo.add_link(link_from(&t.bottleneck, r1, r2, seed, "bottleneck")?);
        topo.add_link(link_from(&t.reverse, r2, r1, seed, "reverse")?);
        // A parking lot: further routers in a row after R2 (none for the plain dumbbell).
        let mut routers = vec![r1, r2];
        for (i, hop) in t.chain.iter().enumerate() {
            let (prev, next) = (routers[routers.len() - 1], topo.add_node());
            topo.add_link(link_from(&hop.forward, prev, next, seed, &format!("hop{}", i + 1))?);
            topo.add_link(link_from(&hop.reverse, next, prev, seed, &format!("hop{}-rev", i + 1))?);
            routers.push(next);
        }
        let mut flows = Vec::new();
        let mut apps = Vec::new();
        for (gi, g) in cfg.flow_groups.iter().enumerate() {
            let mut start_rng = streams::group_start(seed, &g.name);
            for i in 0..g.count {
                let id = flows.len() as u32;
                let [enter, exit] = g.path_in(t);
                let (r_in, r_out) = (routers[enter as usize], routers[exit as usize]);
                let (flow, app) = build_flow(&mut topo, &cfg, gi, g, i, id, r_in, r_out, &mut start_rng)?;
                flows.push(flow);
                apps.push(app);
            }
        }
        topo.compute_routes();
        let records = &cfg.records;
        // The scenario records the bottleneck's packets; any other link could have a recorder.
        topo.links[bottleneck as usize].recorder = records.packet_events.then(Box::<PacketEvents>::default);
        let any_recorder = topo.links.iter().any(|l| l.recorder.is_some());
        // Each host is one flow's (`build_flow`), so its two links carry that flow's packets
        // alone, coming from the host or from the one link its route reaches the router by.
        let mut host = vec![false; topo.nodes.len()];
        for f in &flows {
            host[f.src as usize] = true;
            host[f.dst as usize] = true;
        }
        for link in topo.links.iter_mut().filter(|l| host[l.from as usize] || host[l.to as usize]) {
            link.exclusive = ExclusiveLink::for_link(link);
        }
        let any_varying_link = topo.links.iter().any(|l| l.trace.is_some() || l.impairments.is_some() || l.schedule.is_some());
        let exclusive_links = !cfg.engine.access_link_events;
        let mut net = Network {
            pcap: records.pcap.then(PcapWriter::new),
            cfg,
            now: Time::ZERO,
            events: EventList::default(),
            topo,
            flows,
            bottleneck,
            next_uid: 0,
            segs: Vec::new(),
            queue_samples: QueueSamples::default(),
            sack_blocks: UidMap::default(),
            labels: UidMap::default(),
            pels_flows: false,
            counters: RunCounters::default(),
            lazy_tx_ends: true,
            pass_through: true,
            exclusive_links,
            exclusive_packets: PacketStore::default(),
            any_recorder,
            any_varying_link,
        };
        net.pels_flows = net.flows.iter().any(|f| f.labelled);
        for (id, f) in net.flows.iter().enumerate() {
            net.events.schedule(f.start, Event::FlowStart(id as u32));
            net.events.schedule(f.stop, Event::FlowStop(id as u32));
        }
        net.events.schedule(Time::ZERO, Event::QueueSample);
        net.events.schedule(Time::ZERO, Event::FlowSample);
        Ok(Simulation { net, apps, flow_samples: FlowSamples::default() })
    }
}

/// Flow `id`, the `i`-th of group `g`, between new hosts behind routers `r1` and `r2`, and
/// its application.
#[allow(clippy::too_many_arguments)]
fn build_flow(
    topo: &mut Topology,
    cfg: &SimConfig,
    gi: usize,
    g: &FlowGroup,
    i: u32,
    id: u32,
    r1: NodeId,
    r2: NodeId,
    start_rng: &mut SimRng,
) -> Result<(Flow, Box<dyn Application>), String> {
    let seed = cfg.seed;
    let src = topo.add_node();
    let dst = topo.add_node();
    // Linear spread of sender access delays over the group, by index.
    let [lo, hi] = g.sender_delay_ns;
    let sender_delay = if g.count > 1 { lo + (hi - lo) * i as u64 / (g.count as u64 - 1) } else { lo };
    let aq = &cfg.topology.access_qdisc;
    let rate = g.access_rate_bps;
    let rd = g.receiver_delay_ns;
    let src_link = topo.add_link(access_link(src, r1, rate, sender_delay, aq, seed, format!("flow{id}/up"))?);
    topo.add_link(access_link(r1, src, rate, sender_delay, aq, seed, format!("flow{id}/up-rev"))?);
    topo.add_link(access_link(r2, dst, rate, rd, aq, seed, format!("flow{id}/down"))?);
    let dst_link = topo.add_link(access_link(dst, r2, rate, rd, aq, seed, format!("flow{id}/down-rev"))?);
    let jitter = if g.start_jitter_ns > 0 { start_rng.uniform() * g.start_jitter_ns as f64 } else { 0.0 };
    let start = Time(g.start_ns) + Time(jitter as u64);
    let [enter, exit] = g.path_in(&cfg.topology);
    let base_rtt_ns = 2 * (sender_delay + rd) + cfg.topology.path_delay_ns(enter, exit);
    let end = Time(g.stop_ns).max(start).min(Time(cfg.duration_ns));
    let app = apps::build(&g.app, &AppSetup { seed, id, start, base_rtt_ns, end })?;
    let flow = Flow {
        group: gi,
        src,
        dst,
        src_link,
        dst_link,
        sport: 10_000 + (id % 50_000) as u16,
        dport: if app.proto() == Proto::Tcp { TCP_PORT } else { UDP_PORT },
        start,
        stop: Time(g.stop_ns).max(start),
        sender_delay: Time(sender_delay),
        receiver_delay: Time(rd),
        class_weights: g.class_weights,
        class_rng: streams::flow_class(seed, id),
        dscp: g.dscp,
        labelled: app.carries_labels(),
        path_loss: g.path_loss,
        path_rng: streams::flow_path_loss(seed, id),
    };
    Ok((flow, app))
}
