#!/usr/bin/env python3
"""Run one TCP dumbbell scenario in ns-3 and print its measurements as JSON.

Reference point for aqmlab's own simulator: the same scenario spec is run in
both, and their wall times and bottleneck statistics are compared side by side.

Usage (with the Python of the venv made by benches/ns3_setup.sh):

    python benches/ns3_dumbbell.py SPEC.json      # or "-" to read stdin

Fairness of the timing comparison rests on two rules kept throughout:

* No Python runs per packet. Measurements come from C++ counters
  (QueueDisc::GetStats, PacketSink::GetTotalRx) read between pieces of
  Simulator::Run, which is stopped at every period boundary and resumed.
* The ns-3 model follows the spec and nothing else: every queue is an explicit
  queue disc of the given size (no ns-3 default FqCoDel left anywhere, device
  queues shrunk to one packet), TCP is NewReno with the spec's parameters (or
  the controller the spec's "tcp" key names; with its "ns3_defaults", ns-3's
  own TCP defaults in place of the spec's parameters: tcp_settings).

Optional spec keys beyond the shared ones: "rwnd_bytes" (receive buffer =
advertised window, default 4 MiB), "sack" (default true, see
use_sack), "ns3_routing" ("static" by default, or "nix" or "global"; see
routing_kind), "ns3_weak_es" (default false: routers and hosts run the strong
end-system model, faster and with the same results here; true keeps ns-3's
weak default, see configure_defaults),
"seed" (ns-3 RngRun, default 1), "tcp" (see tcp_settings), qdisc "wait" (RED,
default false) and
"record_sojourn" (default false: with it, the bottleneck queue disc's
SojournTime trace is logged by a C++ callback and the output gains the
sojourn-time p50/p99 of every period; see SOJOURN_CPP) and "trace_tcp" (default
false: with it, the output gains "tcp_trace", each flow's entries into fast
recovery and into loss recovery, and flow 0's congestion window at every
change; see TCP_TRACE_CPP).

Besides "droptail" and "red" the bottleneck qdisc can be "codel", "fq_codel",
"pie", "cobalt", "fq_pie" or "fq_cobalt" (ns-3's CoDelQueueDisc,
FqCoDelQueueDisc, PieQueueDisc, CobaltQueueDisc, FqPieQueueDisc and
FqCobaltQueueDisc), with the parameters listed in AQM_KEYS under aqmlab's
names; see aqm_attributes. "cobalt" may give "limit_bytes" instead of
"limit_packets" (ns-3's CobaltQueueDisc takes either unit; the flow-queue discs
count packets only).
Besides the measurements the output records cpu_run_s, wall_import_s (loading
the bindings, not part of setup), the settings above, drops by ns-3 drop reason
and other_queue_drops (drops anywhere but the bottleneck; should be 0).

Only the JSON result goes to stdout; progress and ns-3/cppyy noise go to stderr.
"""

import json
import sys
import time

try:
    import cppyy  # comes with the ns3 wheel; also used to compile ABORT_CPP
except ImportError:  # the spec checks (validate_spec, AQM_KEYS) are used without ns-3 by tests
    cppyy = None

NS3_VERSION = "3.44"
SINK_PORT = 9
# A send/receive buffer far above any window the scenarios reach, so that
# neither caps the congestion window (the ns-3 defaults, 128 KiB, would).
SOCKET_BUFFER_BYTES = 4 * 1024 * 1024

REQUIRED_KEYS = (
    "duration_s", "bottleneck_rate_bps", "bottleneck_delay_s", "access_rate_bps",
    "receiver_access_delay_s", "access_limit_packets", "reverse_limit_packets",
    "qdisc", "mss_bytes", "initial_cwnd_segments", "min_rto_s", "delayed_ack",
    "flows", "periods_s",
)
RED_KEYS = ("limit_packets", "min_th", "max_th", "w_q", "max_p", "gentle", "mean_pkt_size")
AQM_KEYS = {
    "codel": ("limit_packets", "target_s", "interval_s", "mtu", "ecn"),
    "fq_codel": ("limit_packets", "target_s", "interval_s", "mtu", "ecn", "flows", "quantum", "drop_batch"),
    "pie": ("limit_packets", "target_s", "t_update_s", "alpha", "beta", "max_burst_s", "ecn",
            "mark_ecn_threshold", "mtu", "derandomize", "estimator", "dq_threshold"),
    # limit_bytes may stand for limit_packets here (LIMIT_KEYS).
    "cobalt": ("limit_packets", "target_s", "interval_s", "p_inc", "p_dec", "blue_threshold_s", "ecn"),
    "fq_pie": ("limit_packets", "flows", "quantum", "drop_batch", "set_ways", "target_s", "t_update_s", "alpha",
               "beta", "max_burst_s", "ecn", "mark_ecn_threshold", "mtu", "derandomize", "estimator",
               "dq_threshold"),
    # blue_threshold_s null: no BLUE sojourn threshold (ns-3's Time::Max, as Linux CAKE). set_ways 0:
    # plain hash modulo flows; above 0, ns-3's set-associative hash with that many ways.
    "fq_cobalt": ("limit_packets", "flows", "quantum", "drop_batch", "set_ways", "target_s", "interval_s",
                  "p_inc", "p_dec", "blue_threshold_s", "ecn"),
}
# Kinds whose limit may be given in bytes instead of packets.
BYTE_LIMIT_KINDS = ("cobalt",)

# The spec's "tcp" key: congestion_control names one of ns-3's controllers.
TCP_CONTROLLERS = {"newreno": "ns3::TcpNewReno", "cubic": "ns3::TcpCubic", "bbr": "ns3::TcpBbr"}
TCP_KEYS = ("congestion_control", "ns3_defaults", "attributes")
# ns-3 3.44's own defaults of the socket settings the spec also carries (tcp-socket.cc,
# tcp-socket-base.cc; aqmlab's tcp.profile = "ns3" mirrors them, docs/tcp.md). With
# "ns3_defaults" these are not set but left to ns-3, so the spec must agree with them, or
# ns-3 would silently run something else than the spec says.
NS3_DEFAULT_SETTINGS = {"mss_bytes": 536, "initial_cwnd_segments": 10, "min_rto_s": 1.0, "delayed_ack": True,
                        "rwnd_bytes": 131072, "sack": True}

