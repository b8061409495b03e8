"""Head-to-head analyses from a packet capture: pick a UDP and a TCP stream out of a pcap and
feed them to `aqmlab.analysis.head_to_head`, as the paper did with its tcpdump traces
(section III-B: "the IP packet size and arrival time were extracted").

* **Reading**: libpcap files (micro- or nanosecond, either byte order) with Ethernet, Linux
  cooked (SLL) or raw IPv4 link layers, read with dpkt. Non-IPv4 packets are skipped.
* **Flows** are directional 5-tuples. A filter is ``PROTO:SRC:SPORT:DST:DPORT`` where any field
  may be ``*`` (e.g. ``udp:*:*:10.0.0.5:5004``). Without filters the two largest flows by bytes
  are taken; one must be UDP and the other TCP.
* **Times** are seconds since the first packet of either chosen stream (the clip start of the
  pair, as in `head_to_head`'s data model); sizes are IP total lengths.
* **RTT**, when the capture allows it: from TCP timestamps (RFC 7323 section 4.3: the time from a
  data segment carrying TSval v to the first reverse segment echoing v in TSecr), else from the
  handshake (SYN to SYN/ACK on the server side, SYN/ACK to ACK on the client side; the capture
  point's share of the RTT only). A capture of one direction only (as aqmlab's bottleneck pcap)
  has neither: RTT is None and Table I's test is not evaluated.
* **UDP loss** from RTP sequence numbers (RFC 3550 section 5.1, the 16-bit field unwrapped;
  A.3's expected = highest - first + 1): 1 - received / expected. None if the UDP flow does not
  look like RTP (version field not 2).

Errors are `PcapError` with a one-line message naming the file or the filter.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aqmlab.analysis import head_to_head as h2h


class PcapError(ValueError):
    """A capture that cannot be read, or a filter that matches nothing."""


FIELDS = ("proto", "src", "sport", "dst", "dport")
#: Raw IP link types: LINKTYPE_RAW (101), LINKTYPE_IPV4 (228), and the DLT_RAW values some
#: writers put in files (12, 14).
RAW_LINKTYPES = (101, 228, 12, 14)
SUPPORTED_LINKTYPES = RAW_LINKTYPES + (1, 113)  # + Ethernet, Linux cooked (SLL)
_PROTOS = {6: "tcp", 17: "udp"}


@dataclass(frozen=True)
class FlowFilter:
    """A directional 5-tuple filter; None fields match anything."""
    proto: str | None
    src: str | None
    sport: int | None
    dst: str | None
    dport: int | None

    @staticmethod
    def parse(text: str, name: str = "filter") -> FlowFilter:
        parts = text.split(":")
        if len(parts) != 5:
            raise PcapError(f"{name}: {text!r} is not PROTO:SRC:SPORT:DST:DPORT (use * for any field), "
                            "e.g. udp:*:*:10.0.0.5:5004")
        proto, src, sport, dst, dport = (None if p in ("*", "") else p for p in parts)
        if proto is not None and proto.lower() not in ("udp", "tcp"):
            raise PcapError(f"{name}: protocol {proto!r} is not one of udp, tcp, *")
        ports = []
        for label, p in (("SPORT", sport), ("DPORT", dport)):
            if p is not None and not (p.isdigit() and 0 <= int(p) <= 65535):
                raise PcapError(f"{name}: {label} {p!r} is not a port number 0-65535 or *")
            ports.append(None if p is None else int(p))
        return FlowFilter(proto.lower() if proto else None, src, ports[0], dst, ports[1])

    def mask(self, pk: pd.DataFrame) -> np.ndarray:
        m = np.ones(len(pk), dtype=bool)
        for field in FIELDS:
            v = getattr(self, field)
            if v is not None:
                m &= (pk[field] == v).to_numpy()
        return m


def _reader(f, path: Path):
    import dpkt

    try:
        return dpkt.pcap.Reader(f)
    except (ValueError, dpkt.dpkt.NeedData, dpkt.dpkt.UnpackError) as e:
        raise PcapError(f"{path}: not a pcap file ({e})") from None


def _ip_of(buf: bytes, linktype: int):
    import dpkt

    if linktype in RAW_LINKTYPES:
        return dpkt.ip.IP(buf) if buf and buf[0] >> 4 == 4 else None
    if linktype == 1:
        eth = dpkt.ethernet.Ethernet(buf)
        return eth.data if isinstance(eth.data, dpkt.ip.IP) else None
    if linktype == 113:
        sll = dpkt.sll.SLL(buf)
        return sll.data if isinstance(sll.data, dpkt.ip.IP) else None
    raise AssertionError(f"unchecked link type {linktype}")


def _tcp_timestamps(tcp) -> tuple[int, int] | None:
    import dpkt

    for kind, data in dpkt.tcp.parse_opts(tcp.opts):
        if kind == dpkt.tcp.TCP_OPT_TIMESTAMP and len(data) == 8:
            return struct.unpack("!II", data)
    return None


_MAGICS = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">",
           b"\xa1\xb2\x3c\x4d": ">"}


def check_complete(path: Path) -> None:
    """Walks the record headers of a libpcap file: a file that is not a pcap, or whose last
    record is cut short (a capture copied while tcpdump was writing), is refused."""
    data = path.read_bytes()
    order = _MAGICS.get(data[:4])
    if order is None:
        raise PcapError(f"{path}: not a pcap file (no libpcap magic number; pcapng is not supported, "
                        "convert with `editcap -F pcap`)")
    if len(data) < 24:
        raise PcapError(f"{path}: truncated pcap (the 24-byte file header is cut short)")
    offset, n = 24, 0
    while offset < len(data):
        if offset + 16 > len(data):
            raise PcapError(f"{path}: truncated pcap (record {n + 1} header is cut short)")
        (caplen,) = struct.unpack_from(order + "I", data, offset + 8)
        offset += 16 + caplen
        if offset > len(data):
            raise PcapError(f"{path}: truncated pcap (record {n + 1} is cut short after {n} whole packets)")
        n += 1


def read_pcap(path: str | Path) -> pd.DataFrame:
    """One row per IPv4 TCP/UDP packet: t_s (capture time), proto, src, dst, sport, dport,
    ip_len, and for TCP seq, ack, flags, tsval, tsecr (-1 when absent), for UDP rtp_seq (-1
    when the payload is not RTP version 2)."""
    import dpkt

    path = Path(path)
    rows: list[tuple] = []
    try:
        check_complete(path)
        with open(path, "rb") as f:
            reader = _reader(f, path)
            linktype = reader.datalink()
            if linktype not in SUPPORTED_LINKTYPES:
                raise PcapError(f"{path}: link type {linktype} is not supported (Ethernet, Linux SLL "
                                "or raw IPv4)")
            it = iter(reader)
            while True:
                try:
                    ts, buf = next(it)
                except StopIteration:
                    break
                except (dpkt.dpkt.NeedData, ValueError, struct.error):
                    raise PcapError(f"{path}: truncated pcap (a record is cut short after "
                                    f"{len(rows)} packets)") from None
                try:
                    ip = _ip_of(buf, linktype)
                except (dpkt.dpkt.UnpackError, struct.error):
                    continue
                if ip is None or ip.p not in _PROTOS:
                    continue
                rows.append(_row(float(ts), ip))
    except FileNotFoundError:
        raise PcapError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise PcapError(f"{path}: is a directory, not a pcap file") from None
    cols = ["t_s", "proto", "src", "dst", "sport", "dport", "ip_len", "seq", "ack", "flags",
            "tsval", "tsecr", "rtp_seq"]
    return pd.DataFrame(rows, columns=cols)


def _row(ts: float, ip) -> tuple:
    import socket

    import dpkt

    src, dst = socket.inet_ntoa(ip.src), socket.inet_ntoa(ip.dst)
    l4 = ip.data
    if isinstance(l4, (bytes, bytearray)) or l4 is None:
        return (ts, _PROTOS[ip.p], src, dst, -1, -1, ip.len, -1, -1, 0, -1, -1, -1)
    if ip.p == 6:
        tsopt = _tcp_timestamps(l4) if isinstance(l4, dpkt.tcp.TCP) else None
        tsval, tsecr = tsopt if tsopt else (-1, -1)
        return (ts, "tcp", src, dst, l4.sport, l4.dport, ip.len, l4.seq, l4.ack, l4.flags, tsval, tsecr, -1)
    payload = bytes(l4.data)
    rtp = int.from_bytes(payload[2:4], "big") if len(payload) >= 12 and payload[0] >> 6 == 2 else -1
    return (ts, "udp", src, dst, l4.sport, l4.dport, ip.len, -1, -1, 0, -1, -1, rtp)


def flow_table(pk: pd.DataFrame) -> pd.DataFrame:
    """Directional flows with their packets and bytes, largest first."""
    g = pk.groupby(list(FIELDS), sort=False)["ip_len"].agg(packets="size", bytes="sum").reset_index()
    return g.sort_values(["bytes", "packets"], ascending=False, kind="stable").reset_index(drop=True)


def choose_flows(pk: pd.DataFrame, udp: str | None, tcp: str | None, path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The UDP and TCP streams' packets, by filter or as the two largest flows."""
    if (udp is None) != (tcp is None):
        raise PcapError("--udp and --tcp: give both filters or neither (then the two largest flows are used)")
    if len(pk) == 0:
        raise PcapError(f"{path}: no IPv4 TCP or UDP packets in the capture")
    if udp is None or tcp is None:  # both None (checked above)
        flows = flow_table(pk).head(2)
        if len(flows) < 2 or set(flows["proto"]) != {"udp", "tcp"}:
            found = ", ".join(f"{r.proto}:{r.src}:{r.sport}:{r.dst}:{r.dport}" for r in flows.itertuples())
            raise PcapError(f"{path}: the two largest flows ({found}) are not one UDP and one TCP flow; "
                            "pass --udp and --tcp filters")
        picks = {r.proto: FlowFilter(r.proto, r.src, r.sport, r.dst, r.dport) for r in flows.itertuples()}
    else:
        picks = {"udp": FlowFilter.parse(udp, "--udp"), "tcp": FlowFilter.parse(tcp, "--tcp")}
    out = []
    for proto in ("udp", "tcp"):
        f = picks[proto]
        m = f.mask(pk) & (pk["proto"] == proto).to_numpy()
        if not m.any():
            raise PcapError(f"--{proto}: filter {_show(f)} matches no {proto.upper()} packet in {path}")
        out.append(pk[m])
    return out[0], out[1]


