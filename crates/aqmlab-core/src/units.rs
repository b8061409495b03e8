//! Units in types: [`Time`] (integer nanoseconds), [`Rate`] (bits per second), [`Bytes`], and
//! queue [`Limit`]s in packets or bytes, with the parsers behind scenario strings such as
//! `"20ms"`, `"25Mbps"`, `"150KB"` and `"100p"`.
//!
//! Parsing is strict on purpose: a number without a unit, or a unit we do not know (`"25Mbs"`),
//! is an error that lists the accepted units, never a guess. Decimal prefixes are SI (1 KB =
//! 1000 B, 1 Mbps = 10^6 bit/s, as ns-3 and the papers use them); binary sizes are spelled KiB/MiB.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in time or a duration, in integer nanoseconds since the start of a run.
///
/// One type serves both, as in htsim and ns-3's `Time`, so the arithmetic is spelled out:
/// - `+` saturates at [`Time::MAX`], which stands for "never" (a timer that is not armed, a
///   shaper with no next packet): "never" plus a delay is still never.
/// - `-` is checked: `a - b` with `b > a` is a bug in the caller (an instant before the run
///   started, a sojourn that ends before it began) and panics naming both operands, in every
///   build. Where a clamp at zero is the meaning (time left until a deadline that may have
///   passed), the caller says so with [`Time::saturating_sub`]; [`Time::checked_sub`] gives
///   `None` instead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Time(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Time {
        Time(ns)
    }
    pub const fn from_micros(us: u64) -> Time {
        Time(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Time {
        Time(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Time {
        Time(s * 1_000_000_000)
    }
    /// Rounds to the nearest nanosecond; negative or NaN inputs become zero.
    pub fn from_secs_f64(s: f64) -> Time {
        if s.is_finite() && s > 0.0 {
            Time((s * 1e9).round() as u64)
        } else {
            Time(0)
        }
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// `self - other`, or zero when `other` is later: for "time left" that may have run out.
    pub fn saturating_sub(self, other: Time) -> Time {
        Time(self.0.saturating_sub(other.0))
    }
    /// `self - other`, or `None` when `other` is later.
    pub fn checked_sub(self, other: Time) -> Option<Time> {
        self.0.checked_sub(other.0).map(Time)
    }
    pub fn mul_f64(self, k: f64) -> Time {
        Time::from_secs_f64(self.as_secs_f64() * k)
    }
}

impl Add for Time {
    type Output = Time;
    fn add(self, rhs: Time) -> Time {
        Time(self.0.saturating_add(rhs.0))
    }
}
impl AddAssign for Time {
    fn add_assign(&mut self, rhs: Time) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}
/// Checked: panics when `rhs` is later than `self` (see [`Time`]).
impl Sub for Time {
    type Output = Time;
    #[inline]
    fn sub(self, rhs: Time) -> Time {
        match self.checked_sub(rhs) {
            Some(d) => d,
            None => negative_time(self, rhs),
        }
    }
}

/// Out of line, so that the checked subtraction inlines to a compare and a branch.
#[cold]
#[inline(never)]
fn negative_time(a: Time, b: Time) -> ! {
    panic!("Time subtraction went negative: {} ns - {} ns (use saturating_sub where a clamp at zero is meant)", a.0, b.0)
}
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.as_secs_f64())
    }
}

/// A data rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Rate(pub u64);

impl Rate {
    pub const fn bps(b: u64) -> Rate {
        Rate(b)
    }
    pub const fn mbps(m: u64) -> Rate {
        Rate(m * 1_000_000)
    }
    pub fn as_bps_f64(self) -> f64 {
        self.0 as f64
    }
    /// Serialization time of `bytes` at this rate, rounded up to the next nanosecond so that a
    /// link never sends faster than its rate. A zero rate means "infinitely fast".
    pub fn tx_time(self, bytes: u64) -> Time {
        if self.0 == 0 {
            return Time::ZERO;
        }
        // In 64 bits whenever the product fits (any packet): the same quotient as in 128
        // bits, without the software 128-bit division on every packet of every link.
        match bytes.checked_mul(8 * 1_000_000_000) {
            Some(bits) => Time(bits.div_ceil(self.0)),
            None => Time((bytes as u128 * 8 * 1_000_000_000).div_ceil(self.0 as u128) as u64),
        }
    }
}

/// A size in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Bytes(pub u64);

/// A queue capacity, in packets or in bytes (Linux tc's `limit`, ns-3's `MaxSize`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    Packets(u64),
    Bytes(u64),
}

impl Limit {
    /// Every queue must hold at least one packet or one byte; the error names the field.
    pub fn validate(self) -> Result<(), String> {
        match self {
            Limit::Packets(0) | Limit::Bytes(0) => Err("limit: must be at least 1 packet or 1 byte".into()),
            _ => Ok(()),
        }
    }