# ns-3's TcpSocketBase has no public abort: Close() and ShutdownSend() both
# transmit everything already written to the send buffer first, which with a
# 4 MB buffer would keep a "stopped" flow sending for many seconds. A flow's
# stop must end its sending at stop_s, so stop it the way ns-3 itself aborts a
# connection in Close() when unread data is pending: SendRST(), which sends a
# RST, cancels all timers and releases the endpoint. SendRST is protected; the
# derived struct only names it (&Derived::member is legal C++ and has type
# void (TcpSocketBase::*)()), it is never instantiated. The abort runs as a C++
# event, one per stopped flow, so it adds no Python to the event loop.
ABORT_CPP = r"""
#include "ns3/bulk-send-application.h"
#include "ns3/simulator.h"
#include "ns3/tcp-socket-base.h"

namespace aqmlab_bench {
struct TcpAbort : public ns3::TcpSocketBase {
    static void Abort(ns3::Ptr<ns3::Application> app) {
        auto bulk = ns3::DynamicCast<ns3::BulkSendApplication>(app);
        auto sock = ns3::DynamicCast<ns3::TcpSocketBase>(bulk->GetSocket());
        if (sock) {  // null if the application never started
            (ns3::PeekPointer(sock)->*(&TcpAbort::SendRST))();
        }
    }
};

void ScheduleAbort(ns3::Ptr<ns3::Application> app, int64_t at_ns) {
    ns3::Simulator::Schedule(ns3::NanoSeconds(at_ns), &TcpAbort::Abort, app);
}
}  // namespace aqmlab_bench
"""


# The bottleneck queue disc's SojournTime trace (fired at every dequeue with now
# minus the packet's enqueue time), logged in C++ so that no Python runs per
# packet; read once after the run.
SOJOURN_CPP = r"""
#include <vector>
#include "ns3/queue-disc.h"
#include "ns3/simulator.h"

namespace aqmlab_bench {
struct SojournLog {
    std::vector<int64_t> at_ns;
    std::vector<int64_t> sojourn_ns;
    void Add(ns3::Time sojourn) {
        at_ns.push_back(ns3::Simulator::Now().GetNanoSeconds());
        sojourn_ns.push_back(sojourn.GetNanoSeconds());
    }
    // ns-3 fires SojournTime when a packet leaves the internal queue, also for the packets
    // CoDel then drops at the head; aqmlab's queueing delay counts sent packets only, so a
    // drop after dequeue takes back the entry its dequeue logged at this same instant.
    void DropAfterDequeue(ns3::Ptr<const ns3::QueueDiscItem> item, const char*) {
        int64_t now = ns3::Simulator::Now().GetNanoSeconds();
        int64_t sojourn = now - item->GetTimeStamp().GetNanoSeconds();
        for (size_t i = at_ns.size(); i-- > 0 && at_ns[i] == now;) {
            if (sojourn_ns[i] == sojourn) {
                at_ns.erase(at_ns.begin() + i);
                sojourn_ns.erase(sojourn_ns.begin() + i);
                return;
            }
        }
    }
};
SojournLog g_sojourn;

void RecordSojourn(ns3::Ptr<ns3::QueueDisc> q) {
    q->TraceConnectWithoutContext("SojournTime", ns3::MakeCallback(&SojournLog::Add, &g_sojourn));
    q->TraceConnectWithoutContext("DropAfterDequeue", ns3::MakeCallback(&SojournLog::DropAfterDequeue, &g_sojourn));
}
}  // namespace aqmlab_bench
"""


# With the spec key "trace_tcp": true, each flow's congestion-state changes (entries into fast
# recovery and into loss recovery after a timeout, counted per flow) and flow 0's congestion
# window at every change, from TcpSocketBase's CongState and CongestionWindow trace sources.
# A BulkSend creates its socket when it starts, so the traces are connected by a C++ event
# just after each flow's start time.
TCP_TRACE_CPP = r"""
#include <string>
#include <vector>
#include "ns3/bulk-send-application.h"
#include "ns3/simulator.h"
#include "ns3/tcp-socket-base.h"
#include "ns3/tcp-socket-state.h"

namespace aqmlab_bench {
struct TcpTrace {
    std::vector<int64_t> recoveries;
    std::vector<int64_t> timeouts;
    std::vector<int64_t> cwnd_at_ns;
    std::vector<uint32_t> cwnd_bytes;
    void State(std::string flow, ns3::TcpSocketState::TcpCongState_t,
               ns3::TcpSocketState::TcpCongState_t now) {
        size_t i = std::stoul(flow);
        if (now == ns3::TcpSocketState::CA_RECOVERY) recoveries[i]++;
        if (now == ns3::TcpSocketState::CA_LOSS) timeouts[i]++;
    }
    void Cwnd(uint32_t, uint32_t now) {
        cwnd_at_ns.push_back(ns3::Simulator::Now().GetNanoSeconds());
        cwnd_bytes.push_back(now);
    }
};
TcpTrace g_tcp;

void ConnectTcpTrace(ns3::Ptr<ns3::Application> app, uint32_t flow) {
    auto bulk = ns3::DynamicCast<ns3::BulkSendApplication>(app);
    auto sock = bulk->GetSocket();
    if (!sock) return;
    sock->TraceConnect("CongState", std::to_string(flow), ns3::MakeCallback(&TcpTrace::State, &g_tcp));
    if (flow == 0) {
        sock->TraceConnectWithoutContext("CongestionWindow", ns3::MakeCallback(&TcpTrace::Cwnd, &g_tcp));
    }
}

void ScheduleTcpTrace(ns3::Ptr<ns3::Application> app, uint32_t flow, uint32_t n_flows, int64_t at_ns) {
    g_tcp.recoveries.resize(n_flows);
    g_tcp.timeouts.resize(n_flows);
    ns3::Simulator::Schedule(ns3::NanoSeconds(at_ns), &ConnectTcpTrace, app, flow);
}
}  // namespace aqmlab_bench
"""


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def load_spec(arg):
    """Read the scenario spec from a path, or from stdin for "-", and check it."""
    if arg == "-":
        spec = json.load(sys.stdin)
    else:
        with open(arg) as f:
            spec = json.load(f)
    validate_spec(spec)
    return spec


