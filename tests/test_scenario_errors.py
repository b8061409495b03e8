"""Bad input: one clear line naming the field and what is allowed, exit status 2, and no
results directory left behind."""

from __future__ import annotations

import pytest

from conftest import aqmlab, small_scenario


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


@pytest.mark.parametrize(
    "mutate, expect",
    [
        (lambda s: s["topology"]["bottleneck"]["qdisc"].update(kind="rde"),
         ["topology.bottleneck.qdisc", "unknown kind 'rde'", "droptail", "red"]),
        (lambda s: s["topology"]["bottleneck"].update(rate="-5Mbps"),
         ["topology.bottleneck.rate", "non-negative number"]),
        (lambda s: s["topology"]["bottleneck"]["qdisc"].update(min_th=60, max_th=20),
         ["topology.bottleneck.qdisc", "min_th (60) must be smaller than max_th (20)"]),
        (lambda s: s["topology"]["bottleneck"].update(bandwidth="10Mbps"),
         ["topology.bottleneck", "unknown key 'bandwidth'",
          "allowed keys: delay, impairments, qdisc, rate, schedule, schedule_period, trace"]),
        (lambda s: s["topology"]["bottleneck"].update(rate="25Mbs"),
         ["topology.bottleneck.rate", "unknown unit \"Mbs\"", "Mbps"]),
        (lambda s: s["flows"][0].update(count=0),
         ["flows.0.count", "greater than or equal to 1"]),
        (lambda s: s["flows"][0]["app"].update(kind="ftp"),
         ["flows.0.app", "unknown kind 'ftp'", "bulk", "cbr"]),
        (lambda s: s["flows"][0].update(class_weights=[0, 0, 0]),
         ["flows.0", "class_weights [0.0, 0.0, 0.0] must be >= 0 and sum to a positive number"]),
        (lambda s: s["flows"][0].update(app={"kind": "mpeg", "gop": "IBXP"}),
         ["flows.0.app", "letters must be I, P or B", "X"]),
        (lambda s: s["flows"][0].update(app={"kind": "mpeg", "gop": "PBBI"}),
         ["flows.0.app", "must start with I"]),
        (lambda s: s["flows"][0].update(app={"kind": "mpeg", "frame_sizes": {"I": "80KB"}}),
         ["flows.bulk.app.frame_sizes", "needs 83 packets", "buffer of 60 packets"]),
        (lambda s: s["topology"]["bottleneck"].update(qdisc={"kind": "rb_rio", "aggressiveness": -1}),
         ["topology.bottleneck.qdisc.aggressiveness", "greater than 0"]),
        (lambda s: s["topology"]["bottleneck"].update(qdisc={"kind": "codel", "target": "100ms", "interval": "100ms"}),
         ["topology.bottleneck.qdisc", "target (100ms) must be smaller than interval (100ms)"]),
        (lambda s: s["topology"]["bottleneck"].update(qdisc={"kind": "fq_codel", "flows": 0}),
         ["topology.bottleneck.qdisc.flows", "greater than or equal to 1"]),
        (lambda s: s["topology"]["bottleneck"].update(qdisc={"kind": "fq_codel", "quantum": "0B"}),
         ["topology.bottleneck.qdisc", "quantum must be at least 1 byte"]),
        (lambda s: s["topology"]["bottleneck"].update(qdisc={"kind": "pie", "target": "-15ms"}),
         ["topology.bottleneck.qdisc.target", "non-negative number"]),
        (lambda s: s["topology"]["bottleneck"].update(qdisc={"kind": "pie", "t_update": "0ms"}),
         ["topology.bottleneck.qdisc", "t_update must be a positive duration"]),
        (lambda s: s["topology"]["bottleneck"].update(qdisc={"kind": "pie", "estimator": "clock"}),
         ["topology.bottleneck.qdisc.estimator", "'timestamp' or 'rate'"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"congestion_control": "vegas"}}),
         ["flows.0.app.tcp.congestion_control", "'newreno', 'cubic', 'dctcp', 'bbr', 'bbr3' or 'prague'"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"congestion_control": "bbr", "pacing": False}}),
         ["flows.0.app.tcp", "pacing: bbr needs pacing", "true or unset"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"congestion_control": "dctcp"}}),
         ["flows.0.app.tcp", "congestion_control: dctcp needs ecn = true"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"ecn_codepoint": "ect1"}}),
         ["flows.0.app.tcp", "ecn_codepoint: ect1 needs ecn = true"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"profile": "bsd"}}),
         ["flows.0.app.tcp.profile", "'rfc', 'linux' or 'ns3'"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"rack": True}}),
         ["flows.0.app.tcp", "rack: rack = true needs sack = true", "without sack: false"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"ssthresh_basis": "pipe"}}),
         ["flows.0.app.tcp", "ssthresh_basis: pipe needs sack = true", "without sack: flight_size"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"cubic_alpha_to_one": False}}),
         ["flows.0.app.tcp", "cubic_alpha_to_one: a rule of CUBIC's Reno-friendly region", "with newreno: unset"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"prr_variant": "ns3"}}),
         ["flows.0.app.tcp", "prr_variant: ns3 is a variant of PRR: needs prr = true", "without prr: linux"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"prr": True, "prr_variant": "bsd"}}),
         ["flows.0.app.tcp.prr_variant", "'linux' or 'ns3'"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"ssthresh_basis": "half"}}),
         ["flows.0.app.tcp.ssthresh_basis", "'flight_size', 'pipe' or 'cwnd'"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"ssthresh_basis": "cwnd"}}),
         ["flows.0.app.tcp", "ssthresh_basis: cwnd needs sack = true", "without sack: flight_size"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"congestion_control": "bbr", "hystart": True}}),
         ["flows.0.app.tcp", "hystart: bbr has its own startup", "allowed with bbr: false"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"congestion_control": "bbr3", "pacing": False}}),
         ["flows.0.app.tcp", "pacing: bbr3 needs pacing", "allowed with bbr3: true or unset"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"congestion_control": "bbr3", "hystart": True}}),
         ["flows.0.app.tcp", "hystart: bbr3 has its own startup", "allowed with bbr3: false"]),
        (lambda s: s["flows"][0].update(app={"kind": "bulk", "tcp": {"congestion_control": "bbr3", "ecn": True}}),
         ["flows.0.app.tcp", "ecn: bbr3 has no ECN response", "allowed with bbr3: false"]),
    ],
    ids=["unknown-discipline", "negative-rate", "min_th>=max_th", "unknown-key", "unit-typo",
         "zero-flows", "unknown-app", "class-weights", "gop-letter", "gop-start", "frame>buffer",
         "negative-AP", "codel-target>=interval", "fq_codel-zero-buckets", "fq_codel-zero-quantum",
         "pie-negative-target", "pie-zero-t_update", "pie-estimator", "congestion-control", "bbr-without-pacing",
         "dctcp-without-ecn", "ect1-without-ecn", "tcp-profile", "rack-without-sack", "pipe-basis-without-sack",
         "alpha-without-cubic", "prr-variant-without-prr", "unknown-prr-variant", "unknown-ssthresh-basis",
         "cwnd-basis-without-sack", "hystart-with-bbr",
         "bbr3-without-pacing", "hystart-with-bbr3", "bbr3-with-ecn"],
)
def test_bad_scenario_is_one_clear_line_exit_2_no_output(tmp_path, write_scenario, mutate, expect):
    s = small_scenario()
    mutate(s)
    out = tmp_path / "results"
    r = aqmlab("run", str(write_scenario(s)), "--out", str(out))
    assert r.returncode == 2, r.stderr
    lines = _error_lines(r.stderr)
    assert len(lines) == 1, r.stderr
    for fragment in expect:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in r.stderr
    assert not out.exists()
    assert not any(p.name.startswith(".results") for p in tmp_path.iterdir())


