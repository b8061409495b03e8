//! Link models both engines share, free of clocks and I/O like the rest of this crate: what
//! decides when a link may send, apart from the discipline in front of it.
//!
//! * [`trace`]: a delivery trace in mahimahi's format (one line per opportunity to deliver one
//!   MTU, in integer milliseconds, looping), its parser and its mean rate;
//! * [`opportunities`]: the looping sequence of opportunity times a trace stands for;
//! * [`trace_server`]: mahimahi's byte accounting over those opportunities (which packets an
//!   opportunity carries, what is lost when nothing waits), driven by the engine's queue;
//! * [`synthetic`]: traces generated from a capacity model (constant, square wave, Markov);
//! * [`impairments`]: netem's loss, duplication and jitter on the wire;
//! * [`schedule`]: a piecewise rate and delay schedule, as `tc qdisc change` scripts one.
pub mod impairments;
pub mod opportunities;
pub mod schedule;
pub mod synthetic;
pub mod trace;
pub mod trace_server;

pub use opportunities::OpportunityClock;
pub use schedule::{Schedule, ScheduleConfig};
pub use synthetic::SyntheticTrace;
pub use trace::DeliveryTrace;
pub use trace_server::{OpportunityUser, TraceServer};
