//! What SCReAMv2 reads from one feedback report (draft-johansson-ccwg-rfc8298bis-screamv2,
//! section "Status Update on Receiving Feedback"), over the report the GCC path already sends
//! (`gcc::FeedbackReport`: the range of sequence numbers covered, each arrival with its time)
//! extended by which arrivals were CE-marked, as RFC 8888 reports them:
//!
//! * bytes_newly_acked: the sizes of every packet from the last highest acknowledged sequence
//!   number (exclusive) to the new one, lost or not;
//! * bytes_newly_acked_ce and the packet counts for l4s_alpha;
//! * loss: a packet of the covered range that the report does not list. The draft asks for a
//!   time-based reordering window (after RACK); here a packet is lost when the report covering
//!   it lacks it (a reordered packet reported later still counts as acknowledged then, but its
//!   loss was signalled). Our paths do not reorder unless a scenario asks for it.

use super::super::gcc::FeedbackReport;
use aqmlab_core::Time;

/// The report, digested.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Digest {
    pub bytes_newly_acked: u64,
    pub bytes_newly_acked_ce: u64,
    pub packets_acked: u64,
    pub packets_ce: u64,
    pub lost: u64,
    /// The highest sequence number acknowledged, if it rose.
    pub highest: Option<u64>,
    /// (send time, arrival) of each packet acknowledged, by sequence number.
    pub delays: Vec<(Time, Time)>,
}

/// Digests `r` given each packet's (send time, IP size) by sequence number and the highest
/// sequence number acknowledged so far.
pub fn digest(r: &FeedbackReport, sent: &[(Time, u32)], highest_acked: Option<u64>) -> Digest {
    let mut d = Digest::default();
    let mut arrivals: Vec<(u64, Time)> = r.arrivals.iter().copied().filter(|(s, _)| (*s as usize) < sent.len()).collect();
    arrivals.sort_unstable();
    let ce: std::collections::BTreeSet<u64> = r.ce.iter().copied().collect();
    for &(seq, at) in &arrivals {
        let (sent_at, size) = sent[seq as usize];
        d.packets_acked += 1;
        if ce.contains(&seq) {
            d.packets_ce += 1;
            d.bytes_newly_acked_ce += size as u64;
        }
        d.delays.push((sent_at, at));
    }
    let got_in_range = arrivals.iter().filter(|(s, _)| (r.base..r.end).contains(s)).count() as u64;
    d.lost = r.end.saturating_sub(r.base).saturating_sub(got_in_range);
    if let Some(&(top, _)) = arrivals.last() {
        if highest_acked.is_none_or(|h| top > h) {
            let from = highest_acked.map_or(0, |h| h + 1);
            d.bytes_newly_acked = sent[from as usize..=top as usize].iter().map(|&(_, s)| s as u64).sum();
            d.highest = Some(top);
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_gives_newly_acked_bytes_lost_packets_and_ce() {
        let sent: Vec<(Time, u32)> = (0..6).map(|i| (Time::from_millis(i), 1000 + i as u32)).collect();
        let r = FeedbackReport {
            base: 0,
            end: 4,
            arrivals: vec![(0, Time::from_millis(20)), (1, Time::from_millis(21)), (3, Time::from_millis(23))],
            ce: vec![3],
            made: Time::from_millis(25),
        };
        let d = digest(&r, &sent, None);
        // 0..=3 newly acknowledged, packet 2 lost but counted: 1000 + 1001 + 1002 + 1003.
        assert_eq!(d.bytes_newly_acked, 4006);
        assert_eq!((d.packets_acked, d.packets_ce, d.bytes_newly_acked_ce, d.lost), (3, 1, 1003, 1));
        assert_eq!(d.highest, Some(3));
        // The next report, from 3 on: only packets 4 and 5 are new.
        let r2 = FeedbackReport {
            base: 4,
            end: 6,
            arrivals: vec![(4, Time::from_millis(30)), (5, Time::from_millis(31))],
            ce: vec![],
            made: Time::ZERO,
        };
        let d2 = digest(&r2, &sent, Some(3));
        assert_eq!((d2.bytes_newly_acked, d2.lost), (1004 + 1005, 0));
    }
}
