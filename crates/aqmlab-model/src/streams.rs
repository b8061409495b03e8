//! The named random streams of a run (see `aqmlab_core::rng`), one function per name, so that
//! the simulator and the emulator spell each name in one place.
//!
//! A stream's numbers depend only on the seed and the name: an emulated flow draws the same
//! frame sizes, jitter and start offset as the simulated flow of the same scenario and seed
//! because both call the same function here. Renaming a stream changes every result that draws
//! from it; the test below pins each name.

use aqmlab_core::SimRng;

/// Start-time jitter of a flow group's flows, one draw per flow in flow order.
pub fn group_start(seed: u64, group: &str) -> SimRng {
    SimRng::stream(seed, &format!("group/{group}/start"))
}

/// MPEG frame sizes of flow `flow` (`app::mpeg::MpegSource::next_frame`).
pub fn flow_frames(seed: u64, flow: u32) -> SimRng {
    SimRng::stream(seed, &format!("flow/{flow}/frames"))
}

/// RTP media sizes and gaps of flow `flow` (`app::rtp::MediaSource`).
pub fn flow_media(seed: u64, flow: u32) -> SimRng {
    SimRng::stream(seed, &format!("flow/{flow}/media"))
}

/// RTP source jitter of flow `flow` (`app::rtp::MediaSource`).
pub fn flow_jitter(seed: u64, flow: u32) -> SimRng {
    SimRng::stream(seed, &format!("flow/{flow}/jitter"))
}

/// Per-packet priority class marks of flow `flow` (simulator only; the emulator's classes
/// come from DSCP marks).
pub fn flow_class(seed: u64, flow: u32) -> SimRng {
    SimRng::stream(seed, &format!("flow/{flow}/class"))
}

/// Random loss of flow `flow`'s data packets before the bottleneck (simulator only).
pub fn flow_path_loss(seed: u64, flow: u32) -> SimRng {
    SimRng::stream(seed, &format!("flow/{flow}/path_loss"))
}

/// The random start phase of flow `flow`'s BBR gain cycle (`aqmlab_sim::tcp::cc::bbr`, Linux's
/// `bbr_cycle_rand`), drawn each time the flow enters PROBE_BW.
pub fn flow_bbr(seed: u64, flow: u32) -> SimRng {
    SimRng::stream(seed, &format!("flow/{flow}/bbr"))
}

/// The discipline of the simulator's link called `link` ("bottleneck", "reverse", "hop1",
/// "flow3/up", ...).
pub fn link(seed: u64, link: &str) -> SimRng {
    SimRng::stream(seed, &format!("link/{link}"))
}

/// The capacity draws of a synthetic delivery trace (a Markov model's states) for the link
/// called `link` ("bottleneck", "hop1", ...). Python draws it when it normalizes a scenario, so
/// both engines run the same trace, and `aqmlab.traces.write_synthetic_trace` draws the same
/// one for the same seed and link.
pub fn link_trace(seed: u64, link: &str) -> SimRng {
    SimRng::stream(seed, &format!("link/{link}/trace"))
}

/// The draws of the impairments of the link called `link`, one stream per kind (`"loss"`,
/// `"duplicate"`, `"jitter"`), so that turning one on changes no draw of another.
pub fn link_impairment(seed: u64, link: &str, kind: &str) -> SimRng {
    SimRng::stream(seed, &format!("link/{link}/{kind}"))
}

/// The discipline of the emulator's router in direction `direction` ("forward" or
/// "reverse"). A name of its own, not `link/...`: the router's link stands for the whole
/// path and its draws were never meant to match the simulator's bottleneck.
pub fn emu_link(seed: u64, direction: &str) -> SimRng {
    SimRng::stream(seed, &format!("emu/{direction}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(mut rng: SimRng) -> [u64; 4] {
        std::array::from_fn(|_| rng.next_u64())
    }

    /// Every name, spelled out: a stream drawing as `SimRng::stream(seed, name)` draws is
    /// that name (the stream seed is a hash of the name, so any other spelling differs).
    #[test]
    fn each_function_is_the_stream_of_its_exact_name() {
        let seed = 42;
        let pinned: [(SimRng, &str); 12] = [
            (group_start(seed, "tcp"), "group/tcp/start"),
            (flow_frames(seed, 3), "flow/3/frames"),
            (flow_media(seed, 3), "flow/3/media"),
            (flow_jitter(seed, 3), "flow/3/jitter"),
            (flow_class(seed, 3), "flow/3/class"),
            (flow_path_loss(seed, 3), "flow/3/path_loss"),
            (flow_bbr(seed, 3), "flow/3/bbr"),
            (link(seed, "bottleneck"), "link/bottleneck"),
            (link(seed, "flow3/up"), "link/flow3/up"),
            (emu_link(seed, "forward"), "emu/forward"),
            (link_trace(seed, "bottleneck"), "link/bottleneck/trace"),
            (link_impairment(seed, "bottleneck", "loss"), "link/bottleneck/loss"),
        ];
        for (rng, name) in pinned {
            assert_eq!(draws(rng), draws(SimRng::stream(seed, name)), "{name}");
        }
    }

    #[test]
    fn streams_of_different_flows_differ() {
        assert_ne!(draws(flow_frames(1, 0)), draws(flow_frames(1, 1)));
        assert_ne!(draws(flow_media(1, 0)), draws(flow_jitter(1, 0)));
    }
}
