//! CAKE, "Common Applications Kept Enhanced", as Linux `net/sched/sch_cake.c` does it (T.
//! Høiland-Jørgensen, D. Täht, J. Morton, "Piece of CAKE: A Comprehensive Queue Management
//! Solution for Home Gateways", LANMAN 2018) with the parameters of tc-cake(8)
//! (iproute2 `tc/q_cake.c`).
//!
//! * **Tins** (`cake_select_tin`, `cake_config_*`): the packet's DSCP picks a tin through the
//!   DiffServ mode's map (`besteffort` 1 tin, `diffserv3` 3, `diffserv4` 4, `diffserv8` and
//!   `precedence` 8; the maps are [`tin_of`]). Each tin has a bandwidth threshold, a fraction
//!   of `bandwidth` (diffserv4: best effort 1, bulk 1/16, video 1/2, voice 1/4; diffserv3:
//!   1, 1/16, 1/4; diffserv8 and precedence: 7/8 of the previous tin's each), and a DRR
//!   weight for unlimited mode (diffserv4: 1024, 64, 512, 256; diffserv3: 1024, 64, 256;
//!   the 8-tin modes 256 times 7/8 per tin; besteffort 65535).
//! * **Tin scheduling** (`cake_dequeue`): with a `bandwidth`, each tin keeps its own shaper
//!   clock at its threshold rate; a dequeue serves the highest tin whose clock is due, else the
//!   tin whose clock comes first. A saturated tin therefore gets its threshold share and no
//!   more while others are busy, and any tin may use the whole bandwidth when the others are
//!   idle. Unlimited (`bandwidth` 0): deficit round robin between tins by their weights.
//! * **Shaper** (`cake_advance_shaper`): in deficit mode, no burst parameter: after each
//!   packet the global clock advances by its serialization time at `bandwidth`, counted on the
//!   packet's length adjusted by `overhead`, `mpu` and ATM/PTM framing (`cake_calc_overhead`);
//!   a dequeue before the clock is due returns nothing and names the instant it is due. The
//!   engines' packet size is the IP packet, so a length is `size + overhead`: with the default
//!   (`raw`, no overhead) Linux would also count the 14-byte Ethernet header on an Ethernet
//!   device, which aqmlab's links do not carry.
//! * **Flow queues** (`cake_hash`): 1024 queues per tin, set-associative in sets of 8 ways: a
//!   flow takes the queue its hash selects if that queue is free or already tagged with its
//!   hash, else another queue of the same set that is, else a free one of the set, else it
//!   shares the selected queue. The hash is of the 5-tuple in either direction (Linux's
//!   `flow_hash_from_keys` sorts the endpoints), of the source or destination host alone, or of
//!   both hosts, by `flowmode`.
//! * **Hosts**: aqmlab's hosts are the packets' `src` and `dst` fields: the engine's node ids
//!   in the simulator, the IPv4 addresses in the emulator. In `dual-srchost`, `dual-dsthost`
//!   and `triple-isolate` each host's bulk flows are counted, and a flow's DRR quantum is the
//!   tin's flow quantum divided by the bulk-flow count of its host (the larger of the two in
//!   triple-isolate), so hosts share first and their flows share within.
//! * **DRR++ between flows**: as FQ-CoDel's new/old lists, plus the "decaying" list where an
//!   emptied queue stays while its COBALT state decays; each dequeue visits one decaying queue
//!   first. A flow's quantum is `flow_quantum` (Linux `cake_set_rate`: bandwidth / 4096 bytes,
//!   within 300 to 1514; 1514 unlimited) and refills are dithered by a random 16-bit fraction
//!   as Linux's.
//! * **COBALT per queue** ([`super::cobalt::CobaltVars`]): CoDel and BLUE, with ECN marking
//!   always on (Linux sets CE wherever it can) and no BLUE sojourn threshold (ns-3's). Per
//!   tin, `target` is at least 1.5 MTU times at the tin's rate and `interval` is `rtt` plus
//!   what that raised the target, at least twice the target. A queue's last packet is never
//!   dropped by COBALT (it may be marked).
//! * **Memory limit** (`cake_drop`): buffer memory above `memlimit` drops packets one at a time
//!   from the head of the queue with the most bytes over all tins, each also telling that
//!   queue's BLUE the buffer overflowed. Default as Linux's `cake_reconfigure`: with a
//!   bandwidth, 4 x bandwidth x rtt bytes and at least 4 MiB; unlimited, 10240 MTUs; never more
//!   than 10240 MTUs unless `memlimit` says so. Linux counts an skb's `truesize`; aqmlab counts
//!   the packet's size, at least 1 byte, so that empty packets cannot pile up without bound.
//! * **ACK filter** (`cake_ack_filter`): when a TCP ACK arrives at the tail of its queue,
//!   an older pure ACK of the same connection that it makes redundant (no payload, a
//!   cumulative ACK not above the new one's, nothing SACKed that the new one does not cover, the
//!   same ECN-Echo) is taken out; `ack-filter` only when two are found, the oldest going,
//!   `ack-filter-aggressive` also one directly before the new one. The arrival itself is
//!   never filtered, so the newest ACK of a connection is always delivered. aqmlab's packets
//!   carry the count of SACK blocks but not the blocks (they travel beside the packet in the
//!   simulator): an ACK with SACK blocks is only filtered by one with blocks when it has none
//!   itself, and never when both have blocks; there are no timestamp options to compare.
//!
//! * **Ingress mode** (`ingress`): packets CAKE drops (COBALT, memory, ACK filter) are charged
//!   to the shaper as sent ones, COBALT's over-target test also asks for 2 MTU times per bulk
//!   flow of the tin, and after a COBALT drop the tin's rotation moves on. Linux's failsafe
//!   clock, advanced by 1.5 times each sent packet's time only, bounds how far drops hold the
//!   shaper back: a dequeue waits until the earlier of the two clocks.
//!
//! Not built: `autorate-ingress`, `nat` (conntrack lookups), `fwmark` and `tc filter`
//! overrides of the tin or queue, `split-gso` (aqmlab has no GSO super-packets), Linux's
//! fixed-point `1/sqrt(count)` and rate arithmetic (floating point and exact integer
//! nanoseconds here).
//!
//! Random numbers (BLUE's rolls and the DRR dither) come from a generator forked at the first
//! arrival from the `rng` the engine passes to `enqueue`.

use super::cobalt::{CobaltParams, CobaltVars};
use super::shared::flow_key::splitmix64;
use super::shared::packet_fifo::PacketFifo;
use super::{Dequeued, DropReason, Evicted, NamedStat, Qdisc, Verdict};
use crate::packet::{tcp_flags, Packet, Proto};
use crate::rng::SimRng;
use crate::units::{Rate, Time};
use serde::{Deserialize, Serialize};

/// Queues per tin (Linux `CAKE_QUEUES`).
pub const QUEUES: usize = 1024;
/// Ways of the set-associative hash (Linux `CAKE_SET_WAYS`).
pub const WAYS: usize = 8;
/// Linux's `psched_mtu` on Ethernet (1500 B + 14 B header): the flow quantum when unlimited,
/// the MTU time of COBALT's floor and the unit of the default memory limit.
pub const MTU: u64 = 1514;
/// Linux `cake_init`: `sch->limit = 10240` packets, only used to cap the memory limit.
pub const LIMIT_PACKETS: u64 = 10_240;
/// tc-cake's default `rtt` (the `internet` preset): 100 ms.
pub const DEFAULT_RTT_NS: u64 = 100_000_000;
/// Largest `rtt` and `target` tc passes: a u32 of microseconds.
pub const MAX_TIME_US: u64 = u32::MAX as u64;

/// tc-cake's DiffServ modes (default `diffserv3`, Linux `cake_init`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Diffserv {
    Besteffort,
    #[default]
    Diffserv3,
    Diffserv4,
    Diffserv8,
    Precedence,
}

/// tc-cake's flow isolation modes (default `triple-isolate`, Linux `cake_init`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowMode {
    Flowblind,
    Srchost,
    Dsthost,
    Hosts,
    Flows,
    DualSrchost,
    DualDsthost,
    #[default]
    TripleIsolate,
}

impl FlowMode {
    /// Linux `CAKE_FLOW_*`: bit 0 source host, bit 1 destination host, bit 2 flows.
    fn bits(self) -> u8 {
        match self {
            FlowMode::Flowblind => 0,
            FlowMode::Srchost => 1,
            FlowMode::Dsthost => 2,
            FlowMode::Hosts => 3,
            FlowMode::Flows => 4,
            FlowMode::DualSrchost => 5,
            FlowMode::DualDsthost => 6,
            FlowMode::TripleIsolate => 7,
        }
    }
    /// Per-source-host fairness (Linux `cake_dsrc`).
    fn dual_src(self) -> bool {
        self.bits() & 5 == 5
    }
    /// Per-destination-host fairness (Linux `cake_ddst`).
    fn dual_dst(self) -> bool {
        self.bits() & 6 == 6
    }
}

/// tc-cake's ACK filter modes (default `no-ack-filter`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AckFilter {
    #[default]
    NoAckFilter,
    AckFilter,
    AckFilterAggressive,
}

/// tc-cake's link-layer framing compensation (default `noatm`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Atm {
    #[default]
    Noatm,
    /// 48-byte ATM cell payloads in 53-byte cells (ADSL).
    Atm,
    /// PTM's 64b/65b coding: one byte per 64 or part thereof (VDSL2).
    Ptm,
}

