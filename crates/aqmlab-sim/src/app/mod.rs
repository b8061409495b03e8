//! Applications that generate traffic on top of the transports.
pub mod pels;
pub mod streaming;
