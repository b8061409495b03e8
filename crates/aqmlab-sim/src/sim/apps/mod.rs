//! The simulator's side of every application, one file each, behind one trait.
//!
//! An application holds the state of its flow's two ends (source and sink, sender and
//! receiver) and reaches the network only through [`Network`]: it makes packets
//! (`new_packet`), sends them (`emit`) and schedules its own events (`schedule`), each tagged
//! with a small number, its timer, that it gets back in `on_timer`. The engine calls it when
//! its flow starts and stops, when one of its events fires and when one of its packets reaches
//! an end host. Each call into the network takes effect at once, in the order the application
//! makes it: the event list breaks ties by insertion order, so that order is part of every
//! result.
//!
//! The traffic models themselves (frame sizes, rate adaptation, jitter) live in `crate::app`,
//! free of the engine; the files here only pace them and put their packets on the wire.
//!
//! Adding an application: one file here implementing [`Application`], registered by its
//! `mod` line and its arm in [`build`] (besides its configuration, a variant of `AppConfig`).
//! Nothing else in the engine names an application.

mod abr;
mod bulk;
mod cbr;
mod mpeg;
mod pels;
mod ping;
mod receive_log;
mod rtc;
mod rtp;
mod stream;
mod tcp;

use super::network::Network;
use crate::tcp::TcpSender;
use aqmlab_core::{Packet, Proto, Time};
use aqmlab_model::app::AppConfig;
use aqmlab_model::record::{FlowSample, Table};

/// What an application may need to know about its flow when it is built.
pub(crate) struct AppSetup {
    /// The scenario seed, for the application's named random streams.
    pub seed: u64,
    /// The flow's id (its streams are named after it, e.g. `"flow/<id>/frames"`).
    pub id: u32,
    /// When the flow starts.
    pub start: Time,
    /// The flow's round-trip propagation delay.
    pub base_rtt_ns: u64,
    /// When the flow's results are taken: its stop, or the run's end if that comes first.
    pub end: Time,
}

/// Builds the application a flow group asks for: the registry of applications.
pub(crate) fn build(app: &AppConfig, setup: &AppSetup) -> Result<Box<dyn Application>, String> {
    Ok(match app {
        AppConfig::Bulk { tcp } => Box::new(bulk::Bulk::new(tcp, setup)),
        AppConfig::Cbr { rate_bps, packet_size, ecn } => Box::new(cbr::Cbr::new(*rate_bps, *packet_size, *ecn)),
        AppConfig::Mpeg(c) => Box::new(mpeg::Mpeg::new(c, setup)?),
        AppConfig::Rtp(c) if c.rate_control().is_some() => Box::new(rtc::Rtc::new(c, setup)?),
        AppConfig::Rtp(c) => Box::new(rtp::Rtp::new(c, setup)?),
        AppConfig::Stream(c) => stream::build(c, setup)?,
        AppConfig::Pels(c) => Box::new(pels::Pels::new(c)?),
        AppConfig::Abr(c) => Box::new(abr::Abr::new(c, setup)?),
        AppConfig::Ping { interval_ns, packet_size } => Box::new(ping::Ping::new(*interval_ns, *packet_size)?),
    })
}

/// One flow's application, as the engine sees it. `f` is always the flow's id. `Send`, so
/// that a simulation can run on another thread than the one that built it (the Python
/// binding runs it with the GIL released).
pub(crate) trait Application: Send {
    /// The transport of its packets (TCP or UDP): their destination port, and the flows
    /// table's `is_tcp`.
    fn proto(&self) -> Proto;

    /// The flow starts (its group's start time, plus jitter).
    fn start(&mut self, f: u32, net: &mut Network);

    /// The flow stops: nothing new is sent, though packets in flight still arrive.
    fn stop(&mut self);

    /// An event the application scheduled with `Network::schedule` fires.
    fn on_timer(&mut self, f: u32, timer: u8, net: &mut Network);

    /// One of the flow's packets reached an end host: the receiver (`to_receiver`) or, for
    /// ACKs and reports, the sender.
    fn on_packet(&mut self, f: u32, p: Packet, to_receiver: bool, net: &mut Network);

    /// The flow's totals for the flows table.
    fn totals(&self) -> FlowTotals;

    /// The flow's state for the periodic flow samples.
    fn sample(&self) -> FlowSample;

    /// The application's own tables (name and this flow's rows). Flows contributing to the
    /// same table must give it the same columns; the engine joins their rows in flow order.
    fn tables(&self, _f: u32) -> Vec<(&'static str, Table)> {
        Vec::new()
    }

    /// Whether its packets carry PELS feedback labels, which routers write and which travel
    /// in a side table beside them (see `Network::labels`).
    fn carries_labels(&self) -> bool {
        false
    }

    /// The TCP sender of the flow, if it has one (for tests).
    fn tcp_sender(&self) -> Option<&TcpSender> {
        None
    }
}

/// A flow's totals for the flows table: transport counters, zero where they do not apply.
#[derive(Default)]
pub(crate) struct FlowTotals {
    pub packets_sent: u64,
    pub retransmissions: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub spurious_timeouts: u64,
    pub delivered_bytes: u64,
}

/// The flow sample of an application without a congestion window: bytes delivered and its
/// adaptation level (0 for those that do not adapt).
fn sample_without_window(delivered_bytes: u64, app_level: u32) -> FlowSample {
    FlowSample {
        delivered_bytes,
        cwnd_bytes: 0,
        ssthresh_bytes: 0,
        srtt_ns: 0,
        rto_ns: 0,
        app_level,
        packets_sent: 0,
        retransmissions: 0,
        delivery_rate_bps: 0,
        snd_wnd_bytes: 0,
        pacing_rate_bps: 0,
        pacing_gain: 0.0,
    }
}
