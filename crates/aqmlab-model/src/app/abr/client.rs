//! The engine-free half of an ABR client: what it decides and what it records, without the
//! transport. Both engines drive one: the simulator's `abr` app (`aqmlab_sim` `sim/apps/abr.rs`,
//! over its own TCP) and the emulator's HTTP/1.1 client (`aqmlab.emu.abr`, over kernel TCP,
//! through the binding's `AbrClient`), so the two make their decisions, keep their playback
//! buffer and write their `abr_segments` and `abr_sessions` rows with the same code.
//!
//! The transport asks [`Client::next`] what to do at `now`: wait (the buffer has no room for
//! another segment under `max_buffer`), fetch segment k at rung r, or nothing (every segment
//! requested). When the response's last byte is in, it calls [`Client::complete`]; at the
//! session's end [`Client::tables`].

use super::ladder::Ladder;
use super::player::{Phase, Player};
use super::session::{SegmentRow, SessionLog};
use super::{mpc, Memory, PlayerState};
use crate::app::abr_config::AbrConfig;
use crate::record::Table;

/// What the client does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Every segment has been requested.
    Done,
    /// A segment is being fetched: wait for it.
    Busy,
    /// Ask again after this many ns (the buffer has no room yet).
    Wait(u64),
    /// Request `segment` at `rung`, whose response holds `size` bytes.
    Fetch { segment: usize, rung: usize, size: u64 },
}

/// The segment being fetched, as chosen.
#[derive(Clone, Copy, Debug)]
struct Pending {
    segment: usize,
    rung: usize,
    request_ns: u64,
    buffer_ns: u64,
    /// The throughput MPC would have predicted for it (RobustMPC's error bound).
    prediction_bps: Option<f64>,
}

#[derive(Clone, Debug)]
pub struct Client {
    cfg: AbrConfig,
    player: Player,
    next_segment: usize,
    pending: Option<Pending>,
    throughputs_bps: Vec<f64>,
    prediction_errors: Vec<f64>,
    last_rung: Option<usize>,
    log: SessionLog,
    /// The algorithm's state between decisions (BOLA-E's placeholder).
    memory: Memory,
    /// When the last download completed (BOLA-E counts the idle time since).
    last_complete_ns: Option<u64>,
    /// A decision taken whose request waits until `.1` (BOLA-E's pause): (rung, until).
    paused: Option<(usize, u64)>,
}

impl Client {
    /// A client whose session starts at `start_ns`; `cfg` must have been validated.
    pub fn new(cfg: &AbrConfig, start_ns: u64) -> Client {
        let l = &cfg.ladder;
        Client {
            player: Player::new(l.segment_duration_ns, cfg.startup_ns, l.segments(), start_ns),
            cfg: cfg.clone(),
            next_segment: 0,
            pending: None,
            throughputs_bps: Vec::new(),
            prediction_errors: Vec::new(),
            last_rung: None,
            log: SessionLog::default(),
            memory: cfg.abr.memory(l),
            last_complete_ns: None,
            paused: None,
        }
    }

    pub fn config(&self) -> &AbrConfig {
        &self.cfg
    }

    /// What to do at `now`: on `Fetch` the segment counts as requested now, at that rung.
    pub fn next(&mut self, now: u64) -> Next {
        if self.pending.is_some() {
            return Next::Busy;
        }
        if self.next_segment >= self.cfg.ladder.segments() {
            return Next::Done;
        }
        let wait = self.player.wait_for_room(now, self.cfg.max_buffer_ns);
        if wait > 0 {
            return Next::Wait(wait);
        }
        let buffer_ns = self.player.buffer_at(now);
        let rung = match self.paused {
            Some((_, until)) if now < until => return Next::Wait(until - now),
            Some((rung, _)) => {
                self.paused = None;
                rung
            }
            None => {
                let state = PlayerState {
                    segment: self.next_segment,
                    buffer_s: buffer_ns as f64 * 1e-9,
                    last_rung: self.last_rung,
                    throughputs_bps: &self.throughputs_bps,
                    prediction_errors: &self.prediction_errors,
                };
                let idle_s = self.last_complete_ns.map_or(0.0, |t| (now - t) as f64 * 1e-9);
                let d = self.cfg.abr.decide(&self.cfg.ladder, &state, &mut self.memory, idle_s);
                let pause_ns = (d.pause_s * 1e9).round() as u64;
                if pause_ns > 0 {
                    self.paused = Some((d.rung, now + pause_ns));
                    return Next::Wait(pause_ns);
                }
                d.rung
            }
        };
        let segment = self.next_segment;
        self.pending = Some(Pending { segment, rung, request_ns: now, buffer_ns, prediction_bps: mpc::predict(&self.throughputs_bps) });
        self.next_segment += 1;
        Next::Fetch { segment, rung, size: self.cfg.ladder.size(rung, segment) }
    }

