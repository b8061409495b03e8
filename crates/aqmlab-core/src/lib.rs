//! aqmlab-core: the pure heart of aqmlab.
//!
//! Units, packets, a seeded random-number source and the queue disciplines that both the
//! simulator and the emulator drive. Nothing here reads a clock, does I/O or touches a global
//! random generator: time arrives as an argument (`now`) and randomness as a `&mut SimRng`
//! derived from the scenario seed. That is what lets one discipline serve both engines and
//! makes every run reproducible bit for bit.

pub mod fuzz;
pub mod link;
pub mod packet;
pub mod qdisc;
pub mod rng;
pub mod units;

pub use packet::{Ecn, FrameType, Packet, Proto, SackBlocks};
pub use qdisc::{build_qdisc, DropReason, LinkConfig, Qdisc, QdiscConfig, QdiscStats, Queue, Verdict};
pub use rng::SimRng;
pub use units::{Bytes, Limit, Rate, Time, UnitError};
