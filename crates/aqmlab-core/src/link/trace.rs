//! A delivery trace in mahimahi's format, read unchanged.
//!
//! The format (mahimahi `src/frontend/link_queue.cc`, `LinkQueue::LinkQueue`, and its man page
//! `man/mm-link.1`): one line per delivery opportunity, the opportunity's time in whole
//! milliseconds since the link started; times never decrease; several equal lines are several
//! opportunities in the same millisecond; the trace loops, each pass starting where the last
//! one's final timestamp falls (`LinkQueue::use_a_delivery_opportunity` adds `schedule_.back()`
//! to its base time at every wrap), so the period is the last timestamp.
//!
//! mahimahi refuses an empty line, a line that is not an integer (`myatoi` in
//! `src/util/ezio.cc`), a time before the previous one, a file without a timestamp and a trace
//! whose last timestamp is 0 (a loop of zero length would hold infinitely many opportunities
//! per second). So does [`DeliveryTrace::parse`], each refusal one line naming the file and the
//! line. Where mahimahi's `strtol` would also take a sign or leading spaces, we take only
//! digits, surrounded by optional whitespace (a trailing `\r` from a file written on Windows is
//! whitespace).

use crate::units::{Rate, Time};
use serde::{Deserialize, Serialize};

/// Bytes one opportunity carries: mahimahi's `LinkQueue::PACKET_SIZE`, 1504, "the default max
/// TUN payload size" (`src/frontend/link_queue.hh`).
pub const OPPORTUNITY_BYTES: u32 = 1504;

/// Bytes mahimahi counts per packet beyond its IP size: its TUN device is opened with
/// `IFF_TUN` and without `IFF_NO_PI` (`src/util/netdevice.cc`), so every packet it reads
/// starts with the 4-byte `struct tun_pi`, and `rationalize` charges the whole read. A
/// 1500-byte IP packet is then exactly one opportunity, as the man page says ("each delivery
/// opportunity represents the ability to deliver 1500 bytes").
pub const PACKET_OVERHEAD_BYTES: u32 = 4;

/// The IP bytes one opportunity stands for when a trace is quoted as a rate (a line per
/// millisecond is "12 Mbit/s").
pub const MTU_BYTES: u64 = (OPPORTUNITY_BYTES - PACKET_OVERHEAD_BYTES) as u64;

/// Largest timestamp accepted, in ms: every opportunity time of a run must fit in `Time`'s
/// nanoseconds (u64 ns is 584 years; this is 31 years).
pub const MAX_TIMESTAMP_MS: u64 = 1_000_000_000_000;

/// A trace of delivery opportunities: the millisecond timestamps of one pass, non-decreasing,
/// at least one, the last positive (the period). Deserialized configs are trusted only after
/// [`DeliveryTrace::validate`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryTrace {
    pub opportunities_ms: Vec<u64>,
}

