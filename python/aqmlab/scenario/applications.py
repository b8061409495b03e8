"""Applications: one model per `flows.app.kind`, TCP's settings, the `App` union and
`APP_MODELS`."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from aqmlab.scenario.base import U32, Strict
from aqmlab.units import Duration, Rate, Size, written

# The simulator's congestion controllers and the Linux module `aqmlab emulate` loads for each.
KERNEL_CONGESTION_CONTROL = {"newreno": "reno", "cubic": "cubic", "bbr": "bbr"}

#: What `tcp.profile = "linux"` sets, each value a current Linux kernel's default (a field the
#: scenario writes itself wins). CUBIC (net.ipv4.tcp_congestion_control), SACK (tcp_sack = 1),
#: RACK-TLP (tcp_recovery = 1, tcp_early_retrans = 3), PRR (tcp_cwnd_reduction), Limited Transmit,
#: an initial window of 10 (TCP_INIT_CWND, RFC 6928), a minimum RTO of 200 ms (TCP_RTO_MIN) and
#: the retransmission timer restarted by each retransmission of the head
#: (`rto_restart_on_head_retransmit`, tcp_xmit_retransmit_queue; in the profile since 2026-11-28),
#: delayed ACKs, CUBIC's own HyStart (tcp_cubic.c, hystart = 1), growth by acknowledged segments
#: (tcp_slow_start, tcp_cong_avoid_ai: `byte_counting`, RFC 3465 with L = 2, docs/tcp.md says why
#: not unlimited), the receiver's window autotuned as a kernel's is (`rwnd_autotuning`: about
#: 64 kB at first, grown by DRS as the application reads, out-of-order data taking its room; in
#: the profile since 2026-11-28, docs/fidelity.md, "The receive window", measures it) up to a
#: ceiling of 6 MB (`rwnd`: net.ipv4.tcp_rmem's third value as kernels long shipped it, 6291456;
#: this machine's 6.18 has 32 MiB; 6 MB binds no case the project runs: in the deepest fidelity
#: case cwnd stays below 2.9 MB, docs/tcp.md), and
#: the three-way handshake, whose RTT sample seeds the RTO (`handshake`, bulk flows: stream and ABR
#: clients open from the receiving end, which is not modelled, so the profile leaves it off for
#: them), an RTT sample from every ACK as timestamps give it (`rtt_sample_every_ack`,
#: tcp_ack_update_rtt, net.ipv4.tcp_timestamps = 1) and the RTO from Linux's estimator
#: (`rto_estimator = "linux"`, tcp_rtt_estimator: RTO = SRTT + max(deviation term, 200 ms)), these
#: three in the profile since 2026-11-28 (docs/fidelity.md, "RTT samples and the RTO"),
#: CUBIC's Reno-friendly estimate growing by alpha_cubic throughout (`cubic_alpha_to_one = false`:
#: tcp_cubic.c's tcp_friendliness adds one segment per 8 / beta_scale windows acknowledged and
#: never switches to RFC 9438 section 4.3's one per RTT; in the profile since 2026-11-27,
#: docs/fidelity.md measures it). The delayed-ACK timer: Linux adapts it between TCP_DELACK_MIN
#: (40 ms) and TCP_DELACK_MAX (200 ms) starting from TCP_ATO_MIN (40 ms); the simulator has one
#: fixed timer, set to the 40 ms a kernel starts from. Not set: F-RTO (Linux runs RFC 5682's
#: SACK-enhanced variant, the simulator only the basic one), pacing (a kernel paces CUBIC only
#: under the fq qdisc; it paces BBR by itself, and `pacing` is on for bbr whatever the profile),
#: HyStart++ (`hystart`: RFC 9406, which a kernel does not run), and the quick-ACK start
#: (`quickack`: a kernel runs it, its hook on the autotuned window's growth included, but beside
#: the autotuned window it adds fidelity misses, 43 -> 47 of 216: it halves the one-flow cubic
#: gap and moves the 8-flow FQ-CoDel cells away from the kernel, why not explained;
#: docs/fidelity.md, "The receive window"). The delivery-rate estimator runs for the records (`rate_estimator`: a kernel
#: estimates for every controller, tcpi_delivery_rate). The profile keeps CUBIC: BBR is chosen by
#: `congestion_control = "bbr"`.
#: TSO autosizing (`tso_autosize`, tcp_tso_autosize: a paced sender's segments leave in skbs of about
#: 1 ms of data, two segments at least; it shapes only paced senders, so BBR here; in the profile
#: since 2026-11-29, docs/fidelity.md, "BBR's policer mode", measures it).
#: The send buffer (`send_buffer`: net.ipv4.tcp_wmem's third value as kernels ship it, 4194304;
#: it holds a bulk sender under about 2,000 segments in flight, the one-flow deep-buffer cell's
#: slow start; in the profile since 2026-11-29, docs/fidelity.md, "The send buffer", measures it).
#: The window's growth only while it limits sending (`cwnd_limited_growth`, tcp_is_cwnd_limited:
#: an application-limited sender keeps the window it uses; in the profile since 2026-11-29; it
#: changes no fidelity cell, where every flow is bulk, and the head-to-head stream's table).
#: docs/fidelity.md measures the profile against the kernel, before and after it took RACK-TLP,
#: CUBIC's HyStart, byte counting and the 6 MB window, CUBIC's constant alpha, and the autotuned
#: receive window.
LINUX_PROFILE: dict[str, Any] = {
    "congestion_control": "cubic", "sack": True, "rack": True, "prr": True, "limited_transmit": True,
    "initial_cwnd": 10, "min_rto": "200ms", "delayed_ack": True, "delayed_ack_timeout": "40ms",
    "cubic_hystart": True, "cubic_alpha_to_one": False, "byte_counting": True, "rwnd": "6291456B",
    "rwnd_autotuning": True, "rto_restart_on_head_retransmit": True, "rate_estimator": True,
    "handshake": True, "rtt_sample_every_ack": True, "rto_estimator": "linux", "tso_autosize": True,
    "send_buffer": "4194304B", "cwnd_limited_growth": True,
}

#: Profile values that hold only where the rest of the stack can run them, each a test of the
#: scenario's TCP with the profile applied: a kernel runs tcp_cubic.c's HyStart inside cubic alone
#: (so `congestion_control = "bbr"` with the linux profile leaves it off, as does a scenario's own
#: `hystart = true`, one slow-start exit at a time); RACK-TLP reads SACK blocks (a scenario's
#: `sack = false` leaves it off, as a kernel without SACK falls back to duplicate ACKs). A value
#: the scenario writes itself is never dropped: a contradiction it writes is refused by `_sane`.
PROFILE_CONDITIONS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "cubic_hystart": lambda tcp: tcp.get("congestion_control") == "cubic" and tcp.get("hystart") is not True,
    "rack": lambda tcp: tcp.get("sack") is True,
    # ns-3's PRR variant is a kind of PRR: a scenario's own `prr = false` leaves it off.
    "prr_variant": lambda tcp: tcp.get("prr") is True,
    # A rule of CUBIC's Reno-friendly region: with another controller it stays unset.
    "cubic_alpha_to_one": lambda tcp: tcp.get("congestion_control") == "cubic",
}

#: What `tcp.profile = "ns3"` sets: ns-3 3.44's defaults (nsnam/ns-3-dev-git, tag ns-3.44,
#: src/internet/model/), so that a scenario can be cross-checked against an ns-3 run left at its
#: defaults (a field the scenario writes itself wins):
#: - congestion_control cubic: TcpL4Protocol::SocketType = TcpCubic (tcp-l4-protocol.cc);
#: - sack: TcpSocketBase::Sack = true (tcp-socket-base.cc);
#: - limited_transmit: TcpSocketBase::LimitedTransmit = true (tcp-socket-base.cc);
#: - prr with prr_variant ns3: TcpL4Protocol::RecoveryType = TcpPrrRecovery (tcp-l4-protocol.cc),
#:   whose rules (tcp-prr-recovery.cc, as tcp-socket-base.cc calls it) differ from Linux's
#:   PRR-SSRB: RecoverFS the pipe, one segment added to DeliveredData on every duplicate ACK
#:   even with SACK (ns-3 fixed both after 3.44, its issues #1351 and #1350), PRR-CRB below
#:   ssthresh with SSRB's segment only on an ACK of a retransmission; crates/aqmlab-sim's
#:   tcp/prr.rs lists them all;
#: - cubic_alpha_to_one false: TcpCubic::Update (tcp-cubic.cc) grows its Reno-friendly window by
#:   one segment per 8 / beta_scale windows of acknowledged segments throughout, never switching
#:   to RFC 9438 section 4.3's one segment per RTT past cwnd_prior;
#: - initial_cwnd 10: TcpSocket::InitialCwnd = 10 (tcp-socket.cc);
#: - delayed_ack with a 200 ms timeout: TcpSocket::DelAckCount = 2 (ACK every second segment) and
#:   TcpSocket::DelAckTimeout = 0.2 s (tcp-socket.cc);
#: - min_rto 1 s: TcpSocketBase::MinRto = 1 s (tcp-socket-base.cc);
#: - initial_rto 1 s: ns-3 computes the RTO before any sample as RttEstimator::InitialEstimation
#:   (1 s, rtt-estimator.cc) + max(ClockGranularity, 4 x variation 0), floored by MinRto, so 1.001
#:   s; but its data segments are timed after the handshake's RTT sample (RTO = max(3 RTT, 1 s)),
#:   which the simulator, without a handshake, cannot take: 1 s is what ns-3's first data
#:   segments get on any path under 333 ms;
#: - clock_granularity 1 ms: TcpSocketBase::ClockGranularity (tcp-socket-base.cc); max_rto 60 s:
#:   ReTxTimeout doubles the RTO up to 60 s (tcp-socket-base.cc); both as the rfc defaults;
#: - mss 536: TcpSocket::SegmentSize = 536 (tcp-socket.cc), payload bytes as aqmlab's mss (ns-3
#:   does not derive it from the device MTU; a script that sets SegmentSize should set mss);
#: - rwnd 131072 B: TcpSocket::RcvBufSize = 131072 (tcp-socket.cc) bounds the advertised window
#:   (TcpSocket::SndBufSize, also 131072, bounds the sender's unacknowledged data the same way).
#: Left at the rfc values because ns-3 does the same: ecn off (TcpSocketBase::UseEcn = Off), no
#: pacing (TcpSocketState::EnablePacing = false), no F-RTO and no RACK-TLP (ns-3 3.44 has
#: neither), no HyStart++. Not expressible, so not set: TcpCubic's own HyStart (the classic ACK
#: train and delay heuristics, TcpCubic::HyStart = true, HyStartDetect = both, from 16 segments,
#: delay bounds 4 ms to 1 s: tcp-cubic.cc) and the rest of its Linux-style cnt arithmetic (TcpCubic
#: follows tcp_cubic.c, the simulator RFC 9438); the timestamps option (TcpSocketBase::Timestamp = true:
#: 12 more header bytes per segment and an RTT sample from every ACK; the simulator's headers are
#: 40 bytes and it times one segment per RTT); window scaling; the three-way handshake
#: (ConnTimeout 3 s, ConnCount 6) and DataRetries = 6 (ns-3 gives up, the simulator never does).
NS3_PROFILE: dict[str, Any] = {
    "congestion_control": "cubic", "sack": True, "prr": True, "prr_variant": "ns3", "cubic_alpha_to_one": False,
    "limited_transmit": True,
    "initial_cwnd": 10, "delayed_ack": True, "delayed_ack_timeout": "200ms", "min_rto": "1s",
    "initial_rto": "1s", "clock_granularity": "1ms", "max_rto": "60s", "mss": "536B", "rwnd": "131072B",
}

#: The profiles besides "rfc" (which sets nothing: the field defaults below are its values).
PROFILES: dict[str, dict[str, Any]] = {"linux": LINUX_PROFILE, "ns3": NS3_PROFILE}


class Tcp(Strict):
    """TCP with NewReno, CUBIC, DCTCP, BBR, BBRv3 or Prague window rules (RFC 5681, RFC 6582, RFC 6298;
    RFC 9438; RFC 8257; Linux tcp_bbr.c; draft-ietf-ccwg-bbr; draft-briscoe-iccrg-prague-congestion-control)."""

    profile: Literal["rfc", "linux", "ns3"] = Field(
        "rfc", description="a whole stack at once; a field set here too wins over it. rfc: the RFC textbook "
                           "defaults below (every paper reproduction uses them); linux: a current kernel's "
                           "defaults as far as modelled: cubic, sack, rack, prr, limited_transmit, initial_cwnd "
                           "10, min_rto 200ms, delayed_ack with a 40ms delayed_ack_timeout, cubic_hystart (with "
                           "cubic only, and not with hystart), cubic_alpha_to_one false (with cubic), "
                           "byte_counting, rwnd 6291456B with rwnd_autotuning, send_buffer 4194304B, "
                           "cwnd_limited_growth, rto_restart_on_head_retransmit, "
                           "handshake (bulk flows only), rtt_sample_every_ack, rto_estimator linux, "
                           "tso_autosize (it shapes paced senders only: bbr, bbr3, prague), rate_estimator "
                           "(pacing stays off, as a kernel without fq runs cubic; rack only with sack). Not yet "
                           "modelled, so absent "
                           "from linux: SACK-enhanced F-RTO; quickack (the quick-ACK start, measured to add "
                           "fidelity misses beside rwnd_autotuning, docs/fidelity.md) stays off. ns3: ns-3 3.44's "
                           "defaults: cubic, sack, prr with prr_variant ns3, cubic_alpha_to_one false (with cubic), "
                           "limited_transmit, initial_cwnd 10, delayed_ack with a 200ms timeout, "
                           "min_rto 1s, initial_rto 1s, mss 536B, rwnd 131072B (docs/tcp.md lists what ns-3 "
                           "does that aqmlab cannot)")
    mss: Size = Field(written("1460B"), description="payload per segment; packets are mss + 40 B")
    initial_cwnd: int = Field(2, ge=1, le=100, json_schema_extra={"unit": "segments"},
                              description="initial congestion window")
    initial_rto: Duration = Field(written("1s"), description="RTO before the first RTT sample (RFC 6298 2.1)")
    min_rto: Duration = Field(written("1s"), description="lower bound on the RTO (RFC 6298 2.4)")
    max_rto: Duration = Field(written("60s"), description="upper bound on the RTO")
    clock_granularity: Duration = Field(written("1ms"), description="RFC 6298's G")
    delayed_ack: bool = Field(False, description="ACK every second segment or after the timeout")
    delayed_ack_timeout: Duration = Field(written("200ms"), description="delayed-ACK timer")
    rwnd: Size = Field(written("1MB"), description="receiver window (caps cwnd)")
    rwnd_autotuning: bool = Field(False, description="the receiver advertises a Linux receiver's window: about "
                                                     "64 kB at first (65160 B at a 1448 B mss), grown as the "
                                                     "application reads by receive-buffer autotuning (tcp_input.c's "
                                                     "DRS: about twice, then up to six times, what arrived in the "
                                                     "last receiver RTT), up to rwnd; within that the offered "
                                                     "window grows by two bytes per byte received, out of order "
                                                     "too with sack (tcp_data_queue_ofo); the sender keeps the latest "
                                                     "ACK's window. Off: rwnd from the first segment. Simulator "
                                                     "only (the emulated kernel always autotunes)")
    send_buffer: Size | None = Field(
        None, description="the sender's socket buffer in bytes of Linux socket memory (net.ipv4.tcp_wmem's third "
                          "value): the application writes 256 KiB whenever at most two thirds of it is queued "
                          "(sent and unacknowledged plus unsent; 1.037 bytes of memory per byte of payload), so "
                          "a window above about 2,000 segments of 1448 B in 4 MiB is not filled. At least 4096 B "
                          "(tcp_wmem's floor); unset or 0 B: unlimited (a kernel has no such setting). Emulated "
                          "as net.ipv4.tcp_wmem's third value")
    cwnd_limited_growth: bool = Field(
        False, description="the window grows only while it limits sending, as Linux's tcp_is_cwnd_limited gates "
                           "reno's and cubic's growth: in slow start up to twice the most outstanding, in "
                           "congestion avoidance only in a window that cwnd filled, so a sender held back by its "
                           "application, send_buffer or the receiver's window keeps the window it uses (bbr, "
                           "bbr3 set theirs). Off: every ACK grows it, up to the receiver's window. Simulator "
                           "only (the emulated kernel always grows so)")
    ecn: bool = Field(False, description="negotiate ECN (RFC 3168)")
    sack: bool = Field(False, description="selective acknowledgments (RFC 2018, RFC 6675 recovery)")
    frto: bool = Field(False, description="F-RTO spurious-timeout detection (RFC 5682)")
    prr: bool = Field(False, description="Proportional Rate Reduction in SACK recovery (RFC 6937, PRR-SSRB as "
                                         "Linux runs it); no effect without sack")
    prr_variant: Literal["linux", "ns3"] = Field(
        "linux", description="whose PRR runs with prr: linux (RFC 6937's PRR-SSRB, RecoverFS the window before "
                             "the reduction, as Linux's tcp_cwnd_reduction) or ns3 (ns-3 3.44's TcpPrrRecovery: "
                             "RecoverFS the pipe, one segment added to DeliveredData on every duplicate ACK even "
                             "with SACK, PRR-CRB below ssthresh with one more segment only on an ACK of a "
                             "retransmission); ns3 needs prr; simulator only")
    limited_transmit: bool = Field(False, description="one new segment on each of the first two duplicate ACKs "
                                                      "(RFC 3042)")
    rack: bool = Field(False, description="RACK-TLP (RFC 8985): time-based loss detection from SACK with a "
                                          "reordering window of min_RTT/4 and its reorder timer, and tail loss "
                                          "probes after 2 SRTT; needs sack = true; simulator only (the "
                                          "emulated kernel runs its own RACK-TLP whenever sack is on)")
    rto_restart_on_head_retransmit: bool = Field(
        False, description="each retransmission of the first unacknowledged segment restarts the retransmission "
                           "timer a full RTO ahead, as Linux's tcp_xmit_retransmit_queue does (not while RACK's "
                           "reorder timer is armed); off: RFC 6298's restart on ACKs of new data alone, so a "
                           "recovery whose retransmissions are lost times out one RTO after SND.UNA last moved; "
                           "simulator only (the emulated kernel always restarts)")
    rtt_sample_every_ack: bool = Field(
        False, description="an RTT sample from every ACK that newly acknowledges data, as Linux takes it with TCP "
                           "timestamps (tcp_ack_update_rtt: the oldest newly acknowledged segment never "
                           "retransmitted, else the oldest newly SACKed one, else the echoed timestamp of the "
                           "segment that moved the receive edge, in whole ms), each sample clearing the RTO's "
                           "backoff; off: RFC 6298's one timed segment a round with Karn's rule, so a sender whose "
                           "retransmissions keep being acknowledged keeps a backed-off RTO; simulator only (the "
                           "emulated kernel always does this)")
    rto_estimator: Literal["rfc6298", "linux"] = Field(
        "rfc6298", description="how RTT samples become the RTO: rfc6298 (RTO = max(SRTT + 4 RTTVAR, min_rto)) or linux "
                               "(tcp_rtt_estimator: RTO = SRTT + RTTVAR, RTTVAR the round trip's largest 4 x deviation "
                               "and never below min_rto, so RTO >= SRTT + min_rto); simulator only (the emulated "
                               "kernel runs its own)")
    hystart: bool = Field(False, description="HyStart++ (RFC 9406) in the initial slow start: leaves exponential "
                                             "growth when the RTT rises, for five rounds of Conservative Slow "
                                             "Start at a quarter of the growth, then congestion avoidance; not "
                                             "with bbr or bbr3; simulator only (the emulated kernel's cubic runs its "
                                             "own HyStart)")
    cubic_alpha_to_one: bool | None = Field(
        None, description="RFC 9438 section 4.3's switch of CUBIC's Reno-friendly estimate from alpha_cubic (0.53 "
                          "segment per RTT) to 1 once it reaches the window before the last reduction. Unset: on, "
                          "as the RFC says; false keeps alpha_cubic, as Linux's tcp_cubic.c and ns-3's TcpCubic do "
                          "(the linux and ns3 profiles set false); cubic only; simulator only")
    rate_estimator: bool = Field(False, description="run the delivery-rate estimator (draft-cheng-iccrg-delivery-"
                                                    "rate-estimation, Linux's tcp_rate.c) with every congestion "
                                                    "control, so that flow_samples.delivery_rate_bps reads as a "
                                                    "kernel's tcpi_delivery_rate; records only, it changes no "
                                                    "sending; bbr and bbr3 run it whatever this says; simulator "
                                                    "only (the emulated kernel always estimates)")
    cubic_hystart: bool = Field(False, description="CUBIC's own HyStart as Linux's tcp_cubic.c runs it by default "
                                                   "(Ha and Rhee): from 16 segments, an ACK train longer than "
                                                   "half the minimum RTT or a round's RTT 4-16 ms above it ends "
                                                   "slow start with ssthresh = cwnd, in every slow start; cubic "
                                                   "only, not with hystart; simulator only (the emulated kernel's "
                                                   "cubic runs it)")
    byte_counting: bool = Field(False, description="grow the window by the bytes each ACK acknowledges "
                                                   "(RFC 3465, L = 2), as Linux grows behind delayed ACKs: "
                                                   "slow start up to two segments per ACK, newreno's congestion "
                                                   "avoidance SMSS x acked / cwnd; off: RFC 5681's per-ACK rules, "
                                                   "half as fast per RTT behind delayed ACKs; cubic's congestion "
                                                   "avoidance counts bytes either way; bbr ignores it; simulator "
                                                   "only (the emulated kernel always counts)")
    quickack: bool = Field(False, description="Linux's quick-ACK start at the receiver: an immediate ACK for "
                                              "every segment while a budget of min(rwnd / (2 mss), 16) ACKs "
                                              "lasts (2 when that is 0; every ACK sent spends one), granted "
                                              "at the first data, after in-order data pauses longer than "
                                              "min_rto (the receiver's RTO) and on data already received; "
                                              "with rwnd_autotuning, also the next ACK after each segment that "
                                              "grows the window (tcp_grow_window); "
                                              "needs delayed_ack = true; simulator only (the emulated kernel "
                                              "always runs it)")
    bbr_ack_aggregation: bool | None = Field(
        None, description="BBR v1's ACK-aggregation allowance (tcp_bbr.c bbr_update_ack_aggregation): the most "
                          "data ACKed beyond the bandwidth estimate in one epoch over the last 5-10 rounds "
                          "(at most cwnd and 100 ms of data at the estimate) is added to the cwnd target once "
                          "startup found the pipe full. Unset: on, as in the kernel; false switches it off to "
                          "test what it does; bbr only; simulator only (the emulated kernel's bbr runs it)")
    bbr_policer_detection: bool | None = Field(
        None, description="BBR v1's long-term bandwidth sampling that detects token-bucket policers (tcp_bbr.c "
                          "bbr_lt_bw_sampling): from the first loss, two intervals of 4-16 rounds each losing "
                          "at least 50/256 of what they deliver, with delivery rates within 1/8 or 4 kbit/s, "
                          "make BBR pace at their mean rate with gain 1 for 48 rounds. Unset: on, as in the "
                          "kernel; false switches it off to test what it does; bbr only; simulator only (the "
                          "emulated kernel's bbr runs it)")
    prague_ecn_fallback: bool = Field(False, description="prague only: detect a classic (RFC 3168) ECN AQM at "
                                                         "the bottleneck from the variation of the RTT and the "
                                                         "queue depth, and there reduce by at least 0.3125 on CE "
                                                         "(about CUBIC's 0.3) instead of alpha / 2 "
                                                         "(draft-briscoe-iccrg-prague-congestion-control's "
                                                         "fall-back to Reno-friendly, as the L4S team's Linux "
                                                         "tcp_prague.c with prague_ecn_fallback = 1; off by "
                                                         "default, as that module parameter); simulator only")
    prague_rtt_scaling: Literal["none", "rate", "scalable", "additive"] = Field(
        "rate", description="prague only: the RTT-independence heuristic after 500 rounds of congestion "
                            "avoidance, Linux tcp_prague.c's prague_rtt_scaling with its 25 ms target T: rate "
                            "(Linux's default: (R/T)^2 segments per round below T, 1 above), scalable ((R0/8 + "
                            "min(max(R - R1, 0), R0)) R / R0^2 segments per round, R0 = 16.384 ms, R1 = "
                            "1.536 ms, not capped at 1), additive (rate's rule with the target T + R) or none "
                            "(Reno's 1 segment per round); simulator only")
    handshake: bool = Field(False, description="open the connection with the three-way handshake before any data "
                                               "(RFC 9293 section 3.5): SYN and SYN-ACK on the wire (52 B each), the "
                                               "SYN retransmitted at initial_rto doubling up to max_rto, given up "
                                               "after 6 retransmissions (Linux's tcp_syn_retries), the first RTT "
                                               "sample from an unretransmitted SYN, one segment to start with after "
                                               "a lost SYN or SYN-ACK (RFC 5681 section 3.1); bulk flows only; off: "
                                               "data from the flow's start; the emulator's kernel always opens with "
                                               "one")
    ssthresh_basis: Literal["flight_size", "pipe", "cwnd"] = Field(
        "flight_size", description="what SACK-based fast retransmit reduces from (RFC 6675 section 5 step "
                                   "(4.2)): flight_size (the RFC's FlightSize), pipe (the RFC's pipe: SACKed and "
                                   "lost segments not counted, as ns-3 3.44's EnterRecovery hands its controller "
                                   "BytesInFlight(); its NewReno halves it, its CUBIC uses cwnd) or cwnd (the "
                                   "window, as Linux's reno halves it, tcp_reno_ssthresh: above FlightSize when a "
                                   "send buffer or receiver window held the sender back; for cubic, tcp_cubic.c's "
                                   "rule: with sack cubic reduces from at most cwnd, so the other bases count only "
                                   "where less is outstanding); pipe and cwnd need sack; simulator only")
    congestion_control: Literal["newreno", "cubic", "dctcp", "bbr", "bbr3", "prague"] = Field(
        "newreno", description="window rules: newreno (RFC 5681), cubic (RFC 9438), dctcp (RFC 8257, "
                               "needs ecn = true; simulator only), bbr (BBR v1 as Linux's tcp_bbr.c, "
                               "paced), bbr3 (BBRv3 after draft-ietf-ccwg-bbr-06: loss-bounded inflight, "
                               "four-phase ProbeBW, ProbeRTT every 5 s; paced; no ECN response, so "
                               "refuses ecn = true; simulator only) or prague (TCP Prague, "
                               "draft-briscoe-iccrg-prague-congestion-control "
                               "as the L4S team's Linux tcp_prague.c runs it by default: DCTCP's response, "
                               "RTT independence with a 25 ms target, paced, classic on loss; needs ecn = "
                               "true and ecn_codepoint = ect1; simulator only); emulated as kernel reno, "
                               "cubic or bbr")
    pacing: bool | None = Field(
        None, description="sender pacing as Linux paces inside TCP: segments leave no faster than the "
                          "pacing rate (bbr's gain x bandwidth; prague's 100 % of cwnd/srtt after slow "
                          "start; for the others 200 % of cwnd/srtt in slow start, 120 % after). Unset: on "
                          "for bbr, bbr3 and prague, off for the others; bbr, bbr3 and prague refuse false")
    tso_autosize: bool = Field(
        False, description="a paced sender sends the segments of one Linux skb back to back and paces the bursts "
                           "(TSO autosizing, tcp_tso_autosize: about 1 ms of data at the pacing rate, at least "
                           "2 segments, bbr and bbr3 1 below 1.2 Mbit/s; the skb's gap is its length over the "
                           "rate), as the kernel's frames leave a veth or a NIC with segmentation offload. Off: "
                           "each segment paced alone. Changes nothing without pacing; simulator only (the "
                           "emulated kernel always builds its skbs so)")
    ecn_codepoint: Literal["ect0", "ect1"] = Field(
        "ect0", description="ECN codepoint of data segments when ecn is on: ect0 (RFC 3168) or ect1, "
                            "which makes the flow L4S traffic (RFC 9331) that DualPI2 puts in its L "
                            "queue (RFC 9331 expects a scalable controller such as dctcp or prague there; "
                            "prague needs ect1)")

    @model_validator(mode="before")
    @classmethod
    def _apply_profile(cls, data: Any) -> Any:
        """Fill the fields the scenario leaves unset from the profile (an unknown profile is left
        for the field's own check, which names the allowed values)."""
        if isinstance(data, dict) and isinstance(data.get("profile"), str) and data["profile"] in PROFILES:
            profile = PROFILES[data["profile"]]
            merged = {**profile, **data}
            for field, holds in PROFILE_CONDITIONS.items():
                if field in profile and field not in data and not holds(merged):
                    del merged[field]
            return merged
        return data

    @model_validator(mode="after")
    def _sane(self) -> Tcp:
        """mss positive; min_rto <= max_rto; dctcp, prague and ect1 need ecn; prague needs ect1; bbr, bbr3
        and prague need pacing; bbr3 refuses ecn; rack and ssthresh_basis = pipe or cwnd need sack; hystart not with
        bbr or bbr3; prr_variant ns3 needs prr; cubic_hystart and cubic_alpha_to_one with cubic alone; quickack
        needs delayed_ack; bbr_ack_aggregation and bbr_policer_detection with bbr alone; prague_ecn_fallback and a
        prague_rtt_scaling other than rate only with prague."""
        if self.mss <= 0:
            raise ValueError("mss must be positive")
        if self.min_rto > self.max_rto:
            raise ValueError("min_rto must not exceed max_rto")
        if self.congestion_control == "dctcp" and not self.ecn:
            raise ValueError("congestion_control: dctcp needs ecn = true (RFC 8257 reacts to ECN marks)")
        if self.congestion_control == "prague":
            if not self.ecn:
                raise ValueError("congestion_control: prague needs ecn = true (it reacts to ECN marks)")
            if self.ecn_codepoint != "ect1":
                raise ValueError("ecn_codepoint: prague needs ect1 (the L4S identifier, RFC 9331); allowed with "
                                 "prague: ect1")
            if self.pacing is False:
                raise ValueError("pacing: prague needs pacing (Prague paces its window); allowed with prague: "
                                 "true or unset")
        if self.prague_ecn_fallback and self.congestion_control != "prague":
            raise ValueError("prague_ecn_fallback: the classic ECN fall-back is Prague's: needs congestion_control "
                             f"= prague; allowed with {self.congestion_control}: false")
        if self.prague_rtt_scaling != "rate" and self.congestion_control != "prague":
            raise ValueError("prague_rtt_scaling: the RTT-independence heuristics are Prague's: needs "
                             f"congestion_control = prague; allowed with {self.congestion_control}: rate")
        if self.congestion_control == "bbr3" and self.ecn:
            raise ValueError("ecn: bbr3 has no ECN response (draft-ietf-ccwg-bbr section 3.7 requires one with "
                             "ECN); allowed with bbr3: false")
        if self.congestion_control in ("bbr", "bbr3") and self.pacing is False:
            raise ValueError(f"pacing: {self.congestion_control} needs pacing (BBR sends at its pacing rate); "
                             f"allowed with {self.congestion_control}: true or unset")
        if self.ecn_codepoint == "ect1" and not self.ecn:
            raise ValueError("ecn_codepoint: ect1 needs ecn = true (without ECN segments are Not-ECT)")
        if self.rack and not self.sack:
            raise ValueError("rack: rack = true needs sack = true (RFC 8985 detects losses from SACK); "
                             "allowed without sack: false")
        if self.prr_variant != "linux" and not self.prr:
            raise ValueError(f"prr_variant: {self.prr_variant} is a variant of PRR: needs prr = true; allowed "
                             "without prr: linux")
        if self.ssthresh_basis != "flight_size" and not self.sack:
            raise ValueError(f"ssthresh_basis: {self.ssthresh_basis} needs sack = true (it sets RFC 6675 SACK "
                             "recovery's reduction); allowed without sack: flight_size")
        if self.send_buffer is not None and 0 < self.send_buffer < 4096:
            raise ValueError(f"send_buffer: {self.send_buffer} B is below Linux's smallest send buffer; allowed: "
                             "at least 4096 B, or 0 B (unlimited)")
        if self.hystart and self.congestion_control in ("bbr", "bbr3"):
            raise ValueError(f"hystart: {self.congestion_control} has its own startup and no slow start for "
                             f"HyStart++ to change; allowed with {self.congestion_control}: false")
        if self.cubic_hystart and self.congestion_control != "cubic":
            raise ValueError("cubic_hystart: CUBIC's own HyStart needs congestion_control = cubic; allowed with "
                             f"{self.congestion_control}: false")
        if self.cubic_hystart and self.hystart:
            raise ValueError("cubic_hystart: one slow-start exit at a time: not with hystart = true (HyStart++); "
                             "allowed with hystart: false")
        if self.cubic_alpha_to_one is not None and self.congestion_control != "cubic":
            raise ValueError("cubic_alpha_to_one: a rule of CUBIC's Reno-friendly region that only congestion_control "
                             f"= cubic runs; allowed with {self.congestion_control}: unset")
        for part in ("bbr_ack_aggregation", "bbr_policer_detection"):
            if getattr(self, part) is not None and self.congestion_control != "bbr":
                raise ValueError(f"{part}: a part of BBR v1 (tcp_bbr.c) that only congestion_control = bbr runs; "
                                 f"allowed with {self.congestion_control}: unset")
        if self.quickack and not self.delayed_ack:
            raise ValueError("quickack: the quick-ACK start belongs to a delayed-ACK receiver: needs delayed_ack = "
                             "true; allowed without delayed_ack: false")
        return self


    def paced(self) -> bool:
        """Whether the sender paces: as set, else only for bbr, bbr3 and prague."""
        return self.pacing if self.pacing is not None else self.congestion_control in ("bbr", "bbr3", "prague")


def _without_profile_handshake(data: Any) -> Any:
    """A stream or ABR group's TCP with a profile that opens with a handshake: the handshake left
    off (as PROFILE_CONDITIONS leaves off what a stack cannot run), since these clients open from
    the receiving end, which is not modelled; a handshake the scenario writes itself is refused."""
    if isinstance(data, dict) and isinstance(data.get("tcp"), dict):
        tcp = data["tcp"]
        profile = PROFILES.get(tcp.get("profile")) if isinstance(tcp.get("profile"), str) else None
        if profile is not None and profile.get("handshake") and "handshake" not in tcp:
            return {**data, "tcp": {**tcp, "handshake": False}}
    return data


#: The handshake is built for the bulk sender, whose client is also the data's sender; an ABR or
#: streaming client opens its connection from the receiving end, which is not modelled.
_NO_HANDSHAKE = ("tcp.handshake: only bulk flows open with a handshake (not built for {kind}: its client opens the "
                 "connection from the receiving end); allowed: false")


class Bulk(Strict):
    """FTP-like bulk transfer with unlimited data over TCP."""

    kind: Literal["bulk"]
    tcp: Tcp = Field(default_factory=Tcp, description="TCP settings")


class Cbr(Strict):
    """Constant-bit-rate UDP, the simplest unresponsive source."""

    kind: Literal["cbr"]
    rate: Rate = Field(..., description="sending rate at the IP layer")
    packet_size: Size = Field(written("1000B"), description="IP packet size")
    ecn: Literal["not-ect", "ect0", "ect1"] = Field(
        "not-ect", description="ECN codepoint of every packet: ect1 makes the flow L4S traffic (RFC 9331), which "
                              "DualPI2 puts in its L queue; the receiver sends no feedback")

    @model_validator(mode="after")
    def _sane(self) -> Cbr:
        """rate positive; packet_size at least 28 B (IPv4 + UDP headers)."""
        if self.rate <= 0:
            raise ValueError("rate must be positive")
        if self.packet_size < 28:
            raise ValueError("packet_size must be at least 28 B (IPv4 + UDP headers)")
        return self


class FrameSizesByType(Strict):
    """Mean frame size per MPEG frame type."""

    I: Size = Field(written("11KB"), description="mean I-frame size")  # noqa: E741 - the key as files spell it
    P: Size = Field(written("8KB"), description="mean P-frame size")
    B: Size = Field(written("2KB"), description="mean B-frame size")


class FrameClasses(Strict):
    """Class mark (0 = unclassified, 1 = dropped first .. 3 = dropped last) per MPEG frame type."""

    I: int = Field(3, ge=0, le=3, description="class of I-frame packets")  # noqa: E741 - as files spell it
    P: int = Field(2, ge=0, le=3, description="class of P-frame packets")
    B: int = Field(1, ge=0, le=3, description="class of B-frame packets")


class Mpeg(Strict):
    """MPEG-1 video over UDP (the Rb-RIO paper's MPEG_APP): GOP frames fragmented into packets
    marked by frame type; unresponsive, or responsive by skipping B then P frames at the sender."""

    kind: Literal["mpeg"]
    gop: str = Field("IBBPBBPBB", description="GOP pattern of I, P, B starting with I")
    fps: float = Field(30.0, gt=0, le=1000, json_schema_extra={"unit": "frames/s"}, description="frames per second")
    frame_sizes: FrameSizesByType = Field(default_factory=FrameSizesByType, description="mean size per type")
    size_model: Literal["constant", "normal"] = Field("constant", description="constant means or normal spread")
    size_cv: float = Field(0.0, ge=0, description="coefficient of variation for size_model = normal")
    trace: str | None = Field(None, description="file of frame sizes in bytes, one per line, in GOP order")
    max_packet: Size = Field(written("1000B"), description="largest IP packet of a fragment")
    classes: FrameClasses = Field(default_factory=FrameClasses, description="class mark per frame type")
    responsive: bool = Field(False, description="scale down on receiver-reported loss")
    feedback_interval: Duration | None = Field(None, description="receiver report period; default: base RTT")
    up_after: int = Field(2, ge=1, lt=U32, json_schema_extra={"unit": "reports"},
                          description="loss-free reports before scaling up one level")

    @model_validator(mode="after")
    def _sane(self) -> Mpeg:
        """gop of I, P, B starting with I; max_packet above 28 B; frame sizes positive."""
        bad = sorted(set(self.gop) - set("IPB"))
        if bad:
            raise ValueError(f"gop {self.gop!r}: letters must be I, P or B, found {', '.join(bad)}")
        if not self.gop.startswith("I"):
            raise ValueError(f"gop {self.gop!r} must start with I")
        if self.max_packet <= 28:
            raise ValueError("max_packet must exceed the 28 B of IP and UDP headers")
        if min(self.frame_sizes.I, self.frame_sizes.P, self.frame_sizes.B) <= 0:
            raise ValueError("frame_sizes must be positive")
        return self

    def largest_frame(self) -> int:
        s = self.frame_sizes
        return max(s.I, s.P, s.B)

    def packets_per_frame(self, size: int) -> int:
        return -(-size // (self.max_packet - 28))


class _CallRateControl(Strict):
    """What every rate controller of the real-time call takes beside its own rates and feedback
    spacing: the synthetic encoder that follows the target (RFC 8593's statistical model;
    docs/video.md) and when a frame is late (aqmlab-model `app/call_config.rs`). Subclasses add
    start_rate, min_rate, max_rate and feedback_interval with their own defaults."""

    start_rate: int
    min_rate: int
    max_rate: int
    feedback_interval: int
    key_interval: int = Field(300, ge=0, lt=U32, json_schema_extra={"unit": "frames"},
                              description="frames from one I-frame to the next (0: only the first)")
    key_ratio: float = Field(4.0, ge=1.0, le=100.0, description="I-frame size over the other frames'")
    fluctuation: float = Field(0.15, ge=0.0, lt=1.0,
                               description="scale of the Laplacian frame-size fluctuation (RFC 8593), cut at +-0.5")
    reaction_lag: Duration = Field(written("100ms"), description="encoder's delay in following a new target "
                                                                  "(RFC 8593's tau_v)")
    deadline: Duration = Field(written("150ms"), description="a frame complete later than this after capture is "
                                                             "late (ITU-T G.114's 150 ms one-way)")

    @model_validator(mode="after")
    def _sane(self) -> _CallRateControl:
        """0 < min_rate <= start_rate <= max_rate; feedback_interval and deadline positive."""
        if not 0 < self.min_rate <= self.start_rate <= self.max_rate:
            raise ValueError("need 0 < min_rate <= start_rate <= max_rate")
        if self.feedback_interval <= 0 or self.deadline <= 0:
            raise ValueError("feedback_interval and deadline must be positive")
        return self

    def engine_config(self) -> dict[str, Any]:
        """The settings as the engines take them (aqmlab-model `CallConfig`)."""
        return {
            "start_rate_bps": self.start_rate, "min_rate_bps": self.min_rate, "max_rate_bps": self.max_rate,
            "feedback_interval_ns": self.feedback_interval, "key_interval": self.key_interval,
            "key_ratio": self.key_ratio, "fluctuation": self.fluctuation, "reaction_lag_ns": self.reaction_lag,
            "deadline_ns": self.deadline,
        }


class Gcc(_CallRateControl):
    """Google Congestion Control (draft-ietf-rmcat-gcc-02) for a video flow, and the synthetic
    encoder that follows its target rate (RFC 8593's statistical model; docs/video.md)."""

    start_rate: Rate = Field(written("300kbps"), description="target rate at the start (WebRTC's default)")
    min_rate: Rate = Field(written("100kbps"), description="lowest target rate")
    max_rate: Rate = Field(written("6Mbps"), description="highest target rate")
    feedback_interval: Duration = Field(
        written("50ms"), description="spacing of the receiver's transport-wide feedback reports (WebRTC's "
                                     "shortest; 50-250 ms there)")


class Scream(_CallRateControl):
    """SCReAMv2 (draft-johansson-ccwg-rfc8298bis-screamv2) for a video flow, with the same synthetic
    encoder as GCC's (docs/video.md, "Real-time video: SCReAM"). The flow's `ecn` sets its mode: ect1
    is L4S (back-off in proportion to the marked fraction), ect0 classic ECN, not-ect loss and delay."""

    start_rate: Rate = Field(written("300kbps"), description="target rate before the first feedback")
    min_rate: Rate = Field(written("100kbps"), description="lowest target rate (the draft's TARGET_BITRATE_MIN)")
    max_rate: Rate = Field(written("6Mbps"), description="highest target rate (the draft's TARGET_BITRATE_MAX)")
    feedback_interval: Duration = Field(
        written("40ms"), description="spacing of the receiver's RFC 8888-sized feedback reports (the draft's "
                                     "tested maximum interval)")


class Video(Strict):
    """VBR video over RTP/UDP: frames at a frame rate, sizes around rate/fps, packets up to the MTU."""

    kind: Literal["video"]
    rate: Rate = Field(written("5Mbps"), description="mean payload rate")
    fps: float = Field(25.0, gt=0, le=1000, json_schema_extra={"unit": "frames/s"}, description="frames per second")
    size_cv: float = Field(0.5, ge=0, description="coefficient of variation of frame sizes (log-normal)")
    trace: str | None = Field(None, description="file of frame sizes in bytes, one per line (overrides rate)")
    mtu: Size = Field(written("1500B"), description="largest IP packet")
    burst: bool = Field(False,
                        description="send a frame's packets back to back instead of paced over the frame interval")
    shaping: Duration = Field(written("0s"), description="pace the frames of each window of this length at one rate, "
                                                 "as VLC's TS muxer (200 ms there); 0 = pace each frame alone")
    jitter: Duration = Field(written("0s"), description="source jitter: s.d. of a half-normal delay per packet")
    ecn: Literal["not-ect", "ect0", "ect1"] = Field(
        "not-ect", description="ECN codepoint of every packet: ect1 makes the flow L4S traffic (RFC 9331), which "
                              "DualPI2 puts in its L queue; the receiver sends no feedback")
    congestion_control: Literal["none", "gcc", "scream"] = Field(
        "none", description="none: the open-loop source above; gcc: Google Congestion Control with transport-wide "
                            "feedback on the reverse path, the encoder following its target rate (rate, size_cv "
                            "unused; no trace, burst, shaping or jitter; simulator only); scream: SCReAMv2 in its "
                            "place, with the same encoder and feedback (ECN marks included)")
    gcc: Gcc = Field(default_factory=Gcc, description="GCC and encoder settings (with congestion_control = gcc)")
    scream: Scream = Field(default_factory=Scream,
                           description="SCReAM and encoder settings (with congestion_control = scream)")

    @model_validator(mode="after")
    def _sane(self) -> Video:
        """mtu above 40 B; rate positive unless a trace is given; burst and shaping exclude each other;
        gcc settings only with congestion_control = gcc, and then no trace, burst, shaping or jitter."""
        if self.mtu <= 40:
            raise ValueError("mtu must exceed the 40 B of IP, UDP and RTP headers")
        for cc in ("gcc", "scream"):
            if self.congestion_control != cc and cc in self.model_fields_set:
                raise ValueError(f"{cc} settings are given but congestion_control = {self.congestion_control}: set "
                                 f"congestion_control = {cc} or leave {cc} out")
        cc = self.congestion_control
        if cc != "none" and (self.trace or self.burst or self.shaping > 0 or self.jitter > 0):
            raise ValueError(f"congestion_control = {cc} sets frame sizes and pacing itself: trace, burst, shaping "
                             "and jitter are not allowed with it")
        if self.rate <= 0 and not self.trace:
            raise ValueError("rate must be positive")
        if self.burst and self.shaping > 0:
            raise ValueError("burst and shaping exclude each other: a shaped stream is paced")
        return self

    def is_call(self) -> bool:
        """A real-time call (GCC or SCReAM), not the open-loop source."""
        return self.congestion_control in ("gcc", "scream")


class Audio(Strict):
    """Audio over RTP/UDP: one packet per period, sizes around rate*period."""

    kind: Literal["audio"]
    rate: Rate = Field(written("64kbps"), description="mean rate at the IP layer")
    period: Duration = Field(written("20ms"), description="packet interval")
    size_cv: float = Field(0.1, ge=0, description="coefficient of variation of packet sizes (VBR)")
    jitter: Duration = Field(written("0s"), description="source jitter: s.d. of a half-normal delay per packet")
    ecn: Literal["not-ect", "ect0", "ect1"] = Field(
        "not-ect", description="ECN codepoint of every packet: ect1 makes the flow L4S traffic (RFC 9331), which "
                              "DualPI2 puts in its L queue; the receiver sends no feedback")

    @model_validator(mode="after")
    def _sane(self) -> Audio:
        """rate and period positive; rate x period above 40 B of headers."""
        if self.rate <= 0 or self.period <= 0:
            raise ValueError("rate and period must be positive")
        if self.rate / 8 * self.period / 1e9 <= 40:
            raise ValueError("rate x period must exceed the 40 B of headers per packet")
        return self


class Poisson(Strict):
    """Fixed-size packets with exponential gaps at a peak rate (the SQF paper's section IV)."""

    kind: Literal["poisson"]
    rate: Rate = Field(..., description="mean rate lambda at the IP layer")
    packet_size: Size = Field(written("1250B"), description="IP packet size")
    jitter: Duration = Field(written("0s"), description="source jitter: s.d. of a half-normal delay per packet")
    ecn: Literal["not-ect", "ect0", "ect1"] = Field(
        "not-ect", description="ECN codepoint of every packet: ect1 makes the flow L4S traffic (RFC 9331), which "
                              "DualPI2 puts in its L queue; the receiver sends no feedback")

    @model_validator(mode="after")
    def _sane(self) -> Poisson:
        """rate positive; packet_size above 40 B."""
        if self.rate <= 0:
            raise ValueError("rate must be positive")
        if self.packet_size <= 40:
            raise ValueError("packet_size must exceed the 40 B of headers")
        return self


class Stream(Strict):
    """Adaptive streaming server and player (RealPlayer-like; see aqmlab-sim app/streaming.rs)."""

    kind: Literal["stream"]
    transport: Literal["udp", "tcp"] = Field(..., description="udp or tcp")
    levels: list[Rate] = Field(..., min_length=1, description="encoded rates, ascending")
    clip: Duration = Field(..., description="length of the content")
    preroll: Duration = Field(written("10s"), description="content lead built before steady playout")
    buffer_multiple: float = Field(2.0, ge=1.0, description="buffering send rate / level rate")
    buffer_rate_cap: Rate = Field(written("0bps"), description="cap on the buffering send rate (0: none)")
    packet_size: Size = Field(written("1000B"), description="UDP packet IP size; TCP write size")
    report_interval: Duration = Field(written("1s"), description="UDP receiver report spacing")
    loss_down: float = Field(0.05, ge=0.0, le=1.0, description="UDP: step down above this report loss")
    loss_up: float = Field(0.01, ge=0.0, le=1.0, description="UDP: step up only at or below this loss")
    rtt_up_factor: float = Field(2.0, ge=1.0, description="UDP: step up only with RTT <= this x min RTT")
    silence_reports: int = Field(3, ge=1, lt=U32, json_schema_extra={"unit": "report intervals"},
                                 description="UDP: step down after this many silent intervals")
    up_after: Duration = Field(written("10s"), description="time in good conditions before a step up")
    tcp_check: Duration = Field(written("5s"), description="TCP: how often the server looks at its backlog")
    tcp_backlog_down: Duration = Field(written("5s"), description="TCP: backlog (content time) that scales down")
    tcp: Tcp = Field(default_factory=Tcp, description="TCP settings")

    @model_validator(mode="before")
    @classmethod
    def _profile_handshake(cls, data: Any) -> Any:
        return _without_profile_handshake(data)

    @model_validator(mode="after")
    def _sane(self) -> Stream:
        """levels positive and strictly ascending; clip, report_interval and tcp_check positive;
        packet_size above 40 B."""
        if self.tcp.handshake:
            raise ValueError(_NO_HANDSHAKE.format(kind="stream"))
        if any(r <= 0 for r in self.levels) or any(a >= b for a, b in itertools.pairwise(self.levels)):
            raise ValueError("levels must be positive and strictly ascending")
        if self.clip <= 0:
            raise ValueError("clip must be positive")
        if self.packet_size <= 40:
            raise ValueError("packet_size must exceed the 40 B of IP/UDP/RTP headers")
        if self.report_interval <= 0 or self.tcp_check <= 0:
            raise ValueError("report_interval and tcp_check must be positive")
        return self


class Pels(Strict):
    """PELS FGS video (Kang et al. 2004): per frame `base_packets` green packets plus the
    enhancement layer cut to the MKC rate, its lower 1 - gamma yellow and upper gamma red; MKC
    (eq. 8) and the gamma controller (eq. 5) act once per fresh router epoch echoed in ACKs.
    Defaults: the paper's 500 B packets, 126-packet full frame, MKC and gamma gains; 10 fps and
    3 green packets (120 kb/s, the paper's 128 kb/s base rate) are our choice, since the paper's
    21 green packets per frame cannot be both a 128 kb/s base and leave room for 1 mb/s flows."""

    kind: Literal["pels"]
    fps: float = Field(10.0, gt=0, json_schema_extra={"unit": "frames/s"},
                       description="frames per second (our choice; not in the paper)")
    packet_size: Size = Field(written("500B"), description="IP size of every packet (section 6.1)")
    base_packets: int = Field(3, ge=1, le=128, json_schema_extra={"unit": "packets"},
                              description="green packets per frame (base layer)")
    max_packets: int = Field(126, ge=1, le=128, json_schema_extra={"unit": "packets"},
                             description="packets of a full-rate frame (section 6.1)")
    initial_rate: Rate = Field(written("128kbps"), description="MKC initial rate r0 (section 6.3)")
    alpha: Rate = Field(written("20kbps"), description="MKC additive gain per control step (section 6.4)")
    beta: float = Field(0.5, gt=0, description="MKC multiplicative gain (stable for 0 < beta < 2)")
    sigma: float = Field(0.5, gt=0, description="gamma controller gain (stable for 0 < sigma < 2)")
    p_thr: float = Field(0.75, gt=0, le=1, description="target red loss")
    gamma_low: float = Field(0.05, ge=0, le=1, description="lowest gamma")
    gamma_init: float = Field(0.5, ge=0, le=1, description="initial gamma")
    partition: bool = Field(True, description="false: best-effort, every enhancement packet yellow (section 6.5)")

    @model_validator(mode="after")
    def _sane(self) -> Pels:
        """base_packets <= max_packets; packet_size above 28 B; gamma_low <= gamma_init; initial_rate
        between the base layer's and the full frame's rate."""
        if self.max_packets < self.base_packets:
            raise ValueError(f"max_packets {self.max_packets} must be at least base_packets {self.base_packets}")
        if self.packet_size <= 28:
            raise ValueError("packet_size must exceed the 28 B of IP + UDP headers")
        if self.gamma_init < self.gamma_low:
            raise ValueError(f"gamma_init {self.gamma_init} must be at least gamma_low {self.gamma_low}")
        lo, hi = (n * self.packet_size * 8 * self.fps for n in (self.base_packets, self.max_packets))
        if not lo <= self.initial_rate <= hi:
            raise ValueError(f"initial_rate {self.initial_rate} b/s must lie between the base layer's "
                             f"{lo:.0f} and the full frame's {hi:.0f} b/s (MKC's rate bounds)")
        return self


#: The ABR algorithms by name (aqmlab-model `app/abr/mod.rs` `Algorithm`, same order: the
#: `abr_sessions` table's `algorithm` column is the index here).
ABR_ALGORITHMS = ("throughput", "bba", "bola", "mpc", "robust_mpc", "bola_e")


class Abr(Strict):
    """Adaptive-bitrate (DASH-like) client over one persistent TCP connection: it requests each
    segment at the rung its algorithm chooses and plays from a buffer with startup, stalls and a
    maximum (see aqmlab-sim sim/apps/abr.rs and docs/video.md). Algorithms: throughput (dash.js
    ThroughputRule), bba (Huang et al. 2014, BBA-0), bola (Spiteri et al. 2016, BOLA-BASIC), mpc
    and robust_mpc (Yin et al. 2015), bola_e (Spiteri et al. 2018, BOLA-E: placeholder buffer,
    throughput cap, insufficient-buffer rule)."""

    kind: Literal["abr"]
    algorithm: Literal["throughput", "bba", "bola", "mpc", "robust_mpc", "bola_e"] = Field(
        ..., description="ABR algorithm: throughput, bba, bola, mpc, robust_mpc or bola_e")
    ladder: str = Field("synthetic", description="encoding ladder: the built-in 'synthetic' (7 rungs, "
                        "0.3-6 Mbit/s, modelled scores), 'encoded' (the same rungs encoded by libx264 from the "
                        "viewer's clip, measured SSIM and PSNR, cached), or the path of a ladder CSV with columns "
                        "segment, rung, bitrate_kbps, size_bytes and optionally ssim_db, psnr_db "
                        "(aqmlab/abr_ladder.py)")
    segment_duration: Duration = Field(written("2s"), description="media time per segment")
    content: Duration = Field(written("600s"), description="length of the synthetic ladder's video "
                              "(a CSV ladder has its own segment count)")
    max_buffer: Duration = Field(written("30s"), description="the next segment is requested only when it "
                                 "fits under this much buffered media")
    startup: Duration | None = Field(None, description="media buffered before playback starts or resumes "
                                     "after a stall (default: one segment)")
    request_size: Size = Field(written("300B"), description="IP size of a segment request (reverse path)")
    request_timeout: Duration = Field(written("1s"), description="a request whose response has not begun "
                                      "is sent again after this (doubling)")
    safety_factor: float = Field(0.9, gt=0, le=1, description="throughput rule: share of the mean "
                                 "throughput a rung may use (dash.js bandwidthSafetyFactor)")
    throughput_window: int = Field(4, ge=1, le=100, json_schema_extra={"unit": "segments"},
                                   description="throughput rule: segments averaged (dash.js VOD: 4)")
    bba_reservoir: Duration | None = Field(None, description="BBA reservoir r (default 90/240 of "
                                           "max_buffer, the paper's proportion)")
    bba_cushion: Duration | None = Field(None, description="BBA cushion cu (default 126/240 of max_buffer)")
    bola_gamma_p: float = Field(5.0, gt=0, description="BOLA gamma*p (Sabre's default 5)")
    bola_buffer_target: Duration | None = Field(None, description="BOLA buffer target Q_max, from which V "
                                                "follows (default max_buffer); bola_e uses the larger of it "
                                                "and 10 s + 2 s per rung")
    mpc_horizon: int = Field(5, ge=1, le=8, json_schema_extra={"unit": "segments"},
                             description="MPC and RobustMPC lookahead (Yin et al.: 5)")
    bola_e_variant: Literal["bola_u", "bola_o"] = Field(
        "bola_u", description="bola_e's throughput cap on up-switches: bola_u (one rung above the "
                              "sustainable one, Sabre's default) or bola_o (never above the previous or the "
                              "sustainable rung: fewer oscillations, Sabre's -ao)")
    tcp: Tcp = Field(default_factory=Tcp, description="TCP settings")

    def startup_ns(self) -> int:
        return self.startup if self.startup is not None else self.segment_duration

    @model_validator(mode="before")
    @classmethod
    def _profile_handshake(cls, data: Any) -> Any:
        return _without_profile_handshake(data)

    @model_validator(mode="after")
    def _sane(self) -> Abr:
        """segment_duration and content positive; max_buffer holds startup (at least a segment) plus a
        segment; request_size above 40 B; bola_buffer_target above one segment; bba_cushion positive;
        the ladder readable (a CSV is read, the encoded ladder made if not cached)."""
        from aqmlab.abr_ladder import LadderError, ladder

        if self.tcp.handshake:
            raise ValueError(_NO_HANDSHAKE.format(kind="abr"))
        seg = self.segment_duration
        if seg <= 0 or self.content <= 0:
            raise ValueError("segment_duration and content must be positive")
        if self.startup is not None and self.startup <= 0:
            raise ValueError("startup must be positive")
        if self.max_buffer < max(self.startup_ns(), seg) + seg:
            raise ValueError("max_buffer must hold startup (at least one segment) plus one more segment")
        if self.request_size <= 40:
            raise ValueError("request_size must exceed the 40 B of IP and TCP headers")
        if self.request_timeout <= 0:
            raise ValueError("request_timeout must be positive")
        if self.bola_buffer_target is not None and self.bola_buffer_target <= seg:
            raise ValueError("bola_buffer_target must exceed one segment")
        if self.bba_cushion is not None and self.bba_cushion <= 0:
            raise ValueError("bba_cushion must be positive")
        if self.bola_e_variant != "bola_u" and self.algorithm != "bola_e":
            raise ValueError(f"bola_e_variant applies to algorithm bola_e only, not {self.algorithm}")
        if self.ladder != "synthetic":
            try:
                ladder(self.ladder, seg, self.content)
            except LadderError as e:
                raise ValueError(f"ladder: {e}") from None
        return self


class Ping(Strict):
    """A ping-like latency probe: a small UDP request every `interval`, echoed by the receiver at
    once, each round trip recorded (the `probes` table). Flent's RRUL test runs four: ICMP ping
    and three UDP probes (irtt), one request every 0.2 s (Flent's default step size)."""

    kind: Literal["ping"]
    interval: Duration = Field(written("200ms"), description="time between requests (Flent's --step-size)")
    packet_size: Size = Field(written("84B"), description="IP size of request and reply (84 B: ping's "
                                                          "default 56 data bytes + ICMP 8 + IPv4 20)")

    @model_validator(mode="after")
    def _sane(self) -> Ping:
        """interval positive; packet_size at least 28 B (IPv4 + UDP headers)."""
        if self.interval <= 0:
            raise ValueError("interval must be positive")
        if self.packet_size < 28:
            raise ValueError("packet_size must be at least 28 B (IPv4 + UDP headers)")
        return self


MEDIA = (Video, Audio, Poisson)
App = Annotated[Bulk | Cbr | Mpeg | Video | Audio | Poisson | Stream | Pels | Abr | Ping, Field(discriminator="kind")]
APP_MODELS: dict[str, type[Strict]] = {"bulk": Bulk, "cbr": Cbr, "mpeg": Mpeg, "video": Video,
                                       "audio": Audio, "poisson": Poisson, "stream": Stream, "pels": Pels,
                                       "abr": Abr, "ping": Ping}
