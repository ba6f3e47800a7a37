"""One number per quantity: `tpuscope metrics --json`, `overview --json`, `ops --json` and the SQL table
`metrics` print the same value for every metric they share, and the findings show the metrics' values,
rounded the one way `format_metric` rounds them, each naming its window (real profiles: TPU v6e,
MI300X, TensorFlow, PyTorch/XLA and Kineto traces)."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import GPU_TRACE, PTXLA_TRACE, SHARED_TRACES, TF_TRACE, TPU_TRACE, require_shared_traces
from tpuscope.analysis.metrics import METRICS, METRICS_DEFINED, format_metric
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main

KINETO = SHARED_TRACES / "kineto"
PROFILES = {
    "tpu": TPU_TRACE,
    "mi300x": GPU_TRACE,
    "tensorflow": TF_TRACE,
    "pytorch_xla": PTXLA_TRACE,
    "kineto_resnet50": KINETO / "kineto_tb__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz",
    "kineto_alexnet": KINETO / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
}


def _json(capsys, *argv: str):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _at(payload, dotted: str):
    for key in dotted.split("."):
        if payload is None:
            return None
        payload = payload[key]
    return payload


@pytest.fixture(scope="module")
def analyses():
    """A TraceAnalysis per profile, loaded once for the module."""
    require_shared_traces()
    return {name: TraceAnalysis(open_trace(path)) for name, path in PROFILES.items()}


@pytest.mark.parametrize("name", list(PROFILES))
def test_every_output_prints_the_metrics_value(name, capsys):
    require_shared_traces()
    path = str(PROFILES[name])
    metrics = {r["name"]: r for r in _json(capsys, "metrics", path)["metrics"]}
    assert [m.name for m in METRICS_DEFINED] == list(metrics)  # every registered metric, once, in order
    overview = _json(capsys, "overview", path)
    ops = _json(capsys, "ops", path) if overview["devices"]["kind"] else None
    shared = 0
    for metric in METRICS_DEFINED:
        row = metrics[metric.name]
        assert row["unit"] == metric.unit and row["scope"] == metric.scope and row["definition"]
        assert (row["value"] is None) == ("reason" in row)  # a value, or why there is none
        if metric.overview_key:
            assert _at(overview, metric.overview_key) == row["value"], metric.name
            shared += 1
        if metric.ops_key and ops is not None:
            assert _at(ops, metric.ops_key) == row["value"], metric.name
    assert shared >= 9
    assert main(["sql", path, "select name, value, unit, scope from metrics", "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert table["columns"] == ["name", "value", "unit", "scope"]
    assert [tuple(r) for r in table["rows"]] == [
        (k, r["value"], r["unit"], r["scope"]) for k, r in metrics.items()
    ]


def test_the_text_table_formats_each_value_by_its_unit(capsys):
    require_shared_traces()
    assert main(["metrics", str(TPU_TRACE)]) == 0
    out = capsys.readouterr().out
    metrics = TraceAnalysis(open_trace(TPU_TRACE)).get(METRICS)
    for row in metrics:
        line = next(line for line in out.splitlines() if line.split()[:1] == [row.name])
        assert format_metric(row.value, row.unit) in line
    assert re.search(r"^duty_cycle\s+80\.3%\s+profile\s", out, re.M)
    assert re.search(r"^step_time_median\s+784\.124 ms\s+steps\s", out, re.M)


def test_async_wait_is_one_value_per_quantity_in_its_finding(analyses):
    analysis = analyses["tpu"]
    metrics = analysis.get(METRICS)
    (finding,) = [f for f in analysis.report.findings if f.id == "async_wait"]
    of_device_time = format_metric(metrics.value("async_wait_share"), "percent")
    of_step_time = format_metric(metrics.value("async_wait_step_share"), "percent")
    assert of_device_time == "96.5%" and of_step_time == "96.9%"  # two quantities, each named
    assert f"{of_device_time} of device time" in finding.title
    assert f"{of_device_time} of their op time" in finding.explanation
    assert finding.impact is not None
    assert finding.impact.percent_of_step_time == metrics.value("async_wait_step_share")
    assert f"costs {of_step_time} of each step" in finding.impact.words()
    assert finding.impact.short().startswith(of_step_time)
    # No other rounding of either number anywhere in what the finding shows.
    shown = " ".join([finding.title, finding.explanation, finding.impact.words(), finding.impact.short()])
    assert not re.search(r"96\.(93|48|483)%", shown)


@pytest.mark.parametrize("name", ["mi300x", "kineto_alexnet"])
def test_the_low_utilization_finding_shows_the_steady_state_duty_cycle_and_says_so(name, analyses):
    analysis = analyses[name]
    metrics = analysis.get(METRICS)
    (finding,) = [f for f in analysis.report.findings if f.id == "low_device_utilization"]
    steady = format_metric(metrics.value("steady_state_duty_cycle"), "fraction")
    assert f"duty cycle {steady} of the steady state" in finding.title
    assert f"ran ops {steady} of the time" in finding.explanation
    # The card's duty cycle is the whole profile's, a different window: it is not what the finding says.
    profile = format_metric(metrics.value("duty_cycle"), "fraction")
    assert profile != steady and profile not in finding.title


def test_the_step_variance_median_is_the_steady_state_median_and_named_so(analyses):
    analysis = analyses["tensorflow"]
    metrics = analysis.get(METRICS)
    steady_ms = metrics.value("steady_step_time_median") / 1e3
    median_ms = metrics.value("step_time_median") / 1e3
    assert round(steady_ms, 3) != round(median_ms, 3)  # the first step is left out: a different quantity
    (line,) = [
        c["summary"] for c in analysis.report.to_json()["checked"] if c["rule"] == "step_time_variance"
    ]
    assert f"steady-state median {steady_ms:.3f} ms" in line


def test_the_input_bound_finding_shows_the_input_share(analyses):
    analysis = analyses["kineto_resnet50"]
    share = format_metric(analysis.get(METRICS).value("input_share"), "percent")
    (finding,) = [f for f in analysis.report.findings if f.id == "input_bound"]
    assert share == "34.0%" and f"waits for the host {share} of step time" in finding.title


def test_the_collective_bound_finding_shows_the_collective_share():
    require_shared_traces()
    analysis = TraceAnalysis(open_trace(KINETO / "trace_filter__sampled_rank-0.json.gz"))
    share = format_metric(analysis.get(METRICS).value("collective_share"), "percent")
    (finding,) = [f for f in analysis.report.findings if f.id == "collective_bound"]
    assert f"this rank spends {share} of step time in collectives" in finding.title
    assert f"this rank spends {share} of its step time" in finding.explanation