    /// Whether a queue holding `packets`/`bytes` can take one more packet of `size` bytes.
    pub fn admits(self, packets: usize, bytes: u64, size: u32) -> bool {
        match self {
            Limit::Packets(n) => (packets as u64) < n,
            Limit::Bytes(b) => bytes + size as u64 <= b,
        }
    }
}

/// Why a unit string was rejected; the message lists what would have been accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitError(pub String);

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for UnitError {}

pub const TIME_UNITS: &str = "s, ms, us, ns (e.g. \"20ms\", \"1.5s\")";
pub const RATE_UNITS: &str = "bps, Kbps, Mbps, Gbps or kb/s, mb/s, gb/s (e.g. \"25Mbps\")";
pub const SIZE_UNITS: &str = "B, KB, MB, GB (x1000), KiB, MiB (x1024) (e.g. \"150KB\")";
pub const LIMIT_UNITS: &str = "p for packets or a byte size (B, KB, MB, KiB, MiB), e.g. \"100p\" or \"150KB\"";

/// Splits `"25.5Mbps"` into (25.5, "Mbps"), rejecting negative, empty or non-finite numbers.
fn split_number(text: &str, what: &str, allowed: &str) -> Result<(f64, String), UnitError> {
    let s = text.trim();
    let cut = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(s.len());
    let (num, unit) = s.split_at(cut);
    let num = num.replace('_', "");
    if num.is_empty() {
        return Err(UnitError(format!("{what} {text:?} must start with a non-negative number followed by a unit: {allowed}")));
    }
    let value: f64 = num.parse().map_err(|_| UnitError(format!("{what} {text:?}: {num:?} is not a number")))?;
    if !value.is_finite() {
        return Err(UnitError(format!("{what} {text:?} is not finite")));
    }
    let unit = unit.trim().to_string();
    if unit.is_empty() {
        return Err(UnitError(format!("{what} {text:?} has no unit; write one of: {allowed}")));
    }
    Ok((value, unit))
}

fn unknown_unit(what: &str, text: &str, unit: &str, allowed: &str) -> UnitError {
    UnitError(format!("{what} {text:?}: unknown unit {unit:?}; allowed units: {allowed}"))
}

/// Parses a duration such as `"20ms"`.
/// `value` in base units as an integer, refused when it does not fit in 64 bits (a float cast
/// would silently saturate: "1e30s" must not become 584 years).
fn whole_units(value: f64, what: &str, text: &str, base_unit: &str) -> Result<u64, UnitError> {
    let v = value.round();
    // 2^64 is exactly representable; every f64 below it fits in a u64.
    if v >= 18_446_744_073_709_551_616.0 {
        return Err(UnitError(format!("{what} {text:?} is too large: at most {} {base_unit}", u64::MAX)));
    }
    Ok(v as u64)
}

pub fn parse_time(text: &str) -> Result<Time, UnitError> {
    let (v, unit) = split_number(text, "duration", TIME_UNITS)?;
    let scale = match unit.as_str() {
        "s" | "sec" => 1e9,
        "ms" => 1e6,
        "us" | "µs" => 1e3,
        "ns" => 1.0,
        _ => return Err(unknown_unit("duration", text, &unit, TIME_UNITS)),
    };
    Ok(Time(whole_units(v * scale, "duration", text, "ns")?))
}

/// Parses a rate such as `"25Mbps"`. Lower-case `mb/s` is accepted because the PELS paper
/// writes rates that way; `MBps` (bytes) is refused as too easy to misread.
pub fn parse_rate(text: &str) -> Result<Rate, UnitError> {
    let (v, unit) = split_number(text, "rate", RATE_UNITS)?;
    let scale = match unit.as_str() {
        "bps" | "b/s" => 1.0,
        "Kbps" | "kbps" | "kb/s" | "Kb/s" => 1e3,
        "Mbps" | "mbps" | "mb/s" | "Mb/s" => 1e6,
        "Gbps" | "gbps" | "gb/s" | "Gb/s" => 1e9,
        _ => return Err(unknown_unit("rate", text, &unit, RATE_UNITS)),
    };
    Ok(Rate(whole_units(v * scale, "rate", text, "bit/s")?))
}

/// Parses a byte size such as `"150KB"` or `"1500B"`.
pub fn parse_bytes(text: &str) -> Result<Bytes, UnitError> {
    let (v, unit) = split_number(text, "size", SIZE_UNITS)?;
    let scale = byte_scale(&unit).ok_or_else(|| unknown_unit("size", text, &unit, SIZE_UNITS))?;
    Ok(Bytes(whole_units(v * scale, "size", text, "bytes")?))
}

fn byte_scale(unit: &str) -> Option<f64> {
    Some(match unit {
        "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        _ => return None,
    })
}

