//! The DCTCP receiver's ECN-Echo (RFC 8257 section 3.2): ECE on every ACK says whether the
//! last data segment received carried CE, so the sender can count marked bytes exactly.
//!
//! The two-state machine of section 3.2 (state DCTCP.CE, initially false): a segment whose
//! CE bit differs from the state flips the state and is acknowledged at once. With delayed
//! ACKs, segments received before it and not yet acknowledged were in the old state, so an ACK
//! for them with ECE = the old state goes out first, so that every acknowledged byte is
//! echoed with the CE state it arrived with (section 3.2 with delayed ACKs; Linux
//! `dctcp_ece_ack_update` sends that ACK for the prior rcv_nxt). Without delayed ACKs every segment is acknowledged at once and ECE is
//! set on exactly the ACKs of CE-marked segments.
//!
//! The classic receiver (RFC 3168, NewReno and CUBIC) keeps its own rule in [`super::TcpReceiver`].

/// DCTCP's receiver-side CE state.
#[derive(Clone, Debug, Default)]
pub struct DctcpEcho {
    /// DCTCP.CE: whether the last data segment carried CE.
    ce_state: bool,
    /// The ACK (cumulative ack, ECE) for segments received before a state change, to send
    /// before the ACK of the segment that changed the state.
    prior_ack: Option<(u64, bool)>,
}

impl DctcpEcho {
    /// A data segment arrives with `ce`; `rcv_nxt` is the cumulative ACK before it and
    /// `ack_pending` whether earlier segments wait for a delayed ACK. Returns whether this
    /// segment must be acknowledged at once (the state changed).
    pub fn on_segment(&mut self, ce: bool, rcv_nxt: u64, ack_pending: bool) -> bool {
        if ce == self.ce_state {
            return false; // section 3.2 rule 3: no change
        }
        if ack_pending {
            self.prior_ack = Some((rcv_nxt, self.ce_state));
        }
        self.ce_state = ce; // rules 1 and 2
        true
    }

    /// The ECE flag of the next ACK: the current state.
    pub fn ece(&self) -> bool {
        self.ce_state
    }

    /// The ACK for earlier segments owed since the last state change, if any.
    pub fn take_prior_ack(&mut self) -> Option<(u64, bool)> {
        self.prior_ack.take()
    }
}

#[cfg(test)]
mod tests;