fn default_rtt() -> u64 {
    DEFAULT_RTT_NS
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CakeConfig {
    /// Shaper rate in bit/s; 0 is tc-cake's `unlimited` (the default).
    #[serde(default)]
    pub bandwidth: Rate,
    /// `rtt`: COBALT's interval before the per-tin adjustment (default 100 ms).
    #[serde(default = "default_rtt")]
    pub rtt_ns: u64,
    /// COBALT's target; `None`: `rtt / 20`, at least 1 us, as tc-cake sets it with `rtt`.
    #[serde(default)]
    pub target_ns: Option<u64>,
    #[serde(default)]
    pub diffserv: Diffserv,
    #[serde(default)]
    pub flowmode: FlowMode,
    /// Bytes added to each packet's length for the shaper, -64..=256 (default 0: `raw`).
    #[serde(default)]
    pub overhead: i32,
    /// Smallest length the shaper charges, 0..=256 bytes (default 0).
    #[serde(default)]
    pub mpu: u32,
    #[serde(default)]
    pub atm: Atm,
    /// Buffer memory in bytes; `None`: Linux's default (module docs).
    #[serde(default)]
    pub memlimit: Option<u64>,
    #[serde(default)]
    pub ack_filter: AckFilter,
    /// Clear the DSCP after choosing the tin (default off).
    #[serde(default)]
    pub wash: bool,
    /// tc-cake's `ingress` (default `egress`): packets CAKE drops are charged to the shaper
    /// too, as they already used the link upstream, and COBALT's target grows with the bulk
    /// flows (Linux `CAKE_FLAG_INGRESS`).
    #[serde(default)]
    pub ingress: bool,
}

impl Default for CakeConfig {
    fn default() -> CakeConfig {
        CakeConfig {
            bandwidth: Rate(0),
            rtt_ns: DEFAULT_RTT_NS,
            target_ns: None,
            diffserv: Diffserv::default(),
            flowmode: FlowMode::default(),
            overhead: 0,
            mpu: 0,
            atm: Atm::default(),
            memlimit: None,
            ack_filter: AckFilter::default(),
            wash: false,
            ingress: false,
        }
    }
}

impl CakeConfig {
    /// The ranges tc-cake accepts (`tc/q_cake.c`); errors name the field.
    pub fn validate(&self) -> Result<(), String> {
        let us = |ns: u64| ns / 1000;
        if self.rtt_ns < 1000 || us(self.rtt_ns) > MAX_TIME_US {
            return Err(format!(
                "rtt: must be 1us to {MAX_TIME_US}us (tc-cake's u32 of microseconds; default 100ms), got {} ns",
                self.rtt_ns
            ));
        }
        if let Some(t) = self.target_ns {
            if t < 1000 || us(t) > MAX_TIME_US {
                return Err(format!("target: must be 1us to {MAX_TIME_US}us (default rtt/20), got {t} ns"));
            }
        }
        if !(-64..=256).contains(&self.overhead) {
            return Err(format!("overhead: must be -64 to 256 bytes (tc-cake's range; default 0), got {}", self.overhead));
        }
        if self.mpu > 256 {
            return Err(format!("mpu: must be 0 to 256 bytes (tc-cake's range; default 0), got {}", self.mpu));
        }
        if let Some(m) = self.memlimit {
            if m == 0 || m > u32::MAX as u64 {
                return Err(format!("memlimit: must be 1 to {} bytes (a u32), or left out for Linux's default, got {m}", u32::MAX));
            }
        }
        Ok(())
    }

    /// COBALT's target before the per-tin adjustment.
    pub fn target(&self) -> Time {
        Time(self.target_ns.unwrap_or((self.rtt_ns / 1000 / 20).max(1) * 1000))
    }

    /// The shaper rate in bytes per second as Linux keeps it (`rate_bps` is bytes there).
    fn rate_bytes(&self) -> u64 {
        self.bandwidth.0 / 8
    }

    /// Buffer memory limit in bytes (Linux `cake_reconfigure`).
    pub fn buffer_limit(&self) -> u64 {
        let interval_us = self.rtt_ns / 1000;
        let limit = match (self.memlimit, self.rate_bytes()) {
            (Some(m), _) => m,
            (None, 0) => u32::MAX as u64,
            (None, r) => ((r as u128 * interval_us as u128 / 250_000) as u64).max(4 << 20),
        };
        limit.min((LIMIT_PACKETS * MTU).max(self.memlimit.unwrap_or(0)))
    }

    /// The length the shaper charges for a packet of `size` bytes (Linux `cake_calc_overhead`;
    /// a negative overhead stops at 0 where Linux's u32 would wrap).
    pub fn adjusted_len(&self, size: u32) -> u64 {
        let mut len = (size as i64 + self.overhead as i64).max(0) as u64;
        len = len.max(self.mpu as u64);
        match self.atm {
            Atm::Noatm => len,
            Atm::Atm => len.div_ceil(48) * 53,
            Atm::Ptm => len + len.div_ceil(64),
        }
    }
}

/// Tin of a DSCP value under `mode` (Linux's `besteffort`, `diffserv3`, `diffserv4`,
/// `diffserv8` and `precedence` tables, written here by code point names; tin 0 is best
/// effort in diffserv3/4).
pub fn tin_of(mode: Diffserv, dscp: u8) -> usize {
    const LE: u8 = 1;
    const TOS2: u8 = 2;
    const TOS4: u8 = 4;
    const CS1: u8 = 8;
    const CS2: u8 = 16;
    const CS3: u8 = 24;
    const CS4: u8 = 32;
    const CS5: u8 = 40;
    const VA: u8 = 44;
    const EF: u8 = 46;
    const CS6: u8 = 48;
    const CS7: u8 = 56;
    let d = dscp & 63;
    let af = |class: u8| matches!(d, x if x == class * 8 + 2 || x == class * 8 + 4 || x == class * 8 + 6);
    match mode {
        Diffserv::Besteffort => 0,
        Diffserv::Precedence => (d >> 3) as usize,
        Diffserv::Diffserv3 => match d {
            LE | CS1 => 1,
            TOS4 | VA | EF | CS6 | CS7 => 2,
            _ => 0,
        },
        Diffserv::Diffserv4 => match d {
            LE | CS1 => 1,
            CS4 | CS5 | VA | EF | CS6 | CS7 => 3,
            TOS4 | CS2 | CS3 => 2,
            _ if af(2) || af(3) || af(4) => 2,
            _ => 0,
        },
        // Background (LE), high throughput (CS1, AF1x), best effort (everything else), video
        // (CS3, AF3x, AF4x), low-latency transactions (TOS4, AF2x), interactive (CS2),
        // minimum latency (CS4, CS5, VA, EF), network control (CS6, CS7).
        Diffserv::Diffserv8 => match d {
            LE => 0,
            TOS2 | CS1 => 1,
            _ if af(1) => 1,
            CS3 => 3,
            _ if af(3) || af(4) => 3,
            TOS4 => 4,
            _ if af(2) => 4,
            CS2 => 5,
            CS4 | CS5 | VA | EF => 6,
            CS6 | CS7 => 7,
            _ => 2,
        },
    }
}

/// Tin thresholds (as a right shift of the bandwidth, or 7/8 steps) and DRR weights of a mode.
fn tin_layout(mode: Diffserv, rate: u64) -> Vec<(u64, i64)> {
    match mode {
        Diffserv::Besteffort => vec![(rate, 65_535)],
        Diffserv::Diffserv3 => vec![(rate, 1024), (rate >> 4, 64), (rate >> 2, 256)],
        Diffserv::Diffserv4 => vec![(rate, 1024), (rate >> 4, 64), (rate >> 1, 512), (rate >> 2, 256)],
        Diffserv::Diffserv8 | Diffserv::Precedence => {
            let (mut r, mut q) = (rate, 256u64);
            (0..8)
                .map(|_| {
                    let t = (r, q.max(1) as i64);
                    r = (r * 7) >> 3;
                    q = (q * 7) >> 3;
                    t
                })
                .collect()
        }
    }
}

/// Linux `CAKE_SET_*`: which rotation a queue is in and how it is counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Set {
    #[default]
    None,
    Sparse,
    /// Counted as sparse, in the bulk rotation.
    SparseWait,
    Bulk,
    Decaying,
}

#[derive(Default)]
struct Flow {
    q: PacketFifo,
    deficit: i64,
    cvars: CobaltVars,
    srchost: u16,
    dsthost: u16,
    set: Set,
}

#[derive(Clone, Copy, Default)]
struct Host {
    src_tag: u32,
    dst_tag: u32,
    src_bulk: u32,
    dst_bulk: u32,
}

const NEW: usize = 0;
const OLD: usize = 1;
const DECAYING: usize = 2;
const NIL: u16 = u16::MAX;

/// The three rotations of a tin as intrusive lists over its queues (Linux `flowchain`), so
/// that a queue moves from any position to any list's tail in O(1).
struct Chains {
    head: [u16; 3],
    tail: [u16; 3],
    len: [usize; 3],
    next: Vec<u16>,
    prev: Vec<u16>,
    /// The list a queue is on, or `NIL`.
    on: Vec<u16>,
}

impl Chains {
    fn new() -> Chains {
        Chains { head: [NIL; 3], tail: [NIL; 3], len: [0; 3], next: vec![NIL; QUEUES], prev: vec![NIL; QUEUES], on: vec![NIL; QUEUES] }
    }
    fn front(&self, list: usize) -> Option<usize> {
        (self.head[list] != NIL).then_some(self.head[list] as usize)
    }
    fn remove(&mut self, i: usize) {
        let list = self.on[i];
        if list == NIL {
            return;
        }
        let l = list as usize;
        let (p, n) = (self.prev[i], self.next[i]);
        if p == NIL {
            self.head[l] = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail[l] = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.len[l] -= 1;
        self.on[i] = NIL;
    }
    fn move_tail(&mut self, i: usize, list: usize) {
        self.remove(i);
        let t = self.tail[list];
        self.prev[i] = t;
        self.next[i] = NIL;
        if t == NIL {
            self.head[list] = i as u16;
        } else {
            self.next[t as usize] = i as u16;
        }
        self.tail[list] = i as u16;
        self.len[list] += 1;
        self.on[i] = list as u16;
    }
    fn iter(&self, list: usize) -> impl Iterator<Item = usize> + '_ {
        let mut cur = self.head[list];
        std::iter::from_fn(move || {
            (cur != NIL).then(|| {
                let i = cur as usize;
                cur = self.next[i];
                i
            })
        })
    }
}

