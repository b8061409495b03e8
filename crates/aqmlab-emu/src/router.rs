//! The router process: two AF_PACKET sockets, two [`Link`]s, one loop.
//!
//! Frames read on the sender-side interface go through the forward link (the bottleneck under
//! test) and out of the receiver-side interface; frames read there go back through the
//! reverse link. The loop lets both links serve what is due, drains both sockets, lets the links
//! serve again, and then sleeps in `ppoll` until a socket is readable or until `spin_ns` before
//! the next due time, after which it spins on the clock: that keeps departure times within
//! microseconds without burning a core while idle. Timer slack is set to 1 ns so `ppoll` wakes
//! when asked.

use crate::classify::{Classifier, Direction};
use crate::config::RouterConfig;
use crate::link::{impaired, Link, LinkStats};
use crate::parse::{parse_frame, Malformed, Parsed};
use crate::rt_budget::{thread_cpu_ns, SpinBudget};
use aqmlab_core::{QdiscStats, Time};
use aqmlab_model::record::{QueueSamples, Table};
use aqmlab_model::streams;
use std::ffi::CString;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Largest frame read; larger ones (only possible with segmentation offloads left on) are
/// counted as `oversize` and dropped.
const MAX_FRAME: usize = 65_536;
/// Frames read from one socket before the links get served again (bounds service latency).
const RX_BURST: usize = 64;

/// Linux `PACKET_IGNORE_OUTGOING` (since 4.20): do not loop our own transmissions back.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// CLOCK_MONOTONIC in nanoseconds (the clock Python's `time.monotonic_ns` reads).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A raw AF_PACKET socket bound to one interface, non-blocking, in promiscuous mode.
pub struct PacketSocket {
    fd: libc::c_int,
    iface: String,
}

fn os_error(what: &str, iface: &str) -> String {
    format!("{what} on interface {iface:?}: {}", io::Error::last_os_error())
}

impl PacketSocket {
    pub fn open(iface: &str) -> Result<PacketSocket, String> {
        let name = CString::new(iface).map_err(|_| format!("interface name {iface:?} contains a NUL byte"))?;
        // SAFETY: plain libc calls on a socket this function owns; every pointer passed points
        // to a live local of the size given.
        unsafe {
            let ifindex = libc::if_nametoindex(name.as_ptr());
            if ifindex == 0 {
                return Err(format!("no interface named {iface:?} in this network namespace"));
            }
            let proto = (libc::ETH_P_ALL as u16).to_be() as libc::c_int;
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, proto);
            if fd < 0 {
                return Err(os_error("AF_PACKET socket (needs root or CAP_NET_RAW)", iface));
            }
            let sock = PacketSocket { fd, iface: iface.to_string() };
            let mut addr: libc::sockaddr_ll = std::mem::zeroed();
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_protocol = proto as u16;
            addr.sll_ifindex = ifindex as i32;
            let len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            if libc::bind(fd, &addr as *const _ as *const libc::sockaddr, len) < 0 {
                return Err(os_error("bind", iface));
            }
            sock.set_int(libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1, "PACKET_IGNORE_OUTGOING")?;
            // A deep receive buffer absorbs bursts while the loop is busy; FORCE needs root, and
            // the plain option is the fallback.
            let buf = 8 << 20;
            if sock.set_int(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, buf, "SO_RCVBUFFORCE").is_err() {
                sock.set_int(libc::SOL_SOCKET, libc::SO_RCVBUF, buf, "SO_RCVBUF")?;
            }
            let _ = sock.set_int(libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, buf, "SO_SNDBUFFORCE");
            let mut mreq: libc::packet_mreq = std::mem::zeroed();
            mreq.mr_ifindex = ifindex as i32;
            mreq.mr_type = libc::PACKET_MR_PROMISC as u16;
            let mlen = std::mem::size_of::<libc::packet_mreq>() as libc::socklen_t;
            if libc::setsockopt(fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq as *const _ as *const libc::c_void, mlen) < 0 {
                return Err(os_error("promiscuous mode", iface));
            }
            Ok(sock)
        }
    }

    fn set_int(&self, level: libc::c_int, opt: libc::c_int, value: libc::c_int, name: &str) -> Result<(), String> {
        // SAFETY: `value` lives for the call and its size is passed.
        let rc = unsafe {
            libc::setsockopt(
                self.fd,
                level,
                opt,
                &value as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            Err(os_error(name, &self.iface))
        } else {
            Ok(())
        }
    }

    /// Reads one frame into `scratch`; `Ok(None)` when nothing is waiting. The returned length
    /// is the frame's real length (MSG_TRUNC), which may exceed `scratch`.
    fn recv(&self, scratch: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: the kernel writes at most scratch.len() bytes into scratch.
        let n =
            unsafe { libc::recv(self.fd, scratch.as_mut_ptr() as *mut libc::c_void, scratch.len(), libc::MSG_DONTWAIT | libc::MSG_TRUNC) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
            _ => Err(err),
        }
    }

    /// Sends one frame; false if the kernel refused it (full buffer, interface down).
    fn send(&self, frame: &[u8]) -> bool {
        // SAFETY: frame is a live slice of the given length.
        let n = unsafe { libc::send(self.fd, frame.as_ptr() as *const libc::c_void, frame.len(), libc::MSG_DONTWAIT) };
        n == frame.len() as isize
    }
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        // SAFETY: fd was opened by `open` and is closed exactly once.
        unsafe { libc::close(self.fd) };
    }
}

