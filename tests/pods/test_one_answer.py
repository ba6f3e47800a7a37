"""One pod analysis: `diagnose RUN` (one trace of every host) and the host-by-host engine in this
process (`--workers here`), on local worker processes (`--per-host`: one per core) and on a Dask
cluster (`--workers tcp://...`) give the same findings, grouped across hosts, on real 4-process JAX
CPU runs (tests/pods/recordings.py).

And bad input in a pod (a host file that cannot be read, a host with fewer steps, a host without a
device plane): the CLI names the host on stderr and goes on with the others.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import SHARED_TRACES as TRACES
from tests.pods import recordings
from tpuscope.analysis.metrics import format_percent
from tpuscope.analysis.pod_run import POD_RULES
from tpuscope.app.hosts import analyze_run
from tpuscope.errors import ProfileError

LATE_HOST = f"worker{recordings.STRAGGLER}"
HOSTS = [f"worker{i}" for i in range(recordings.PROCESSES)]
PATHS = {"one trace": [], "in process": ["--workers", "here"], "processes": ["--per-host"]}


def _diagnose(run, *options, expect=0):
    result = subprocess.run(
        [sys.executable, "-m", "tpuscope", "diagnose", str(run), "--json", "--no-cache", *options],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == expect, result.stderr
    return (json.loads(result.stdout) if expect == 0 else None), result.stderr


@pytest.fixture(scope="module")
def every_path(dask_scheduler):
    """every_path(run) -> {path: (report, stderr)}; Dask only where it is installed."""
    paths = dict(PATHS)
    if dask_scheduler is not None:
        paths["dask"] = ["--workers", dask_scheduler]
    return lambda run: {name: _diagnose(run, *options) for name, options in paths.items()}


def _same_answer(answers):
    """The findings (ids, severities, hosts, numbers, evidence) and checked lines of every path, equal."""
    (first, (report, _)), *rest = answers.items()
    for name, (other, _) in rest:
        assert other["findings"] == report["findings"], f"{name} differs from {first}"
        assert other["checked"] == report["checked"], f"{name} differs from {first}"
        assert other["rule_errors"] == report["rule_errors"] == {}
    return report


@pytest.fixture(scope="module")
def answers(pod_run, every_path):
    found: dict[str, dict] = {}

    def get(scenario):
        if scenario not in found:
            found[scenario] = every_path(pod_run(scenario))
        return found[scenario]

    return get


def test_a_straggler_run_gets_one_answer_naming_the_late_host(answers):
    report = _same_answer(answers("straggler"))
    stragglers = [f for f in report["findings"] if f["id"] == "straggler"]
    assert len(stragglers) == 1 and stragglers[0]["metrics"]["on_hosts"] == [LATE_HOST]
    # The late host's devices wait for its own loader: a finding of that host alone, saying which.
    input_bound = [f for f in report["findings"] if f["id"] == "input_bound"]
    assert [f["metrics"]["on_hosts"] for f in input_bound] == [[LATE_HOST]]
    assert input_bound[0]["title"].startswith(f"{LATE_HOST}: ")
    # No per-host rule reports the same thing once per host: every (rule, subject) is one finding.
    for finding in report["findings"]:
        hosts = finding["metrics"]["on_hosts"]
        assert hosts and set(hosts) <= set(HOSTS)
        if finding["id"] not in POD_RULES and len(hosts) > 1:
            assert finding["title"].startswith(f"On {len(hosts)} of {len(HOSTS)} hosts")
    # Every host's evidence is on the run's time: the late host's input evidence lies in its steps.
    steps = stragglers[0]["evidence"][0]
    assert steps["host"] == LATE_HOST and steps["focus"]


def test_a_run_whose_every_host_is_input_bound_gets_one_finding_naming_all_of_them(answers):
    report = _same_answer(answers("input_bound"))
    assert "straggler" not in {f["id"] for f in report["findings"]}
    input_bound = [f for f in report["findings"] if f["id"] == "input_bound"]
    assert len(input_bound) == 1
    finding = input_bound[0]
    assert finding["metrics"]["on_hosts"] == HOSTS
    assert finding["title"].startswith(f"On {len(HOSTS)} of {len(HOSTS)} hosts")
    per_host = finding["metrics"]["per_host"]
    assert list(per_host) == HOSTS
    sleep_ms = recordings.STRAGGLER_SLEEP_S * 1e3
    for host, figures in per_host.items():
        # Each host's devices wait about as long as its loader sleeps, every step.
        assert 0.8 * sleep_ms <= figures["ms_per_step"] <= 1.5 * sleep_ms, (host, figures)
        assert figures["severity"] in {"warning", "critical"}
    # The headline figures are the most affected host's.
    worst = max(per_host, key=lambda h: per_host[h]["percent_of_step_time"])
    assert finding["impact"]["percent_of_step_time"] == per_host[worst]["percent_of_step_time"]
    assert f"({worst} worst)" in finding["title"]
    # One evidence item per host with its own figures, on that host.
    leading = finding["evidence"][: len(HOSTS)]
    assert [e["host"] for e in leading] == HOSTS
    for item in leading:
        assert item["label"].startswith(f"{item['host']}: ")
        assert format_percent(per_host[item["host"]]["percent_of_step_time"]) in item["label"]
    # The checked line merges the hosts' lines: one line, the figures as their range.
    checked = {c["rule"]: c["summary"] for c in report["checked"]}
    assert "findings on every host" in checked["input_bound"]
    assert len([c for c in report["checked"] if c["rule"] == "input_bound"]) == 1


def test_a_balanced_run_gets_one_answer_and_no_host_warns_on_its_own(answers):
    report = _same_answer(answers("balanced"))
    assert "straggler" not in {f["id"] for f in report["findings"]}
    # The per-host rules find nothing worth a warning on any host (the balanced loop's hosts are
    # alike and fed); what the cross-host rules say is theirs (collective_bound on a loaded machine).
    own = [f for f in report["findings"] if f["id"] not in POD_RULES and f["severity"] != "info"]
    assert own == [], [f["title"] for f in own]
    checked = {c["rule"]: c["summary"] for c in report["checked"]}
    assert f"(each of {len(HOSTS)} hosts)" in checked["input_bound"]


def test_a_healthy_run_gets_one_answer_and_no_warning(pod_run, every_path):
    """Every process alike, compute-heavy, one per core: no path warns about anything."""
    report = _same_answer(every_path(pod_run("healthy")))
    # collective_bound is left out: on CPU the two processes' collectives wait for whichever one the
    # machine's other load delays, measured here at 18-28% of the step on a lightly loaded machine
    # and 31-35% with a dozen test processes beside it (the rule's 30% is XProf's, for accelerators).
    warnings = [
        f["title"] for f in report["findings"] if f["severity"] != "info" and f["id"] != "collective_bound"
    ]
    assert warnings == []
    checked = {c["rule"]: c["summary"] for c in report["checked"]}
    assert f"(each of {recordings.HEALTHY_PROCESSES} hosts)" in checked["input_bound"]
    assert "findings" not in checked["input_bound"]


def test_a_host_file_gone_before_it_is_read_is_named_and_the_others_are_analysed(
    pod_run, tmp_path, dask_scheduler
):
    """A host file listed but missing when read (deleted, an unmounted disk): in this process, on
    worker processes and on Dask."""
    files = [str(f) for f in sorted(pod_run("straggler").glob("*.xplane.pb"))]
    gone = str(tmp_path / "worker4.xplane.pb")
    whole = analyze_run(files, where="here", use_cache=False)
    ways = ["here", "2", *([dask_scheduler] if dask_scheduler else [])]
    for where in ways:
        unreadable: list[str] = []
        run = analyze_run([*files, gone], where=where, unreadable=unreadable, use_cache=False)
        assert len(unreadable) == 1 and "worker4.xplane.pb" in unreadable[0], (where, unreadable)
        assert run.unreadable == unreadable
        assert [h.host for h in run.hosts] == HOSTS
        assert run.findings() == whole.findings() and run.checked() == whole.checked()
        with pytest.raises(ProfileError, match="worker4"):  # without a list to note it in: an error
            analyze_run([*files, gone], where=where, use_cache=False)


def _broken_run(pod_run, tmp_path):
    """The straggler run with worker3's file replaced by bytes that are no profile."""
    run = tmp_path / "run"
    shutil.copytree(pod_run("straggler"), run)
    (run / "worker3.xplane.pb").write_bytes(b"\x0a\x05" + b"not an xspace" * 50)
    return run