struct Tin {
    flows: Vec<Flow>,
    tags: Vec<u32>,
    hosts: Vec<Host>,
    chains: Chains,
    flow_quantum: u64,
    cparams: CobaltParams,
    /// Threshold rate in bit/s (0: unlimited).
    rate: Rate,
    quantum: i64,
    deficit: i64,
    /// The tin's shaper clock.
    time_next: Time,
    backlog: u64,
    packets: usize,
    sparse: u32,
    bulk: u32,
    decaying: u32,
}

impl Tin {
    /// Linux `cake_set_rate` for a tin of `rate` bytes/s.
    fn new(rate_bytes: u64, quantum: i64, target: Time, rtt: Time) -> Tin {
        let rate = Rate(rate_bytes.max(if rate_bytes > 0 { 64 } else { 0 }) * 8);
        let flow_quantum = if rate_bytes > 0 { (rate_bytes >> 12).clamp(300, 1514) } else { 1514 };
        let mtu_time = rate.tx_time(MTU);
        let t = Time(target.0.max(mtu_time.0 * 3 / 2));
        let interval = Time((rtt.0 + t.0 - target.0).max(t.0 * 2));
        let cparams = CobaltParams {
            target: t,
            interval,
            p_inc: 1.0 / 256.0,
            p_dec: 1.0 / 4096.0,
            blue_threshold: Time::MAX,
            ecn: true,
            mtu_time,
            bulk_flows: 0,
        };
        Tin {
            flows: (0..QUEUES).map(|_| Flow::default()).collect(),
            tags: vec![0; QUEUES],
            hosts: vec![Host::default(); QUEUES],
            chains: Chains::new(),
            flow_quantum,
            cparams,
            rate: if rate_bytes > 0 { rate } else { Rate(0) },
            quantum,
            deficit: 0,
            time_next: Time::ZERO,
            backlog: 0,
            packets: 0,
            sparse: 0,
            bulk: 0,
            decaying: 0,
        }
    }

    fn active(&self) -> bool {
        self.sparse + self.bulk > 0
    }

    /// The larger bulk-flow count of queue `i`'s hosts the mode isolates, at least 1.
    fn host_load(&self, i: usize, mode: FlowMode) -> u64 {
        let f = &self.flows[i];
        let mut load = 1;
        if mode.dual_src() {
            load = load.max(self.hosts[f.srchost as usize].src_bulk as u64);
        }
        if mode.dual_dst() {
            load = load.max(self.hosts[f.dsthost as usize].dst_bulk as u64);
        }
        load.min(QUEUES as u64)
    }

    fn bulk_hosts(&mut self, i: usize, mode: FlowMode, up: bool) {
        let (s, d) = (self.flows[i].srchost as usize, self.flows[i].dsthost as usize);
        let step = |c: &mut u32| *c = if up { *c + 1 } else { c.saturating_sub(1) };
        if mode.dual_src() {
            step(&mut self.hosts[s].src_bulk);
        }
        if mode.dual_dst() {
            step(&mut self.hosts[d].dst_bulk);
        }
    }

    /// A flow's DRR quantum with `host_load` bulk flows on its host, in Linux's 16-bit
    /// fixed point (`quantum_div`), with `dither` in 0..65536 added before the shift.
    fn flow_share(&self, host_load: u64, dither: u64) -> i64 {
        ((self.flow_quantum * (65_535 / host_load) + dither) >> 16) as i64
    }
}

/// Host tag of an address (Linux hashes the address alone), salted per direction.
fn host_hash(addr: u32, salt: u64) -> u32 {
    splitmix64(addr as u64 ^ salt) as u32
}

/// The 5-tuple's hash, the same in both directions (Linux `flow_hash_from_keys` orders the
/// endpoints).
fn flow_hash(p: &Packet) -> u32 {
    let (a, b) = ((p.src, p.sport), (p.dst, p.dport));
    let ((h1, p1), (h2, p2)) = if a <= b { (a, b) } else { (b, a) };
    let proto = match p.proto {
        Proto::Tcp => 6u64,
        Proto::Udp => 17,
    };
    let k = splitmix64(((h1 as u64) << 32 | h2 as u64) ^ 0xca4e_f10e);
    splitmix64(k ^ ((p1 as u64) << 32 | (p2 as u64) << 16 | proto)) as u32
}

const SALT_SRC: u64 = 0x5eed_5c00_0000_0001;
const SALT_DST: u64 = 0x5eed_d500_0000_0002;

pub struct Cake {
    cfg: CakeConfig,
    tins: Vec<Tin>,
    /// Global shaper rate in bit/s (0: unlimited) and clock.
    rate: Rate,
    time_next: Time,
    /// Linux's failsafe clock: advanced by 1.5 times a sent packet's time and not for drops,
    /// so that drops charged in ingress mode cannot hold the shaper back for long.
    failsafe_next: Time,
    buffer_limit: u64,
    buffer_used: u64,
    packets: usize,
    bytes: u64,
    cur_tin: usize,
    ack_drops: u64,
    rng: Option<SimRng>,
}

/// Buffer memory a packet takes (module docs: its size, at least 1 byte).
fn charge(p: &Packet) -> u64 {
    (p.size as u64).max(1)
}

impl Cake {
    pub fn new(cfg: CakeConfig) -> Cake {
        let (target, rtt) = (cfg.target(), Time(cfg.rtt_ns));
        let tins: Vec<Tin> = tin_layout(cfg.diffserv, cfg.rate_bytes()).into_iter().map(|(r, q)| Tin::new(r, q, target, rtt)).collect();
        let rate = tins[0].rate;
        Cake {
            buffer_limit: cfg.buffer_limit(),
            cfg,
            tins,
            rate,
            time_next: Time::ZERO,
            failsafe_next: Time::ZERO,
            buffer_used: 0,
            packets: 0,
            bytes: 0,
            cur_tin: 0,
            ack_drops: 0,
            rng: None,
        }
    }

    /// Tins in use.
    pub fn tin_count(&self) -> usize {
        self.tins.len()
    }

    /// The tin a packet goes to, by its DSCP.
    pub fn tin_of_packet(&self, p: &Packet) -> usize {
        tin_of(self.cfg.diffserv, p.dscp)
    }

    /// Linux `cake_hash`: the queue of `p` in tin `t`, reserving it and its hosts.
    fn classify(&mut self, t: usize, p: &Packet) -> usize {
        let mode = self.cfg.flowmode;
        let bits = mode.bits();
        if bits == 0 {
            return 0;
        }
        let (srch, dsth) = (host_hash(p.src, SALT_SRC), host_hash(p.dst, SALT_DST));
        let mut hash = if bits & 4 != 0 { flow_hash(p) } else { 0 };
        if bits & 4 == 0 {
            if bits & 1 != 0 {
                hash ^= srch;
            }
            if bits & 2 != 0 {
                hash ^= dsth;
            }
        }
        let tin = &mut self.tins[t];
        let reduced = hash as usize % QUEUES;
        if tin.tags[reduced] == hash && tin.flows[reduced].set != Set::None {
            return reduced;
        }
        let outer = reduced - reduced % WAYS;
        let inner = reduced % WAYS;
        let mut allocate = false;
        let mut k = inner;
        let mut found = None;
        for _ in 0..WAYS {
            if tin.tags[outer + k] == hash {
                allocate = tin.flows[outer + k].set == Set::None;
                found = Some(outer + k);
                break;
            }
            k = (k + 1) % WAYS;
        }
        let idx = match found {
            Some(i) => i,
            None => {
                // k is back at `inner`: look for a free queue in the set.
                allocate = true;
                let mut free = None;
                for _ in 0..WAYS {
                    if tin.flows[outer + k].set == Set::None {
                        free = Some(outer + k);
                        break;
                    }
                    k = (k + 1) % WAYS;
                }
                free.unwrap_or_else(|| {
                    // No free queue: share the selected one; it leaves its hosts' bulk counts.
                    if tin.flows[reduced].set == Set::Bulk {
                        tin.bulk_hosts(reduced, mode, false);
                    }
                    reduced
                })
            }
        };
        tin.tags[idx] = hash;
        if allocate {
            let bulk = tin.flows[idx].set == Set::Bulk;
            if mode.dual_src() {
                let h = Self::host_slot(&mut tin.hosts, srch, |h| &mut h.src_tag, |h| h.src_bulk);
                if bulk {
                    tin.hosts[h].src_bulk += 1;
                }
                tin.flows[idx].srchost = h as u16;
            }
            if mode.dual_dst() {
                let h = Self::host_slot(&mut tin.hosts, dsth, |h| &mut h.dst_tag, |h| h.dst_bulk);
                if bulk {
                    tin.hosts[h].dst_bulk += 1;
                }
                tin.flows[idx].dsthost = h as u16;
            }
        }
        idx
    }

