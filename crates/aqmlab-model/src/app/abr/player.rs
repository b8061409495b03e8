//! The playback buffer of an ABR client: media time downloaded and not yet played, startup,
//! stalls and the end of playback, kept exactly in integer nanoseconds and advanced lazily
//! (no event is needed when the buffer runs dry: the stall's start is known from the level
//! and the drain rate, one second of media per second).
//!
//! Rules (our choices where players differ, documented in docs/video.md): playback starts
//! once `startup_ns` of media is buffered (by default one segment, "when the first segment is
//! in"); a stall begins the instant the buffer is empty while segments remain to be
//! downloaded, and ends when `startup_ns` of media is buffered again; a buffer that empties
//! after the last segment is the end of the video, not a stall.

/// Where playback is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Before playback first starts.
    Startup,
    Playing,
    /// Out of media since `since` (ns).
    Stalled {
        since: u64,
    },
    /// Every segment played.
    Ended,
}

#[derive(Clone, Debug)]
pub struct Player {
    segment_ns: u64,
    startup_ns: u64,
    segments: usize,
    session_start: u64,
    /// The state below holds at this instant.
    at: u64,
    buffer_ns: u64,
    phase: Phase,
    downloaded: usize,
    played_ns: u64,
    startup_delay_ns: Option<u64>,
    stalls: u32,
    stall_ns: u64,
}

impl Player {
    /// A player of `segments` segments of `segment_ns` each, whose session starts at `start`.
    pub fn new(segment_ns: u64, startup_ns: u64, segments: usize, start: u64) -> Player {
        Player {
            segment_ns,
            startup_ns,
            segments,
            session_start: start,
            at: start,
            buffer_ns: 0,
            phase: Phase::Startup,
            downloaded: 0,
            played_ns: 0,
            startup_delay_ns: None,
            stalls: 0,
            stall_ns: 0,
        }
    }

    /// Plays from `self.at` to `now`: the buffer drains while playing, and a stall begins at
    /// the instant it empties (if segments remain) or playback ends (if none do).
    pub fn advance(&mut self, now: u64) {
        assert!(now >= self.at, "player advanced backwards: {now} < {}", self.at);
        let elapsed = now - self.at;
        if self.phase == Phase::Playing {
            let played = elapsed.min(self.buffer_ns);
            self.buffer_ns -= played;
            self.played_ns += played;
            if self.buffer_ns == 0 && played < elapsed {
                let empty_at = self.at + played;
                if self.downloaded == self.segments {
                    self.phase = Phase::Ended;
                } else {
                    self.phase = Phase::Stalled { since: empty_at };
                    self.stalls += 1;
                }
            }
        }
        self.at = now;
    }

    /// Media buffered at `now`, ns.
    pub fn buffer_at(&mut self, now: u64) -> u64 {
        self.advance(now);
        self.buffer_ns
    }

    /// A whole segment arrived at `now`.
    pub fn on_segment(&mut self, now: u64) {
        self.advance(now);
        self.buffer_ns += self.segment_ns;
        self.downloaded += 1;
        let ready = self.buffer_ns >= self.startup_ns || self.downloaded == self.segments;
        match self.phase {
            Phase::Startup if ready => {
                self.phase = Phase::Playing;
                self.startup_delay_ns = Some(now - self.session_start);
            }
            Phase::Stalled { since } if ready => {
                self.phase = Phase::Playing;
                self.stall_ns += now - since;
            }
            _ => {}
        }
    }

    /// How long from `now` until the buffer has room for one more segment under `max_ns`
    /// (0: room now). Only a playing buffer drains, so the wait is for playback.
    pub fn wait_for_room(&mut self, now: u64, max_ns: u64) -> u64 {
        let b = self.buffer_at(now);
        (b + self.segment_ns).saturating_sub(max_ns)
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The session's playback facts at `end` (advancing to it), an ongoing stall counted up to
    /// `end`.
    pub fn finish(&mut self, end: u64) -> Playback {
        // A session whose start was drawn after the run's end (a group's start plus its
        // jitter) never ran: it ends where it would have started, having waited and played
        // nothing.
        let end = end.max(self.session_start);
        self.advance(end);
        let ongoing = match self.phase {
            Phase::Stalled { since } => end - since,
            _ => 0,
        };
        Playback {
            startup_delay_ns: self.startup_delay_ns,
            waited_ns: end - self.session_start,
            played_ns: self.played_ns,
            stalls: self.stalls,
            stall_ns: self.stall_ns + ongoing,
            downloaded: self.downloaded,
        }
    }
}

/// What a viewer saw of one session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Playback {
    /// From the session's start to playback's first start (None: never started).
    pub startup_delay_ns: Option<u64>,
    /// The session's length up to its end (the flow's stop or the run's end).
    pub waited_ns: u64,
    /// Media time played.
    pub played_ns: u64,
    /// Times playback stopped for want of media after it had started.
    pub stalls: u32,
    /// Total time stalled.
    pub stall_ns: u64,
    /// Segments downloaded whole.
    pub downloaded: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;
    const MS: u64 = 1_000_000;