def test_bad_override_names_the_field(tmp_path, write_scenario):
    out = tmp_path / "results"
    r = aqmlab("run", str(write_scenario(small_scenario())), "--out", str(out),
               "--set", "topology.bottleneck.delay=20")
    assert r.returncode == 2
    line, = _error_lines(r.stderr)
    assert "topology.bottleneck.delay" in line and "with a unit" in line
    assert not out.exists()


def test_override_of_unknown_list_item_lists_the_choices(tmp_path, write_scenario):
    r = aqmlab("run", str(write_scenario(small_scenario())), "--out", str(tmp_path / "r"),
               "--set", "flows.video.count=3")
    assert r.returncode == 2
    assert "no item 'video'" in r.stderr and "bulk" in r.stderr


def test_missing_file_and_invalid_toml(tmp_path):
    r = aqmlab("run", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "r"))
    assert r.returncode == 2 and "no such scenario file" in r.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [unclosed")
    r = aqmlab("run", str(bad), "--out", str(tmp_path / "r"))
    assert r.returncode == 2 and "not valid TOML" in r.stderr


def test_existing_output_needs_force(tmp_path, write_scenario):
    out = tmp_path / "results"
    out.mkdir()
    r = aqmlab("run", str(write_scenario(small_scenario())), "--out", str(out))
    assert r.returncode == 2 and "--force" in r.stderr


def test_nested_band_errors_name_the_path(tmp_path, write_scenario):
    s = small_scenario()
    s["topology"]["bottleneck"]["qdisc"] = {"kind": "prio", "bands": [
        {"kind": "droptail", "limit": "10p"}, {"kind": "red", "min_th": 30, "max_th": 10}]}
    r = aqmlab("run", str(write_scenario(s)), "--out", str(tmp_path / "r"))
    assert r.returncode == 2
    line, = _error_lines(r.stderr)
    assert "topology.bottleneck.qdisc.bands.1" in line and "min_th (30) must be smaller than max_th (10)" in line


def test_classful_bottleneck_with_video_runs(tmp_path, write_scenario):
    s = small_scenario(duration="3s", metrics={"periods": [["0s", "3s"]]})
    s["topology"]["bottleneck"]["qdisc"] = {"kind": "wrr", "bands": [
        {"weight": 1500, "qdisc": {"kind": "prio", "bands": [{"kind": "droptail", "limit": "20p"}] * 3}},
        {"weight": 1500, "qdisc": {"kind": "droptail", "limit": "20p"}}]}
    s["flows"].append({"name": "video", "count": 1, "app": {"kind": "mpeg"}})
    r = aqmlab("run", str(write_scenario(s)), "--out", str(tmp_path / "r"), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "WRR" in r.stdout