    /// The segment being fetched (segment, rung, when requested), if any.
    pub fn pending(&self) -> Option<(usize, usize, u64)> {
        self.pending.map(|p| (p.segment, p.rung, p.request_ns))
    }

    /// The pending segment's last byte arrived at `now`, after its request was sent
    /// `requests` times. Panics without a pending segment (a transport bug).
    pub fn complete(&mut self, now: u64, requests: u32) {
        let req = self.pending.take().expect("a segment is being fetched");
        let download_ns = now - req.request_ns;
        let size = self.cfg.ladder.size(req.rung, req.segment);
        let measured = size as f64 * 8.0 / (download_ns.max(1) as f64 * 1e-9);
        if let Some(predicted) = req.prediction_bps {
            self.prediction_errors.push((predicted - measured).abs() / measured);
        }
        self.throughputs_bps.push(measured);
        self.last_rung = Some(req.rung);
        self.player.advance(now);
        let stalled = matches!(self.player.phase(), Phase::Stalled { .. });
        self.player.on_segment(now);
        let buffer_s = self.player.buffer_at(now) as f64 * 1e-9;
        self.memory.downloaded(req.rung, buffer_s, download_ns as f64 * 1e-9, stalled);
        self.last_complete_ns = Some(now);
        self.log.rows.push(SegmentRow {
            segment: req.segment as u32,
            rung: req.rung as u32,
            request_ns: req.request_ns,
            download_ns,
            buffer_ns: req.buffer_ns,
            requests,
        });
    }

    /// Media buffered at `now`, ns.
    pub fn buffer_at(&mut self, now: u64) -> u64 {
        self.player.buffer_at(now)
    }

    pub fn last_rung(&self) -> Option<usize> {
        self.last_rung
    }