def validate_spec(spec):
    missing = [k for k in REQUIRED_KEYS if k not in spec]
    if missing:
        raise SystemExit(f"spec is missing keys: {', '.join(missing)}")
    kind = spec["qdisc"].get("kind")
    if kind not in ("droptail", "red", *AQM_KEYS):
        raise SystemExit(f"qdisc.kind must be one of droptail, red, {', '.join(AQM_KEYS)}; got {kind!r}")
    needed = RED_KEYS if kind == "red" else AQM_KEYS.get(kind, ("limit_packets",))
    if kind in BYTE_LIMIT_KINDS and "limit_bytes" in spec["qdisc"]:
        needed = tuple(k for k in needed if k != "limit_packets")
    missing = [k for k in needed if k not in spec["qdisc"]]
    if missing:
        raise SystemExit(f"qdisc is missing keys: {', '.join(missing)}")
    if not spec["flows"]:
        raise SystemExit("spec has no flows")
    for i, flow in enumerate(spec["flows"]):
        if not 0 <= flow["start_s"] < flow["stop_s"]:
            raise SystemExit(f"flow {i}: need 0 <= start_s < stop_s")
    for a, b in spec["periods_s"]:
        if not 0 <= a < b <= spec["duration_s"]:
            raise SystemExit(f"period [{a}, {b}] is not inside [0, duration_s]")
    if not isinstance(spec.get("ns3_weak_es", False), bool):
        raise SystemExit(f"ns3_weak_es must be true or false; got {spec['ns3_weak_es']!r}")
    tcp_settings(spec)


def tcp_settings(spec):
    """The spec's optional "tcp" key, checked: {"congestion_control": "newreno" | "cubic" |
    "bbr", "ns3_defaults": bool, "attributes": {name: value}}.

    Without the key (or with "ns3_defaults" false) TCP is set up as always: the controller
    (NewReno unless named) with TcpClassicRecovery and the spec's socket settings, timestamps
    off, 4 MiB send buffer (configure_defaults). With "ns3_defaults" true only the controller is
    chosen: recovery (TcpPrrRecovery), SACK, timestamps, segment size, initial window, delayed
    ACKs, RTO bounds and both socket buffers stay ns-3's defaults, so the spec's own values of
    those must equal NS3_DEFAULT_SETTINGS (refused otherwise). "attributes" sets further ns-3
    defaults by full name (Config::SetDefault, value as its string form), last: the switch for a
    cause test, e.g. {"ns3::TcpSocketBase::Timestamp": false, "ns3::TcpCubic::HyStart": false}.
    """
    tcp = spec.get("tcp", {})
    if not isinstance(tcp, dict):
        raise SystemExit('spec "tcp" must be an object')
    unknown = [k for k in tcp if k not in TCP_KEYS]
    if unknown:
        raise SystemExit(f"tcp has unknown keys {unknown}; allowed: {', '.join(TCP_KEYS)}")
    cc = tcp.get("congestion_control", "newreno")
    if cc not in TCP_CONTROLLERS:
        raise SystemExit(f"tcp.congestion_control must be one of {', '.join(TCP_CONTROLLERS)}; got {cc!r}")
    ns3_defaults = tcp.get("ns3_defaults", False)
    if not isinstance(ns3_defaults, bool):
        raise SystemExit(f"tcp.ns3_defaults must be true or false; got {ns3_defaults!r}")
    attributes = tcp.get("attributes", {})
    if not isinstance(attributes, dict) or not all(isinstance(k, str) and k.startswith("ns3::") for k in attributes):
        raise SystemExit('tcp.attributes must map full attribute names ("ns3::Class::Attribute") to values')
    if ns3_defaults:
        given = {"sack": use_sack(spec), "rwnd_bytes": spec.get("rwnd_bytes", SOCKET_BUFFER_BYTES),
                 **{k: spec[k] for k in NS3_DEFAULT_SETTINGS if k in spec}}
        wrong = [f"{k} = {given[k]!r} (ns-3: {v!r})" for k, v in NS3_DEFAULT_SETTINGS.items() if given[k] != v]
        if wrong:
            raise SystemExit(f"tcp.ns3_defaults leaves these to ns-3, whose defaults differ: {'; '.join(wrong)}")
    return {"congestion_control": cc, "ns3_defaults": ns3_defaults, "attributes": attributes}