def test_a_host_file_that_cannot_be_read_is_named_and_the_others_are_analysed(pod_run, tmp_path, every_path):
    run = _broken_run(pod_run, tmp_path)
    answers = every_path(run)
    report = _same_answer(answers)
    for name, (answer, stderr) in answers.items():
        warnings = [line for line in stderr.splitlines() if "worker3.xplane.pb" in line]
        assert len(warnings) == 1 and "left out" in warnings[0], (name, stderr)
        assert answer["hosts"] == HOSTS[:3]
        assert len(answer["unreadable"]) == 1
    stragglers = [f for f in report["findings"] if f["id"] == "straggler"]
    assert [f["metrics"]["on_hosts"] for f in stragglers] in ([], [[LATE_HOST]])
    assert {h for f in report["findings"] for h in f["metrics"]["on_hosts"]} <= set(HOSTS[:3])
    # --strict makes it an error: one sentence naming the file, exit 2.
    _, stderr = _diagnose(run, "--per-host", "--strict", expect=2)
    assert "worker3.xplane.pb" in stderr and "Traceback" not in stderr


def test_a_host_with_fewer_steps_is_named_and_the_steps_all_hosts_have_are_compared(pod_run, every_path):
    answers = every_path(pod_run("uneven_steps"))
    report = _same_answer(answers)
    late = HOSTS[-1]
    for name, (answer, stderr) in answers.items():
        notes = [n for n in answer["notes"] if n.startswith(f"{late} has ")]
        assert len(notes) == 1, (name, answer["notes"])
        found = re.match(
            rf"{late} has (\d+) steps where another host has (\d+): .* the (\d+) steps every", notes[0]
        )
        assert found, notes[0]
        fewer, most, compared = (int(g) for g in found.groups())
        assert fewer < most == recordings.STEPS and compared == fewer
        assert abs(fewer - (recordings.STEPS - recordings.LATE_START_STEPS)) <= 1
        assert notes[0] in stderr
    assert "straggler" not in {f["id"] for f in report["findings"]}