    /// By hand: 2 s segments, startup one segment, 5 segments, session from t = 0.
    /// Segment 0 at 1 s: playback starts (startup 1 s). Segment 1 at 2.5 s: buffer 0.5 + 2.
    /// The buffer empties at 5 s; segment 2 at 6 s ends a 1 s stall. Segment 3 at 6.5 s:
    /// buffer 1.5 + 2 = 3.5 s, empty at 10 s; the run ends at 12 s still stalled: a 2 s
    /// stall. Two stalls, 3 s, 8 s of media played.
    #[test]
    fn stalls_counted_exactly_on_a_constructed_case() {
        let mut p = Player::new(2 * S, 2 * S, 5, 0);
        p.on_segment(S);
        assert_eq!(p.phase(), Phase::Playing);
        p.on_segment(2500 * MS);
        assert_eq!(p.buffer_at(2500 * MS), 2500 * MS);
        assert_eq!(p.buffer_at(5 * S), 0);
        assert_eq!(p.phase(), Phase::Playing); // empty exactly now: not yet a stall
        assert_eq!(p.buffer_at(5 * S + 1), 0);
        assert_eq!(p.phase(), Phase::Stalled { since: 5 * S });
        p.on_segment(6 * S);
        p.on_segment(6500 * MS);
        assert_eq!(p.buffer_at(6500 * MS), 3500 * MS);
        let seen = p.finish(12 * S);
        assert_eq!(
            seen,
            Playback { startup_delay_ns: Some(S), waited_ns: 12 * S, played_ns: 8 * S, stalls: 2, stall_ns: 3 * S, downloaded: 4 }
        );
    }

    /// A client drawn to start at 12 s in a run that ends at 10 s: it never ran (it panicked
    /// with "player advanced backwards" before).
    #[test]
    fn a_session_that_would_start_after_the_end_never_ran() {
        let mut p = Player::new(2 * S, 2 * S, 5, 12 * S);
        let seen = p.finish(10 * S);
        assert_eq!(seen, Playback { startup_delay_ns: None, waited_ns: 0, played_ns: 0, stalls: 0, stall_ns: 0, downloaded: 0 });
        assert_eq!(p.phase(), Phase::Startup);
    }

    #[test]
    fn a_segment_arriving_as_the_buffer_empties_is_no_stall_and_the_end_is_no_stall() {
        let mut p = Player::new(2 * S, 2 * S, 2, 0);
        p.on_segment(0);
        p.on_segment(2 * S);
        let seen = p.finish(10 * S);
        assert_eq!(seen.stalls, 0);
        assert_eq!(seen.played_ns, 4 * S);
        assert_eq!(p.phase(), Phase::Ended);
    }

    #[test]
    fn a_startup_threshold_above_one_segment_waits_for_more() {
        let mut p = Player::new(2 * S, 4 * S, 10, 0);
        p.on_segment(S);
        assert_eq!(p.phase(), Phase::Startup);
        assert_eq!(p.buffer_at(3 * S), 2 * S); // nothing plays before startup
        p.on_segment(3 * S);
        assert_eq!(p.finish(3 * S).startup_delay_ns, Some(3 * S));
        assert_eq!(p.wait_for_room(3 * S, 5 * S), S); // 4 s + 2 s over a 5 s limit
        assert_eq!(p.wait_for_room(4 * S, 5 * S), 0);
    }

    /// Over arbitrary arrival schedules the session's time is exactly startup wait + played +
    /// stalled (until the video ends), and buffered media is downloaded minus played, so the
    /// buffer (unsigned, and its subtraction checked) never needed to go negative.
    #[test]
    fn time_and_media_are_conserved_on_arbitrary_schedules() {
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for _ in 0..200 {
            let segments = 1 + (x % 7) as usize;
            let mut p = Player::new(2 * S, 2 * S + (x >> 9) % (3 * S), segments, 1_000);
            let mut t = 1_000;
            for _ in 0..segments {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                t += (x >> 20) % (5 * S);
                p.on_segment(t);
            }
            let end = t + (x >> 30) % (10 * S);
            let before_end = p.clone().buffer_at(end);
            let seen = p.finish(end);
            let startup = seen.startup_delay_ns.unwrap();
            let accounted = startup + seen.played_ns + seen.stall_ns;
            if p.phase() == Phase::Ended {
                // Everything played; the session may have gone on idle after the end.
                assert_eq!(seen.played_ns, segments as u64 * 2 * S);
                assert!(seen.waited_ns >= accounted);
            } else {
                assert_eq!(seen.waited_ns, accounted);
            }
            assert_eq!(before_end + seen.played_ns, segments as u64 * 2 * S);
            assert_eq!(seen.stalls == 0, seen.stall_ns == 0);
        }
    }
}
