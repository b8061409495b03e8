//! The result tables of a run: the flows table, the tables the applications contribute
//! (video frames, media packets, PELS), the bottleneck's packet events and the samples taken
//! during the run, handed over by `take_records`; and the run's summary.

use super::network::Network;
use super::{Event, Simulation};
use crate::pcap::PcapWriter;
use aqmlab_core::{Proto, Time};
use aqmlab_model::record::{Column, FlowCounters, FlowRow, FlowsTable, Table};

/// Where the applications' tables go among the records, as before they came through
/// `Application::tables`: the order of the record list the binding returns. A table not
/// named here goes after these, in the order flows first contribute to it.
const APP_TABLE_ORDER: [&str; 6] = ["frames", "media", "media_frames", "pels_frames", "pels_control", "pels_packets"];

impl Network {
    /// Samples the bottleneck's queue and schedules the next sample.
    pub(crate) fn on_queue_sample(&mut self) {
        self.queue_samples.push_queue(self.now, &self.topo.links[self.bottleneck as usize].queue);
        let next = self.now + Time(self.cfg.records.queue_sample_ns);
        self.events.schedule(next, Event::QueueSample);
    }
}

impl Simulation {
    /// Samples every flow (`Application::sample`) and schedules the next sample.
    pub(super) fn on_flow_sample(&mut self) {
        let now = self.net.now;
        for (id, app) in self.apps.iter().enumerate() {
            self.flow_samples.push(now, id as u32, app.sample());
        }
        let next = now + Time(self.net.cfg.records.flow_sample_ns);
        self.net.events.schedule(next, Event::FlowSample);
    }

    /// The static description and totals of every flow.
    pub fn flows_table(&self) -> Table {
        let t = &self.net.cfg.topology;
        let mut table = FlowsTable::default();
        for (i, (f, app)) in self.net.flows.iter().zip(&self.apps).enumerate() {
            let [enter, exit] = self.net.cfg.flow_groups[f.group].path_in(t);
            let tot = app.totals();
            table.push(FlowRow {
                flow: i as u32,
                group: f.group as u32,
                is_tcp: app.proto() == Proto::Tcp,
                start_ns: f.start.as_nanos(),
                stop_ns: f.stop.as_nanos(),
                sender_delay_ns: f.sender_delay.as_nanos(),
                receiver_delay_ns: f.receiver_delay.as_nanos(),
                base_rtt_ns: 2 * (f.sender_delay.as_nanos() + f.receiver_delay.as_nanos()) + t.path_delay_ns(enter, exit),
                counters: FlowCounters {
                    packets_sent: tot.packets_sent,
                    retransmissions: tot.retransmissions,
                    fast_retransmits: Some(tot.fast_retransmits),
                    timeouts: Some(tot.timeouts),
                    spurious_timeouts: Some(tot.spurious_timeouts),
                    delivered_bytes: tot.delivered_bytes,
                },
            });
        }
        table.into_table()
    }

    /// The applications' own tables (`Application::tables`): each the rows of every flow that
    /// contributes to it, in flow order.
    pub fn app_tables(&self) -> Vec<(&'static str, Table)> {
        let mut tables: Vec<(&'static str, Table)> = Vec::new();
        for (f, app) in self.apps.iter().enumerate() {
            for (name, rows) in app.tables(f as u32) {
                match tables.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, table)) => append_rows(name, table, rows),
                    None => tables.push((name, rows)),
                }
            }
        }
        // A stable sort: tables not in the list keep their order after those in it.
        tables.sort_by_key(|(name, _)| APP_TABLE_ORDER.iter().position(|n| n == name).unwrap_or(APP_TABLE_ORDER.len()));
        tables
    }

    /// Consumes the simulation's records: (name, table) pairs, plus the pcap bytes if captured.
    pub fn take_records(&mut self) -> (Vec<(&'static str, Table)>, Option<Vec<u8>>) {
        let mut tables = vec![("flows", self.flows_table())];
        tables.extend(self.app_tables());
        let net = &mut self.net;
        if let Some(pe) = net.topo.links[net.bottleneck as usize].recorder.take() {
            tables.push(("packets", pe.into_table()));
        }
        tables.push(("queue", std::mem::take(&mut net.queue_samples).into_table()));
        tables.push(("flow_samples", std::mem::take(&mut self.flow_samples).into_table()));
        (tables, net.pcap.take().map(PcapWriter::into_bytes))
    }

    /// Run-level facts for summary.json.
    pub fn summary(&self) -> serde_json::Value {
        let net = &self.net;
        let b = &net.topo.links[net.bottleneck as usize].queue;
        serde_json::json!({
            "sim_time_ns": net.now.as_nanos(),
            "events": net.counters.events,
            "packets_created": net.counters.packets_created,
            "flows": net.flows.len(),
            "bottleneck": {
                "qdisc": b.kind(),
                "stats": b.stats(),
                "invariants_ok": b.check_invariants().is_ok(),
            },
        })
    }
}

/// Appends another flow's `rows` to `table`, column by column. Every flow contributing to a
/// table gives it the same columns (`Application::tables`); anything else is a bug in an
/// application, not bad input.
fn append_rows(name: &str, table: &mut Table, rows: Table) {
    assert_eq!(table.len(), rows.len(), "flows give table {name} different columns");
    for ((column, into), (other, more)) in table.iter_mut().zip(rows) {
        assert_eq!(*column, other, "flows give table {name} different columns");
        match (into, more) {
            (Column::U8(a), Column::U8(b)) => a.extend(b),
            (Column::U32(a), Column::U32(b)) => a.extend(b),
            (Column::U64(a), Column::U64(b)) => a.extend(b),
            (Column::F64(a), Column::F64(b)) => a.extend(b),
            (Column::OptU64(a), Column::OptU64(b)) => a.extend(b),
            _ => panic!("flows give column {name}.{column} different types"),
        }
    }
}
