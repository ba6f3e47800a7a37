"""`tpuscope history`: real JAX CPU runs in a logdir, in order, each against the one before with its
cause; summaries cached (a new run costs one analysis); the CI gate and its JUnit report; bad input
(another format or program, a run with no steps, a broken run in the middle)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.conftest import GPU_TRACE, TPU_TRACE, require_shared_traces
from tpuscope.analysis.compare.history import RunSummary, compare_summaries, summarize
from tpuscope.analysis.compare.runs import compare_runs
from tpuscope.app.history import read_history
from tpuscope.cli import main

KINETO_TRACE = TPU_TRACE.parents[1] / "kineto" / "negative_queue_length_values_check__rank0.json.gz"


def _add_run(logdir: Path, name: str, profile: Path, host_file: str | None = None) -> Path:
    """A run folder `logdir/plugins/profile/<name>/` holding a copy of `profile`."""
    folder = logdir / "plugins" / "profile" / name
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / (host_file or profile.name)
    shutil.copyfile(profile, target)
    return target


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def logdir(tmp_path, slowed_machine_paths) -> Path:
    """Three runs in time order: the healthy program, the same plus a small sort, the healthy program
    on a CPU busy loops share."""
    root = tmp_path / "logdir"
    for k, scenario in enumerate(("machine_base", "small_extra", "machine_slow")):
        _add_run(root, f"2026_01_0{k + 1}_12_00_00", slowed_machine_paths[scenario])
    return root


def test_every_run_in_order_with_its_change_and_cause(
    logdir, cache, analyzed, capsys, uniformly_slowed_machine_paths
):
    assert main(["history", str(logdir), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    runs = payload["runs"]
    assert [r["run"] for r in runs] == ["2026_01_01_12_00_00", "2026_01_02_12_00_00", "2026_01_03_12_00_00"]
    assert payload["analysed_runs"] == [r["run"] for r in runs]
    for r in runs:
        assert {"run", "median_step_ms", "ci_ms", "change_from_previous", "cause", "top_changed_ops"} <= set(
            r
        )
        low, high = r["ci_ms"]
        assert low <= r["median_step_ms"] <= high and r["steps"] == 64
    first, small, slow = runs
    assert first["change_from_previous"] is None and first["previous"] is None
    assert small["previous"] == first["run"]
    # The loaded CPU: slower, and the machine is the cause (every op slower, the sort gone besides).
    assert slow["change_from_previous"] == "slower" and slow["cause"]["kind"] == "machine"
    assert slow["top_changed_ops"] and {"name", "delta_us"} <= set(slow["top_changed_ops"][0])
    # The history's verdict on a pair is compare's.
    direct = compare_runs(analyzed("machine_base"), analyzed("small_extra"))
    assert small["change_from_previous"] == direct.verdict
    assert (small["cause"] or {}).get("kind") == (None if direct.cause is None else direct.cause.kind)
    assert small["change_percent"] == round(direct.typical.change_percent, 3)


def test_a_new_run_costs_one_analysis(logdir, cache, machine_paths, capsys, uniformly_slowed_machine_paths):
    first = read_history([str(logdir)])
    assert len(first.analysed) == 3
    again = read_history([str(logdir)])
    assert again.analysed == []  # every summary from the cache
    assert [e.change for e in again.entries] == [e.change for e in first.entries]
    _add_run(logdir, "2026_01_04_12_00_00", machine_paths["machine_base"])
    after = read_history([str(logdir)])
    assert after.analysed == ["2026_01_04_12_00_00"] and len(after.entries) == 4
    assert after.entries[-1].change == "faster" and after.entries[-1].comparison.cause.kind == "machine"
    # A run whose file changed is analysed again; the summaries are small.
    summaries = list((cache / "run_summaries").glob("*.json"))
    assert len(summaries) == 4 and max(p.stat().st_size for p in summaries) < 64 * 1024
    assert main(["history", str(logdir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["analysed_runs"] == []


def test_a_summary_round_trips_and_compares_as_the_runs_do(analyzed, uniformly_slowed_machine_paths):
    base, new = analyzed("machine_base"), analyzed("machine_slow")
    summaries = [RunSummary.from_json(json.loads(json.dumps(summarize(n, r).to_json()))) for n, r in
                 (("a", base), ("b", new))]  # fmt: skip
    assert all(s is not None for s in summaries)
    c = compare_summaries(summaries[0], summaries[1])
    direct = compare_runs(base, new)
    assert c.verdict == direct.verdict and c.cause.kind == direct.cause.kind == "machine"
    assert c.typical.change_percent == pytest.approx(direct.typical.change_percent)


def test_the_gate_checks_the_newest_run_and_writes_junit(
    logdir, cache, tmp_path, capsys, uniformly_slowed_machine_paths
):
    report = tmp_path / "report.xml"
    code = main(["history", str(logdir), "--fail-on-regression", "5", "--junit", str(report)])
    out = capsys.readouterr().out
    assert (
        code == 1 and "Regression gate: FAILED: 2026_01_03_12_00_00 is slower than 2026_01_02_12_00_00" in out
    )
    assert "Cause: machine." in out
    suite = ElementTree.parse(report).getroot()
    assert suite.tag == "testsuite" and suite.get("failures") == "1" and suite.get("tests") == "4"
    gate = next(c for c in suite.iter("testcase") if c.get("name") == "regression gate")
    assert gate.find("failure") is not None
    assert next(iter(suite.iter("testcase"))).find("skipped") is not None  # the first run: nothing before it
    # A slower machine does not fail the gate with --ignore-machine.
    assert main(["history", str(logdir), "--fail-on-regression", "5", "--ignore-machine"]) == 0
    assert "Regression gate: passed" in capsys.readouterr().out
    # Against a named baseline; JSON says what the gate compared.
    args = [
        "history",
        str(logdir),
        "--json",
        "--fail-on-regression",
        "5",
        "--baseline",
        "2026_01_01_12_00_00",
    ]
    assert main(args) == 1
    gate_json = json.loads(capsys.readouterr().out)["gate"]
    assert gate_json["base"] == "2026_01_01_12_00_00" and gate_json["new"] == "2026_01_03_12_00_00"
    assert gate_json["regression"] is True and gate_json["cause"]["kind"] == "machine"


def test_a_broken_run_in_the_middle_is_named_and_skipped(
    logdir, cache, machine_paths, capsys, uniformly_slowed_machine_paths
):
    broken = logdir / "plugins" / "profile" / "2026_01_02_12_00_00" / machine_paths["small_extra"].name
    broken.write_bytes(broken.read_bytes()[:100])
    assert main(["history", str(logdir), "--json"]) == 0
    captured = capsys.readouterr()
    runs = json.loads(captured.out)["runs"]
    assert runs[1]["error"] and runs[1]["median_step_ms"] is None and runs[1]["change_from_previous"] is None
    assert "run 2026_01_02_12_00_00 skipped" in captured.err and captured.err.count("\n") == 1
    assert runs[2]["previous"] == "2026_01_01_12_00_00"  # compared with the last run that was read
    assert runs[2]["change_from_previous"] == "slower" and runs[2]["cause"]["kind"] == "machine"
    # The text names it too.
    assert main(["history", str(logdir)]) == 0
    assert "skipped: Cannot open" in capsys.readouterr().out


def test_another_format_or_program_gets_no_verdict_and_a_run_without_steps_says_so(
    logdir, cache, machine_paths, capsys
):
    require_shared_traces()
    _add_run(logdir, "2026_01_04_12_00_00", KINETO_TRACE)  # PyTorch profiler trace of a GPU run
    _add_run(logdir, "2026_01_05_12_00_00", machine_paths["machine_base"])
    _add_run(logdir, "2026_01_06_12_00_00", TPU_TRACE)  # XPlane again, other programs
    _add_run(logdir, "2026_01_07_12_00_00", GPU_TRACE)  # no steps
    assert main(["history", str(logdir), "--json"]) == 0
    runs = {r["run"]: r for r in json.loads(capsys.readouterr().out)["runs"]}
    kineto, back, tpu, gpu = (runs[f"2026_01_0{k}_12_00_00"] for k in (4, 5, 6, 7))
    assert "trace format changed" in kineto["program_changed"] and kineto["change_from_previous"] is None
    assert "trace format changed" in back["program_changed"] and back["change_from_previous"] is None
    assert "program changed" in tpu["program_changed"] and "jit_train_step" in tpu["program_changed"]
    assert tpu["change_from_previous"] is None and tpu["previous"] is None
    assert gpu["steps"] == 0 and gpu["note"].startswith("no steps") and gpu["median_step_ms"] is None
    assert main(["history", str(logdir)]) == 0
    out = capsys.readouterr().out
    assert "no verdict: the trace format changed" in out and "no verdict: the program changed" in out


def test_a_list_of_runs_is_read_in_the_order_given(uniformly_slowed_machine_paths, cache, capsys):
    paths = [
        str(uniformly_slowed_machine_paths["machine_slow"]),
        str(uniformly_slowed_machine_paths["machine_base"]),
    ]
    assert main(["history", *paths, "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["sources"][0] for r in runs] == paths
    assert runs[1]["change_from_previous"] == "faster" and runs[1]["cause"]["kind"] == "machine"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--baseline", "x"], "--baseline and --ignore-machine go with --fail-on-regression"),
        (["--fail-on-regression", "-1"], "--fail-on-regression must be a percentage >= 0"),
        (["--fail-on-regression", "5", "--baseline", "nope"], "there is no run named 'nope'"),
    ],
)
def test_bad_options_are_one_sentence(logdir, cache, capsys, args, message):
    assert main(["history", str(logdir), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_missing_logdir_is_one_sentence(tmp_path, cache, capsys):
    assert main(["history", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "nowhere" in err and err.count("\n") == 1


def test_no_cache_analyses_every_run_and_keeps_nothing(logdir, cache):
    history = read_history([str(logdir)], use_cache=False)
    assert len(history.analysed) == 3 and not (cache / "run_summaries").exists()
    assert os.environ["TPUSCOPE_CACHE_DIR"] == str(cache)