    /// The host entry of tag `hash`, set-associative as the queues: the way tagged with it, else
    /// the first way without bulk flows (retagged), else the selected way (retagged).
    fn host_slot(hosts: &mut [Host], hash: u32, tag: impl Fn(&mut Host) -> &mut u32, bulk: impl Fn(&Host) -> u32) -> usize {
        let sel = hash as usize % QUEUES;
        let (outer, inner) = (sel - sel % WAYS, sel % WAYS);
        for w in 0..WAYS {
            let i = outer + (inner + w) % WAYS;
            if *tag(&mut hosts[i]) == hash {
                return i;
            }
        }
        let i = (0..WAYS).map(|w| outer + (inner + w) % WAYS).find(|&i| bulk(&hosts[i]) == 0).unwrap_or(sel);
        *tag(&mut hosts[i]) = hash;
        i
    }

    /// Linux `cake_ack_filter` on queue `i` of tin `t`, whose tail is the arrival: the index of
    /// the queued ACK it makes redundant, if any.
    fn ack_to_filter(&self, t: usize, i: usize) -> Option<usize> {
        let aggressive = self.cfg.ack_filter == AckFilter::AckFilterAggressive;
        let q = &self.tins[t].flows[i].q;
        let n = q.len();
        if n < 2 {
            return None;
        }
        let trig = *q.iter().last()?;
        if trig.proto != Proto::Tcp || trig.tcp_flags & tcp_flags::ACK == 0 {
            return None;
        }
        let (mut elig, mut elig_ece, mut found) = (None::<usize>, false, 0i32);
        for (j, c) in q.iter().enumerate().take(n - 1) {
            if c.proto != Proto::Tcp || (c.src, c.dst, c.sport, c.dport) != (trig.src, trig.dst, trig.sport, trig.dport) {
                continue;
            }
            // ECN-Echo changed since the eligible ACK: dropping it would lose that signal.
            if elig.is_some() && c.ece != elig_ece {
                elig = None;
                found -= 1;
            }
            if c.tcp_flags != tcp_flags::ACK || c.payload != 0 || c.ack > trig.ack {
                continue;
            }
            // SACK comparison (module docs): -1 keeps the queued ACK.
            let cmp = match (c.sack_blocks > 0, trig.sack_blocks > 0) {
                (false, false) => 0,
                (false, true) => 1,
                _ => -1,
            };
            if cmp < 0 || (c.ack == trig.ack && cmp == 0) {
                continue;
            }
            if elig.is_none() {
                elig = Some(j);
                elig_ece = c.ece;
            }
            found += 1;
            if found > 1 {
                return elig;
            }
        }
        match elig {
            Some(j) if aggressive && j == n - 2 && elig_ece == trig.ece => Some(j),
            _ => None,
        }
    }

    /// Linux `cake_drop`: one packet from the head of the queue holding the most bytes.
    /// Returns its tin and queue.
    fn drop_from_fattest(&mut self, now: Time, evicted: &mut Vec<Evicted>) -> Option<(usize, usize)> {
        let mut best: Option<(u64, usize, usize, usize)> = None;
        for (t, tin) in self.tins.iter().enumerate() {
            for list in [NEW, OLD] {
                for i in tin.chains.iter(list) {
                    let q = &tin.flows[i].q;
                    if q.is_empty() {
                        continue;
                    }
                    let key = (q.bytes(), q.len());
                    if best.is_none_or(|(b, n, _, _)| key > (b, n)) {
                        best = Some((key.0, key.1, t, i));
                    }
                }
            }
        }
        let (_, _, t, i) = best?;
        let tin = &mut self.tins[t];
        let flow = &mut tin.flows[i];
        let p = flow.q.pop()?;
        flow.cvars.queue_full(now, &tin.cparams);
        tin.backlog -= p.size as u64;
        tin.packets -= 1;
        self.packets -= 1;
        self.bytes -= p.size as u64;
        self.buffer_used -= charge(&p);
        if self.cfg.ingress {
            self.advance_shaper(t, self.cfg.adjusted_len(p.size), now, true);
        }
        evicted.push(Evicted { packet: p, reason: DropReason::Evicted });
        Some((t, i))
    }

    /// Linux `cake_advance_shaper` for a packet of `len` adjusted bytes in tin `t`, sent or
    /// (in ingress mode) dropped.
    fn advance_shaper(&mut self, t: usize, len: u64, now: Time, drop: bool) {
        if self.rate.0 == 0 {
            return;
        }
        let tin = &mut self.tins[t];
        let tin_dur = tin.rate.tx_time(len);
        if tin.time_next < now {
            tin.time_next += tin_dur;
        } else if tin.time_next < now + tin_dur {
            tin.time_next = now + tin_dur;
        }
        let global = self.rate.tx_time(len);
        self.time_next += global;
        if !drop {
            self.failsafe_next += Time(global.0.saturating_add(global.0 / 2));
        }
    }

    /// When the shaper holds dequeues back at `now`: until the earlier of its two clocks.
    fn shaper_due(&self, now: Time) -> Option<Time> {
        (self.rate.0 > 0 && self.time_next > now && self.failsafe_next > now).then(|| self.time_next.min(self.failsafe_next))
    }

    /// Unlimited mode: the tin DRR of `cake_dequeue`. `None` when no tin has flows.
    fn pick_tin_drr(&mut self) -> Option<usize> {
        let n = self.tins.len();
        let (mut wrapped, mut empty) = (false, true);
        loop {
            let b = &mut self.tins[self.cur_tin];
            if b.deficit >= 0 && b.active() {
                return Some(self.cur_tin);
            }
            if b.deficit <= 0 {
                b.deficit += b.quantum;
            }
            if b.active() {
                empty = false;
            }
            self.cur_tin += 1;
            if self.cur_tin >= n {
                self.cur_tin = 0;
                if wrapped {
                    if empty {
                        return None;
                    }
                    self.skip_tin_rounds();
                } else {
                    wrapped = true;
                }
            }
        }
    }

    /// After a full pass in which no active tin could send: the passes after which the first
    /// one can, less one, credited at once (a 64 KiB packet against a weight of 1 would
    /// otherwise cost 64 000 passes), exactly as walking them would.
    fn skip_tin_rounds(&mut self) {
        let need = |d: i64, q: i64| if d >= 0 { 0 } else { (-d + q - 1) / q };
        let k = self.tins.iter().filter(|b| b.active()).map(|b| need(b.deficit, b.quantum)).min().unwrap_or(0);
        if k <= 1 {
            return;
        }
        let s = k - 1;
        for b in &mut self.tins {
            if b.deficit <= 0 {
                let until_positive = -b.deficit / b.quantum + 1;
                b.deficit += b.quantum * s.min(until_positive);
            }
        }
    }

    /// Shaped mode: the highest tin whose clock is due, else the tin whose clock comes first.
    fn pick_tin_shaped(&self, now: Time) -> Option<usize> {
        let mut best: Option<(i128, usize)> = None;
        for (t, b) in self.tins.iter().enumerate() {
            if !b.active() {
                continue;
            }
            let to_pkt = b.time_next.0 as i128 - now.0 as i128;
            if best.is_none_or(|(bt, _)| to_pkt <= 0 || to_pkt <= bt) {
                best = Some((to_pkt, t));
            }
        }
        best.map(|(_, t)| t)
    }

    /// After a full pass of the flow rotation in which every queue only got a refill: credits
    /// at once the further refills in which none could send either, with each queue's mean
    /// refill (the dither's mean, 1/2, in place of its draws).
    fn skip_flow_rounds(&mut self, t: usize) {
        let mode = self.cfg.flowmode;
        let tin = &mut self.tins[t];
        let listed: Vec<usize> = tin.chains.iter(NEW).chain(tin.chains.iter(OLD)).collect();
        let inc: Vec<i64> = listed.iter().map(|&i| tin.flow_share(tin.host_load(i, mode), 32_768).max(1)).collect();
        let k = listed.iter().zip(&inc).map(|(&i, &q)| if tin.flows[i].deficit > 0 { 0 } else { -tin.flows[i].deficit / q + 1 }).min();
        let Some(k) = k.filter(|k| *k > 1) else { return };
        for (&i, &q) in listed.iter().zip(&inc) {
            tin.flows[i].deficit += (k - 1) * q;
        }
    }

