//! aqmlab-emu: a userspace router that puts aqmlab's queue disciplines in front of real
//! traffic between Linux network namespaces.
//!
//! The router is an L2 bump in the wire between two veth interfaces (AF_PACKET sockets, no IP
//! addresses, no kernel forwarding): [`parse`] reads each frame's headers, [`classify`] turns
//! them into an `aqmlab_core::Packet` (flow id, DSCP class), [`link::Link`] runs the unchanged
//! discipline, an absolute-clock pacer and a propagation delay line, and [`router`] moves frames
//! between the sockets and the links, waiting in `ppoll` until the next due time. Records are
//! the simulator's (`aqmlab_model::record`), so one metrics pipeline serves both engines.

pub mod classify;
pub mod config;
pub mod link;
pub mod parse;
pub mod router;
pub mod rt_budget;
pub mod schedule;

pub use config::RouterConfig;
pub use router::Router;
