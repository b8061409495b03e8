//! The settings every rate controller of the real-time video call takes (GCC, `super::gcc`;
//! SCReAMv2, `super::scream`): the target rate's start and bounds, the receiver's feedback
//! spacing, the synthetic encoder that follows the target (`super::synthetic_codec`), and when
//! a frame is late. One struct, so that the two controllers read the same fields the same way.

use serde::{Deserialize, Serialize};

/// A rate-controlled call's settings (`gcc` or `scream` in a video flow's config).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CallConfig {
    pub start_rate_bps: u64,
    pub min_rate_bps: u64,
    pub max_rate_bps: u64,
    /// Receiver's feedback spacing.
    pub feedback_interval_ns: u64,
    /// Encoder model (see `synthetic_codec`).
    pub key_interval: u32,
    pub key_ratio: f64,
    pub fluctuation: f64,
    pub reaction_lag_ns: u64,
    /// A frame complete later than this after its capture is late.
    pub deadline_ns: u64,
}

impl CallConfig {
    /// The synthetic encoder's settings for a call of `fps` frames a second: the encoder model
    /// of these settings, bounded by the same rates as the target.
    pub fn codec(&self, fps: f64) -> super::synthetic_codec::CodecConfig {
        super::synthetic_codec::CodecConfig {
            fps,
            key_interval: self.key_interval,
            key_ratio: self.key_ratio,
            fluctuation: self.fluctuation,
            reaction_lag_ns: self.reaction_lag_ns,
            min_rate_bps: self.min_rate_bps,
            max_rate_bps: self.max_rate_bps,
        }
    }

    /// The settings' own checks; errors start with `controller` ("gcc", "scream"), the config
    /// key they sit under.
    pub fn validate(&self, controller: &str) -> Result<(), String> {
        if self.min_rate_bps == 0 || self.min_rate_bps > self.start_rate_bps || self.start_rate_bps > self.max_rate_bps {
            return Err(format!("{controller}: need 0 < min_rate <= start_rate <= max_rate"));
        }
        if self.feedback_interval_ns == 0 {
            return Err(format!("{controller}.feedback_interval: must be positive"));
        }
        if !(self.key_ratio >= 1.0 && self.key_ratio.is_finite()) {
            return Err(format!("{controller}.key_ratio: must be >= 1"));
        }
        if !(0.0..1.0).contains(&self.fluctuation) {
            return Err(format!("{controller}.fluctuation: must be in [0, 1)"));
        }
        if self.deadline_ns == 0 {
            return Err(format!("{controller}.deadline: must be positive"));
        }
        Ok(())
    }
}