/// Parses a queue limit: `"100p"` (packets) or a byte size (`"150KB"`).
pub fn parse_limit(text: &str) -> Result<Limit, UnitError> {
    let (v, unit) = split_number(text, "queue limit", LIMIT_UNITS)?;
    if unit == "p" || unit == "pkts" || unit == "packets" {
        if v.fract() != 0.0 {
            return Err(UnitError(format!("queue limit {text:?}: a packet count must be a whole number")));
        }
        return Ok(Limit::Packets(whole_units(v, "queue limit", text, "packets")?));
    }
    let scale = byte_scale(&unit).ok_or_else(|| unknown_unit("queue limit", text, &unit, LIMIT_UNITS))?;
    Ok(Limit::Bytes(whole_units(v * scale, "queue limit", text, "bytes")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_subtraction_is_checked_and_the_clamp_is_explicit() {
        assert_eq!(Time(5) - Time(3), Time(2));
        assert_eq!(Time(3).checked_sub(Time(5)), None);
        assert_eq!(Time(3).saturating_sub(Time(5)), Time::ZERO);
        assert_eq!(Time::MAX + Time(1), Time::MAX, "never plus a delay is still never");
        let negative = std::panic::catch_unwind(|| Time(3) - Time(5));
        let message = *negative.expect_err("3 ns - 5 ns must panic").downcast::<String>().unwrap();
        assert!(message.contains("3 ns - 5 ns"), "{message}");
    }

    #[test]
    fn parses_times() {
        assert_eq!(parse_time("20ms").unwrap(), Time::from_millis(20));
        assert_eq!(parse_time("1.5s").unwrap(), Time::from_millis(1500));
        assert_eq!(parse_time("100us").unwrap(), Time::from_micros(100));
        assert_eq!(parse_time(" 7ns ").unwrap(), Time(7));
    }

    #[test]
    fn parses_rates_and_sizes() {
        assert_eq!(parse_rate("25Mbps").unwrap(), Rate(25_000_000));
        assert_eq!(parse_rate("4mb/s").unwrap(), Rate(4_000_000));
        assert_eq!(parse_rate("600Kbps").unwrap(), Rate(600_000));
        assert_eq!(parse_bytes("150KB").unwrap(), Bytes(150_000));
        assert_eq!(parse_bytes("2KiB").unwrap(), Bytes(2048));
        assert_eq!(parse_limit("100p").unwrap(), Limit::Packets(100));
        assert_eq!(parse_limit("10KB").unwrap(), Limit::Bytes(10_000));
    }

    #[test]
    fn rejects_typos_with_the_allowed_units() {
        let e = parse_rate("25Mbs").unwrap_err().0;
        assert!(e.contains("Mbs") && e.contains("Mbps"), "{e}");
        assert!(parse_time("20").unwrap_err().0.contains("no unit"));
        assert!(parse_rate("-5Mbps").is_err());
        assert!(parse_limit("1.5p").is_err());
        assert!(parse_bytes("MB").is_err());
    }

    #[test]
    fn values_beyond_64_bits_are_refused_not_saturated() {
        // Found by tests/test_scenario_mutations.py: "1e30s" used to become u64::MAX ns.
        let huge = format!("1{}", "0".repeat(30));
        for e in [
            parse_time(&format!("{huge}s")).unwrap_err(),
            parse_rate(&format!("{huge}Mbps")).unwrap_err(),
            parse_bytes(&format!("{huge}KB")).unwrap_err(),
            parse_limit(&format!("{huge}p")).unwrap_err(),
            parse_limit(&format!("{huge}B")).unwrap_err(),
        ] {
            assert!(e.0.contains("too large"), "{e}");
        }
        // 2^64 - 1 as an f64 is 2^64: refused rather than rounded down.
        assert!(parse_time("18446744073709551615ns").unwrap_err().0.contains("too large"));
        assert_eq!(parse_time("18000000000s").unwrap(), Time(18_000_000_000_000_000_000));
        assert_eq!(parse_rate("1000Gbps").unwrap(), Rate(1_000_000_000_000));
    }

    #[test]
    fn a_limit_must_hold_something() {
        assert!(Limit::Packets(1).validate().is_ok() && Limit::Bytes(1).validate().is_ok());
        assert_eq!(Limit::Packets(0).validate().unwrap_err(), "limit: must be at least 1 packet or 1 byte");
        assert!(Limit::Bytes(0).validate().is_err());
    }

    #[test]
    fn tx_time_rounds_up() {
        // 1000 bytes at 25 Mbit/s is exactly 320 us.
        assert_eq!(Rate::mbps(25).tx_time(1000), Time::from_micros(320));
        // 1 byte at 3 bit/s is 8/3 s: must round up, never down.
        assert_eq!(Rate(3).tx_time(1), Time(2_666_666_667));
        // Past 2^64 bit-nanoseconds (2.3 GB) the 128-bit path gives the same rounding.
        assert_eq!(Rate(3).tx_time(3_000_000_000), Time(8_000_000_000_000_000_000));
        assert_eq!(Rate(7).tx_time(3_000_000_000), Time(3_428_571_428_571_428_572));
    }
}