/// Moves the calling thread to SCHED_FIFO at a middle priority: wake-ups from ppoll then
/// preempt ordinary tasks instead of waiting for a time slice (on a loaded host the
/// difference is hundreds of microseconds per wake-up). The loop sleeps whenever nothing is
/// due and spins at most `spin_ns` at a time, so it cannot monopolize a core.
fn set_realtime_priority() -> bool {
    let param = libc::sched_param { sched_priority: 50 };
    // SAFETY: pid 0 is the calling thread; param is a live local.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

/// Counters of the whole router, reported in summary.json.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RouterStats {
    pub rx_frames: [u64; 2],
    pub tx_frames: [u64; 2],
    /// Frames the kernel refused to send (counted as lost on the wire).
    pub tx_errors: [u64; 2],
    /// Frames longer than the read buffer (segmentation offloads left on).
    pub oversize: u64,
    /// Refused frames by reason (`parse::Malformed::name`).
    pub malformed: std::collections::BTreeMap<&'static str, u64>,
    /// Times the loop slept in ppoll.
    pub sleeps: u64,
    /// Whether the forwarding thread ran under SCHED_FIFO.
    pub realtime: bool,
    /// The wake-up margin the loop ended with (see `Router::wait`), and the largest timer
    /// overshoot it saw, in ns.
    pub wake_margin_ns: u64,
    pub max_timer_overshoot_ns: u64,
    /// Windows of `rt_budget` in which the loop stopped spinning to stay inside the kernel's
    /// real-time budget.
    pub spin_budget_exhausted_windows: u64,
    /// The longest time between two turns of the loop from the epoch on, when the first did not
    /// sleep, in ns: a stop of the thread itself (real-time throttling, a host that took the
    /// CPU away).
    pub longest_stall_ns: u64,
}

/// One direction's parts.
struct Side {
    socket: PacketSocket,
    link: Link,
    classifier: Classifier,
    dir: Direction,
}

/// `epoch` value meaning "not set yet".
const NO_EPOCH: u64 = u64::MAX;

pub struct Router {
    cfg: RouterConfig,
    /// The records' t = 0 on CLOCK_MONOTONIC; settable from another thread while running.
    epoch: Arc<AtomicU64>,
    /// [0]: sender side (its link is the forward one); [1]: receiver side.
    sides: [Side; 2],
    stats: RouterStats,
    queue_samples: QueueSamples,
    next_uid: u64,
    scratch: Vec<u8>,
    out: Vec<Vec<u8>>,
    /// How long before a due time the loop stops sleeping and starts spinning: `spin_ns`, or
    /// more when the host's timer wake-ups have recently been later than that.
    wake_margin: Time,
    /// Recent worst timer overshoot, decaying by 1/64 per timed wake-up.
    recent_overshoot: Time,
    /// The kernel's real-time budget, kept while the thread runs under SCHED_FIFO.
    spin_budget: Option<SpinBudget>,
}

