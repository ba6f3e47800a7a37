"""A pod's headline is the pod's: on a real 4-process JAX run whose worker 2 waits for its data loader
every step (tests/pods/recordings.py, `straggler`), `overview --json`'s step time, duty cycles and split
are the mean over the hosts, named as such, each host's beside them, the same in `tpuscope metrics`
and whether the run is read as one trace or host by host."""

from __future__ import annotations

import json

import pytest

from tests.pods.recordings import STRAGGLER
from tpuscope.cli import main

SPLIT = ("busy", "input", "compile", "idle")


def _json(capsys, *argv: str):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def run(pod_run):
    return str(pod_run("straggler"))


def test_the_headline_input_share_is_the_mean_of_the_hosts(run, capsys):
    overview = _json(capsys, "overview", run)
    headline = overview["headline"]
    hosts = headline["per_host"]
    assert (
        headline["scope"] == "pod" and headline["over"] == f"mean of {len(hosts)} hosts" and len(hosts) == 4
    )
    worker = f"worker{STRAGGLER}"
    shares = {h: v["step_time_split_percent"]["input"] for h, v in hosts.items()}
    assert shares[worker] > 30 and all(s < 5 for h, s in shares.items() if h != worker)
    for part in SPLIT:
        mean = sum(v["step_time_split_percent"][part] for v in hosts.values()) / len(hosts)
        assert overview["step_time_split_percent"][part] == pytest.approx(mean, rel=1e-12)
    for key in ("mean_us", "median_us", "p95_us"):
        mean = sum(v["step_time"][key] for v in hosts.values()) / len(hosts)
        assert overview["step_time"][key] == pytest.approx(mean, rel=1e-12)
    for key in ("duty_cycle", "step_duty_cycle"):
        assert overview[key] == pytest.approx(sum(v[key] for v in hosts.values()) / len(hosts), rel=1e-12)


def test_metrics_and_the_host_by_host_engine_give_the_same_pod(run, capsys):
    overview = _json(capsys, "overview", run)
    rows = _json(capsys, "metrics", run)["metrics"]
    pod = {r["name"]: r for r in rows if r["scope"] == "pod"}
    assert pod["input_share"]["value"] == overview["step_time_split_percent"]["input"]
    assert pod["duty_cycle"]["value"] == overview["duty_cycle"]
    assert pod["step_time_median"]["value"] == overview["step_time"]["median_us"]
    assert pod["input_share"]["over"] == "mean of 4 hosts"
    per_host = {(r["host"], r["name"]): r["value"] for r in rows if r["scope"] == "host"}
    for host, values in overview["headline"]["per_host"].items():
        assert per_host[(host, "input_share")] == values["step_time_split_percent"]["input"]
    # The run analysed host by host, one file at a time, gives the same rows and the same headline.
    by_host = _json(capsys, "metrics", run, "--per-host", "--workers", "here")
    assert by_host["analysed"] == "host by host"
    assert {(r.get("host"), r["name"]): r["value"] for r in by_host["metrics"]} == {
        (r.get("host"), r["name"]): r["value"] for r in rows if r["scope"] in ("pod", "host")
    }
    light = _json(capsys, "overview", run, "--per-host", "--workers", "here")
    for key in ("step_time", "duty_cycle", "step_duty_cycle", "step_time_split_percent", "headline"):
        assert light[key] == overview[key], key


def test_the_text_overview_names_the_pod_mean(run, capsys):
    assert main(["overview", run]) == 0
    out = capsys.readouterr().out
    assert "(mean of 4 hosts)" in out.split("Step split:")[1].splitlines()[0]


def test_ops_json_of_the_run_prints_the_pods_duty_cycles(run, capsys):
    """`ops --json` shares the duty cycles with `overview --json` and `metrics`: on a run of several
    hosts it prints the pod's (the mean over hosts), saying so; one device's table keeps its own."""
    overview = _json(capsys, "overview", run)
    ops = _json(capsys, "ops", run)
    assert ops["duty_cycle"] == overview["duty_cycle"]
    assert ops["steps"]["step_duty_cycle"] == overview["step_duty_cycle"]
    assert ops["steps"]["duty_cycles_over"] == "mean of 4 hosts"
    one = _json(capsys, "ops", run, "--device", "0")
    assert "duty_cycles_over" not in one["steps"]