def _show(f: FlowFilter) -> str:
    return ":".join("*" if getattr(f, k) is None else str(getattr(f, k)) for k in FIELDS)


def rtp_loss(udp: pd.DataFrame) -> float | None:
    """1 - received / expected from 16-bit RTP sequence numbers (RFC 3550 A.3), unwrapping the
    counter in arrival order; None when the packets are not RTP."""
    seq = udp["rtp_seq"].to_numpy()
    if len(seq) == 0 or np.any(seq < 0):
        return None
    step = np.diff(seq.astype(np.int64))
    # A jump back by more than half the space is a wrap, forward by more than half a reordering.
    step = np.where(step < -32768, step + 65536, np.where(step > 32768, step - 65536, step))
    ext = np.concatenate([[0], np.cumsum(step)]) + int(seq[0])
    expected = int(ext.max() - ext.min() + 1)
    received = len(np.unique(ext))
    return max(0.0, 1.0 - received / expected)


def tcp_rtt(pk: pd.DataFrame, tcp: pd.DataFrame) -> float | None:
    """Mean RTT (s) of the TCP stream from timestamps, else from the handshake; None if neither
    is in the capture (see the module docstring)."""
    first = tcp.iloc[0]
    fwd = tcp[(tcp["tsval"] >= 0)]
    rev = pk[(pk["proto"] == "tcp") & (pk["src"] == first["dst"]) & (pk["dst"] == first["src"])
             & (pk["sport"] == first["dport"]) & (pk["dport"] == first["sport"])]
    samples = []
    if len(fwd) and (rev["tsecr"] > 0).any():
        sent = fwd.groupby("tsval")["t_s"].min()
        echoed = rev[rev["tsecr"] > 0].groupby("tsecr")["t_s"].min()
        both = sent.index.intersection(echoed.index)
        samples = (echoed[both] - sent[both]).to_numpy()
        samples = samples[samples >= 0]
    if len(samples):
        return float(np.mean(samples))
    syn = 0x02
    synack = pk[(pk["proto"] == "tcp") & ((pk["flags"] & 0x12) == 0x12)]
    syns = pk[(pk["proto"] == "tcp") & ((pk["flags"] & 0x12) == syn)]
    if len(synack) and len(syns):
        d = float(synack["t_s"].min() - syns["t_s"].min())
        if d > 0:
            return d
    return None


