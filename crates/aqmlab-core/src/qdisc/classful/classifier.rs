//! The band classifier of the classful disciplines (PRIO, WRR): which child an arrival joins,
//! by `Packet::class` or by `Packet::dscp`.

use crate::packet::Packet;
use serde::{Deserialize, Serialize};

/// How an arrival is mapped to a band (band 0 is the first child).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case", deny_unknown_fields)]
pub enum Classifier {
    /// By `Packet::class` (3 = highest ... 1 = lowest, 0 = unclassified). Without `map`:
    /// class 3 -> band 0, 2 -> band 1, 1 -> band 2 (clamped to the last band when there are
    /// fewer than three). With `map`, a list of `[class, band]` pairs replaces that table.
    /// Every other class (0, or unlisted) goes to `default_band`. `"color"` is an alias for
    /// PELS, whose colors are classes: green = 3, yellow = 2, red = 1.
    #[serde(alias = "color")]
    Class {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        map: Option<Vec<(u8, usize)>>,
        /// Band of unclassified and unlisted packets (default: the last band).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default_band: Option<usize>,
    },
    /// By `Packet::dscp`: `map` lists `[dscp, band]` pairs; unlisted code points go to
    /// `default_band` (default: the last band).
    Dscp {
        map: Vec<(u8, usize)>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        default_band: Option<usize>,
    },
}

impl Default for Classifier {
    /// By class with the built-in table, unclassified to the last band.
    fn default() -> Classifier {
        Classifier::Class { map: None, default_band: None }
    }
}

impl Classifier {
    /// Checks the classifier against `bands` children; errors start with `field` (the
    /// classifier's own field name in the parent config).
    pub fn validate(&self, field: &str, bands: usize) -> Result<(), String> {
        let (map, default_band, key, key_max) = match self {
            Classifier::Class { map, default_band } => (map.as_deref(), *default_band, "class", 3u8),
            Classifier::Dscp { map, default_band } => (Some(map.as_slice()), *default_band, "dscp", 63u8),
        };
        if let Some(d) = default_band {
            if d >= bands {
                return Err(format!(
                    "{field}.default_band: band {d} does not exist (there are {bands} bands, 0..={})",
                    bands.saturating_sub(1)
                ));
            }
        }
        for (i, &(k, band)) in map.unwrap_or(&[]).iter().enumerate() {
            if k > key_max {
                return Err(format!("{field}.map.{i}: {key} {k} is out of range 0..={key_max}"));
            }
            if band >= bands {
                return Err(format!("{field}.map.{i}: band {band} does not exist (there are {bands} bands)"));
            }
            if map.unwrap_or(&[])[..i].iter().any(|&(k2, _)| k2 == k) {
                return Err(format!("{field}.map.{i}: {key} {k} is listed twice"));
            }
        }
        Ok(())
    }

    /// Compiles the classifier into a lookup table for `bands` children. Out-of-range
    /// entries (only possible without `validate`) are clamped to the last band.
    pub fn table(&self, bands: usize) -> BandTable {
        let last = bands.saturating_sub(1);
        let clamp = |b: usize| b.min(last) as u8;
        let (by_dscp, map, default_band) = match self {
            Classifier::Class { map, default_band } => (false, map.as_deref(), *default_band),
            Classifier::Dscp { map, default_band } => (true, Some(map.as_slice()), *default_band),
        };
        let mut band = [clamp(default_band.unwrap_or(last)); 256];
        match map {
            Some(m) => {
                // First entry wins, as `validate` refuses duplicates anyway.
                for &(k, b) in m.iter().rev() {
                    band[k as usize] = clamp(b);
                }
            }
            None => {
                band[3] = clamp(0);
                band[2] = clamp(1);
                band[1] = clamp(2);
            }
        }
        BandTable { by_dscp, band }
    }
}

/// A compiled [`Classifier`]: one band per class or DSCP value.
#[derive(Clone, Debug)]
pub struct BandTable {
    by_dscp: bool,
    band: [u8; 256],
}

impl BandTable {
    pub fn band(&self, p: &Packet) -> usize {
        let key = if self.by_dscp { p.dscp } else { p.class };
        self.band[key as usize] as usize
    }
}
