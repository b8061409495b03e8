//! Applications that generate traffic on top of the transports.
pub mod mpeg;
pub mod pels;
pub mod rtp;
pub mod streaming;