def attribute_string(value):
    """An attribute value as ns-3 parses it from a string (booleans as true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def seconds_to_ns(t):
    return int(round(t * 1e9))


# --------------------------------------------------------------------------
# Model configuration
# --------------------------------------------------------------------------

def use_sack(spec):
    """SACK is on unless the spec says "sack": false.

    ns-3 3.44 has no real non-SACK NewReno: with Sack=false it emulates SACK
    from duplicate ACKs (TcpTxBuffer::AddRenoSack) on top of its RFC 6675
    machinery, and that emulation sends about three segments per two ACKs
    during partial-ACK recovery. The queue then overflows again inside every
    recovery, and a flow cycles through RTOs and spurious go-back-N
    retransmissions: a single flow on the 25 Mbps dumbbell gets ~7 Mbps with
    ~9% loss and a third of its packets duplicates, whatever the queue setup.
    With SACK the same flow fills the link with ~0 loss. SACK changes only how
    fast holes are repaired inside one recovery (one window decrease per loss
    event either way), so it is the closer stand-in for a correct NewReno.
    """
    return bool(spec.get("sack", True))


def configure_defaults(ns, spec):
    """Global attribute defaults; they apply to sockets created later by apps."""
    type_id = ns.TypeId.LookupByName
    cfg = ns.Config.SetDefault
    tcp = tcp_settings(spec)
    cfg("ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(type_id(TCP_CONTROLLERS[tcp["congestion_control"]])))
    if not tcp["ns3_defaults"]:
        # 3.44 defaults to TcpCubic with PRR recovery: without "ns3_defaults" the controller
        # (NewReno unless named) runs the classic RFC 6582 fast recovery instead.
        cfg("ns3::TcpL4Protocol::RecoveryType", ns.TypeIdValue(type_id("ns3::TcpClassicRecovery")))
        cfg("ns3::TcpSocket::SegmentSize", ns.UintegerValue(spec["mss_bytes"]))
        cfg("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(spec["initial_cwnd_segments"]))
        cfg("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2 if spec["delayed_ack"] else 1))
        cfg("ns3::TcpSocket::SndBufSize", ns.UintegerValue(SOCKET_BUFFER_BYTES))
        # The receive buffer is the advertised window: the spec's rwnd_bytes when given.
        cfg("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(int(spec.get("rwnd_bytes", SOCKET_BUFFER_BYTES))))
        cfg("ns3::TcpSocketBase::Sack", ns.BooleanValue(use_sack(spec)))
        # On by default in 3.44; the spec's TCP has no timestamps.
        cfg("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(False))
        cfg("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.Seconds(spec["min_rto_s"])))
    for name, value in tcp["attributes"].items():
        cfg(name, ns.StringValue(attribute_string(value)))
    # The strong end-system model (RFC 1122 3.3.4.2): a node takes a packet as its own only when
    # it is addressed to the interface it came in on. With the default weak model every packet a
    # router forwards is first compared with the addresses of all its interfaces, one per host on
    # its side (Ipv4L3Protocol::IsDestinationAddress): at 600 flows about a fifth of ns-3's time.
    # No packet here is addressed to a router, so every result is the same; it is the faster
    # configuration (benches/README.md, "Against ns-3's fastest configuration"). "ns3_weak_es":
    # true keeps ns-3's default.
    if not spec.get("ns3_weak_es", False):
        cfg("ns3::Ipv4::StrongEndSystemModel", ns.BooleanValue(True))
    # RED draws its drop decisions from ns-3's RNG; fix the stream.
    ns.RngSeedManager.SetSeed(1)
    ns.RngSeedManager.SetRun(int(spec.get("seed", 1)))


def queue_size(ns, packets):
    return ns.QueueSizeValue(ns.QueueSize(f"{int(packets)}p"))


def qdisc_limit(ns, q):
    """MaxSize of an AQM spec: limit_bytes if given (cobalt), else limit_packets."""
    if "limit_bytes" in q:
        return ns.QueueSizeValue(ns.QueueSize(f"{int(q['limit_bytes'])}B"))
    return queue_size(ns, q["limit_packets"])


def time_string(t_s):
    """A duration for ns-3's string-typed time attributes (FqCoDel's, FqCobalt's, Cobalt's)."""
    return f"{seconds_to_ns(t_s)}ns"


def blue_threshold(ns, t_s):
    """BLUE's sojourn threshold; None stands for none at all (Time::Max, as Linux CAKE)."""
    return ns.TimeValue(ns.Time.Max()) if t_s is None else seconds_value(ns, t_s)


def flow_hash_attributes(ns, q):
    """Queue count, overflow batch and hash of ns-3's FqPie and FqCobalt."""
    attrs = {"Flows": ns.UintegerValue(q["flows"]), "DropBatchSize": ns.UintegerValue(q["drop_batch"]),
             "EnableSetAssociativeHash": ns.BooleanValue(q["set_ways"] > 0)}
    if q["set_ways"] > 0:
        attrs["SetWays"] = ns.UintegerValue(q["set_ways"])
    return attrs


def fifo_helper(ns, limit_packets):
    tch = ns.TrafficControlHelper()
    tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", queue_size(ns, limit_packets))
    return tch


def seconds_value(ns, t):
    return ns.TimeValue(ns.NanoSeconds(seconds_to_ns(t)))


def aqm_attributes(ns, q):
    """ns-3 type and attributes of CoDel, FQ-CoDel, PIE, COBALT, FQ-PIE or FQ-COBALT with
    aqmlab's parameters."""
    common = {"MaxSize": qdisc_limit(ns, q), "UseEcn": ns.BooleanValue(bool(q["ecn"]))}
    if q["kind"] in ("cobalt", "fq_cobalt"):
        attrs = {
            **common,
            "Target": ns.StringValue(time_string(q["target_s"])),
            "Interval": ns.StringValue(time_string(q["interval_s"])),
            "Pdrop": ns.DoubleValue(0.0),  # BLUE's starting probability
            "Increment": ns.DoubleValue(q["p_inc"]),
            "Decrement": ns.DoubleValue(q["p_dec"]),
            "BlueThreshold": blue_threshold(ns, q["blue_threshold_s"]),
            # No CE-threshold marking, no L4S (ns-3's defaults, said here for completeness).
            "CeThreshold": ns.TimeValue(ns.Time.Max()),
            "UseL4s": ns.BooleanValue(False),
        }
        if q["kind"] == "cobalt":
            return "ns3::CobaltQueueDisc", attrs
        # The quantum is not an attribute (build_dumbbell sets it).
        return "ns3::FqCobaltQueueDisc", {**attrs, **flow_hash_attributes(ns, q)}
    if q["kind"] == "fq_pie":
        return "ns3::FqPieQueueDisc", {
            **common,
            **flow_hash_attributes(ns, q),
            # The controller's attributes; ns-3 3.44 does not pass MarkEcnThreshold on to the
            # per-flow PIE children (they keep PIE's 0.1).
            **pie_attributes(ns, q),
            "CeThreshold": ns.TimeValue(ns.Time.Max()),
            "UseL4s": ns.BooleanValue(False),
        }
    if q["kind"] == "codel":
        return "ns3::CoDelQueueDisc", {
            **common,
            "Target": seconds_value(ns, q["target_s"]),
            "Interval": seconds_value(ns, q["interval_s"]),
            # "queue > 1 MTU" test of RFC 8289 section 5.3.
            "MinBytes": ns.UintegerValue(q["mtu"]),
        }
    if q["kind"] == "fq_codel":
        # Interval and Target are string attributes in ns-3's FqCoDel (passed on to the
        # per-flow CoDel children).
        return "ns3::FqCoDelQueueDisc", {
            **common,
            "Target": ns.StringValue(f"{seconds_to_ns(q['target_s'])}ns"),
            "Interval": ns.StringValue(f"{seconds_to_ns(q['interval_s'])}ns"),
            # No MinBytes attribute here: the per-flow CoDel children keep CoDel's 1500 B. The
            # quantum is not an attribute either (build_dumbbell sets it).
            "Flows": ns.UintegerValue(q["flows"]),
            "DropBatchSize": ns.UintegerValue(q["drop_batch"]),
        }
    return "ns3::PieQueueDisc", {**common, **pie_attributes(ns, q)}