    /// Per-tin statistics names (for `named_stats`).
    const TIN_BACKLOG: [&'static str; 8] =
        ["tin0_backlog", "tin1_backlog", "tin2_backlog", "tin3_backlog", "tin4_backlog", "tin5_backlog", "tin6_backlog", "tin7_backlog"];

    /// Internal consistency: totals match the queues, the set counts match the sets, every
    /// non-empty queue is in a rotation.
    pub fn check(&self) -> Result<(), String> {
        let (mut packets, mut bytes) = (0usize, 0u64);
        for (t, tin) in self.tins.iter().enumerate() {
            let (mut sp, mut bu, mut de) = (0, 0, 0);
            let (mut tp, mut tb) = (0usize, 0u64);
            for (i, f) in tin.flows.iter().enumerate() {
                tp += f.q.len();
                tb += f.q.bytes();
                match f.set {
                    Set::Sparse | Set::SparseWait => sp += 1,
                    Set::Bulk => bu += 1,
                    Set::Decaying => de += 1,
                    Set::None => {}
                }
                if !f.q.is_empty() && !matches!(f.set, Set::Sparse | Set::SparseWait | Set::Bulk) {
                    return Err(format!("tin {t} queue {i}: {} packets in set {:?}", f.q.len(), f.set));
                }
                if (f.set == Set::None) != (tin.chains.on[i] == NIL) {
                    return Err(format!("tin {t} queue {i}: set {:?} but list {}", f.set, tin.chains.on[i]));
                }
            }
            if (sp, bu, de) != (tin.sparse, tin.bulk, tin.decaying) {
                return Err(format!("tin {t}: counted {:?}, sets {:?}", (tin.sparse, tin.bulk, tin.decaying), (sp, bu, de)));
            }
            if (tp, tb) != (tin.packets, tin.backlog) {
                return Err(format!("tin {t}: totals {:?}, queues {:?}", (tin.packets, tin.backlog), (tp, tb)));
            }
            packets += tp;
            bytes += tb;
        }
        if (packets, bytes) != (self.packets, self.bytes) {
            return Err(format!("totals {:?} != queues {:?}", (self.packets, self.bytes), (packets, bytes)));
        }
        Ok(())
    }
}

impl Qdisc for Cake {
    fn enqueue(&mut self, mut pkt: Packet, now: Time, rng: &mut SimRng, evicted: &mut Vec<Evicted>) -> Verdict {
        if self.rng.is_none() {
            self.rng = Some(rng.fork());
        }
        let t = self.tin_of_packet(&pkt);
        if self.cfg.wash {
            pkt.dscp = 0;
        }
        let i = self.classify(t, &pkt);
        let mode = self.cfg.flowmode;
        let all_empty = self.packets == 0;
        let tin = &mut self.tins[t];
        // The shaper's clocks do not bank idle time.
        if tin.packets == 0 {
            tin.time_next = tin.time_next.max(now);
            if all_empty && self.time_next < now {
                self.time_next = now;
                self.failsafe_next = now;
            }
        }
        let (size, cost) = (pkt.size as u64, charge(&pkt));
        tin.flows[i].q.push(pkt);
        tin.backlog += size;
        tin.packets += 1;
        self.packets += 1;
        self.bytes += size;
        self.buffer_used += cost;
        if self.cfg.ack_filter != AckFilter::NoAckFilter {
            if let Some(j) = self.ack_to_filter(t, i) {
                let tin = &mut self.tins[t];
                let ack = tin.flows[i].q.remove(j).expect("index within the queue");
                tin.backlog -= ack.size as u64;
                tin.packets -= 1;
                self.packets -= 1;
                self.bytes -= ack.size as u64;
                self.buffer_used -= charge(&ack);
                self.ack_drops += 1;
                if self.cfg.ingress {
                    self.advance_shaper(t, self.cfg.adjusted_len(ack.size), now, true);
                }
                evicted.push(Evicted { packet: ack, reason: DropReason::Policy });
            }
        }
        let tin = &mut self.tins[t];
        match tin.flows[i].set {
            Set::None | Set::Decaying => {
                if tin.flows[i].set == Set::Decaying {
                    tin.decaying -= 1;
                }
                tin.chains.move_tail(i, NEW);
                tin.flows[i].set = Set::Sparse;
                tin.sparse += 1;
                let load = tin.host_load(i, mode);
                tin.flows[i].deficit = tin.flow_share(load, 0);
            }
            Set::SparseWait => {
                tin.flows[i].set = Set::Bulk;
                tin.sparse -= 1;
                tin.bulk += 1;
                tin.bulk_hosts(i, mode, true);
            }
            Set::Sparse | Set::Bulk => {}
        }
        let mut refused = false;
        while self.buffer_used > self.buffer_limit {
            let Some(victim) = self.drop_from_fattest(now, evicted) else { break };
            if victim == (t, i) && !refused && self.tins[t].flows[i].q.is_empty() {
                // The arrival was the tail of the emptied queue: refused rather than evicted.
                evicted.pop();
                refused = true;
            }
        }
        if refused {
            Verdict::Dropped(DropReason::Overflow)
        } else {
            Verdict::Enqueued
        }
    }

    fn dequeue(&mut self, now: Time, dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        let mode = self.cfg.flowmode;
        let mut first_flow = true;
        let mut refills = 0usize;
        let mut spins = 0u64;
        'begin: loop {
            // Each pass removes or parks an empty queue; far more passes than queues is a bug.
            spins += 1;
            if spins > 4 * (QUEUES * self.tins.len()) as u64 + 64 {
                debug_assert!(false, "cake dequeue does not converge");
                return None;
            }
            if self.packets == 0 {
                return None;
            }
            if self.shaper_due(now).is_some() {
                return None;
            }
            let t = if self.rate.0 == 0 { self.pick_tin_drr()? } else { self.pick_tin_shaped(now)? };
            self.cur_tin = t;
            'retry: loop {
                let tin = &mut self.tins[t];
                let list = if first_flow && tin.chains.len[DECAYING] > 0 {
                    DECAYING
                } else if tin.chains.len[NEW] > 0 {
                    NEW
                } else if tin.chains.len[OLD] > 0 {
                    OLD
                } else if tin.chains.len[DECAYING] > 0 {
                    DECAYING
                } else {
                    continue 'begin;
                };
                let i = tin.chains.front(list).expect("non-empty list");
                first_flow = false;
                if tin.flows[i].deficit <= 0 {
                    // Keep queues with deficits out of the sparse and decaying rotations.
                    if tin.flows[i].set == Set::Sparse {
                        if tin.flows[i].q.is_empty() {
                            tin.flows[i].set = Set::SparseWait;
                        } else {
                            tin.sparse -= 1;
                            tin.bulk += 1;
                            tin.flows[i].set = Set::Bulk;
                            tin.bulk_hosts(i, mode, true);
                        }
                    }
                    let load = tin.host_load(i, mode);
                    let dither = self.rng.as_mut().map_or(0, |r| (r.next_u64() as u32 >> 16) as u64);
                    let tin = &mut self.tins[t];
                    tin.flows[i].deficit += tin.flow_share(load, dither);
                    tin.chains.move_tail(i, OLD);
                    refills += 1;
                    if refills >= tin.chains.len[NEW] + tin.chains.len[OLD] {
                        self.skip_flow_rounds(t);
                        refills = 0;
                    }
                    continue;
                }
                refills = 0;
                // Retrieve a packet through COBALT.
                loop {
                    let tin = &mut self.tins[t];
                    let mut cparams = tin.cparams;
                    cparams.bulk_flows = if self.cfg.ingress { tin.bulk } else { 0 };
                    let Some(mut p) = tin.flows[i].q.pop() else {
                        let f = &mut tin.flows[i];
                        f.cvars.queue_empty(now, &cparams);
                        let set = f.set;
                        if f.cvars.p_drop > 0.0 || f.cvars.count > 0 || now < f.cvars.drop_next() {
                            // Keep it in the rotation until its state has decayed to rest.
                            tin.chains.move_tail(i, DECAYING);
                            match set {
                                Set::Bulk => {
                                    tin.bulk -= 1;
                                    tin.bulk_hosts(i, mode, false);
                                    tin.decaying += 1;
                                }
                                Set::Sparse | Set::SparseWait => {
                                    tin.sparse -= 1;
                                    tin.decaying += 1;
                                }
                                _ => {}
                            }
                            tin.flows[i].set = Set::Decaying;
                        } else {
                            tin.chains.remove(i);
                            match set {
                                Set::Sparse | Set::SparseWait => tin.sparse -= 1,
                                Set::Bulk => {
                                    tin.bulk -= 1;
                                    tin.bulk_hosts(i, mode, false);
                                }
                                _ => tin.decaying = tin.decaying.saturating_sub(1),
                            }
                            tin.flows[i].set = Set::None;
                        }
                        continue 'begin;
                    };
                    tin.backlog -= p.size as u64;
                    tin.packets -= 1;
                    self.packets -= 1;
                    self.bytes -= p.size as u64;
                    self.buffer_used -= charge(&p);
                    let rng = self.rng.as_mut().expect("forked at the first arrival");
                    let tin = &mut self.tins[t];
                    let signal = tin.flows[i].cvars.should_drop(&mut p, now, &cparams, rng);
                    // The last packet of a queue is sent even when COBALT says drop.
                    if !signal.drop || tin.flows[i].q.is_empty() {
                        let len = self.cfg.adjusted_len(p.size);
                        self.advance_shaper(t, len, now, false);
                        let tin = &mut self.tins[t];
                        tin.flows[i].deficit -= len as i64;
                        tin.deficit -= len as i64;
                        return Some(Dequeued { packet: p, marked: signal.marked });
                    }
                    if self.cfg.ingress {
                        // The drop used the link upstream: charged, and the tin's rotation
                        // moves on (Linux `goto retry`).
                        let len = self.cfg.adjusted_len(p.size);
                        self.advance_shaper(t, len, now, true);
                        let tin = &mut self.tins[t];
                        tin.flows[i].deficit -= len as i64;
                        tin.deficit -= len as i64;
                        dropped.push(Evicted { packet: p, reason: DropReason::Early });
                        continue 'retry;
                    }
                    dropped.push(Evicted { packet: p, reason: DropReason::Early });
                }
            }
        }
    }

    fn len_packets(&self) -> usize {
        self.packets
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
    fn kind(&self) -> &'static str {
        "cake"
    }
    fn next_dequeue_time(&self, now: Time) -> Option<Time> {
        self.shaper_due(now).filter(|_| self.packets > 0)
    }
    /// Flow counts over all tins (decaying counted as sparse, as tc -s shows them), buffer
    /// memory in use, ACKs filtered, and each tin's backlog in bytes.
    fn named_stats(&self, out: &mut Vec<NamedStat>) {
        let sum = |f: fn(&Tin) -> u32| self.tins.iter().map(|b| f(b) as f64).sum::<f64>();
        out.push(NamedStat { name: "bulk_flows", value: sum(|b| b.bulk) });
        out.push(NamedStat { name: "sparse_flows", value: sum(|b| b.sparse + b.decaying) });
        out.push(NamedStat { name: "memory_used", value: self.buffer_used as f64 });
        out.push(NamedStat { name: "ack_drops", value: self.ack_drops as f64 });
        for (t, b) in self.tins.iter().enumerate() {
            out.push(NamedStat { name: Self::TIN_BACKLOG[t], value: b.backlog as f64 });
        }
    }
    /// Queues holding packets (the tables are fixed-size; queues resting in the decaying
    /// rotation hold no packets and are not counted).
    fn flow_states(&self) -> usize {
        self.tins.iter().map(|b| [NEW, OLD].iter().flat_map(|&l| b.chains.iter(l)).filter(|&i| !b.flows[i].q.is_empty()).count()).sum()
    }
}

