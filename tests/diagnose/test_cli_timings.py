"""`tpuscope diagnose --timings`: each rule's cost on stderr (text) or as `timings` (JSON), and the
report itself unchanged by asking for it."""

from __future__ import annotations

import json
import shutil

from tests.conftest import SHARED_TRACES, require_shared_traces
from tpuscope.analysis.diagnose import RULES
from tpuscope.cli import main


def test_json_timings_list_every_rule_and_leave_the_report_as_it_was(recorded_paths, capsys):
    path = str(recorded_paths["input_bound"])
    assert main(["diagnose", path, "--json", "--no-cache"]) == 0
    plain = capsys.readouterr().out
    assert "timings" not in json.loads(plain)
    assert main(["diagnose", path, "--json", "--no-cache", "--timings"]) == 0
    timed = json.loads(capsys.readouterr().out)
    timings = timed.pop("timings")
    assert timed == json.loads(plain)  # the same report, key for key
    assert [r["rule"] for r in timings["rules"]] == list(RULES)
    assert all(r["ms"] >= 0 for r in timings["rules"])
    assert set(timings["before_rules_ms"]) >= {"steps", "framework", "devices"}
    assert abs(timings["rules_total_ms"] - sum(r["ms"] for r in timings["rules"])) < 0.01 * len(RULES)
    # Each shared fact is computed by one rule at most: the later ones reuse it.
    made = [fact for r in timings["rules"] for fact in r["facts_computed_first"]]
    assert len(made) == len(set(made))


def test_text_timings_go_to_stderr(recorded_paths, capsys):
    path = str(recorded_paths["recompile"])
    main(["diagnose", path, "--no-cache"])
    plain = capsys.readouterr()
    main(["diagnose", path, "--no-cache", "--timings"])
    timed = capsys.readouterr()
    assert timed.out == plain.out and "Timings" not in plain.err
    assert timed.err.startswith("Timings, wall ms")
    for rule in RULES:
        assert f"  {rule} " in timed.err


def test_a_run_of_two_hosts_times_each_per_host_rule_over_both(tmp_path, capsys):
    require_shared_traces()
    for rank in (0, 1):
        source = SHARED_TRACES / "kineto" / f"trace_filter__sampled_rank-{rank}.json.gz"
        shutil.copy(source, tmp_path / f"rank{rank}.pt.trace.json.gz")
    assert main(["diagnose", str(tmp_path), "--json", "--no-cache"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(["diagnose", str(tmp_path), "--json", "--no-cache", "--timings"]) == 0
    timed = json.loads(capsys.readouterr().out)
    timings = timed.pop("timings")
    assert timed == plain
    timed_rules = [r["rule"] for r in timings["rules"]]
    assert timed_rules and timed_rules == [rule for rule in RULES if rule in timed_rules]
    assert "step_time_variance" in timed_rules  # a per-host rule, summed over the two hosts


def test_a_run_analysed_host_by_host_times_each_part_summed_over_its_hosts(tmp_path, capsys):
    require_shared_traces()
    for rank in (0, 1):
        source = SHARED_TRACES / "kineto" / f"trace_filter__sampled_rank-{rank}.json.gz"
        shutil.copy(source, tmp_path / f"rank{rank}.pt.trace.json.gz")
    by_host = ["diagnose", str(tmp_path), "--json", "--per-host", "--workers", "here"]
    assert main(by_host) == 0  # stores each host's result: --timings then analyses the hosts afresh
    plain = json.loads(capsys.readouterr().out)
    assert main([*by_host, "--timings"]) == 0
    timed = json.loads(capsys.readouterr().out)
    timings = timed.pop("timings")
    assert timed == plain  # the same report, key for key
    assert timings["analysed"] == "host by host"
    timed_rules = [r["rule"] for r in timings["rules"]]
    # Every rule that ran, once, in the rules' order: each host's rules summed, the pod rules' one run.
    assert timed_rules == [rule for rule in RULES if rule in timed_rules]
    assert {"step_time_variance", "straggler", "clock_offset"} <= set(timed_rules)
    assert all(r["ms"] >= 0 for r in timings["rules"])
    assert abs(timings["rules_total_ms"] - sum(r["ms"] for r in timings["rules"])) < 0.01 * len(RULES)
    (summary,) = [k for k in timings["before_rules_ms"] if k.startswith("host summary")]
    assert summary.endswith(", 2 hosts")
    assert [k for k in timings["before_rules_ms"] if k.startswith("pod table")]
    assert list(timings["after_rules_ms"]) == ["op table rows, 2 hosts"]
    # The whole run's wall time holds its parts (the hosts ran one after the other, here).
    parts = sum(timings["before_rules_ms"].values()) + timings["rules_total_ms"]
    assert timings["hosts_wall_ms"] >= parts

    assert main([*by_host[:2], *by_host[3:], "--timings"]) == 0  # as text: the table on stderr
    text = capsys.readouterr()
    assert text.err.startswith("Timings, wall ms: host by host")
    assert "  step_time_variance " in text.err and "  the run, analysed and combined " in text.err