def test_a_host_without_a_device_plane_is_named_and_the_others_are_analysed(pod_run, tmp_path, every_path):
    """A run folder whose fourth host is a real TensorFlow CPU profile: no device plane (its ops run
    on host threads, not as device ops)."""
    host_only = TRACES / "tensorflow" / "tf_keras_cpu_prefetch.xplane.pb"
    run = tmp_path / "run"
    run.mkdir()
    for i in range(3):
        shutil.copyfile(pod_run("straggler") / f"worker{i}.xplane.pb", run / f"worker{i}.xplane.pb")
    shutil.copyfile(host_only, run / "worker3.xplane.pb")
    answers = every_path(run)
    _same_answer(answers)
    for name, (answer, stderr) in answers.items():
        assert answer["hosts"] == HOSTS, name
        note = "worker3 has no device plane"
        assert any(n.startswith(note) for n in answer["notes"]) and note in stderr, (name, answer["notes"])
        assert "Traceback" not in stderr


def test_the_text_reads_the_same_but_for_how_the_run_was_read(pod_run):
    run = pod_run("straggler")
    texts = {}
    for name, options in (("one trace", []), ("per host", ["--per-host"])):
        result = subprocess.run(
            [sys.executable, "-m", "tpuscope", "diagnose", str(run), "--no-cache", *options],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        texts[name] = result.stdout.splitlines()
    assert texts["one trace"][1] == f"Hosts:     {len(HOSTS)}, read as one trace"
    assert texts["per host"][1] == f"Hosts:     {len(HOSTS)}, analysed host by host"
    assert texts["one trace"][2:] == texts["per host"][2:]
    assert any(line.startswith(f"[CRITICAL] {LATE_HOST}: Input-bound") for line in texts["per host"])
