//! Linux's restart of the retransmission timer when it retransmits the first unacknowledged
//! segment (`TcpConfig::rto_restart_on_head_retransmit`), written from the rule in
//! net/ipv4/tcp_output.c's `tcp_xmit_retransmit_queue` (torvalds/linux): each recovery
//! retransmission of the head of the retransmission queue re-arms the timer a full RTO ahead
//! (`tcp_reset_xmit_timer(sk, ICSK_TIME_RETRANS, icsk_rto, ...)`), unless RACK's reorder timer
//! holds the timer slot (`icsk_pending == ICSK_TIME_REO_TIMEOUT`).
//!
//! RFC 6298 restarts the timer only when an ACK acknowledges new data (5.3), so a recovery
//! whose first retransmissions are lost times out one RTO after the last advance of SND.UNA
//! even while RACK (RFC 8985 section 6.2) is finding each lost retransmission and sending it
//! again. A kernel gives each new attempt at the head a whole RTO. Off (the default, every
//! paper reproduction), RFC 6298's rule alone.
//!
//! Left out: the kernel's other re-arming rule, `tcp_rearm_rto`'s RTO measured from the head's
//! send time when the reorder timer or a loss probe held the slot (`tcp_rto_delta_us`): this
//! sender keeps RFC 8985's own timer arithmetic there. The simulator keeps the RACK timer beside
//! the RTO rather than in one slot; "holds the slot" is read as "a reorder timer is armed".

/// Whether sending `seq` restarts the retransmission timer: a retransmission of the segment
/// at SND.UNA while no reorder timer is armed.
pub fn restarts_timer(retransmission: bool, seq: u64, snd_una: u64, reorder_timer_armed: bool) -> bool {
    retransmission && seq == snd_una && !reorder_timer_armed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_retransmission_of_the_head_restarts_and_not_under_a_reorder_timer() {
        assert!(restarts_timer(true, 5000, 5000, false));
        assert!(!restarts_timer(false, 5000, 5000, false), "new data never restarts it");
        assert!(!restarts_timer(true, 6000, 5000, false), "a hole above the head does not");
        assert!(!restarts_timer(true, 5000, 5000, true), "the reorder timer keeps the slot");
    }
}
