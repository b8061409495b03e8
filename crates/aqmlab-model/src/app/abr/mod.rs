//! Adaptive-bitrate (ABR) algorithms: which rung of the ladder to fetch the next segment at.
//!
//! Each algorithm is a pure function of the player's state ([`PlayerState`]: buffer level,
//! past segment throughputs, the previous rung) and the [`ladder::Ladder`], with no clock, no
//! randomness and no engine, so that the simulator's client (`aqmlab_sim`'s `abr` app) and a
//! real HTTP client in the emulator can share them. One file per algorithm:
//!
//! * [`throughput_rule`]: dash.js's ThroughputRule, a safety factor on a mean throughput;
//! * [`bba`]: BBA-0, Huang et al., SIGCOMM 2014 (reservoir, cushion, rate map);
//! * [`bola`]: BOLA-BASIC, Spiteri et al., INFOCOM 2016 (Lyapunov utility rule);
//! * [`bola_e`]: BOLA-E, Spiteri et al., MMSys 2018 (placeholder buffer, throughput cap,
//!   insufficient-buffer rule), the one algorithm with state between decisions ([`Memory`]);
//! * [`mpc`]: MPC and RobustMPC, Yin et al., SIGCOMM 2015 (horizon search of the linear QoE).
//!
//! [`qoe`] holds Yin et al.'s linear QoE, shared by MPC's objective and the per-client results.

pub mod bba;
pub mod bola;
pub mod bola_e;
pub mod client;
pub mod ladder;
pub mod mpc;
pub mod player;
pub mod qoe;
pub mod session;
pub mod throughput_rule;

use ladder::Ladder;
use serde::{Deserialize, Serialize};

/// The algorithms by the names a scenario uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    Throughput,
    Bba,
    Bola,
    Mpc,
    RobustMpc,
    BolaE,
}

impl Algorithm {
    /// In the order of the `abr_sessions` table's `algorithm` codes (new ones go last).
    pub const ALL: [Algorithm; 6] =
        [Algorithm::Throughput, Algorithm::Bba, Algorithm::Bola, Algorithm::Mpc, Algorithm::RobustMpc, Algorithm::BolaE];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Throughput => "throughput",
            Algorithm::Bba => "bba",
            Algorithm::Bola => "bola",
            Algorithm::Mpc => "mpc",
            Algorithm::RobustMpc => "robust_mpc",
            Algorithm::BolaE => "bola_e",
        }
    }

    /// The algorithm called `name`, or a one-line refusal listing the known names.
    pub fn from_name(name: &str) -> Result<Algorithm, String> {
        Algorithm::ALL.into_iter().find(|a| a.name() == name).ok_or_else(|| {
            let known: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
            format!("unknown ABR algorithm {name:?}; known: {}", known.join(", "))
        })
    }
}

/// Every algorithm's parameters (each reads its own); defaults are the sources' own, see each
/// field.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AbrParams {
    pub algorithm: Algorithm,
    /// Throughput rule: the fraction of the throughput estimate a rung may use (dash.js
    /// `bandwidthSafetyFactor`, 0.9).
    pub safety_factor: f64,
    /// Throughput rule: how many recent segment throughputs the estimate averages (dash.js
    /// `AVERAGE_THROUGHPUT_SAMPLE_AMOUNT_VOD`, 4).
    pub throughput_window: u32,
    /// BBA: the reservoir r, seconds of buffer below which the lowest rung is fetched.
    pub bba_reservoir_s: f64,
    /// BBA: the cushion cu, seconds of buffer over which the rate map rises to the top rung.
    pub bba_cushion_s: f64,
    /// BOLA: gamma*p, the weight of playback smoothness against utility (Sabre's default 5).
    pub bola_gamma_p: f64,
    /// BOLA: the buffer target Q_max, seconds, from which V follows. BOLA-E: its buffer target
    /// is the larger of this and 10 s + 2 s per rung (dash.js).
    pub bola_buffer_target_s: f64,
    /// MPC, RobustMPC: segments looked ahead (Yin et al.: 5).
    pub mpc_horizon: u32,
    /// BOLA-E: how its throughput cap lets the rung rise (BOLA-U, Sabre's default, or BOLA-O).
    #[serde(default)]
    pub bola_e_variant: bola_e::Variant,
}