def pie_attributes(ns, q):
    """PIE's controller (RFC 8033) in the attribute names PieQueueDisc and FqPieQueueDisc share."""
    return {
        "QueueDelayReference": seconds_value(ns, q["target_s"]),
        "Tupdate": seconds_value(ns, q["t_update_s"]),
        "A": ns.DoubleValue(q["alpha"]),
        "B": ns.DoubleValue(q["beta"]),
        "MaxBurstAllowance": seconds_value(ns, q["max_burst_s"]),
        "MarkEcnThreshold": ns.DoubleValue(q["mark_ecn_threshold"]),
        "MeanPktSize": ns.UintegerValue(q["mtu"]),
        "UseDerandomization": ns.BooleanValue(bool(q["derandomize"])),
        "UseDequeueRateEstimator": ns.BooleanValue(q["estimator"] == "rate"),
        "DequeueThreshold": ns.UintegerValue(q["dq_threshold"]),
        # RFC 8033 section 5.5, always on in aqmlab (ns-3's default too).
        "UseCapDropAdjustment": ns.BooleanValue(True),
    }


def bottleneck_helper(ns, spec):
    """Helper for the discipline under test on R1's bottleneck device."""
    q = spec["qdisc"]
    if q["kind"] == "droptail":
        return fifo_helper(ns, q["limit_packets"])
    if q["kind"] in AQM_KEYS:
        type_name, attrs = aqm_attributes(ns, q)
        tch = ns.TrafficControlHelper()
        tch.SetRootQueueDisc(type_name, *[x for name, value in attrs.items() for x in (name, value)])
        return tch
    attrs = {
        "MaxSize": queue_size(ns, q["limit_packets"]),
        # Thresholds are in packets because MaxSize is in packets.
        "MinTh": ns.DoubleValue(q["min_th"]),
        "MaxTh": ns.DoubleValue(q["max_th"]),
        "QW": ns.DoubleValue(q["w_q"]),
        "LInterm": ns.DoubleValue(1.0 / q["max_p"]),
        "Gentle": ns.BooleanValue(bool(q["gentle"])),
        "MeanPktSize": ns.UintegerValue(q["mean_pkt_size"]),
        # Idle-time decay of the average counts the packets of MeanPktSize the
        # link could have sent while the queue was empty.
        "LinkBandwidth": ns.DataRateValue(ns.DataRate(int(spec["bottleneck_rate_bps"]))),
        "LinkDelay": ns.TimeValue(ns.Seconds(spec["bottleneck_delay_s"])),
        # ns-3's default Wait=true uses p_a = p_b / (2 - count*p_b) (ns-2's
        # "wait" option); the spec's RED is Floyd & Jacobson's
        # p_a = p_b / (1 - count*p_b) unless it says otherwise.
        "Wait": ns.BooleanValue(bool(q.get("wait", False))),
        # Plain RED: drop, never mark; none of the adaptive variants.
        "UseEcn": ns.BooleanValue(False),
        "ARED": ns.BooleanValue(False),
        "AdaptMaxP": ns.BooleanValue(False),
        "FengAdaptive": ns.BooleanValue(False),
        "NLRED": ns.BooleanValue(False),
    }
    args = [x for name, value in attrs.items() for x in (name, value)]
    tch = ns.TrafficControlHelper()
    # SetRootQueueDisc is a variadic C++ template; cppyy instantiates it for
    # the (name, value) pairs passed here.
    tch.SetRootQueueDisc("ns3::RedQueueDisc", *args)
    return tch


def p2p_helper(ns, rate_bps):
    """Point-to-point links whose device queue holds a single packet.

    The device queue sits below the queue disc; left at its default (100
    packets) it would hold most of the backlog and hide it from the discipline
    under test. With one packet the queue disc holds everything but the packet
    waiting behind the one on the wire.
    """
    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(int(rate_bps))))
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue("1p"))
    return p2p


# --------------------------------------------------------------------------
# Topology
# --------------------------------------------------------------------------

class Dumbbell:
    """Handles to the parts of the built model that are read after the run."""

    def __init__(self):
        self.bottleneck_qdisc = None  # Ptr<QueueDisc> on R1 -> R2
        self.other_qdiscs = []  # QueueDiscContainers of every other device
        self.sink_apps = None  # ApplicationContainer, one PacketSink per flow
        self.all_nodes = None


def routing_kind(spec):
    """"static" (default), "nix" or "global"; all three forward on the same, only, paths.

    "static" is ns-3's fastest configuration here, by the measurements quoted in
    benches/README.md (issue 22's): every host has a default route to its router, and each
    router one aggregate route to the far side's hosts (add_static_routes). A host's lookup
    scans two or three entries; a router's still scans its connected /30s, one per flow on its
    side (Ipv4StaticRouting::LookupStatic is a linear longest-prefix scan), but no more.
    Ipv4GlobalRouting looks routes up by a linear scan of a std::list holding every /30 of the
    model (~1200 at 600 flows) on every hop, hosts included; nix-vector routing computes a
    path once per destination and then forwards by interface index. The timed part is
    Simulator::Run alone in every case (run_until), so route set-up is not charged to ns-3
    either way.
    """
    kind = spec.get("ns3_routing", "static")
    if kind not in ("static", "nix", "global"):
        raise SystemExit(f"ns3_routing must be 'static', 'nix' or 'global', got {kind!r}")
    return kind