impl DeliveryTrace {
    /// Parses a trace file's text; `source` names the file in errors ("down.trace line 7: ...").
    pub fn parse(text: &str, source: &str) -> Result<DeliveryTrace, String> {
        let mut times = Vec::new();
        let mut last_line = 0;
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            let at = |msg: String| format!("{source} line {n}: {msg}");
            let field = line.trim();
            if field.is_empty() {
                // mahimahi: "invalid empty line"; a file's final newline ends a line, it is not one
                return Err(at("empty line; each line must be a time in whole milliseconds".into()));
            }
            if !field.bytes().all(|b| b.is_ascii_digit()) {
                return Err(at(format!("{field:?} is not a time in whole milliseconds (digits only)")));
            }
            let ms: u64 = match field.parse() {
                Ok(ms) if ms <= MAX_TIMESTAMP_MS => ms,
                _ => return Err(at(format!("{field} ms is too large (at most {MAX_TIMESTAMP_MS})"))),
            };
            if let Some(&prev) = times.last() {
                if ms < prev {
                    return Err(at(format!("{ms} ms goes back in time (the line before says {prev} ms); times must not decrease")));
                }
            }
            times.push(ms);
            last_line = n;
        }
        match times.last() {
            None => Err(format!("{source}: empty trace: no delivery opportunity")),
            Some(0) => Err(format!(
                "{source} line {last_line}: the loop has no length (last time 0 ms): the trace repeats every last-time ms, so it needs an opportunity after 0 ms"
            )),
            Some(_) => Ok(DeliveryTrace { opportunities_ms: times }),
        }
    }

    /// The checks of [`DeliveryTrace::parse`] on a trace built in memory or read from a config.
    pub fn validate(&self) -> Result<(), String> {
        let t = &self.opportunities_ms;
        let Some(&last) = t.last() else { return Err("empty trace: no delivery opportunity".into()) };
        if let Some(i) = t.windows(2).position(|w| w[1] < w[0]) {
            return Err(format!("opportunity {} ({} ms) is before the one ahead of it ({} ms)", i + 1, t[i + 1], t[i]));
        }
        if last == 0 {
            return Err("the loop has no length (last time 0 ms)".into());
        }
        if last > MAX_TIMESTAMP_MS {
            return Err(format!("{last} ms is too large (at most {MAX_TIMESTAMP_MS})"));
        }
        Ok(())
    }

    /// The trace in mahimahi's file format, one timestamp a line.
    pub fn to_mahimahi(&self) -> String {
        let mut out = String::with_capacity(self.opportunities_ms.len() * 6);
        for ms in &self.opportunities_ms {
            out.push_str(&ms.to_string());
            out.push('\n');
        }
        out
    }

    /// How long one pass lasts: its last timestamp.
    pub fn period(&self) -> Time {
        Time::from_millis(*self.opportunities_ms.last().expect("validated trace"))
    }

    /// Opportunities in one pass.
    pub fn opportunities_per_loop(&self) -> u64 {
        self.opportunities_ms.len() as u64
    }

    /// The rate the trace delivers when every opportunity carries a full 1500-byte IP packet:
    /// `opportunities * 1500 * 8 / period` bit/s (12 Mbit/s for one line per millisecond, as
    /// mahimahi's users quote traces), rounded to the nearest bit/s and at least 1 bit/s (a
    /// rate of 0 means "infinitely fast" to [`Rate::tx_time`]).
    pub fn mean_rate(&self) -> Rate {
        let bits_per_loop = self.opportunities_per_loop() as u128 * MTU_BYTES as u128 * 8;
        let period_ms = *self.opportunities_ms.last().expect("validated trace") as u128;
        let bps = (bits_per_loop * 1000 + period_ms / 2) / period_ms;
        Rate(u64::try_from(bps).unwrap_or(u64::MAX).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<u64>, String> {
        DeliveryTrace::parse(text, "t.down").map(|t| t.opportunities_ms)
    }

    #[test]
    fn reads_lines_with_repeats_and_a_final_newline() {
        assert_eq!(parse("1\n1\n3\n7\n").unwrap(), vec![1, 1, 3, 7]);
        assert_eq!(parse("0\r\n5\r\n").unwrap(), vec![0, 5]);
        assert_eq!(parse("4").unwrap(), vec![4]);
    }

    #[test]
    fn refusals_name_the_file_and_the_line() {
        assert_eq!(parse("").unwrap_err(), "t.down: empty trace: no delivery opportunity");
        let back = parse("1\n5\n4\n").unwrap_err();
        assert!(back.starts_with("t.down line 3: 4 ms goes back in time"), "{back}");
        let word = parse("1\n2\nabc\n").unwrap_err();
        assert!(word.starts_with("t.down line 3: \"abc\" is not a time"), "{word}");
        let negative = parse("1\n-2\n").unwrap_err();
        assert!(negative.starts_with("t.down line 2: \"-2\" is not a time"), "{negative}");
        let fraction = parse("1.5\n").unwrap_err();
        assert!(fraction.starts_with("t.down line 1: "), "{fraction}");
        let blank = parse("1\n\n2\n").unwrap_err();
        assert!(blank.starts_with("t.down line 2: empty line"), "{blank}");
        let zero = parse("0\n0\n").unwrap_err();
        assert!(zero.starts_with("t.down line 2: the loop has no length"), "{zero}");
        let huge = parse("99999999999999999999999\n").unwrap_err();
        assert!(huge.starts_with("t.down line 1: ") && huge.contains("too large"), "{huge}");
        // One line each: a user sees the whole reason at once.
        for e in [back, word, blank, zero] {
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn validate_repeats_the_parser_s_checks() {
        let ok = DeliveryTrace { opportunities_ms: vec![0, 2, 2, 9] };
        assert!(ok.validate().is_ok());
        for bad in [vec![], vec![3, 2], vec![0, 0], vec![MAX_TIMESTAMP_MS + 1]] {
            assert!(DeliveryTrace { opportunities_ms: bad.clone() }.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn mean_rate_is_twelve_megabits_per_line_per_millisecond() {
        let one_per_ms = DeliveryTrace { opportunities_ms: (1..=1000).collect() };
        assert_eq!(one_per_ms.mean_rate(), Rate(12_000_000));
        let bursty = DeliveryTrace { opportunities_ms: vec![3, 3, 3, 4] }; // 4 per 4 ms
        assert_eq!(bursty.mean_rate(), Rate(12_000_000));
        let sparse = DeliveryTrace { opportunities_ms: vec![MAX_TIMESTAMP_MS] };
        assert_eq!(sparse.mean_rate(), Rate(1)); // 0.012 bit/s, kept above "infinitely fast"
        assert_eq!(one_per_ms.period(), Time::from_secs(1));
    }

    #[test]
    fn writing_then_reading_gives_the_same_trace() {
        let t = DeliveryTrace { opportunities_ms: vec![0, 0, 5, 17, 17, 40] };
        assert_eq!(DeliveryTrace::parse(&t.to_mahimahi(), "x").unwrap(), t);
    }
}
