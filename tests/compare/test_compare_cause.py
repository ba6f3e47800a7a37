"""The cause of a change, held out on real JAX CPU recordings with a known cause: the same program on
a CPU that busy loops share (machine), an added sort (code), a sleeping loader (input), shapes that
recompile (compilation); the CI gate with --ignore-machine; the change net of the machine."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.compare import recordings
from tpuscope.analysis.compare.cause import (
    CAUSE_CODE,
    CAUSE_COMPILATION,
    CAUSE_INPUT,
    CAUSE_MACHINE,
    CAUSE_MIXED,
    HOST_LOAD_EXPONENT,
    MIN_MACHINE_COVERAGE,
    machine_factor,
    program_fingerprint,
)
from tpuscope.analysis.compare.runs import VERDICT_FASTER, VERDICT_NO_CHANGE, VERDICT_SLOWER, compare_runs
from tpuscope.analysis.compare.statistics import NOISE_FLOOR_HOST_CPU_PERCENT, median_interval
from tpuscope.cli import main


def test_the_same_program_on_a_loaded_cpu_is_the_machine(analyzed, uniformly_slowed_machine_paths):
    base, slow = analyzed("machine_base"), analyzed("machine_slow")
    assert base.programs and base.programs == slow.programs  # the same HLO ran
    c = compare_runs(base, slow)
    assert c.verdict == VERDICT_SLOWER
    assert c.cause is not None and c.cause.kind == CAUSE_MACHINE, c.summary
    evidence = c.cause.evidence
    assert evidence["same_programs"] is True and evidence["changed_programs"] == []
    factor = evidence["machine_factor"]
    low, high = factor["spread"]
    assert factor["factor"] > 1.2 and low <= factor["factor"] <= high  # busy loops took most of the CPU
    assert factor["ops_moved_with_it"] >= factor["ops"] - 1
    assert "same HLO" in c.cause.summary and "x slower" in c.cause.summary
    assert c.cause.shares[CAUSE_MACHINE] > 0.9, c.cause.evidence
    assert abs(c.cause.net_change_percent) < 10  # nothing is left of the change net of the machine
    # Said first: the verdict paragraph names the cause right after the change, no op singled out.
    first, second = c.summary.split(". ", 2)[:2]
    assert first.startswith("NEW is") and second.startswith("Cause: the machine")
    assert "of the extra device time is in" not in c.summary
    back = compare_runs(slow, base)
    assert back.verdict == VERDICT_FASTER and back.cause.kind == CAUSE_MACHINE


def test_the_gate_says_the_cause_and_ignore_machine_passes_a_slower_machine(
    uniformly_slowed_machine_paths, capsys
):
    base, slow = (
        str(uniformly_slowed_machine_paths["machine_base"]),
        str(uniformly_slowed_machine_paths["machine_slow"]),
    )
    assert main(["compare", base, slow, "--fail-on-regression", "5"]) == 1
    out = capsys.readouterr().out
    assert "Verdict: slower (cause: machine)" in out.splitlines()[3]
    assert "Regression gate: FAILED" in out and "Cause: machine." in out
    assert main(["compare", base, slow, "--fail-on-regression", "5", "--ignore-machine"]) == 0
    out = capsys.readouterr().out
    assert "Regression gate: passed (the change net of the machine is within 5%)" in out
    assert main(["compare", base, slow, "--json", "--fail-on-regression", "5", "--ignore-machine"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["cause"]["kind"] == "machine" and set(payload["cause"]) == {"kind", "summary", "evidence"}
    assert payload["regression"] is False and payload["ignore_machine"] is True


def test_ignore_machine_alone_is_one_sentence(machine_paths, capsys):
    base = str(machine_paths["machine_base"])
    assert main(["compare", base, base, "--ignore-machine"]) == 2
    assert "--ignore-machine goes with --fail-on-regression" in capsys.readouterr().err


def test_an_added_sort_is_the_code_and_names_the_sort_and_its_program(analyzed, pair_paths, capsys):
    c = compare_runs(analyzed("plain"), analyzed("extra_op"))
    assert c.verdict == VERDICT_SLOWER and c.cause.kind == CAUSE_CODE, c.summary
    assert c.cause.evidence["same_programs"] is False
    assert c.cause.evidence["changed_programs"] == ["jit_train_step"]
    assert c.cause.evidence["changed_ops"][0]["name"].startswith("sort")
    assert "`sort" in c.cause.summary and "(new," in c.cause.summary
    # ... and --ignore-machine still fails on it: the change net of the machine is the sort.
    args = ["compare", str(pair_paths["plain"]), str(pair_paths["extra_op"]), "--fail-on-regression", "5"]
    assert main([*args, "--ignore-machine"]) == 1
    assert "Cause: code." in capsys.readouterr().out


def test_a_sleeping_loader_is_the_input_pipeline(analyzed):
    c = compare_runs(analyzed("prefetched"), analyzed("input_bound"))
    assert c.verdict == VERDICT_SLOWER and c.cause.kind == CAUSE_INPUT, c.summary
    assert c.cause.summary.startswith("Cause: the input pipeline")
    back = compare_runs(analyzed("input_bound"), analyzed("prefetched"))
    assert back.verdict == VERDICT_FASTER and back.cause.kind == CAUSE_INPUT


def test_recompiling_shapes_are_compilation(analyzed):
    c = compare_runs(analyzed("padded"), analyzed("reshaping"))
    assert c.verdict == VERDICT_SLOWER and c.cause.kind == CAUSE_COMPILATION, c.summary
    assert "steps compiled" in c.cause.summary


def test_a_small_sort_is_found_net_of_the_machine_when_the_untouched_ops_moved_alike(analyzed):
    """`small_extra` adds a sort of a few ms to a ~10 ms step, recorded right after `machine_base`
    in its own interpreter: below the 50% host-CPU floor unless the machine drifted too. Whatever the
    verdict, the changed program and the sort are the evidence; when the untouched ops moved alike
    enough to lower the floor, the change net of the machine is called (and is the code's)."""
    c = compare_runs(analyzed("machine_base"), analyzed("small_extra"))
    if c.cause is None:
        assert c.verdict == VERDICT_NO_CHANGE
        if not c.typical.ci_excludes_zero:
            pytest.skip(f"the step-time interval includes zero ({c.summary}): no change to explain")
        pytest.skip(f"the untouched ops did not move alike enough to lower the floor ({c.summary})")
    assert c.cause.evidence["changed_programs"] == ["jit_train_step"]
    assert any(op["name"].startswith("sort") for op in c.cause.evidence["changed_ops"])
    assert c.cause.shares[CAUSE_CODE] > 0
    if c.net_decided:
        assert c.verdict == VERDICT_SLOWER and c.cause.kind in (CAUSE_CODE, CAUSE_MIXED)
        assert c.cause.net_noise_floor_percent < NOISE_FLOOR_HOST_CPU_PERCENT
        assert c.cause.net_change_percent >= c.cause.net_noise_floor_percent
        assert "net of the machine" in c.summary


def test_the_machine_factor_is_the_untouched_ops_time_ratio(analyzed):
    c = compare_runs(analyzed("plain"), analyzed("extra_op"))
    factor = machine_factor(c.ops)
    untouched = [r for r in c.ops.rows if r.match not in ("only_new", "only_base")]
    assert factor is not None and factor.ops <= len(untouched)
    assert factor.coverage >= MIN_MACHINE_COVERAGE  # the sort is NEW's only: BASE's ops are all untouched
    assert factor.low <= factor.factor <= factor.high


def test_healthy_pairs_never_pass_the_floor_net_of_the_machine(analyzed):
    """The five healthy runs recorded at once, ten pairs, with the floor net of the machine: how many
    pairs get a lowered floor, and that none is called changed (the false-alarm rate, 0 of 10)."""
    runs = [f"healthy_{k}" for k in range(recordings.HEALTHY_RUNS)]
    called = []
    for i, a in enumerate(runs):
        for b in runs[i + 1 :]:
            c = compare_runs(analyzed(a), analyzed(b))
            if c.net_decided:
                called.append((a, b, c.summary))
    assert called == []


def test_program_fingerprints_ignore_instruction_numbering():
    a = [
        "%fusion.3 = f32[8]{0} fusion(f32[8]{0} %p.1), kind=kLoop, calls=%fused.2",
        "%p.1 = f32[8]{0} parameter(0)",
    ]
    b = [
        "%p.7 = f32[8]{0} parameter(0)",
        "%fusion.9 = f32[8]{0} fusion(f32[8]{0} %p.7), kind=kLoop, calls=%fused.4",
    ]
    assert program_fingerprint(a) == program_fingerprint(b)
    assert program_fingerprint(a) != program_fingerprint([a[0].replace("f32[8]", "f32[16]"), a[1]])


def test_median_interval_uses_the_binomial_order_statistics():
    # n = 10: the 95% interval of the median is x(2)..x(9) (coverage 97.9%; x(3)..x(8) has 89%).
    assert median_interval(np.arange(1.0, 11.0)) == (2.0, 9.0)
    assert median_interval(np.arange(1.0, 6.0)) == (1.0, 5.0)  # too few for 95%: the whole range
    assert median_interval(np.zeros(0)) is None


def test_other_devices_are_the_machine_for_the_ops_both_runs_have_and_the_added_sort_stays_code(analyzed):
    """Devices the profiles describe differently (here: the device facts of the TPU generations a
    team moves between, on the real pair with the added sort) make the untouched ops' change the
    machine's; the op only NEW has is still the code's."""
    from tpuscope.analysis.compare.cause import explain
    from tpuscope.analysis.compare.runs import device_differences

    differences = device_differences(
        ("TPU", "TPU"), ({"device_type": "TPU v5 lite"}, {"device_type": "TPU v6 Lite"})
    )
    assert differences == [("device type", "TPU v5 lite", "TPU v6 Lite")]
    assert device_differences(("TPU", "GPU"), ({}, {})) == [("device kind", "TPU", "GPU")]
    c = compare_runs(analyzed("plain"), analyzed("extra_op"))
    s = c.split
    cause = explain(c.typical.change_percent, s.base_step_ps, s.base_ps, s.new_ps, c.ops, c.base.programs,
                    c.new.programs, differences, host_is_device=True)  # fmt: skip
    assert cause.kind == CAUSE_CODE and cause.evidence["device_differences"][0]["what"] == "device type"
    assert cause.evidence["changed_ops"][0]["name"].startswith("sort")
    # The ops both runs have count as the machine's, whatever their code: only the sort is the code's.
    sort_ms = sum(r.new_self_ps for r in c.ops.rows if r.match == "only_new") / 1e9
    gone_ms = sum(r.base_self_ps for r in c.ops.rows if r.match == "only_base") / 1e9
    factor = cause.evidence["machine_factor"]["factor"]
    busy_per_op = (s.base_ps["busy"] + s.new_ps["busy"]) / (c.ops.base_total_ps + c.ops.new_total_ps)
    host = s.new_ps["sync"] + s.new_ps["idle"] - s.base_ps["sync"] - s.base_ps["idle"]
    host_machine = (factor**HOST_LOAD_EXPONENT - 1) * (s.base_ps["sync"] + s.base_ps["idle"])
    host_machine = (
        0.0 if host_machine * host <= 0 else (host if abs(host_machine) > abs(host) else host_machine)
    )
    expected = (sort_ms - factor * gone_ms) * busy_per_op + (host - host_machine) / 1e9
    assert cause.evidence["ms_per_step"]["code"] == pytest.approx(expected, rel=1e-3, abs=1e-3)