/// The wake-up margin never exceeds this: beyond it, spinning would cost more than lateness.
const MAX_WAKE_MARGIN: Time = Time::from_micros(100);

impl Router {
    /// Opens the sockets and builds the links; errors name what is missing.
    pub fn new(cfg: RouterConfig) -> Result<Router, String> {
        cfg.validate()?;
        // The impairments draw from the streams of the scenario's links of the same names.
        let forward = Link::new(
            &cfg.forward,
            streams::emu_link(cfg.seed, "forward"),
            impaired::streams(cfg.seed, "bottleneck"),
            cfg.records.packet_events,
        )
        .map_err(|e| format!("forward.qdisc: {e}"))?;
        let reverse = Link::new(&cfg.reverse, streams::emu_link(cfg.seed, "reverse"), impaired::streams(cfg.seed, "reverse"), false)
            .map_err(|e| format!("reverse.qdisc: {e}"))?;
        let mut sides = [
            Side {
                socket: PacketSocket::open(&cfg.sender_iface)?,
                link: forward,
                classifier: Classifier::new(&cfg.classify, &cfg.flows),
                dir: Direction::Forward,
            },
            Side {
                socket: PacketSocket::open(&cfg.receiver_iface)?,
                link: reverse,
                classifier: Classifier::new(&cfg.classify, &cfg.flows),
                dir: Direction::Reverse,
            },
        ];
        let epoch = cfg.epoch_ns.unwrap_or(NO_EPOCH);
        let cfg_spin = cfg.spin_ns;
        for side in &mut sides {
            side.link.record_origin = Time(epoch);
            if epoch != NO_EPOCH {
                side.link.start_trace_at(Time(epoch));
            }
        }
        // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
        let stats = RouterStats { malformed: Malformed::ALL.iter().map(|m| (m.name(), 0)).collect(), ..RouterStats::default() };
        Ok(Router {
            cfg,
            epoch: Arc::new(AtomicU64::new(epoch)),
            sides,
            stats,
            queue_samples: QueueSamples::default(),
            next_uid: 0,
            scratch: vec![0u8; MAX_FRAME],
            out: Vec::new(),
            wake_margin: Time(cfg_spin),
            recent_overshoot: Time::ZERO,
            spin_budget: None,
        })
    }

    /// A handle that sets the epoch (CLOCK_MONOTONIC ns) while the router runs.
    pub fn epoch_handle(&self) -> Arc<AtomicU64> {
        self.epoch.clone()
    }

    /// The links run on CLOCK_MONOTONIC itself; only records are shifted to the epoch.
    fn now(&self) -> Time {
        Time(monotonic_ns())
    }