impl AbrParams {
    /// Every parameter at its source's default, for `algorithm`, with the buffer limits of a
    /// player whose buffer holds at most `max_buffer_s` seconds.
    pub fn defaults(algorithm: Algorithm, max_buffer_s: f64) -> AbrParams {
        AbrParams {
            algorithm,
            safety_factor: throughput_rule::SAFETY_FACTOR,
            throughput_window: throughput_rule::WINDOW,
            bba_reservoir_s: bba::RESERVOIR_SHARE * max_buffer_s,
            bba_cushion_s: bba::CUSHION_SHARE * max_buffer_s,
            bola_gamma_p: bola::GAMMA_P,
            bola_buffer_target_s: max_buffer_s,
            mpc_horizon: mpc::HORIZON,
            bola_e_variant: bola_e::Variant::default(),
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if !(self.safety_factor > 0.0 && self.safety_factor <= 1.0) {
            return Err("safety_factor must be in (0, 1]".into());
        }
        if self.throughput_window == 0 {
            return Err("throughput_window must be at least 1".into());
        }
        if !(self.bba_reservoir_s >= 0.0 && self.bba_cushion_s > 0.0) {
            return Err("bba_reservoir_s must be >= 0 and bba_cushion_s > 0".into());
        }
        if !(self.bola_gamma_p > 0.0 && self.bola_buffer_target_s > 0.0) {
            return Err("bola_gamma_p and bola_buffer_target_s must be positive".into());
        }
        if !(1..=8).contains(&self.mpc_horizon) {
            return Err("mpc_horizon must be 1..=8".into());
        }
        Ok(())
    }

    /// The rung to fetch the next segment at, for the algorithms without state between
    /// decisions; BOLA-E gets its first decision of a session (use [`AbrParams::decide`]).
    pub fn choose(&self, ladder: &Ladder, state: &PlayerState) -> usize {
        match self.algorithm {
            Algorithm::Throughput => throughput_rule::choose(ladder, state, self.safety_factor, self.throughput_window as usize),
            Algorithm::Bba => bba::choose(ladder, state, self.bba_reservoir_s, self.bba_cushion_s),
            Algorithm::Bola => bola::choose(ladder, state, self.bola_gamma_p, self.bola_buffer_target_s),
            Algorithm::Mpc => mpc::choose(ladder, state, self.mpc_horizon as usize, false),
            Algorithm::RobustMpc => mpc::choose(ladder, state, self.mpc_horizon as usize, true),
            Algorithm::BolaE => self.decide(ladder, state, &mut self.memory(ladder), 0.0).rung,
        }
    }

    /// True for an algorithm with state between decisions (BOLA-E), which [`AbrParams::choose`]
    /// alone cannot run.
    pub fn memory_needed(&self) -> bool {
        self.algorithm == Algorithm::BolaE
    }

    /// What the algorithm carries between decisions of one session (nothing but for BOLA-E).
    pub fn memory(&self, ladder: &Ladder) -> Memory {
        match self.algorithm {
            Algorithm::BolaE => {
                let mut p = bola_e::Params::new(ladder, self.bola_buffer_target_s);
                p.one_step_up = self.bola_e_variant == bola_e::Variant::BolaU;
                Memory::BolaE(p, bola_e::State::default())
            }
            _ => Memory::None,
        }
    }

    /// The decision for the next segment, with the session's `memory`; `idle_s` is the time since
    /// the last download completed. The stateless algorithms never pause.
    pub fn decide(&self, ladder: &Ladder, state: &PlayerState, memory: &mut Memory, idle_s: f64) -> bola_e::Decision {
        match memory {
            Memory::BolaE(p, st) => {
                let estimate = throughput_rule::mean_throughput(state.throughputs_bps, self.throughput_window as usize);
                bola_e::decide(p, ladder, st, state, idle_s, estimate)
            }
            Memory::None => bola_e::Decision { rung: self.choose(ladder, state), pause_s: 0.0 },
        }
    }
}

/// An algorithm's state carried between the decisions of one session.
#[derive(Clone, Debug)]
pub enum Memory {
    None,
    BolaE(bola_e::Params, bola_e::State),
}

impl Memory {
    /// A segment at `rung` arrived after `download_s`, leaving `buffer_s` buffered (the segment
    /// included); `stalled`: playback ran dry meanwhile.
    pub fn downloaded(&mut self, rung: usize, buffer_s: f64, download_s: f64, stalled: bool) {
        if let Memory::BolaE(p, st) = self {
            bola_e::downloaded(p, st, rung, buffer_s, download_s, stalled);
        }
    }
}

/// What the player knows when it picks the rung of segment `segment`.
#[derive(Clone, Copy, Debug)]
pub struct PlayerState<'a> {
    /// Index of the segment to fetch next.
    pub segment: usize,
    /// Seconds of media in the playback buffer now.
    pub buffer_s: f64,
    /// The rung of the previous segment (None before the first).
    pub last_rung: Option<usize>,
    /// Throughput of each past segment's download, bits/s, oldest first.
    pub throughputs_bps: &'a [f64],
    /// RobustMPC: the relative error |predicted - measured| / measured of each past
    /// segment's throughput prediction, oldest first.
    pub prediction_errors: &'a [f64],
}