# Address plan: the bottleneck /30 in 10.0.0.0/16, one /30 per sender link in SENDER_NET and
# one per receiver link in RECEIVER_NET, so that each side is one aggregate route. A /16 holds
# 16,384 /30s, i.e. up to 16,384 flows.
BOTTLENECK_NET = "10.0.0.0"
SENDER_NET = "10.1.0.0"
RECEIVER_NET = "10.2.0.0"
SIDE_MASK = "255.255.0.0"
MAX_FLOWS = 2 ** 14


def add_static_routes(ns, r1, r2, senders, receivers, bn_devs, sender_links, receiver_links):
    """Default route on every host, one aggregate route per router (the "static" kind).

    Connected /30s are added by Ipv4StaticRouting itself when addresses are assigned; what is
    left is, per host, a default route to its router and, per router, the far side's /16 via
    the other router across the bottleneck.
    """
    helper = ns.Ipv4StaticRoutingHelper()

    def static_of(node):
        return helper.GetStaticRouting(node.GetObject[ns.Ipv4]())

    def interface_of(node, dev):
        return node.GetObject[ns.Ipv4]().GetInterfaceForDevice(dev)

    def address_of(node, dev):
        return node.GetObject[ns.Ipv4]().GetAddress(interface_of(node, dev), 0).GetLocal()

    side_mask = ns.Ipv4Mask(SIDE_MASK)
    r1_bn, r2_bn = bn_devs.Get(0), bn_devs.Get(1)
    static_of(r1).AddNetworkRouteTo(ns.Ipv4Address(RECEIVER_NET), side_mask,
                                    address_of(r2, r2_bn), interface_of(r1, r1_bn))
    static_of(r2).AddNetworkRouteTo(ns.Ipv4Address(SENDER_NET), side_mask,
                                    address_of(r1, r1_bn), interface_of(r2, r2_bn))
    for i, devs in enumerate(sender_links):  # devs: (sender, r1)
        host = senders.Get(i)
        static_of(host).SetDefaultRoute(address_of(r1, devs.Get(1)), interface_of(host, devs.Get(0)))
    for i, devs in enumerate(receiver_links):  # devs: (r2, receiver)
        host = receivers.Get(i)
        static_of(host).SetDefaultRoute(address_of(r2, devs.Get(0)), interface_of(host, devs.Get(1)))


def build_dumbbell(ns, spec):
    flows = spec["flows"]
    n = len(flows)
    net = Dumbbell()

    routers, senders, receivers = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    routers.Create(2)
    senders.Create(n)
    receivers.Create(n)
    r1, r2 = routers.Get(0), routers.Get(1)
    net.all_nodes = ns.NodeContainer(routers, senders, receivers)
    if n > MAX_FLOWS:
        raise SystemExit(f"at most {MAX_FLOWS} flows (the address plan), got {n}")
    stack = ns.InternetStackHelper()
    if routing_kind(spec) == "nix":
        stack.SetRoutingHelper(ns.Ipv4NixVectorHelper())
    elif routing_kind(spec) == "static":
        # Static routing alone: the default list routing would also consult an empty global
        # routing table on every lookup that static routing misses.
        stack.SetRoutingHelper(ns.Ipv4StaticRoutingHelper())
    stack.Install(net.all_nodes)

    # Links first, queue discs second, addresses last: Ipv4AddressHelper::Assign
    # installs the default FqCoDel on any device that has no root queue disc
    # yet, so every device must have ours before addresses are assigned.
    access = p2p_helper(ns, spec["access_rate_bps"])
    bottleneck = p2p_helper(ns, spec["bottleneck_rate_bps"])
    bottleneck.SetChannelAttribute("Delay", ns.TimeValue(ns.Seconds(spec["bottleneck_delay_s"])))
    bn_devs = bottleneck.Install(r1, r2)

    sender_links, receiver_links = [], []
    access_devs = ns.NetDeviceContainer()
    for i, flow in enumerate(flows):
        access.SetChannelAttribute("Delay", ns.TimeValue(ns.Seconds(flow["access_delay_s"])))
        s_devs = access.Install(senders.Get(i), r1)
        sender_links.append(s_devs)
        access_devs.Add(s_devs)
    access.SetChannelAttribute("Delay", ns.TimeValue(ns.Seconds(spec["receiver_access_delay_s"])))
    for i in range(n):
        d_devs = access.Install(r2, receivers.Get(i))
        receiver_links.append(d_devs)
        access_devs.Add(d_devs)

    net.bottleneck_qdisc = bottleneck_helper(ns, spec).Install(bn_devs.Get(0)).Get(0)
    red = ns.DynamicCast[ns.RedQueueDisc](net.bottleneck_qdisc)
    if red:
        # Pin RED's random stream: ns-3 otherwise numbers streams in object
        # creation order, so the drop sequence would shift with anything else
        # in the model (e.g. the routing protocol).
        red.AssignStreams(0)
    for fq_type in (ns.FqCoDelQueueDisc, ns.FqPieQueueDisc, ns.FqCobaltQueueDisc):
        fq = ns.DynamicCast[fq_type](net.bottleneck_qdisc)
        if fq:
            fq.SetQuantum(spec["qdisc"]["quantum"])  # else ns-3 takes the device MTU, 1500 B
    # The same, for PIE's and COBALT's drop coins. (The per-flow children of FqPie and
    # FqCobalt are made at their first packet and numbered by ns-3 in creation order: fixed
    # for a given spec and seed.)
    for coin_type in (ns.PieQueueDisc, ns.CobaltQueueDisc):
        single = ns.DynamicCast[coin_type](net.bottleneck_qdisc)
        if single:
            single.AssignStreams(0)
    if spec.get("record_sojourn", False):
        cppyy.gbl.aqmlab_bench.RecordSojourn(net.bottleneck_qdisc)
    net.other_qdiscs.append(fifo_helper(ns, spec["reverse_limit_packets"]).Install(bn_devs.Get(1)))
    net.other_qdiscs.append(fifo_helper(ns, spec["access_limit_packets"]).Install(access_devs))

    # One /30 per link, senders and receivers each in their own /16 (see SENDER_NET).
    link_mask = ns.Ipv4Mask("255.255.255.252")
    addresses = ns.Ipv4AddressHelper()
    addresses.SetBase(ns.Ipv4Address(BOTTLENECK_NET), link_mask)
    addresses.Assign(bn_devs)
    addresses.SetBase(ns.Ipv4Address(SENDER_NET), link_mask)
    for i, devs in enumerate(sender_links):
        if i:
            addresses.NewNetwork()
        addresses.Assign(devs)
    addresses.SetBase(ns.Ipv4Address(RECEIVER_NET), link_mask)
    receiver_addrs = []
    for i, devs in enumerate(receiver_links):
        if i:
            addresses.NewNetwork()
        receiver_addrs.append(addresses.Assign(devs).GetAddress(1))

    check_queue_discs(ns, net.all_nodes)
    if routing_kind(spec) == "global":
        ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    elif routing_kind(spec) == "static":
        add_static_routes(ns, r1, r2, senders, receivers, bn_devs, sender_links, receiver_links)
    net.sink_apps = install_apps(ns, spec, senders, receivers, receiver_addrs)
    return net


