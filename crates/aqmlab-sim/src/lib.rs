//! aqmlab-sim: a deterministic discrete-event network simulator built on aqmlab-core.
//!
//! Determinism: the event list breaks ties by insertion order, and every random choice draws
//! from a named stream of the scenario seed, so a (scenario, seed) pair always gives the same
//! records, byte for byte.
pub mod app;
pub mod config;
pub mod engine;
pub mod link;
pub mod pcap;
pub mod sim;
pub mod tcp;
pub mod topology;

pub use config::SimConfig;
pub use sim::{Cancelled, Simulation};
