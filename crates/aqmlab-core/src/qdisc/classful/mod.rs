//! Classful disciplines: containers whose packets are held by child disciplines (each a full
//! [`crate::qdisc::Queue`] with its own books), and the parts they share.

pub mod children;
pub mod classifier;
pub mod pels_feedback;
pub mod prio;
pub mod wrr;
