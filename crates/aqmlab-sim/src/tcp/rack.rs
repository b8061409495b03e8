//! RACK's time-based loss detection (RFC 8985 section 6): a segment is lost once a segment
//! sent after it has been delivered and more than RACK.rtt + reo_wnd has passed since it was
//! sent. The sender ([`super::TcpSender`]) feeds it every transmission and every newly
//! delivered (cumulatively ACKed or SACKed) range, and uses the boundary it returns as an
//! addition to RFC 6675's IsLost in SetPipe, NextSeg and the start of recovery.
//!
//! What the simulator cannot observe: there are no TCP timestamps (RFC 8985 section 6.2 step
//! 2's echo test is left out; the min_RTT test remains) and the receiver sends no DSACK, so
//! RACK.reo_wnd_mult stays 1 (section 6.2's DSACK rules never fire). RACK.min_RTT is the
//! minimum of every RACK.rtt sample of the connection (Linux windows it over 300 s,
//! `tcp_min_rtt_wlen`; the simulator's runs are shorter).

use aqmlab_core::Time;
use std::collections::VecDeque;

/// What RACK knows of one segment since it was last sent.
#[derive(Clone, Copy, Debug)]
struct Seg {
    xmit_ts: Time,
    retransmitted: bool,
    delivered: bool,
}

#[derive(Clone, Debug)]
pub struct Rack {
    mss: u64,
    /// The sequence number of `segs[0]`.
    base: u64,
    segs: VecDeque<Seg>,
    /// RACK.xmit_ts and RACK.end_seq of the most recently sent segment delivered so far.
    xmit_ts: Option<Time>,
    end_seq: u64,
    /// RACK.rtt: the RTT of that segment's delivery.
    rtt: Time,
    min_rtt: Option<Time>,
    /// RACK.fack: the highest end sequence delivered.
    fack: u64,
    reordering_seen: bool,
}

/// RFC 8985 section 6.2's RACK_sent_after: t1/seq1 sent after t2/seq2.
fn sent_after(t1: Time, seq1: u64, t2: Time, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

/// What [`Rack::detect_loss`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Detection {
    /// Every undelivered segment from the first one examined up to here is lost.
    pub lost_until: u64,
    /// When the reorder timer must fire to look again (RFC 8985 section 6.2 step 5), if a
    /// segment sent before RACK.xmit_ts is still within its reordering window.
    pub timer: Option<Time>,
}

impl Rack {
    pub fn new(mss: u64, first_seq: u64) -> Rack {
        Rack {
            mss,
            base: first_seq,
            segs: VecDeque::new(),
            xmit_ts: None,
            end_seq: 0,
            rtt: Time::ZERO,
            min_rtt: None,
            fack: first_seq,
            reordering_seen: false,
        }
    }

    pub fn min_rtt(&self) -> Option<Time> {
        self.min_rtt
    }
    pub fn reordering_seen(&self) -> bool {
        self.reordering_seen
    }

    fn index(&self, seq: u64) -> Option<usize> {
        (seq >= self.base).then(|| ((seq - self.base) / self.mss) as usize)
    }

    /// The segment at `seq` left at `now` (its first transmission or a retransmission).
    pub fn on_sent(&mut self, seq: u64, now: Time, retransmission: bool) {
        let Some(i) = self.index(seq) else { return };
        while self.segs.len() <= i {
            self.segs.push_back(Seg { xmit_ts: now, retransmitted: false, delivered: false });
        }
        let s = &mut self.segs[i];
        s.xmit_ts = now;
        s.retransmitted |= retransmission;
        s.delivered = false;
    }

    /// `[left, right)` was cumulatively ACKed or SACKed by an ACK arriving at `now`: RFC 8985
    /// section 6.2 steps 1-3 (RACK_update, RACK_detect_reordering) for each segment in it
    /// not delivered before.
    pub fn on_delivered(&mut self, left: u64, right: u64, now: Time) {
        let mut seq = left.max(self.base);
        while seq + self.mss <= right {
            let Some(i) = self.index(seq) else { break };
            let Some(s) = self.segs.get(i).copied() else { break };
            let end = seq + self.mss;
            seq = end;
            if s.delivered {
                continue;
            }
            self.segs[i].delivered = true;
            let rtt = now - s.xmit_ts;
            // Step 2: an ACK of a retransmitted segment faster than min_RTT acknowledges the
            // original (timestamps, the other test, are not modelled).
            if s.retransmitted && self.min_rtt.is_some_and(|m| rtt < m) {
                continue;
            }
            self.rtt = rtt;
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
            if self.xmit_ts.is_none_or(|t| sent_after(s.xmit_ts, end, t, self.end_seq)) {
                self.xmit_ts = Some(s.xmit_ts);
                self.end_seq = end;
            }
            // Step 3: a never-retransmitted segment delivered below RACK.fack was reordered.
            if end > self.fack {
                self.fack = end;
            } else if !s.retransmitted {
                self.reordering_seen = true;
            }
        }
    }