    /// Forwards until `cancel` is set or the configured duration has passed.
    pub fn run(&mut self, cancel: &AtomicBool) -> Result<(), String> {
        let sample_every = self.cfg.records.queue_sample_ns;
        let mut epoch = Time(NO_EPOCH);
        let mut next_sample = epoch;
        let mut end = None;
        // When the previous turn of the loop ended without sleeping (see `longest_stall_ns`).
        let mut busy_turn_ended: Option<Time> = None;
        loop {
            let set = Time(self.epoch.load(Ordering::Relaxed));
            if set != epoch {
                epoch = set;
                // Before the epoch (the base-RTT probe) the loop busy-polls at normal priority,
                // so the probe measures the emulated path and not the host's wake-up latency
                // (which the lateness histogram and the benchmark report). From the epoch on it
                // sleeps between packets under SCHED_FIFO, unless told to busy-poll: a spinning
                // SCHED_FIFO thread would be stopped by the kernel's real-time throttling (by
                // default 50 ms of every second), far worse than any wake-up latency.
                if self.cfg.realtime && !self.cfg.busy_poll {
                    self.stats.realtime = set_realtime_priority();
                    self.spin_budget = if self.stats.realtime { SpinBudget::from_kernel() } else { None };
                }
                next_sample = epoch;
                end = (self.cfg.duration_ns > 0 && epoch.0 != NO_EPOCH).then(|| epoch + Time(self.cfg.duration_ns));
                self.sides[0].link.record_origin = epoch;
                if epoch.0 != NO_EPOCH {
                    for side in &mut self.sides {
                        side.link.start_trace_at(epoch);
                    }
                }
            }
            let mut now = self.now();
            let started = now >= epoch;
            // Counted from the epoch on: before it the loop polls at normal priority.
            if let Some(t) = busy_turn_ended.filter(|_| started) {
                self.stats.longest_stall_ns = self.stats.longest_stall_ns.max((now - t).as_nanos());
            }
            if cancel.load(Ordering::Relaxed) || end.is_some_and(|e| now >= e) {
                return Ok(());
            }
            // What was due by `now` leaves before the frames read next join the queue: they are
            // stamped `now`, and a dequeue due earlier must not find them queued (the simulator's
            // order of events; without this a dequeue due in the turn was decided after the
            // turn's arrivals, 0.1-0.5 % of dequeues at 10 Mbit/s and 2.6-4.2 % at 100 Mbit/s
            // with 50 flows: benches/fidelity_fq_sojourn.py's `deq_before_arrival`).
            self.transmit(now);
            let received = self.receive(0, now)? + self.receive(1, now)?;
            now = self.now();
            self.transmit(now);
            if started && sample_every > 0 && now >= next_sample {
                self.sides[0].link.sample_queue(now, &mut self.queue_samples);
                // The next multiple of the interval after the epoch: samples stay on a grid.
                let since = (now - epoch).as_nanos();
                next_sample = epoch + Time((since / sample_every + 1) * sample_every);
            }
            if received > 0 {
                busy_turn_ended = Some(self.now());
                continue; // more may be waiting: read again before sleeping
            }
            let mut due = self.sides[0].link.next_due(now).into_iter().chain(self.sides[1].link.next_due(now)).min();
            if sample_every > 0 {
                due = Some(due.map_or(next_sample, |d| d.min(next_sample)));
            }
            if let Some(e) = end {
                due = Some(due.map_or(e, |d| d.min(e)));
            }
            let slept = epoch.0 != NO_EPOCH && self.wait(now, due);
            busy_turn_ended = (!slept).then(|| self.now());
        }
    }

    /// Sleeps until a socket is readable or until the wake-up margin before `due`; returns at
    /// once when `due` is that close (the caller's loop then spins on the clock). When the
    /// timer itself wakes the loop, its overshoot is measured and the margin follows twice the
    /// recent worst overshoot (between `spin_ns` and `MAX_WAKE_MARGIN`): on a host with slow
    /// wake-ups (virtual machines) the loop starts spinning earlier, elsewhere it stays asleep.
    /// Returns whether it slept. Under SCHED_FIFO, once the thread has used its share of the
    /// kernel's real-time budget (`rt_budget`), it sleeps right up to `due` instead of spinning.
    fn wait(&mut self, now: Time, due: Option<Time>) -> bool {
        if self.cfg.busy_poll {
            return false;
        }
        // Without anything due, wake at least every 50 ms to notice cancellation.
        let limit = Time::from_millis(50);
        let may_spin = match self.spin_budget.as_mut() {
            None => true,
            Some(budget) => {
                let may = budget.may_spin(now.as_nanos(), thread_cpu_ns());
                self.stats.spin_budget_exhausted_windows = budget.exhausted_windows;
                may
            }
        };
        let margin = if may_spin { self.wake_margin } else { Time::ZERO };
        let (sleep, timed) = match due {
            Some(d) if d <= now + margin => return false,
            Some(d) if d - now - margin < limit => (d - now - margin, true),
            _ => (limit, false),
        };
        let mut fds = [
            libc::pollfd { fd: self.sides[0].socket.fd, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: self.sides[1].socket.fd, events: libc::POLLIN, revents: 0 },
        ];
        let ts = libc::timespec {
            tv_sec: (sleep.as_nanos() / 1_000_000_000) as libc::time_t,
            tv_nsec: (sleep.as_nanos() % 1_000_000_000) as libc::c_long,
        };
        self.stats.sleeps += 1;
        // SAFETY: fds and ts are live locals; no signal mask is changed (null).
        let ready = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        if ready == 0 && timed {
            self.note_timer_overshoot(self.now().saturating_sub(now + sleep));
        }
        true
    }

