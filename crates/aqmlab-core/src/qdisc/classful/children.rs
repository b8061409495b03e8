//! What every classful discipline does with its children: validating and building them,
//! summing their limits, and offering to and taking from a child while passing on what the
//! child dropped (evictions on arrival, head drops and marks on departure).

use crate::packet::Packet;
use crate::qdisc::{build_qdisc, Dequeued, Evicted, QdiscConfig, Queue, Verdict};
use crate::rng::SimRng;
use crate::units::{Limit, Rate, Time};

/// Most bands a classful discipline may have (Linux prio allows 16).
pub const MAX_BANDS: usize = 16;

/// Validates classful children: count, then each child with its error prefixed by
/// `{field}.{index}.` so that the message names the band.
pub(crate) fn validate_children<'a>(
    field: &str,
    children: impl ExactSizeIterator<Item = &'a QdiscConfig>,
    prefix: &str,
) -> Result<(), String> {
    let n = children.len();
    if n == 0 {
        return Err(format!("{field}: must have at least 1 band"));
    }
    if n > MAX_BANDS {
        return Err(format!("{field}: at most {MAX_BANDS} bands, got {n}"));
    }
    for (i, c) in children.enumerate() {
        c.validate().map_err(|e| format!("{field}.{i}.{prefix}{e}"))?;
    }
    Ok(())
}

/// The capacity of a classful discipline: the sum of its children's limits when they all
/// count in the same unit. With mixed units the result is a byte bound that always holds
/// (a packet-limited child counted at the largest possible packet, `u32::MAX` bytes), which is
/// correct but loose.
pub(crate) fn sum_limits<'a>(children: impl Iterator<Item = &'a QdiscConfig>) -> Limit {
    let (mut pk, mut by, mut any_bytes, mut any_packets) = (0u64, 0u64, false, false);
    for c in children {
        match c.limit() {
            Limit::Packets(n) => {
                any_packets = true;
                pk = pk.saturating_add(n);
            }
            Limit::Bytes(b) => {
                any_bytes = true;
                by = by.saturating_add(b);
            }
        }
    }
    match (any_packets, any_bytes) {
        (_, false) => Limit::Packets(pk),
        (false, true) => Limit::Bytes(by),
        (true, true) => Limit::Bytes(by.saturating_add(pk.saturating_mul(u32::MAX as u64))),
    }
}

/// Builds validated children.
pub(crate) fn build_children<'a>(
    field: &str,
    children: impl Iterator<Item = &'a QdiscConfig>,
    prefix: &str,
    link_rate: Rate,
) -> Result<Vec<Queue>, String> {
    children.enumerate().map(|(i, c)| build_qdisc(c, link_rate).map_err(|e| format!("{field}.{i}.{prefix}{e}"))).collect()
}

/// Offers `pkt` to `child`, copying its evictions into `evicted`.
pub(crate) fn offer(child: &mut Queue, pkt: Packet, now: Time, rng: &mut SimRng, evicted: &mut Vec<Evicted>) -> Verdict {
    let out = child.enqueue(pkt, now, rng);
    evicted.extend_from_slice(out.evicted);
    out.verdict
}

/// Dequeues from `child`, copying the packets it dropped at the head into `dropped` (as `offer`
/// copies evictions). Returns the packet and whether the child CE-marked it on the way out.
pub(crate) fn take(child: &mut Queue, now: Time, dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
    let out = child.dequeue(now);
    dropped.extend_from_slice(out.dropped);
    Some(Dequeued { packet: out.packet?, marked: out.marked })
}