def _series(df: pd.DataFrame, t0: float) -> pd.DataFrame:
    return pd.DataFrame({"t_s": df["t_s"].to_numpy() - t0, "bytes": df["ip_len"].to_numpy()})


def estimate_bottleneck(udp: pd.DataFrame, tcp: pd.DataFrame, window_s: float = 10.0) -> float:
    """The pair's largest combined rate over `window_s` windows: under contention the two
    streams fill the bottleneck, so this is a lower bound of its rate."""
    both = pd.concat([udp, tcp])
    bw = h2h.bandwidth_series(both, window_s)
    return float(bw.max())


def analyze_capture(path: str | Path, udp: str | None = None, tcp: str | None = None,
                    bottleneck_bps: float | None = None) -> dict[str, Any]:
    """The head-to-head pair summary of a capture (`head_to_head.pair_summary`), with the RTT
    and UDP loss the capture provides and the chosen flows."""
    path = Path(path)
    pk = read_pcap(path)
    u, c = choose_flows(pk, udp, tcp, path)
    t0 = float(min(u["t_s"].min(), c["t_s"].min()))
    us, cs = _series(u, t0), _series(c, t0)
    estimated = bottleneck_bps is None
    bn = estimate_bottleneck(us, cs) if bottleneck_bps is None else float(bottleneck_bps)
    rtt, loss = tcp_rtt(pk, c), rtp_loss(u)
    s = h2h.pair_summary(us, cs, bn, rtt, loss)
    s.update({
        "udp_flow": _flow_label(u), "tcp_flow": _flow_label(c), "bottleneck_estimated": estimated,
        "udp_rtp_loss": loss, "tcp_rtt_s": rtt, "udp_packets": len(u), "tcp_packets": len(c),
        "udp_series": us, "tcp_series": cs,
    })
    return s