    fn note_timer_overshoot(&mut self, over: Time) {
        let decayed = self.recent_overshoot - Time(self.recent_overshoot.as_nanos() / 64);
        self.recent_overshoot = over.max(decayed);
        self.stats.max_timer_overshoot_ns = self.stats.max_timer_overshoot_ns.max(over.as_nanos());
        self.wake_margin = Time(2 * self.recent_overshoot.as_nanos()).max(Time(self.cfg.spin_ns)).min(MAX_WAKE_MARGIN);
        self.stats.wake_margin_ns = self.wake_margin.as_nanos();
    }

    /// Reads up to a burst of frames from side `i` into its link. Returns frames read.
    fn receive(&mut self, i: usize, now: Time) -> Result<usize, String> {
        let mut count = 0;
        while count < RX_BURST {
            let n = match self.sides[i].socket.recv(&mut self.scratch) {
                Ok(Some(n)) => n,
                Ok(None) => break,
                Err(e) => return Err(format!("receive on {}: {e}", self.sides[i].socket.iface)),
            };
            count += 1;
            self.stats.rx_frames[i] += 1;
            if n > self.scratch.len() {
                self.stats.oversize += 1;
                continue;
            }
            let uid = self.next_uid;
            self.next_uid += 1;
            let side = &mut self.sides[i];
            let mut frame = side.link.take_buffer();
            frame.extend_from_slice(&self.scratch[..n]);
            match parse_frame(&frame) {
                Err(m) => {
                    *self.stats.malformed.entry(m.name()).or_default() += 1;
                    side.link.recycle(frame);
                }
                Ok(Parsed::NotIp { .. }) => side.link.bypass(now, uid, frame),
                Ok(Parsed::Ip(info)) => {
                    let c = side.classifier.classify(&info, side.dir, uid, now);
                    side.link.arrive(now, c.packet, frame, &info, c.extra_delay);
                }
            }
        }
        Ok(count)
    }

    /// Sends what both links release by `now`: forward frames leave on the receiver side.
    fn transmit(&mut self, now: Time) {
        for i in 0..2 {
            let out_side = 1 - i;
            self.sides[i].link.service(now, &mut self.out);
            for frame in self.out.drain(..) {
                if self.sides[out_side].socket.send(&frame) {
                    self.stats.tx_frames[out_side] += 1;
                } else {
                    self.stats.tx_errors[out_side] += 1;
                }
                self.sides[i].link.recycle(frame);
            }
        }
    }

    /// Run facts for summary.json: router counters, both links' and disciplines' counters.
    pub fn summary(&self) -> serde_json::Value {
        let link = |s: &Side| -> serde_json::Value {
            let q = s.link.queue();
            let stats: &QdiscStats = q.stats();
            let ls: &LinkStats = &s.link.stats;
            serde_json::json!({"qdisc": q.kind(), "stats": stats, "link": ls, "invariants": q.check_invariants().err()})
        };
        serde_json::json!({
            "router": self.stats,
            "forward": link(&self.sides[0]),
            "reverse": link(&self.sides[1]),
            "run_time_ns": self.now().saturating_sub(Time(self.epoch.load(Ordering::Relaxed))).as_nanos(),
        })
    }

    /// The forward direction's packet events and queue samples, in the simulator's schema
    /// (with `records.packet_events` off, an empty `packets` table, as the simulator writes).
    pub fn take_records(&mut self) -> Vec<(&'static str, Table)> {
        let packets = self.sides[0].link.events.take().unwrap_or_default();
        vec![("packets", packets.into_table()), ("queue", std::mem::take(&mut self.queue_samples).into_table())]
    }
}
