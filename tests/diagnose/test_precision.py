"""No false alarms: healthy real recordings get no warning, and a slow step says where its time went.

The false-alarm test records the healthy loop HEALTHY_REPEATS times on this (shared, noisy) machine.
Measured when it was written, on 10 recordings of the 30-step loop: before this rule split a slow
step's time into its causes, 5 of 10 healthy recordings got a warning (step_time_variance on 4, from
steps whose compute ran 2-8x slower; low_device_utilization on 4, from XLA:CPU's duty cycle); after,
0 of 10 (and 0 of 30 in a longer run), the slow steps being reported as info ("the device ran the
same work slower").
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import GPU_TRACE, TF_TRACE
from tests.diagnose.costs import assert_costed
from tests.diagnose.recordings import (
    HEALTHY_REPEAT_STEPS,
    HEALTHY_REPEATS,
    STALL_SLEEP_S,
    STALL_STEP,
    STEPS,
    record_healthy_repeats_in_subprocess,
)
from tpuscope.analysis import session
from tpuscope.analysis.diagnose import Severity, diagnose, step_variance
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.analysis.steps import SOURCE_HOST_ANNOTATION, Steps
from tpuscope.app.opener import open_trace


@pytest.fixture(scope="module")
def healthy_repeats(tmp_path_factory):
    paths = record_healthy_repeats_in_subprocess(tmp_path_factory.mktemp("healthy_repeats"))
    assert len(paths) == HEALTHY_REPEATS
    return [open_trace(p, use_cache=False) for p in paths]


def test_the_healthy_loop_recorded_again_and_again_never_warns(healthy_repeats):
    warned = {}
    for run, trace in enumerate(healthy_repeats):
        report = TraceAnalysis(trace).report
        assert not report.rule_errors
        assert len(report.steps) == HEALTHY_REPEAT_STEPS
        warnings = [f.title for f in report.findings if f.severity >= Severity.WARNING]
        if warnings:
            warned[run] = warnings
    assert warned == {}, f"false alarms on {len(warned)} of {HEALTHY_REPEATS} healthy recordings: {warned}"


def test_slow_healthy_steps_are_blamed_on_their_real_cause(healthy_repeats):
    """Whatever the machine did to the healthy runs, no slow step is blamed on extra host work or input."""
    for trace in healthy_repeats:
        for finding in diagnose(
            TraceAnalysis(trace).context, {step_variance.RULE_ID: step_variance.run}
        ).findings:
            assert finding.metrics["cause"] in (step_variance.CAUSE_DEVICE, step_variance.CAUSE_HOST_GAP)
            assert finding.severity == Severity.INFO


def test_a_stalled_step_names_the_host_work_it_did(recorded_trace):
    report = TraceAnalysis(recorded_trace("stall")).report
    (finding,) = [f for f in report.findings if f.id == step_variance.RULE_ID]
    m = finding.metrics
    assert_costed(finding)
    assert m["cause"] == step_variance.CAUSE_HOST_EVENTS
    assert m["slow_steps"][int(np.argmax(m["slow_step_ms"]))] == f"step {STALL_STEP}"
    assert "save_checkpoint" in m["extra_host_events"]
    # The sleep is the excess, and the extra host events cover it, except where the device used the
    # pause to catch up on the steps the host had queued (async dispatch): that part is device compute.
    # Other slow steps, if the machine made any, add noise to the excess but not to the extra host work.
    sleep_ms = STALL_SLEEP_S * 1e3
    assert sleep_ms - m["excess_device_compute_ms"] - 1.0 <= m["extra_host_events_ms"] <= m["excess_ms"] + 1.0
    assert any(e["label"] == "extra host work: save_checkpoint" for e in finding.evidence)


def test_the_first_step_is_warm_up_unless_the_user_numbered_it_later(recorded_trace):
    trace = recorded_trace("stall")
    ctx = TraceAnalysis(trace).context
    assert ctx.steps.source == SOURCE_HOST_ANNOTATION and int(ctx.steps.number[0]) == 0
    assert ctx.warm_up[0]
    steps = ctx.steps
    later = Steps(steps.number + 100, steps.start_ps, steps.end_ps, steps.source, steps.description,
                  steps.name, steps.host, steps.track, steps.event_index)  # fmt: skip
    relabelled = TraceAnalysis(trace, known={session.STEPS: later}).context
    # Step 0 compiled here, so it stays warm-up; nothing else in the steady state is.
    assert relabelled.warm_up[0] == bool(relabelled.compiling_steps[0])
    assert relabelled.warm_up[1:].sum() == relabelled.compiling_steps[1:].sum()


def test_fewer_scored_steps_than_the_minimum_make_no_statistical_claim(recorded_trace):
    trace = recorded_trace("stall")
    steps = TraceAnalysis(trace).context.steps
    n = step_variance.MIN_STEPS  # steps 0..MIN_STEPS-1, the stalled step among them; step 0 is warm-up
    assert STALL_STEP < n <= STEPS
    few = Steps(steps.number[:n], steps.start_ps[:n], steps.end_ps[:n], steps.source, steps.description,
                steps.name, steps.host, steps.track, steps.event_index[:n])  # fmt: skip
    outcome = step_variance.run(TraceAnalysis(trace, known={session.STEPS: few}).context)
    assert outcome.findings == []
    assert f"fewer than {step_variance.MIN_STEPS} steps" in outcome.checked


def test_tensorflow_first_step_is_warm_up_not_a_slow_step(shared_traces):
    trace = shared_traces[TF_TRACE]
    ctx = TraceAnalysis(trace).context
    p0, p1 = ctx.periods
    durations = p1 - p0
    assert int(np.argmax(durations)) == 0  # the first step is the slowest one
    outcome = step_variance.run(ctx)
    assert outcome.findings == []
    assert "1 warm-up left out" in outcome.checked


def test_recompilations_only_the_metadata_shows_are_reported_with_their_shapes(shared_traces):
    """The MI300X profile has no compile event, yet /host:metadata holds 4 programs of `jit__normal`
    (one per random array shape) compiled before the window."""
    report = TraceAnalysis(shared_traces[GPU_TRACE]).report
    (finding,) = [f for f in report.findings if f.id == "recompilation"]
    assert finding.severity == Severity.INFO
    rows = {r["function"]: r for r in finding.metrics["functions"]}
    normal = rows["jit__normal"]
    assert normal["programs"] == 4
    assert normal["arguments"] == ["u32[2]"] * 4
    assert normal["results"] == ["bf16[4,2048,1024]", "bf16[1024,1024]", "bf16[1024,4096]", "bf16[4096,1024]"]
    assert normal["what_differed"][0] == "result changed bf16[4,2048,1024] -> bf16[1024,1024]"
    assert "before or around" in finding.title
    # Functions with one program each (e.g. jit_exp) are not listed.
    assert "jit_exp" not in rows
