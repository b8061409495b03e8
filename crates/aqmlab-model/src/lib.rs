//! aqmlab-model: what the simulator (`aqmlab-sim`) and the emulator (`aqmlab-emu`) share that is
//! neither a queue discipline (those are `aqmlab-core`'s) nor an engine.
//!
//! * [`app`]: the applications a flow group runs, as configured ([`app::AppConfig`]), and the
//!   open-loop traffic sources both engines send from (MPEG-1 frames, RTP media);
//! * [`streams`]: the named random streams, so that both engines draw the same numbers for
//!   the same scenario and seed;
//! * [`config_error`]: the error both engines return for a config they refuse;
//! * [`headers`]: header sizes on the wire;
//! * [`record`]: the record tables and their units, one schema for both engines;
//! * [`replay`]: the tables of an emulated run, from its sender's schedule and its logs.
//!
//! Only data and pure sources live here: no event loop, no TCP state machine, no sockets. The
//! TCP *configuration* ([`app::tcp_config`]) is here because a bulk flow's `app` holds it (see
//! [`app::AppConfig`] for why that enum is not split); the TCP sender and receiver stay in
//! the simulator.
pub mod app;
pub mod config_error;
pub mod headers;
pub mod record;
pub mod replay;
pub mod streams;