def check_queue_discs(ns, nodes):
    """Fail loudly if any device ended up with a queue disc we did not choose."""
    wanted = {"ns3::FifoQueueDisc", "ns3::RedQueueDisc", "ns3::CoDelQueueDisc", "ns3::FqCoDelQueueDisc",
              "ns3::PieQueueDisc", "ns3::CobaltQueueDisc", "ns3::FqPieQueueDisc", "ns3::FqCobaltQueueDisc"}
    for k in range(nodes.GetN()):
        node = nodes.Get(k)
        tc = node.GetObject[ns.TrafficControlLayer]()
        for d in range(node.GetNDevices()):
            dev = node.GetDevice(d)
            if ns.DynamicCast[ns.LoopbackNetDevice](dev):
                continue
            qd = tc.GetRootQueueDiscOnDevice(dev)
            name = qd.GetInstanceTypeId().GetName() if qd else "none"
            if name not in wanted:
                raise SystemExit(f"node {k} device {d} has queue disc {name}")
            dev_queue = ns.DynamicCast[ns.PointToPointNetDevice](dev).GetQueue()
            if dev_queue.GetMaxSize().GetValue() != 1:
                raise SystemExit(f"node {k} device {d} has a device queue above 1 packet")


def install_apps(ns, spec, senders, receivers, receiver_addrs):
    """A PacketSink on every D_i and an unlimited BulkSend on every S_i."""
    any_addr = ns.InetSocketAddress(ns.Ipv4Address.GetAny(), SINK_PORT).ConvertTo()
    sinks = ns.PacketSinkHelper("ns3::TcpSocketFactory", any_addr).Install(receivers)
    sinks.Start(ns.Seconds(0.0))

    duration_ns = seconds_to_ns(spec["duration_s"])
    if spec.get("trace_tcp", False):
        # Compiled only when asked for: it adds over a second to a run's start-up.
        cppyy.cppdef(TCP_TRACE_CPP)
    for i, flow in enumerate(spec["flows"]):
        remote = ns.InetSocketAddress(receiver_addrs[i], SINK_PORT).ConvertTo()
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", remote)
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(spec["mss_bytes"]))
        app = bulk.Install(senders.Get(i)).Get(0)
        app.SetStartTime(ns.Seconds(flow["start_s"]))
        # No Application stop time: BulkSend's StopApplication would Close()
        # the socket, which drains the send buffer (see ABORT_CPP).
        stop_ns = seconds_to_ns(flow["stop_s"])
        if stop_ns < duration_ns:
            cppyy.gbl.aqmlab_bench.ScheduleAbort(app, stop_ns)
        if spec.get("trace_tcp", False):
            # 1 ns after the start: the application's start event (scheduled earlier) has
            # created the socket by then.
            cppyy.gbl.aqmlab_bench.ScheduleTcpTrace(app, i, len(spec["flows"]), seconds_to_ns(flow["start_s"]) + 1)
    return sinks


def tcp_trace():
    """What TCP_TRACE_CPP recorded: per-flow counts, flow 0's window."""
    g = cppyy.gbl.aqmlab_bench.g_tcp
    return {"recoveries": [int(x) for x in g.recoveries], "timeouts": [int(x) for x in g.timeouts],
            "cwnd0_t_ns": [int(x) for x in g.cwnd_at_ns], "cwnd0_bytes": [int(x) for x in g.cwnd_bytes]}


# --------------------------------------------------------------------------
# Running and measuring
# --------------------------------------------------------------------------

def snapshot(qdisc):
    """Copy the counters now: GetStats() returns a live reference.

    Byte counts are QueueDiscItem sizes, which for IPv4 are the full IP packet
    (IP header + TCP header + payload, i.e. mss + 40 for a data segment),
    without the 2-byte PPP header the point-to-point device adds on the wire.
    """
    st = qdisc.GetStats()
    return {
        "arrivals": int(st.nTotalReceivedPackets),
        "drops": int(st.nTotalDroppedPackets),
        "dequeued_packets": int(st.nTotalDequeuedPackets),
        "dequeued_bytes": int(st.nTotalDequeuedBytes),
        # ns-3 counts a packet CoDel drops at the head as dequeued too (it left the internal
        # queue); utilization must not include it.
        "dropped_after_dequeue_bytes": int(st.nTotalDroppedBytesAfterDequeue),
    }


def drops_by_reason(qdisc):
    """ns-3's own drop reasons, e.g. RED's "Unforced drop" / "Forced drop"."""
    st = qdisc.GetStats()
    reasons = {}
    for per_reason in (st.nDroppedPacketsBeforeEnqueue, st.nDroppedPacketsAfterDequeue):
        for item in per_reason:
            reasons[str(item.first)] = reasons.get(str(item.first), 0) + int(item.second)
    return reasons


