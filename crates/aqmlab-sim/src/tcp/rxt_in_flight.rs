//! A retransmission still in flight when a new recovery begins is not sent again, as Linux keeps
//! it (issue 27), written from net/ipv4/tcp_output.c's `tcp_xmit_retransmit_queue` and
//! tcp_input.c's `tcp_enter_recovery` (torvalds/linux): the kernel marks a retransmitted segment
//! (`TCPCB_SACKED_RETRANS`) until it is acknowledged or RACK finds that retransmission lost
//! (`tcp_mark_skb_lost`), whichever recovery sent it; the retransmit queue skips a marked
//! segment; and entering recovery forces no retransmission of SND.UNA, it only asks for the
//! lost segments to be resent.
//!
//! RFC 6675 sets HighRxt afresh for each recovery. A recovery ends once SND.UNA passes its
//! RecoveryPoint, and segments above that point, sent as new data in it, may have been found
//! lost and resent in it; when the next loss starts a recovery at once, RFC 6675 resends SND.UNA
//! and every lost segment above it a second time while their first retransmissions are still
//! queued. With RACK that does more harm than the duplicate: the ACK of the first
//! retransmission, taken for the second's once RACK.min_RTT has gone by (RFC 8985 section 6.2
//! step 2), moves RACK.xmit_ts past every segment sent before the second, and RACK marks them
//! all lost. In the fidelity suite's 50-flow FQ-CoDel bbr cell that was most of the simulated
//! BBR's spurious retransmissions (docs/fidelity.md).
//!
//! The sender keeps HighRxt across recoveries instead, so its retransmissions in
//! `[SND.UNA, HighRxt)` stay in flight in the pipe and in RACK's judgement of lost
//! retransmissions. Only with RACK: it is what finds a lost retransmission again; RFC 6675 alone
//! would leave it to the RTO, so the other senders (the rfc and ns3 profiles) keep RFC 6675's
//! rule.

/// Whether a recovery that begins now finds retransmissions of the last one still
/// unacknowledged (`high_rxt`, RFC 6675's HighRxt + 1, above `snd_una`) and keeps them in flight
/// rather than sending SND.UNA again.
pub fn keeps_last_recovery_retransmissions(rack: bool, high_rxt: u64, snd_una: u64) -> bool {
    rack && high_rxt > snd_una
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_with_rack_and_only_while_a_retransmission_is_unacknowledged() {
        assert!(keeps_last_recovery_retransmissions(true, 6000, 5000));
        assert!(!keeps_last_recovery_retransmissions(false, 6000, 5000), "RFC 6675 alone resends");
        assert!(!keeps_last_recovery_retransmissions(true, 5000, 5000), "every retransmission acknowledged");
        assert!(!keeps_last_recovery_retransmissions(true, 4000, 5000));
    }
}