    /// The `abr_segments` and `abr_sessions` tables of client `flow` whose session ends at
    /// `end` (its stop or the run's end), with the scores of `ladder` (the configured one, or
    /// one whose scores were measured on what arrived).
    pub fn tables(&self, flow: u32, end: u64, ladder: &Ladder) -> Vec<(&'static str, Table)> {
        let mut player = self.player.clone();
        let seen = player.finish(end);
        vec![
            ("abr_segments", self.log.segments_table(flow, ladder)),
            ("abr_sessions", self.log.session_table(flow, self.cfg.abr.algorithm, ladder, &seen)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::abr::ladder::test_ladder;
    use crate::app::abr::{AbrParams, Algorithm};
    use crate::app::tcp_config::TcpConfig;

    const S: u64 = 1_000_000_000;

    fn config() -> AbrConfig {
        AbrConfig {
            abr: AbrParams::defaults(Algorithm::Throughput, 6.0),
            ladder: test_ladder(&[1000, 3000], 3, 2.0),
            max_buffer_ns: 6 * S,
            startup_ns: 2 * S,
            request_size: 300,
            request_timeout_ns: S,
            tcp: serde_json::from_str::<TcpConfig>(
                r#"{"mss": 1000, "initial_cwnd_segments": 10, "initial_rto_ns": 1000000000, "min_rto_ns": 200000000,
                    "max_rto_ns": 60000000000, "clock_granularity_ns": 1000000, "delayed_ack": false,
                    "delayed_ack_timeout_ns": 40000000, "rwnd": 4000000, "ecn": false}"#,
            )
            .unwrap(),
            mark_frames: false,
        }
    }

    /// By hand: three 2 s segments, a 6 s buffer. Segment 0 (no throughput yet: the lowest
    /// rung, 250 kB) in 0.5 s = 4 Mbit/s; the rule's 0.9 * 4 = 3.6 Mbit/s allows 3 Mbit/s for
    /// segment 1, in at 1.5 s; buffer 2 + 2 - 1 = 3 s, so segment 2 is fetched at once; then
    /// every segment is requested.
    #[test]
    fn decides_paces_and_records_by_hand() {
        let mut c = Client::new(&config(), 0);
        assert_eq!(c.next(0), Next::Fetch { segment: 0, rung: 0, size: 250_000 });
        assert_eq!(c.next(1), Next::Busy);
        c.complete(S / 2, 1);
        assert_eq!(c.next(S / 2), Next::Fetch { segment: 1, rung: 1, size: 750_000 });
        c.complete(3 * S / 2, 1);
        assert_eq!(c.buffer_at(3 * S / 2), 3 * S);
        assert!(matches!(c.next(3 * S / 2), Next::Fetch { segment: 2, .. }));
        c.complete(2 * S, 1);
        assert_eq!(c.next(2 * S), Next::Done);
        let t = c.tables(4, 10 * S, &config().ladder);
        assert_eq!(t[0].0, "abr_segments");
        assert_eq!(t[1].0, "abr_sessions");
    }

    /// BOLA-E's state is carried by the client. By hand (1, 2, 4 Mbit/s, 2 s segments, target
    /// 16 s: switching levels 11.328 and 14.328 s, see `bola_e.rs`): segment 0 (2 Mbit) in 0.5
    /// s = 4 Mbit/s; segment 1 is the startup decision: rung 2, P = 14.328 - 2 = 12.328 s.
    /// Segment 1 (8 Mbit) in 0.5 s leaves 3.5 s of buffer. If the transport asks again only 1 s
    /// later, the buffer has drained to 2.5 s and P has grown by the idle 1 s to 13.328 s: the
    /// effective buffer, 15.828 s, is what it was when the segment came in (rung 2; the
    /// insufficient-buffer rule allows it: 0.81 x 2.5 s x 10 Mbit/s > 8 Mbit).
    #[test]
    fn bola_e_state_lives_in_the_client_and_idle_time_feeds_the_placeholder() {
        let mut cfg = config();
        cfg.abr = AbrParams::defaults(Algorithm::BolaE, 16.0);
        cfg.ladder = test_ladder(&[1000, 2000, 4000], 20, 2.0);
        cfg.max_buffer_ns = 16 * S;
        let placeholder = |c: &Client| match &c.memory {
            Memory::BolaE(_, st) => st.placeholder_s,
            Memory::None => panic!("no BOLA-E state"),
        };
        let mut c = Client::new(&cfg, 0);
        assert!(matches!(c.next(0), Next::Fetch { segment: 0, rung: 0, .. }));
        c.complete(S / 2, 1);
        assert!(matches!(c.next(S / 2), Next::Fetch { segment: 1, rung: 2, .. }));
        let p0 = placeholder(&c);
        assert!((p0 - 12.328).abs() < 1e-3, "{p0}");
        c.complete(S, 1);
        assert_eq!(c.buffer_at(S), 7 * S / 2);
        assert!((placeholder(&c) - p0).abs() < 1e-12);
        assert!(matches!(c.next(2 * S), Next::Fetch { segment: 2, rung: 2, .. }));
        assert!((placeholder(&c) - (p0 + 1.0)).abs() < 1e-9, "{}", placeholder(&c));
        // Another algorithm has no state to carry.
        assert!(matches!(Client::new(&config(), 0).memory, Memory::None));
    }

    #[test]
    fn waits_for_room_under_max_buffer() {
        let mut cfg = config();
        cfg.ladder = test_ladder(&[1000], 10, 2.0);
        let mut c = Client::new(&cfg, 0);
        for k in 0..3 {
            assert!(matches!(c.next(0), Next::Fetch { .. }), "segment {k}");
            c.complete(0, 1);
        }
        // 6 s buffered at t = 0 (playing since the first): room for 2 s more at t = 2 s.
        assert_eq!(c.next(0), Next::Wait(2 * S));
        assert!(matches!(c.next(2 * S), Next::Fetch { segment: 3, .. }));
    }
}
