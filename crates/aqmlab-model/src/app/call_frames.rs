//! A real-time call's frames as sent and as received, and the two tables made of them
//! (`rtc_frames`, one row per frame; `rtc_sessions`, one row per call): the simulator's call
//! (`aqmlab_sim`'s `rtc`) and the emulator's (`aqmlab.emu.call`, through the binding) fill the
//! same [`FrameLog`]s, so frame delay and lateness come out of this one piece of code.
//!
//! A frame is complete when all its packets arrived; its delay is from its capture (when its
//! first packet was due) to its last packet's arrival; it is late when complete after the
//! deadline, lost when a packet never arrives (no retransmission or FEC is modelled). Only
//! frames captured at least a deadline before the end are judged.

use crate::record::{Column, Table};
use aqmlab_core::Time;

/// One frame as sent and as received.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameLog {
    /// Capture time.
    pub at: Time,
    pub payload: u32,
    pub key: bool,
    /// The rate the encoder was following, bit/s.
    pub rate_bps: f64,
    pub packets: u32,
    pub received: u32,
    pub last_arrival: Time,
}

impl FrameLog {
    /// A frame captured at `at`, none of its packets received yet.
    pub fn new(at: Time, payload: u32, key: bool, rate_bps: f64, packets: u32) -> FrameLog {
        FrameLog { at, payload, key, rate_bps, packets, received: 0, last_arrival: Time::ZERO }
    }

    /// One of its packets arrived at `now`.
    pub fn on_arrival(&mut self, now: Time) {
        self.received += 1;
        self.last_arrival = self.last_arrival.max(now);
    }

    pub fn complete(&self) -> bool {
        self.received >= self.packets
    }
}

/// `rtc_frames`: one row per frame of call `f`.
pub fn frames_table(frames: &[FrameLog], f: u32) -> Table {
    let n = frames.len();
    let delay = |fr: &FrameLog| if fr.complete() { (fr.last_arrival - fr.at).as_nanos() as f64 } else { f64::NAN };
    vec![
        ("flow", Column::U32(vec![f; n])),
        ("frame", Column::U32((0..n as u32).collect())),
        ("t_ns", Column::U64(frames.iter().map(|fr| fr.at.as_nanos()).collect())),
        ("size_bytes", Column::U32(frames.iter().map(|fr| fr.payload).collect())),
        ("key", Column::U8(frames.iter().map(|fr| fr.key as u8).collect())),
        ("rate_bps", Column::F64(frames.iter().map(|fr| fr.rate_bps).collect())),
        ("packets", Column::U32(frames.iter().map(|fr| fr.packets).collect())),
        ("received", Column::U32(frames.iter().map(|fr| fr.received).collect())),
        ("delay_ns", Column::F64(frames.iter().map(delay).collect())),
    ]
}

/// What `rtc_sessions` says of a call besides its frames.
#[derive(Clone, Copy, Debug)]
pub struct SessionCounts<'a> {
    /// A frame complete later than this after its capture is late.
    pub deadline: Time,
    /// The call's end (its stop, or the run's end): frames captured later than a deadline
    /// before it are not judged.
    pub end: Time,
    /// The target set by each report the sender applied.
    pub targets: &'a [f64],
    pub reports_sent: u64,
    pub reports_received: u64,
}

/// `rtc_sessions`: one row for call `f`.
pub fn session_table(frames: &[FrameLog], f: u32, c: SessionCounts<'_>) -> Table {
    let deadline = c.deadline.as_nanos() as f64;
    let judged: Vec<&FrameLog> = frames.iter().filter(|fr| fr.at + c.deadline <= c.end).collect();
    let mut delays: Vec<f64> = judged.iter().filter(|fr| fr.complete()).map(|fr| (fr.last_arrival - fr.at).as_nanos() as f64).collect();
    delays.sort_by(f64::total_cmp);
    let pct = |q: f64| {
        if delays.is_empty() {
            return f64::NAN;
        }
        delays[((q * delays.len() as f64).ceil() as usize).clamp(1, delays.len()) - 1]
    };
    let late = delays.iter().filter(|d| **d > deadline).count() as u32;
    let lost = judged.iter().filter(|fr| !fr.complete()).count() as u32;
    let mean_target = if c.targets.is_empty() { f64::NAN } else { c.targets.iter().sum::<f64>() / c.targets.len() as f64 };
    vec![
        ("flow", Column::U32(vec![f])),
        ("frames", Column::U32(vec![judged.len() as u32])),
        ("frames_late", Column::U32(vec![late])),
        ("frames_lost", Column::U32(vec![lost])),
        ("frame_delay_p50_ns", Column::F64(vec![pct(0.5)])),
        ("frame_delay_p95_ns", Column::F64(vec![pct(0.95)])),
        ("mean_target_bps", Column::F64(vec![mean_target])),
        ("reports_sent", Column::U64(vec![c.reports_sent])),
        ("reports_received", Column::U64(vec![c.reports_received])),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64s(t: &Table, name: &str) -> Vec<f64> {
        match &t.iter().find(|(n, _)| *n == name).unwrap().1 {
            Column::F64(v) => v.clone(),
            _ => panic!("{name} is not f64"),
        }
    }

    fn u32s(t: &Table, name: &str) -> Vec<u32> {
        match &t.iter().find(|(n, _)| *n == name).unwrap().1 {
            Column::U32(v) => v.clone(),
            _ => panic!("{name} is not u32"),
        }
    }

    /// Four frames: one on time, one late, one missing a packet, one captured too close to
    /// the end to be judged.
    #[test]
    fn frames_are_judged_late_or_lost_by_the_deadline() {
        let ms = Time::from_millis;
        let mut frames: Vec<FrameLog> = (0..4).map(|i| FrameLog::new(ms(100 * i), 1000, i == 0, 1e6, 2)).collect();
        for (i, last) in [(0, 50), (1, 300), (2, 260), (3, 330)] {
            frames[i].on_arrival(ms(100 * i as u64 + 10));
            if i != 2 {
                frames[i].on_arrival(ms(last));
            }
        }
        let counts = SessionCounts { deadline: ms(150), end: ms(400), targets: &[1e6, 2e6], reports_sent: 5, reports_received: 4 };
        let s = session_table(&frames, 7, counts);
        assert_eq!(u32s(&s, "frames"), vec![3]);
        assert_eq!(u32s(&s, "frames_late"), vec![1]);
        assert_eq!(u32s(&s, "frames_lost"), vec![1]);
        assert_eq!(f64s(&s, "frame_delay_p50_ns"), vec![50e6]);
        assert_eq!(f64s(&s, "frame_delay_p95_ns"), vec![200e6]);
        assert_eq!(f64s(&s, "mean_target_bps"), vec![1.5e6]);
        let f = frames_table(&frames, 7);
        assert_eq!(u32s(&f, "received"), vec![2, 2, 1, 2]);
        let d = f64s(&f, "delay_ns");
        assert_eq!((d[0], d[1], d[3]), (50e6, 200e6, 30e6));
        assert!(d[2].is_nan());
    }
}