#[cfg(test)]
impl super::per_flow_tests::Inspect for Cake {
    fn active_flows(&self) -> usize {
        self.flow_states()
    }
    fn check(&self) -> Result<(), String> {
        Cake::check(self)
    }
}

#[cfg(test)]
impl Cake {
    /// COBALT target and interval of tin `t`.
    fn tin_params(&self, t: usize) -> (Time, Time) {
        (self.tins[t].cparams.target, self.tins[t].cparams.interval)
    }
    /// The largest BLUE probability over all queues.
    fn max_p_drop(&self) -> f64 {
        self.tins.iter().flat_map(|b| b.flows.iter()).map(|f| f.cvars.p_drop).fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ecn;

    fn mbit(m: u64) -> Rate {
        Rate(m * 1_000_000)
    }

    /// A data packet of flow `flow` from host `src` to host `dst` with DSCP `dscp`.
    fn data(uid: u64, flow: u32, src: u32, dst: u32, dscp: u8, size: u32) -> Packet {
        Packet {
            uid,
            size,
            flow,
            src,
            dst,
            sport: 1000 + flow as u16,
            dport: 80,
            dscp,
            ecn: Ecn::Ect0,
            payload: size.saturating_sub(40),
            ..Packet::default()
        }
    }

    /// Feeds `q` from the flows `make(k)` (k = 0..n), each kept at `depth` queued packets,
    /// dequeuing as fast as the shaper allows for `secs` seconds; returns the bytes each flow
    /// sent after the first second (the warm-up), COBALT's head drops after it, and the overflow
    /// drops.
    fn saturate(q: &mut Cake, n: usize, depth: usize, secs: u64, make: impl Fn(usize, u64) -> Packet) -> (Vec<u64>, usize, usize) {
        let mut rng = SimRng::stream(7, "cake-test");
        let (mut queued, mut sent) = (vec![0usize; n], vec![0u64; n]);
        let (mut uid, mut now, mut head_drops, mut overflow) = (0u64, Time::ZERO, 0, 0);
        let end = Time::from_secs(secs);
        let warm = Time::from_secs(1);
        let mut ev = Vec::new();
        let mut dropped = Vec::new();
        while now < end {
            for k in 0..n {
                while queued[k] < depth {
                    uid += 1;
                    let mut p = make(k, uid);
                    p.flow = k as u32;
                    p.enqueued_at = now;
                    ev.clear();
                    match q.enqueue(p, now, &mut rng, &mut ev) {
                        Verdict::Dropped(_) => overflow += 1,
                        _ => queued[k] += 1,
                    }
                    for e in &ev {
                        queued[e.packet.flow as usize] -= 1;
                        overflow += 1;
                    }
                }
            }
            dropped.clear();
            match q.dequeue(now, &mut dropped) {
                Some(d) => {
                    queued[d.packet.flow as usize] -= 1;
                    if now >= warm {
                        sent[d.packet.flow as usize] += d.packet.size as u64;
                    }
                }
                None => now = q.next_dequeue_time(now).unwrap_or(now + Time::from_micros(10)),
            }
            for e in &dropped {
                queued[e.packet.flow as usize] -= 1;
                head_drops += (now >= warm) as usize;
            }
        }
        q.check().unwrap();
        (sent, head_drops, overflow)
    }

    fn shares(sent: &[u64]) -> Vec<f64> {
        let total: u64 = sent.iter().sum();
        sent.iter().map(|&b| b as f64 / total as f64).collect()
    }

    #[test]
    fn dscp_maps_follow_linux_tables() {
        use Diffserv::*;
        // (mode, dscp, tin): spot checks of sch_cake.c's tables.
        let cases = [
            (Diffserv4, 46, 3), // EF: voice
            (Diffserv4, 34, 2), // AF41: video
            (Diffserv4, 24, 2), // CS3
            (Diffserv4, 32, 3), // CS4
            (Diffserv4, 8, 1),  // CS1: bulk
            (Diffserv4, 10, 0), // AF11: best effort
            (Diffserv4, 0, 0),
            (Diffserv4, 2, 0), // TOS1 falls to best effort in the table
            (Diffserv3, 46, 2),
            (Diffserv3, 34, 0),
            (Diffserv3, 8, 1),
            (Diffserv3, 4, 2),
            (Diffserv8, 0, 2),
            (Diffserv8, 1, 0),
            (Diffserv8, 8, 1),
            (Diffserv8, 12, 1),
            (Diffserv8, 13, 2),
            (Diffserv8, 16, 5),
            (Diffserv8, 20, 4),
            (Diffserv8, 26, 3),
            (Diffserv8, 34, 3),
            (Diffserv8, 32, 6),
            (Diffserv8, 46, 6),
            (Diffserv8, 48, 7),
            (Diffserv8, 63, 2),
            (Precedence, 46, 5),
            (Precedence, 63, 7),
            (Besteffort, 46, 0),
        ];
        for (mode, dscp, tin) in cases {
            assert_eq!(tin_of(mode, dscp), tin, "{mode:?} dscp {dscp}");
        }
        // Only the 6 DSCP bits count.
        assert_eq!(tin_of(Diffserv4, 46 | 64), 3);
    }

    #[test]
    fn per_tin_cobalt_parameters_and_memory_limit_follow_cake_set_rate() {
        // 1 Mbit/s: 125 000 B/s, one 1514 B MTU takes 12.112 ms; target 1.5 MTU times,
        // interval rtt + (target - 5 ms).
        let q = Cake::new(CakeConfig { bandwidth: mbit(1), diffserv: Diffserv::Diffserv4, ..CakeConfig::default() });
        let (target, interval) = q.tin_params(0);
        assert_eq!(target, Time(18_168_000));
        assert_eq!(interval, Time(113_168_000));
        // Fast enough: the configured 5 ms / 100 ms.
        let q = Cake::new(CakeConfig { bandwidth: mbit(100), ..CakeConfig::default() });
        assert_eq!(q.tin_params(0), (Time::from_millis(5), Time::from_millis(100)));
        // rtt presets set target = rtt / 20.
        let q = Cake::new(CakeConfig { rtt_ns: 10_000_000, ..CakeConfig::default() });
        assert_eq!(q.tin_params(0), (Time::from_micros(500), Time::from_millis(10)));
        // Memory: 4 x bandwidth x rtt, at least 4 MiB, at most 10240 MTUs unless memlimit.
        let d = CakeConfig::default;
        assert_eq!(CakeConfig { bandwidth: mbit(100), ..d() }.buffer_limit(), 5_000_000);
        assert_eq!(CakeConfig { bandwidth: mbit(10), ..d() }.buffer_limit(), 4 << 20);
        assert_eq!(CakeConfig { bandwidth: mbit(1000), ..d() }.buffer_limit(), 10_240 * 1514);
        assert_eq!(d().buffer_limit(), 10_240 * 1514);
        assert_eq!(CakeConfig { memlimit: Some(32 << 20), ..d() }.buffer_limit(), 32 << 20);
        assert_eq!(CakeConfig { memlimit: Some(1000), ..d() }.buffer_limit(), 1000);
    }

    #[test]
    fn diffserv4_tins_get_their_threshold_shares_when_all_are_saturated() {
        // Best effort, bulk (CS1), video (AF41), voice (EF), all backlogged at 10 Mbit/s:
        // voice 1/4, video 1/2, bulk 1/16, and best effort the 3/16 left.
        let cfg = CakeConfig { bandwidth: mbit(10), diffserv: Diffserv::Diffserv4, ..CakeConfig::default() };
        let dscps = [0u8, 8, 34, 46];
        let mut q = Cake::new(cfg.clone());
        let (sent, _, _) = saturate(&mut q, 4, 10, 6, |k, uid| data(uid, k as u32, 1, 2, dscps[k], 1000));
        let s = shares(&sent);
        let want = [3.0 / 16.0, 1.0 / 16.0, 0.5, 0.25];
        for k in 0..4 {
            assert!((s[k] - want[k]).abs() < 0.01, "tin shares {s:?}, want {want:?}");
        }
        // The shaper holds the total to the bandwidth: 5 s at 10 Mbit/s.
        let total: u64 = sent.iter().sum();
        assert!((total as f64 - 6.25e6).abs() < 0.01 * 6.25e6, "{total}");
        // Best effort borrows what idle tins leave: with voice alone beside it, 3/4.
        let mut q = Cake::new(cfg.clone());
        let (sent, _, _) = saturate(&mut q, 2, 10, 4, |k, uid| data(uid, k as u32, 1, 2, [0, 46][k], 1000));
        let s = shares(&sent);
        assert!((s[0] - 0.75).abs() < 0.01 && (s[1] - 0.25).abs() < 0.01, "{s:?}");
        // And any tin alone gets the whole bandwidth.
        for dscp in [0u8, 46, 8] {
            let mut q = Cake::new(cfg.clone());
            let (sent, _, _) = saturate(&mut q, 1, 10, 3, |_, uid| data(uid, 0, 1, 2, dscp, 1000));
            assert!((sent[0] as f64 - 2.5e6).abs() < 0.01 * 2.5e6, "dscp {dscp}: {sent:?}");
        }
    }

    #[test]
    fn unlimited_mode_shares_tins_by_their_drr_weights() {
        // No bandwidth: tins are served by DRR with weights 1024 : 64 : 512 : 256.
        let cfg = CakeConfig { diffserv: Diffserv::Diffserv4, ..CakeConfig::default() };
        let mut q = Cake::new(cfg);
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        let dscps = [0u8, 8, 34, 46];
        let mut uid = 0;
        for _ in 0..2000 {
            for (k, &d) in dscps.iter().enumerate() {
                uid += 1;
                q.enqueue(data(uid, k as u32, 1, 2, d, 1000), Time::ZERO, &mut rng, &mut ev);
            }
        }
        let mut sent = [0u64; 4];
        let mut dropped = Vec::new();
        for _ in 0..3000 {
            let p = q.dequeue(Time::ZERO, &mut dropped).unwrap().packet;
            sent[p.flow as usize] += p.size as u64;
        }
        let s = shares(&sent);
        let w = [1024.0, 64.0, 512.0, 256.0];
        for k in 0..4 {
            assert!((s[k] - w[k] / 1856.0).abs() < 0.01, "{s:?}");
        }
    }

    /// Host A (8 flows) against host B (1 flow): the share of host A.
    fn host_a_share(flowmode: FlowMode, distinct_dsts: bool) -> f64 {
        let mut q = Cake::new(CakeConfig { bandwidth: mbit(10), diffserv: Diffserv::Besteffort, flowmode, ..CakeConfig::default() });
        let (sent, _, _) = saturate(&mut q, 9, 8, 4, |k, uid| {
            let src = if k < 8 { 1 } else { 2 };
            let dst = if distinct_dsts { 100 + k as u32 } else { 100 };
            data(uid, k as u32, src, dst, 0, 1000)
        });
        shares(&sent)[..8].iter().sum()
    }

    #[test]
    fn host_isolation_gives_a_host_with_8_flows_half_not_8_of_9() {
        let a = host_a_share(FlowMode::DualSrchost, false);
        assert!((a - 0.5).abs() < 0.02, "dual-srchost: host A {a}");
        let a = host_a_share(FlowMode::TripleIsolate, true);
        assert!((a - 0.5).abs() < 0.02, "triple-isolate: host A {a}");
        // Flow fairness alone: 8 of 9.
        let a = host_a_share(FlowMode::Flows, false);
        assert!((a - 8.0 / 9.0).abs() < 0.02, "flows: host A {a}");
        // Hosts as the destinations: dual-dsthost shares per destination host.
        let mut q = Cake::new(CakeConfig {
            bandwidth: mbit(10),
            diffserv: Diffserv::Besteffort,
            flowmode: FlowMode::DualDsthost,
            ..CakeConfig::default()
        });
        let (sent, _, _) = saturate(&mut q, 9, 8, 4, |k, uid| data(uid, k as u32, 100 + k as u32, if k < 8 { 1 } else { 2 }, 0, 1000));
        let a: f64 = shares(&sent)[..8].iter().sum();
        assert!((a - 0.5).abs() < 0.02, "dual-dsthost: host A {a}");
    }

    #[test]
    fn blue_stops_an_unresponsive_flow_from_filling_cakes_memory() {
        // A Not-ECT flow at twice 8 Mbit/s into 50 kB of memory: overflow raises BLUE's
        // p_drop until its head drops shed half the arrivals and the memory stops overflowing.
        let mut q =
            Cake::new(CakeConfig { bandwidth: mbit(8), diffserv: Diffserv::Besteffort, memlimit: Some(50_000), ..CakeConfig::default() });
        let mut rng = SimRng::stream(3, "t");
        let (mut ev, mut dropped) = (Vec::new(), Vec::new());
        let mut per_sec = vec![(0u32, 0u32); 10];
        let mut uid = 0;
        for us in (0..10_000_000u64).step_by(500) {
            let now = Time::from_micros(us);
            let sec = (us / 1_000_000) as usize;
            uid += 1;
            let mut p = data(uid, 0, 1, 2, 0, 1000);
            p.ecn = Ecn::NotEct;
            p.enqueued_at = now;
            ev.clear();
            if q.enqueue(p, now, &mut rng, &mut ev) != Verdict::Enqueued || !ev.is_empty() {
                per_sec[sec].0 += 1;
            }
            dropped.clear();
            while q.dequeue(now, &mut dropped).is_some() {}
            per_sec[sec].1 += dropped.len() as u32;
        }
        let p = q.max_p_drop();
        assert!((0.35..0.7).contains(&p), "p_drop {p}, {per_sec:?}");
        assert!(per_sec[0].0 > 50, "the first second overflows: {per_sec:?}");
        let late_overflow: u32 = per_sec[5..].iter().map(|s| s.0).sum();
        let late_head: u32 = per_sec[5..].iter().map(|s| s.1).sum();
        assert!(late_overflow < 50, "overflow after BLUE settles: {per_sec:?}");
        assert!(late_head > 4000, "head drops do the work: {per_sec:?}");
        q.check().unwrap();
    }

    #[test]
    fn the_shaper_charges_overhead_mpu_and_atm_framing_but_backlog_counts_ip_bytes() {
        // 8 Mbit/s = 1 MB/s of adjusted length; 100 B IP packets for 2 s after a 1 s warm-up.
        let ip_rate = |overhead: i32, mpu: u32, atm: Atm, size: u32| {
            let mut q =
                Cake::new(CakeConfig { bandwidth: mbit(8), diffserv: Diffserv::Besteffort, overhead, mpu, atm, ..CakeConfig::default() });
            let (sent, _, _) = saturate(&mut q, 1, 20, 3, |_, uid| data(uid, 0, 1, 2, 0, size));
            sent[0] as f64 / 2.0
        };
        let close = |a: f64, b: f64| (a - b).abs() < 0.01 * b;
        let r = ip_rate(0, 0, Atm::Noatm, 100);
        assert!(close(r, 1e6), "raw: {r}");
        let r = ip_rate(100, 0, Atm::Noatm, 100);
        assert!(close(r, 0.5e6), "overhead 100: {r}");
        let r = ip_rate(-50, 0, Atm::Noatm, 100);
        assert!(close(r, 2e6), "overhead -50: {r}");
        let r = ip_rate(0, 200, Atm::Noatm, 100);
        assert!(close(r, 0.5e6), "mpu 200: {r}");
        // ATM: 100 B take 3 cells of 53 B.
        let r = ip_rate(0, 0, Atm::Atm, 100);
        assert!(close(r, 1e6 * 100.0 / 159.0), "atm: {r}");
        // PTM: one byte per 64 or part: 102 B.
        let r = ip_rate(0, 0, Atm::Ptm, 100);
        assert!(close(r, 1e6 * 100.0 / 102.0), "ptm: {r}");
        // The backlog is the IP bytes whatever the overhead.
        let mut q = Cake::new(CakeConfig { bandwidth: mbit(8), overhead: 200, ..CakeConfig::default() });
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for uid in 0..5 {
            q.enqueue(data(uid, 0, 1, 2, 0, 100), Time::ZERO, &mut rng, &mut ev);
        }
        assert_eq!((q.len_packets(), q.len_bytes()), (5, 500));
    }

    #[test]
    fn ingress_mode_charges_drops_to_the_shaper() {
        // One Not-ECT flow of 1000 B packets kept 200 deep at 8 Mbit/s: COBALT drops at the
        // head. Egress: the sent packets alone fill the bandwidth. Ingress: each drop costs its
        // time too, so sent + dropped fill it (here drops stay below a third of the charged
        // time, where Linux's failsafe clock would take over).
        let run = |ingress: bool| {
            let mut q = Cake::new(CakeConfig { bandwidth: mbit(8), diffserv: Diffserv::Besteffort, ingress, ..CakeConfig::default() });
            let (sent, head_drops, _) = saturate(&mut q, 1, 200, 6, |_, uid| Packet { ecn: Ecn::NotEct, ..data(uid, 0, 1, 2, 0, 1000) });
            (sent[0] as f64 / 5.0, head_drops as f64 * 1000.0 / 5.0)
        };
        let (egress, egress_dropped) = run(false);
        let (ingress, ingress_dropped) = run(true);
        assert!((egress - 1e6).abs() < 0.01e6, "egress {egress} B/s");
        assert!(egress_dropped > 0.05e6 && ingress_dropped > 0.05e6, "{egress_dropped} {ingress_dropped}");
        assert!(((ingress + ingress_dropped) - 1e6).abs() < 0.02e6, "ingress {ingress} + {ingress_dropped} B/s");
        assert!(ingress < 0.95e6, "ingress {ingress} B/s");
    }

    #[test]
    fn a_sparse_flows_packet_goes_before_a_bulk_backlog() {
        let mut q = Cake::new(CakeConfig { diffserv: Diffserv::Besteffort, ..CakeConfig::default() });
        let mut rng = SimRng::stream(1, "t");
        let (mut ev, mut dropped) = (Vec::new(), Vec::new());
        for uid in 0..50 {
            q.enqueue(data(uid, 0, 1, 2, 0, 1500), Time::ZERO, &mut rng, &mut ev);
        }
        for _ in 0..3 {
            assert_eq!(q.dequeue(Time::ZERO, &mut dropped).unwrap().packet.flow, 0);
        }
        q.enqueue(data(1000, 1, 3, 2, 0, 100), Time::ZERO, &mut rng, &mut ev);
        assert_eq!(q.dequeue(Time::ZERO, &mut dropped).unwrap().packet.uid, 1000);
        q.check().unwrap();
    }

    #[test]
    fn set_associative_hashing_gives_colliding_flows_their_own_queues_within_a_set() {
        // Flows whose hashes all select the same queue: the first 8 get the 8 ways of its set,
        // the 9th shares.
        let probe = |sport: u16| Packet { src: 1, dst: 2, sport, dport: 80, size: 100, ..Packet::default() };
        let target = flow_hash(&probe(0)) as usize % QUEUES;
        let same: Vec<u16> = (0..u16::MAX).filter(|&s| flow_hash(&probe(s)) as usize % QUEUES == target).take(9).collect();
        assert_eq!(same.len(), 9);
        let mut q = Cake::new(CakeConfig { flowmode: FlowMode::Flows, diffserv: Diffserv::Besteffort, ..CakeConfig::default() });
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for (k, &s) in same.iter().enumerate() {
            q.enqueue(Packet { uid: k as u64, ..probe(s) }, Time::ZERO, &mut rng, &mut ev);
            assert_eq!(q.flow_states(), (k + 1).min(8), "after flow {k}");
        }
        let used: Vec<usize> = (0..QUEUES).filter(|&i| !q.tins[0].flows[i].q.is_empty()).collect();
        assert!(used.iter().all(|&i| i / WAYS == target / WAYS), "{used:?}");
        // Flowblind: one queue for everything.
        let mut q = Cake::new(CakeConfig { flowmode: FlowMode::Flowblind, ..CakeConfig::default() });
        for (k, &s) in same.iter().enumerate() {
            q.enqueue(Packet { uid: k as u64, ..probe(s) }, Time::ZERO, &mut rng, &mut ev);
        }
        assert_eq!(q.flow_states(), 1);
    }

    fn ack(uid: u64, conn: u16, ackno: u64, ece: bool, sack: u8) -> Packet {
        Packet {
            uid,
            size: 52,
            flow: conn as u32,
            src: 2,
            dst: 1,
            sport: 80,
            dport: 1000 + conn,
            proto: Proto::Tcp,
            tcp_flags: tcp_flags::ACK,
            ack: ackno,
            ece,
            sack_blocks: sack,
            ..Packet::default()
        }
    }

    fn filter_run(mode: AckFilter, acks: &[Packet]) -> (Vec<u64>, Vec<u64>) {
        let mut q = Cake::new(CakeConfig { ack_filter: mode, ..CakeConfig::default() });
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for p in acks {
            q.enqueue(*p, Time::ZERO, &mut rng, &mut ev);
        }
        let mut dropped = Vec::new();
        let left = std::iter::from_fn(|| q.dequeue(Time::ZERO, &mut dropped)).map(|d| d.packet.uid).collect();
        (ev.iter().map(|e| e.packet.uid).collect(), left)
    }

    #[test]
    fn the_ack_filter_drops_the_oldest_redundant_ack_and_keeps_ecn_echo_changes() {
        let three = [ack(1, 0, 1000, false, 0), ack(2, 0, 2000, false, 0), ack(3, 0, 3000, false, 0)];
        // ack-filter waits for two eligible ACKs, then drops the oldest.
        assert_eq!(filter_run(AckFilter::AckFilter, &three[..2]).0, Vec::<u64>::new());
        assert_eq!(filter_run(AckFilter::AckFilter, &three), (vec![1], vec![2, 3]));
        // Aggressive: one directly before the new ACK is enough.
        assert_eq!(filter_run(AckFilter::AckFilterAggressive, &three[..2]), (vec![1], vec![2]));
        // Off: nothing filtered.
        assert_eq!(filter_run(AckFilter::NoAckFilter, &three).0, Vec::<u64>::new());
        // An ECN-Echo change ends eligibility: ACK 1 carries news ACK 2 does not repeat.
        let ece = [ack(1, 0, 1000, true, 0), ack(2, 0, 2000, false, 0), ack(3, 0, 3000, true, 0)];
        assert_eq!(filter_run(AckFilter::AckFilter, &ece).0, Vec::<u64>::new());
        assert_eq!(filter_run(AckFilter::AckFilterAggressive, &ece).0, Vec::<u64>::new());
        // SACK: an ACK with blocks is not replaced by one without; one without is by one with.
        let s = [ack(1, 0, 1000, false, 2), ack(2, 0, 1000, false, 0)];
        assert_eq!(filter_run(AckFilter::AckFilterAggressive, &s).0, Vec::<u64>::new());
        let s = [ack(1, 0, 1000, false, 0), ack(2, 0, 1000, false, 1)];
        assert_eq!(filter_run(AckFilter::AckFilterAggressive, &s).0, vec![1]);
        // A duplicate ACK (same number, no SACK) is kept: the sender counts them.
        let d = [ack(1, 0, 1000, false, 0), ack(2, 0, 1000, false, 0)];
        assert_eq!(filter_run(AckFilter::AckFilterAggressive, &d).0, Vec::<u64>::new());
        // Data is never filtered, and other connections' ACKs are not touched.
        let mut with_data = ack(1, 0, 1000, false, 0);
        with_data.payload = 1448;
        let mixed = [with_data, ack(2, 1, 2000, false, 0), ack(3, 0, 3000, false, 0)];
        assert_eq!(filter_run(AckFilter::AckFilterAggressive, &mixed).0, Vec::<u64>::new());
    }

    #[test]
    fn the_ack_filter_never_drops_the_last_ack_of_a_flow() {
        // Four connections' ACKs in random order, ECN-Echo and SACK at random, drained at a
        // third of the arrival rate: every connection's newest ACK is delivered, every filtered
        // ACK was older than one still queued of its connection, and the filter did work.
        for mode in [AckFilter::AckFilter, AckFilter::AckFilterAggressive] {
            let mut q = Cake::new(CakeConfig { ack_filter: mode, flowmode: FlowMode::Flowblind, ..CakeConfig::default() });
            let mut rng = SimRng::stream(5, "t");
            let mut draw = SimRng::stream(6, "draws");
            let (mut ev, mut dropped) = (Vec::new(), Vec::new());
            let mut next_ack = [0u64; 4];
            let mut last_delivered = [0u64; 4];
            let mut filtered = 0;
            for uid in 0..20_000u64 {
                let c = (draw.next_u64() % 4) as usize;
                next_ack[c] += 1448;
                let r = draw.next_u64();
                let p = ack(uid, c as u16, next_ack[c], r.is_multiple_of(5), (r >> 8).is_multiple_of(4) as u8);
                ev.clear();
                assert_eq!(q.enqueue(p, Time::ZERO, &mut rng, &mut ev), Verdict::Enqueued);
                for e in &ev {
                    assert_ne!(e.packet.uid, uid, "the arrival itself was filtered");
                    assert_eq!(e.reason, DropReason::Policy);
                    assert!(e.packet.ack < next_ack[e.packet.flow as usize]);
                    filtered += 1;
                }
                if uid % 3 == 0 {
                    if let Some(d) = q.dequeue(Time::ZERO, &mut dropped) {
                        last_delivered[d.packet.flow as usize] = d.packet.ack;
                    }
                }
            }
            while let Some(d) = q.dequeue(Time::ZERO, &mut dropped) {
                last_delivered[d.packet.flow as usize] = d.packet.ack;
            }
            assert_eq!(last_delivered, next_ack, "{mode:?}");
            assert!(filtered > 1000, "{mode:?}: {filtered}");
            q.check().unwrap();
        }
    }

    #[test]
    fn memory_overflow_drops_from_the_fattest_queue_over_all_tins() {
        let mut q = Cake::new(CakeConfig { diffserv: Diffserv::Diffserv4, memlimit: Some(10_000), ..CakeConfig::default() });
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for uid in 0..6 {
            q.enqueue(data(uid, 0, 1, 2, 46, 1000), Time::ZERO, &mut rng, &mut ev);
        }
        for uid in 6..10 {
            q.enqueue(data(uid, 1, 3, 2, 0, 1000), Time::ZERO, &mut rng, &mut ev);
        }
        assert!(ev.is_empty());
        // One more byte over: the voice queue (6000 B) loses its head.
        assert_eq!(q.enqueue(data(10, 2, 4, 2, 0, 500), Time::ZERO, &mut rng, &mut ev), Verdict::Enqueued);
        assert_eq!(ev.iter().map(|e| (e.packet.uid, e.reason)).collect::<Vec<_>>(), vec![(0, DropReason::Evicted)]);
        // An arrival bigger than the memory is refused.
        ev.clear();
        assert_eq!(q.enqueue(data(11, 3, 5, 2, 0, 20_000), Time::ZERO, &mut rng, &mut ev), Verdict::Dropped(DropReason::Overflow));
        assert!(q.buffer_used <= 10_000);
        q.check().unwrap();
    }

    #[test]
    fn validation_names_the_field_and_the_range() {
        let d = CakeConfig::default;
        let err = |c: CakeConfig| c.validate().unwrap_err();
        assert!(err(CakeConfig { overhead: 257, ..d() }).starts_with("overhead: must be -64 to 256"));
        assert!(err(CakeConfig { overhead: -65, ..d() }).starts_with("overhead"));
        assert!(err(CakeConfig { mpu: 257, ..d() }).starts_with("mpu: must be 0 to 256"));
        assert!(err(CakeConfig { rtt_ns: 999, ..d() }).starts_with("rtt"));
        assert!(err(CakeConfig { rtt_ns: (MAX_TIME_US + 1) * 1000, ..d() }).starts_with("rtt"));
        assert!(err(CakeConfig { target_ns: Some(0), ..d() }).starts_with("target"));
        assert!(err(CakeConfig { memlimit: Some(0), ..d() }).starts_with("memlimit"));
        assert!(err(CakeConfig { memlimit: Some(1 << 32), ..d() }).starts_with("memlimit"));
        d().validate().unwrap();
        CakeConfig { overhead: -64, mpu: 256, rtt_ns: 1000, ..d() }.validate().unwrap();
    }
}
