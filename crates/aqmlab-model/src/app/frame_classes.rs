//! Priority classes by frame type for today's video (`marking.video = "frame_type"`): which
//! `Packet::class` an ABR segment's bytes and a real-time call's packets carry, for the
//! disciplines that read the class (Rb-RIO, RIO).
//!
//! **The rule.** Chung and Claypool's Rb-RIO (ISCC 2002, section 2) maps MPEG-1's I-, P- and
//! B-frames to class3, class2 and class1 (dropped last to first), because a frame's loss takes
//! the frames that depend on it with it. Today's encoders keep the dependency but not all three
//! types: the ABR ladder's segments are libx264 closed GOPs without B-frames (`bf=0`, one IDR
//! picture then P-pictures, `python/aqmlab/abr_encoded_ladder.py`) and the calls' encoder
//! (RFC 8593's synthetic codec, `synthetic_codec.rs`) makes key and delta frames only, as
//! real-time encoders do. So: **key (IDR) frame bytes class3, every other frame's class2**;
//! class1, the B-frames' class, is left to nothing (a TCP flow marked by the paper's 7:3 policy
//! uses classes 3 and 2 too).
//!
//! **An ABR segment's IDR.** A DASH segment starts with its IDR picture (a stream access point)
//! and the server sends it in decode order, so the IDR frame is the segment's first bytes.
//! Ladders give segment sizes, not frame sizes; the IDR's share is taken from the calls' own
//! frame-size model: the segment's `N = 25 fps x duration` frames are one key frame of
//! `KEY_RATIO` = 4 times a delta frame (the synthetic codec's default `key_ratio`) and `N - 1`
//! delta frames, so the IDR is `4 / (N + 3)` of the segment (7.5 % of a 2 s segment). 25 fps is
//! the encoded ladder's frame rate; its real 2 s segments measured IDR shares of 4.7-8.4 % (the
//! first H.264 access unit's bytes over the segment's, rungs 300-6000 kbit/s), key ratios of
//! 2.4-4.5. A TCP packet that carries any byte of an IDR is class3 (the frame needs it whole);
//! the padding to whole MSS that ends a response is class2, as the P-frame before it.
//!
//! Over TCP no frame is ever lost (a dropped packet is sent again), so for an ABR client the
//! marks decide which of its packets an overloaded Rb-RIO drops first, not which frames the
//! viewer loses; for a call over UDP without retransmission they decide both.

/// Class of a key (IDR, I) frame's packets: Rb-RIO's class3, dropped last.
pub const KEY_CLASS: u8 = 3;
/// Class of every other frame's packets (P, delta): Rb-RIO's class2.
pub const DELTA_CLASS: u8 = 2;
/// Frame rate assumed for an ABR segment's frame count (the encoded ladder's).
pub const ABR_FPS: f64 = 25.0;
/// A key frame's size over a delta frame's (the synthetic codec's default `key_ratio`).
pub const KEY_RATIO: f64 = 4.0;

/// The class of a frame's packets by its type.
pub fn frame_class(key: bool) -> u8 {
    if key {
        KEY_CLASS
    } else {
        DELTA_CLASS
    }
}

/// Bytes of the IDR frame that opens a segment of `size` bytes and `duration_ns` of media:
/// `size x KEY_RATIO / (KEY_RATIO + N - 1)`, `N = max(1, round(ABR_FPS x duration))`, rounded
/// up; the whole segment when it holds one frame.
pub fn segment_key_bytes(size: u64, duration_ns: u64) -> u64 {
    let frames = (ABR_FPS * duration_ns as f64 / 1e9).round().max(1.0);
    let share = KEY_RATIO / (KEY_RATIO + frames - 1.0);
    ((size as f64 * share).ceil() as u64).min(size)
}

/// The classes of an ABR response stream: where each segment's response begins in the TCP
/// sequence space and where its IDR bytes end. Responses are appended in stream order.
#[derive(Clone, Debug, Default)]
pub struct SegmentMarks {
    /// (first sequence of the response, first sequence past its IDR bytes), ascending.
    starts: Vec<(u64, u64)>,
}

impl SegmentMarks {
    /// A response beginning at `start` whose first `key_bytes` are its IDR frame.
    pub fn push(&mut self, start: u64, key_bytes: u64) {
        debug_assert!(self.starts.last().is_none_or(|&(s, _)| s <= start), "responses in stream order");
        self.starts.push((start, start + key_bytes));
    }

    /// The class of a packet carrying stream bytes `[seq, seq + len)`: `KEY_CLASS` when any of
    /// them is an IDR byte, else `DELTA_CLASS` (bytes before the first response too).
    pub fn class_of(&self, seq: u64, len: u32) -> u8 {
        let end = seq + (len as u64).max(1);
        // Responses that begin before the packet ends; the packet meets the IDR bytes of the
        // last one that begins at or before `seq` and of any that begin inside it.
        let upto = self.starts.partition_point(|&(s, _)| s < end);
        let from = self.starts[..upto].partition_point(|&(s, _)| s <= seq).saturating_sub(1);
        let key = self.starts[from..upto].iter().any(|&(s, k)| s < end && seq < k && s < k);
        frame_class(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_frames_are_class3_the_rest_class2() {
        assert_eq!(frame_class(true), 3);
        assert_eq!(frame_class(false), 2);
    }

    #[test]
    fn a_2s_segment_s_idr_is_4_of_53_frames_worth() {
        // 50 frames: 4 / (4 + 49) of 100,000 bytes, rounded up.
        assert_eq!(segment_key_bytes(100_000, 2_000_000_000), 7_548);
        // 4 s: 100 frames, 4 / 103.
        assert_eq!(segment_key_bytes(103_000, 4_000_000_000), 4_000);
        // One frame (40 ms or less): the whole segment is its IDR.
        assert_eq!(segment_key_bytes(5_000, 40_000_000), 5_000);
        assert_eq!(segment_key_bytes(5_000, 1_000_000), 5_000);
    }

    #[test]
    fn packets_carrying_idr_bytes_are_class3() {
        let mut m = SegmentMarks::default();
        m.push(1000, 3000); // IDR bytes [1000, 4000)
        m.push(11000, 500); // next response at 11000, IDR [11000, 11500)
        assert_eq!(m.class_of(0, 1000), 2, "before any response");
        assert_eq!(m.class_of(1000, 1448), 3);
        assert_eq!(m.class_of(2448, 1448), 3, "straddles the IDR's end");
        assert_eq!(m.class_of(3999, 1), 3);
        assert_eq!(m.class_of(4000, 1448), 2, "first P-frame byte");
        assert_eq!(m.class_of(9552, 1448), 2, "last bytes before the next response");
        assert_eq!(m.class_of(10000, 1448), 3, "straddles into the next response's IDR");
        assert_eq!(m.class_of(11000, 1448), 3);
        assert_eq!(m.class_of(11500, 1448), 2, "past the 500-byte IDR");
    }
}