def run_until(ns, t_s):
    """Advance the simulation to t_s; return the (wall, CPU) seconds it took.

    Simulator::Stop takes a delay relative to Now(), not an absolute time.
    Events at exactly t_s run in the next piece, so a snapshot taken here
    covers [previous boundary, t_s).
    """
    delay_ns = seconds_to_ns(t_s) - ns.Simulator.Now().GetNanoSeconds()
    if delay_ns <= 0:
        return 0.0, 0.0
    ns.Simulator.Stop(ns.NanoSeconds(delay_ns))
    t0, c0 = time.perf_counter(), time.process_time()
    ns.Simulator.Run()
    return time.perf_counter() - t0, time.process_time() - c0


def sink_bytes(ns, sinks):
    """Bytes each flow's PacketSink has received so far (payload), in flow order."""
    return [int(ns.DynamicCast[ns.PacketSink](sinks.Get(i)).GetTotalRx()) for i in range(sinks.GetN())]


def run_and_measure(ns, spec, qdisc, sinks=None):
    """Run in pieces ending at every period boundary; snapshot at each (the bottleneck's
    counters, and with sinks each flow's received bytes)."""
    ends = {float(t) for period in spec["periods_s"] for t in period}
    boundaries = sorted(ends | {float(spec["duration_s"])})
    snaps = {0.0: snapshot(qdisc)}
    rx = {0.0: sink_bytes(ns, sinks)} if sinks is not None else {}
    wall_run = cpu_run = 0.0
    for t in boundaries:
        if t == 0.0:
            continue
        wall, cpu = run_until(ns, t)
        wall_run += wall
        cpu_run += cpu
        snaps[t] = snapshot(qdisc)
        if sinks is not None:
            rx[t] = sink_bytes(ns, sinks)
        log(f"t={t:g}s  wall_run={wall_run:.2f}s  cpu_run={cpu_run:.2f}s  {snaps[t]}")
    return snaps, wall_run, cpu_run, rx


def period_rows(spec, snaps, rx=None):
    rows = []
    for a, b in spec["periods_s"]:
        start, end = snaps[float(a)], snaps[float(b)]
        d = {k: end[k] - start[k] for k in end}
        flow_rx = ({"flow_rx_bytes": [y - x for x, y in zip(rx[float(a)], rx[float(b)], strict=True)]}
                   if rx else {})
        rows.append({
            "start_s": a,
            "end_s": b,
            "utilization_mbps": (d["dequeued_bytes"] - d["dropped_after_dequeue_bytes"]) * 8 / (b - a) / 1e6,
            "drop_rate_pct": 100.0 * d["drops"] / d["arrivals"] if d["arrivals"] else 0.0,
            "arrivals": d["arrivals"],
            "drops": d["drops"],
            "dequeued_bytes": d["dequeued_bytes"],
            **flow_rx,
        })
    return rows


def percentile(sorted_values, q):
    """numpy's default (linear) percentile of a sorted list; the ns-3 venv has no numpy."""
    if not sorted_values:
        return float("nan")
    x = (len(sorted_values) - 1) * q / 100
    lo = int(x)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (x - lo)


def sojourn_percentiles(spec):
    """p50 and p99 of the logged sojourn times per period, in ms (record_sojourn)."""
    log_ = cppyy.gbl.aqmlab_bench.g_sojourn
    pairs = list(zip(log_.at_ns, log_.sojourn_ns, strict=True))
    out = []
    for a, b in spec["periods_s"]:
        lo, hi = seconds_to_ns(a), seconds_to_ns(b)
        sel = sorted(s / 1e6 for t, s in pairs if lo <= t < hi)
        out.append({"start_s": a, "end_s": b, "qdelay_p50_ms": percentile(sel, 50),
                    "qdelay_p99_ms": percentile(sel, 99)})
    return out


def other_queue_drops(net):
    """Drops outside the bottleneck: should be 0 if the spec's limits are sane."""
    total = 0
    for container in net.other_qdiscs:
        for k in range(container.GetN()):
            total += int(container.Get(k).GetStats().nTotalDroppedPackets)
    return total


def import_ns3():
    """Import the bindings; cppyy loads every ns-3 library here (slow)."""
    from ns import ns

    cppyy.cppdef(ABORT_CPP)
    cppyy.cppdef(SOJOURN_CPP)
    return ns


def main(argv):
    if len(argv) != 2:
        raise SystemExit("usage: ns3_dumbbell.py SPEC.json|-")
    spec = load_spec(argv[1])

    t0 = time.perf_counter()
    ns = import_ns3()
    wall_import = time.perf_counter() - t0

    t0 = time.perf_counter()
    configure_defaults(ns, spec)
    net = build_dumbbell(ns, spec)
    wall_setup = time.perf_counter() - t0
    log(f"import {wall_import:.1f}s, setup {wall_setup:.1f}s, {len(spec['flows'])} flows")

    # CPU time is reported beside wall time because the machines this runs on
    # are shared; it is the steadier of the two under load.
    snaps, wall_run, cpu_run, rx = run_and_measure(ns, spec, net.bottleneck_qdisc, net.sink_apps)
    end = snaps[float(spec["duration_s"])]
    result = {
        "ns3_version": NS3_VERSION,
        # Which ns-3 ran: the wheel's bindings or a source build's (bench_tcp_dumbbell --ns3-build).
        "ns3_bindings": getattr(sys.modules.get("ns"), "__file__", None),
        "n_flows": len(spec["flows"]),
        "tcp_sack": use_sack(spec),
        "routing": routing_kind(spec),
        "wall_import_s": wall_import,
        "wall_setup_s": wall_setup,
        "wall_run_s": wall_run,
        "cpu_run_s": cpu_run,
        "tcp": tcp_settings(spec),
        "periods": period_rows(spec, snaps, rx),
        "total": {**end, "drops_by_reason": drops_by_reason(net.bottleneck_qdisc)},
        "sink_bytes": sink_bytes(ns, net.sink_apps),
        "other_queue_drops": other_queue_drops(net),
    }
    if spec.get("record_sojourn", False):
        result["sojourn"] = sojourn_percentiles(spec)
    if spec.get("trace_tcp", False):
        result["tcp_trace"] = tcp_trace()
    ns.Simulator.Destroy()
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv)