/// The highest rung whose bitrate is at most `rate_bps` (the lowest if none is).
pub fn highest_rung_within(ladder: &Ladder, rate_bps: f64) -> usize {
    ladder.bitrates_bps.iter().rposition(|&b| b as f64 <= rate_bps).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_known() {
        for a in Algorithm::ALL {
            assert_eq!(Algorithm::from_name(a.name()), Ok(a));
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(json, format!("\"{}\"", a.name()));
        }
        let e = Algorithm::from_name("pensieve").unwrap_err();
        assert_eq!(e, "unknown ABR algorithm \"pensieve\"; known: throughput, bba, bola, mpc, robust_mpc, bola_e");
        let e = serde_json::from_str::<Algorithm>("\"pensieve\"").unwrap_err().to_string();
        assert!(e.contains("robust_mpc") && e.contains("bola_e"), "{e}");
    }

    #[test]
    fn the_bola_e_variant_reaches_the_throughput_cap() {
        // bola_e.rs's `throughput_caps_up_switches` checks the cap itself; here, that the
        // scenario's choice (and its absence: BOLA-U) gets to the session's parameters.
        let ladder = ladder::test_ladder(&[1000, 2000, 4000], 20, 2.0);
        let cap = |json: &str| match serde_json::from_str::<AbrParams>(json).unwrap().memory(&ladder) {
            Memory::BolaE(p, _) => p.one_step_up,
            Memory::None => panic!("BOLA-E keeps memory"),
        };
        let base = r#""algorithm":"bola_e","safety_factor":0.9,"throughput_window":4,"bba_reservoir_s":1,"bba_cushion_s":2,"bola_gamma_p":5,"bola_buffer_target_s":30,"mpc_horizon":5"#;
        assert!(cap(&format!("{{{base}}}")), "default BOLA-U");
        assert!(cap(&format!(r#"{{{base},"bola_e_variant":"bola_u"}}"#)));
        assert!(!cap(&format!(r#"{{{base},"bola_e_variant":"bola_o"}}"#)));
        let e = serde_json::from_str::<AbrParams>(&format!(r#"{{{base},"bola_e_variant":"bola_x"}}"#)).unwrap_err();
        assert!(e.to_string().contains("bola_o"), "{e}");
    }

    #[test]
    fn defaults_are_valid_and_checked() {
        let mut p = AbrParams::defaults(Algorithm::Bba, 30.0);
        assert!(p.validate().is_ok());
        p.mpc_horizon = 0;
        assert!(p.validate().unwrap_err().contains("mpc_horizon"));
    }
}
