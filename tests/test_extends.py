"""`extends`: a scenario file on top of another; tables merge key by key, except a table that
names another `kind`, which replaces the base's (scenario/load.py `deep_merge`)."""

from __future__ import annotations

import tomli_w

from aqmlab.scenario import load
from conftest import small_scenario


def _pair(tmp_path, child: dict) -> str:
    (tmp_path / "base.toml").write_text(tomli_w.dumps(small_scenario()))
    (tmp_path / "child.toml").write_text('extends = "base.toml"\n' + tomli_w.dumps(child))
    return str(tmp_path / "child.toml")


def test_the_same_kind_merges_key_by_key(tmp_path):
    # base: RED, limit 60p, thresholds 5/15; the child changes max_th only.
    sc, _ = load(_pair(tmp_path, {"topology": {"bottleneck": {"qdisc": {"kind": "red", "max_th": 30}}}}))
    q = sc.to_sim_config()["topology"]["bottleneck"]["qdisc"]
    assert (q["kind"], q["limit"], q["min_th"], q["max_th"]) == ("red", {"packets": 60}, 5.0, 30.0)


def test_another_kind_replaces_the_base_table_whole(tmp_path):
    # RED's thresholds and limit would be unknown keys to CAKE (and a FIFO's limit a silent
    # inheritance for FQ-CoDel): the child's discipline is its own.
    sc, _ = load(_pair(tmp_path, {"topology": {"bottleneck": {"qdisc": {"kind": "cake"}}}}))
    assert sc.to_sim_config()["topology"]["bottleneck"]["qdisc"]["kind"] == "cake"
    sc, _ = load(_pair(tmp_path, {"topology": {"bottleneck": {"qdisc": {"kind": "fq_codel"}}}}))
    assert sc.to_sim_config()["topology"]["bottleneck"]["qdisc"]["limit"] == {"packets": 10240}
    # The rest of the table around it still merges: the bottleneck keeps the base's rate.
    assert sc.to_sim_config()["topology"]["bottleneck"]["rate_bps"] == 10_000_000
