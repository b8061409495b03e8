"""`tcp.handshake` (issue 27): the scenario field reaches the engine only when set, every bulk
flow of a run then opens with a SYN at the bottleneck before its data, and the applications
without a handshake refuse it in one line naming the field. The rules themselves are tested in
Rust (crates/aqmlab-sim/src/tcp/handshake.rs, tests/handshake.rs)."""

from __future__ import annotations

from aqmlab.api import load, run
from conftest import aqmlab

#: A SYN on the wire (crates/aqmlab-sim/src/sim/apps/tcp.rs SYN_BYTES): headers and 12 B of options.
SYN_BYTES = 52
SHORT = ["duration=12s", 'metrics.periods=[["10s","12s"]]']


def _engine_tcp(sc, group: str) -> dict:
    cfg = sc.model.to_sim_config()
    return next(g["app"]["tcp"] for g in cfg["flow_groups"] if g["name"] == group)


def test_the_field_reaches_the_engine_only_when_set():
    assert "handshake" not in _engine_tcp(load("rb-rio/tcp-droptail"), "long")
    on = load("rb-rio/tcp-droptail", set=["flows.long.app.tcp.handshake=true"])
    assert _engine_tcp(on, "long")["handshake"] is True
    assert "handshake" not in _engine_tcp(on, "joining")


def test_every_bulk_flow_opens_with_a_syn_before_its_data():
    res = run(load("rb-rio/tcp-droptail", set=["flows.*.app.tcp.handshake=true", *SHORT]))
    arrivals = res.packets[res.packets["event"] == "arrive"]
    first = arrivals.groupby("flow", sort=True).head(1)
    assert len(first) == len(res.flows) == 60
    assert (first["size"] == SYN_BYTES).all()
    # A SYN is sent again only after one was lost: here only at the bottleneck, where the
    # joining flows' SYNs meet a full Drop-Tail queue (the SYN-ACKs' reverse queue never fills).
    pk = res.packets
    syn = pk["size"] == SYN_BYTES
    sent = pk[syn & (pk["event"] == "arrive")].groupby("flow").size()
    lost = pk[syn & (pk["event"] == "drop")].groupby("flow").size().reindex(sent.index, fill_value=0)
    assert (sent - 1 == lost).all()
    assert lost.sum() > 0, "the run must have lost some SYN for this check to mean anything"
    # those flows count the SYN's timeout and retransmission
    flows = res.flows.set_index("flow")
    assert (flows.loc[lost[lost > 0].index, "timeouts"] >= 1).all()


def test_an_abr_client_refuses_the_handshake_naming_the_field(tmp_path):
    r = aqmlab("run", "video/mix/fifo", "--out", str(tmp_path / "r"), "--set", "flows.bba.app.tcp.handshake=true")
    assert r.returncode == 2
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, r.stderr
    assert "flows.bba.app" in lines[0] and "tcp.handshake: only bulk flows open with a handshake" in lines[0]
    assert "allowed: false" in lines[0]
    assert not (tmp_path / "r").exists()