def _flow_label(df: pd.DataFrame) -> str:
    r = df.iloc[0]
    return f"{r['proto']}:{r['src']}:{r['sport']}:{r['dst']}:{r['dport']}"


def summary_table(s: dict[str, Any]) -> pd.DataFrame:
    """The pair's figures as one table (what `aqmlab analyze head-to-head` prints)."""
    def num(v: Any, scale: float = 1.0, nd: int = 3) -> Any:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "-"
        return round(float(v) * scale, nd)
    rows = [
        ("UDP flow", s["udp_flow"], ""), ("TCP flow", s["tcp_flow"], ""),
        ("bottleneck (Kbps)" + (" [estimated]" if s["bottleneck_estimated"] else ""),
         num(s["bottleneck_bps"], 1e-3, 1), ""),
        ("average bandwidth (Kbps) [Fig. 7, 8]", num(s["udp_avg_bps"], 1e-3, 1), num(s["tcp_avg_bps"], 1e-3, 1)),
        ("(TCP - UDP) / bottleneck [Fig. 9]", num(s["normalized_difference"]), ""),
        ("RTT (ms) [Fig. 10, 11]", num(s["rtt_s"], 1e3, 1), ""),
        ("UDP loss from RTP (%) [Fig. 12, 13]", num(s["loss"], 100, 3), ""),
        ("buffering / steady rate [Fig. 14]", num(s["udp_buffering_ratio"], 1, 2), num(s["tcp_buffering_ratio"], 1, 2)),
        ("TCP-friendly rate (Kbps) [eq. 1]", num(s["tcp_friendly_bps"], 1e-3, 1), ""),
        ("TCP-friendly [Table I]", _yn(s["udp_tcp_friendly"]), _yn(s["tcp_tcp_friendly"])),
        ("500 ms ratios within [0.9, 1.1] [Fig. 21]", num(s["udp_smoothness_within"]), num(s["tcp_smoothness_within"])),
        ("playout length (s)", num(s["udp_duration_s"], 1, 1), num(s["tcp_duration_s"], 1, 1)),
    ]
    return pd.DataFrame(rows, columns=["quantity", "UDP", "TCP"])


def _yn(v: bool | None) -> str:
    return "-" if v is None else ("yes" if v else "no")


def write_outputs(s: dict[str, Any], table: pd.DataFrame, folder: Path) -> None:
    """summary.csv/.md/.json and the pair's figures: bandwidth over time (the paper's Figure 6
    form) and the CDF of consecutive 500 ms ratios (Figure 21)."""
    import json

    from matplotlib.figure import Figure

    folder.mkdir(parents=True, exist_ok=True)
    table.to_csv(folder / "summary.csv", index=False)
    (folder / "summary.md").write_text(table.to_markdown(index=False) + "\n")
    plain = {k: v for k, v in s.items() if not isinstance(v, (pd.DataFrame, np.ndarray))}
    (folder / "summary.json").write_text(json.dumps(plain, indent=1, sort_keys=True, default=str) + "\n")
    styles: dict[str, dict[str, Any]] = {"udp": dict(color="C3", ls="-"), "tcp": dict(color="C0", ls="--")}
    fig = Figure(figsize=(6, 3.2))
    ax = fig.subplots()
    for name in ("udp", "tcp"):
        bw = h2h.bandwidth_series(s[f"{name}_series"], 1.0)
        ax.plot(bw.index, bw.to_numpy() / 1e3, label=name.upper(), lw=1, **styles[name])
    ax.set_xlabel("time (s)")
    ax.set_ylabel("bandwidth (Kbps, 1 s)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.suptitle("Head-to-head bandwidth (the paper's Figure 6 form)", fontsize=10)
    fig.tight_layout()
    fig.savefig(folder / "fig06.png", dpi=110)
    fig = Figure(figsize=(5, 3.2))
    ax = fig.subplots()
    for name in ("udp", "tcp"):
        x, p = h2h.empirical_cdf(s[f"{name}_smoothness_ratios"])
        ax.step(x, p, where="post", label=name.upper(), **styles[name])
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlabel("ratio of consecutive 500 ms rates")
    ax.set_ylabel("CDF")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.suptitle("Smoothness (the paper's Figure 21 form)", fontsize=10)
    fig.tight_layout()
    fig.savefig(folder / "fig21.png", dpi=110)
