//! Parts that several disciplines are built from; none is a discipline by itself.

pub mod deficit_round_robin;
pub mod drop_spreader;
pub mod flow_key;
pub mod flow_lists;
pub mod flow_table;
pub mod lazy_timer;
pub mod packet_fifo;
pub mod pi_controller;
pub mod queue_average;
pub mod rate_based;
pub mod rate_estimator;

#[cfg(test)]
pub(crate) mod queue_model;