    /// Everything below `una` is cumulatively acknowledged (after [`Self::on_delivered`]).
    pub fn advance(&mut self, una: u64) {
        while self.base + self.mss <= una && !self.segs.is_empty() {
            self.segs.pop_front();
            self.base += self.mss;
        }
        self.base = self.base.max(una);
    }

    /// A retransmission timeout: the SACK scoreboard is forgotten (RFC 2018 section 8), and so
    /// is what RACK saw delivered above SND.UNA; its RTT and send-time state stay.
    pub fn on_timeout(&mut self) {
        for s in &mut self.segs {
            s.delivered = false;
        }
    }

    /// RFC 8985 section 6.2 step 4, RACK_update_reo_wnd, without DSACK (reo_wnd_mult = 1):
    /// 0 before any reordering is seen while in recovery or once DupThresh segments are
    /// SACKed, else min(min_RTT / 4, SRTT).
    pub fn reo_wnd(&self, in_recovery: bool, segs_sacked: u64, srtt: Option<Time>) -> Time {
        if !self.reordering_seen && (in_recovery || segs_sacked >= super::sack::DUP_THRESH) {
            return Time::ZERO;
        }
        let quarter = Time(self.min_rtt.map_or(0, |m| m.as_nanos() / 4));
        srtt.map_or(quarter, |s| quarter.min(s))
    }

    /// RFC 8985 section 6.2 step 5, RACK_detect_loss, over the undelivered segments from
    /// `from` (segments below it are left to the caller: those retransmitted in the current
    /// recovery). Lost segments form a prefix, as RFC 6675's IsLost boundary does: the walk
    /// stops at the first segment not (yet) lost, and the reorder timer is the latest expiry
    /// of the segments sent before RACK.xmit_ts that are not lost yet (the RFC's max).
    pub fn detect_loss(&self, from: u64, reo_wnd: Time, now: Time) -> Detection {
        let mut d = Detection { lost_until: from, timer: None };
        let Some(rack_ts) = self.xmit_ts else { return d };
        let mut prefix = true;
        let first = self.index(from).unwrap_or(0);
        for (k, s) in self.segs.iter().enumerate().skip(first) {
            if s.delivered {
                continue;
            }
            let end = self.base + (k as u64 + 1) * self.mss;
            if !sent_after(rack_ts, self.end_seq, s.xmit_ts, end) {
                if prefix {
                    break; // sent after the most recently delivered segment: not judged yet
                }
                continue;
            }
            let expiry = s.xmit_ts + self.rtt + reo_wnd;
            if expiry <= now {
                if prefix {
                    d.lost_until = end;
                }
            } else {
                prefix = false;
                d.timer = Some(d.timer.map_or(expiry, |t: Time| t.max(expiry)));
            }
        }
        d
    }

    /// RFC 8985 section 6.2 step 5 over the segments in `[una, until)`, those retransmitted in
    /// the current recovery (below RFC 6675's HighRxt), which [`Self::detect_loss`] leaves out:
    /// the same test on each retransmission's own send time, so that a retransmission is lost
    /// once a segment sent after it has been delivered and RACK.rtt + reo_wnd has passed since
    /// it left (step 5 walks every unacknowledged segment, retransmitted or not, and the RFC's
    /// abstract names lost retransmissions among the losses RACK-TLP detects; Linux's
    /// `tcp_rack_detect_loss` judges each segment by its latest send time the same way, and
    /// `tcp_mark_skb_lost` takes a lost retransmission out of the data in flight). Calls `lost` with the
    /// sequence number of each undelivered segment found lost, and returns the latest expiry of
    /// those sent before RACK.xmit_ts and still within their window (the reorder timer's
    /// share of these segments, the RFC's max).
    pub fn detect_lost_retransmissions(&self, una: u64, until: u64, reo_wnd: Time, now: Time, mut lost: impl FnMut(u64)) -> Option<Time> {
        let rack_ts = self.xmit_ts?;
        let first = self.index(una)?;
        let mut timer: Option<Time> = None;
        for (k, s) in self.segs.iter().enumerate().skip(first) {
            let seq = self.base + k as u64 * self.mss;
            if seq >= until {
                break;
            }
            if s.delivered || !sent_after(rack_ts, self.end_seq, s.xmit_ts, seq + self.mss) {
                continue;
            }
            let expiry = s.xmit_ts + self.rtt + reo_wnd;
            if expiry <= now {
                lost(seq);
            } else {
                timer = Some(timer.map_or(expiry, |t| t.max(expiry)));
            }
        }
        timer
    }
}

#[cfg(test)]
mod tests;
