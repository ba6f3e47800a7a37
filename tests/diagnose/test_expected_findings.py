"""Every rule on every real profile: exactly the expected findings appear, nothing else.

A new rule, or a change that makes a rule fire where its pattern is absent, shows up here. The
shared traces are deterministic, so their whole list (rule, severity) is pinned; JAX CPU recordings
vary with the machine, so only their warnings and worse are (info notes may come and go).
"""

from __future__ import annotations

import pytest

from tests.conftest import ALL_SHARED_TRACES
from tests.diagnose.costs import assert_costed
from tests.diagnose.recordings import SCENARIOS
from tpuscope.analysis.diagnose import Severity
from tpuscope.analysis.session import TraceAnalysis

SHARED_EXPECTED = {
    # Eager attention on 8 MI300X: devices idle between small programs; jit__normal etc. compiled before.
    # No steps, so the idle time cannot be weighed against a step: info.
    "jax_mi300x_attention.xplane.pb": {("low_device_utilization", "info"), ("recompilation", "info")},
    # loss.item() every step, costing about 2% of step time: info; two graph compilations in warm-up.
    "ptxla_cpu_host_sync.xplane.pb": {("host_device_sync", "info"), ("recompilation", "info")},
    # A prefetched tf.data pipeline on CPU: nothing to report.
    "tf_keras_cpu_prefetch.xplane.pb": set(),
    # Four copy-done ops waiting on host memory hold 96% of device time; warm-up compiles; reads after
    # the loop.
    "tpu_v6e_inference_4chip.xplane.pb": {
        ("async_wait", "critical"),
        ("recompilation", "info"),
        ("host_device_sync", "info"),
    },
}

RECORDED_WARNINGS = {
    "healthy": set(),
    "healthy_unannotated": set(),
    "input_bound": {("input_bound", "critical")},
    "input_bound_unannotated": {("input_bound", "critical")},
    # Three recompilations after the first step take over half the step time.
    "recompile": {("recompilation", "critical")},
    # On XLA:CPU one float(loss) per step costs the step about a percent: info, not a warning. A debug
    # print or a logging io_callback costs a few percent, near the 5% level (RECORDED_MAY_ALSO_WARN).
    "host_sync": set(),
    "stall": {("step_time_variance", "critical")},
    "debug_print": set(),
    "io_callback": set(),
}


# Warnings a scenario may also get, depending on timing: jax.debug.print formats its arguments on the
# host with np.asarray, a blocking read that lands inside the step or just after it; a loader that
# sleeps every step on a loaded machine sometimes oversleeps in a few steps (input wait: a real
# variance of an input-bound program, not a false alarm on a healthy one).
RECORDED_MAY_ALSO_WARN = {
    # A debug print stops the XLA:CPU program while the host formats it: about 7% of a short step on an
    # idle machine, under 5% when the machine is busy.
    "debug_print": {("host_device_sync", "warning"), ("host_callback", "warning")},
    # A logging io_callback measures 3-5% of step time on an idle machine: on either side of 5%.
    "io_callback": {("host_callback", "warning")},
    "input_bound": {("step_time_variance", "warning")},
    "input_bound_unannotated": {("step_time_variance", "warning")},
}


def _found(report, minimum=Severity.INFO):
    return {(f.id, f.severity.label) for f in report.findings if f.severity >= minimum}


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.parent.name)
def test_shared_trace_gets_exactly_its_expected_findings(shared_traces, path):
    report = TraceAnalysis(shared_traces[path]).report
    assert report.rule_errors == {}
    assert _found(report) == SHARED_EXPECTED[path.name]


def test_every_recorded_scenario_is_pinned():
    assert set(RECORDED_WARNINGS) == set(SCENARIOS)


@pytest.mark.parametrize("scenario", sorted(RECORDED_WARNINGS))
def test_recorded_loop_gets_exactly_its_expected_warnings(recorded_trace, scenario):
    report = TraceAnalysis(recorded_trace(scenario)).report
    assert report.rule_errors == {}
    # The recorded loops' costs move with the machine's load (a stalled step costs 34% of step time on
    # an idle machine, under 20% on a busy one): which rules warn is pinned; how severe each is must
    # follow its measured impact.
    allowed = {rule for rule, _ in RECORDED_MAY_ALSO_WARN.get(scenario, set())}
    warned = [f for f in report.findings if f.severity >= Severity.WARNING]
    found = {f.id for f in warned} - allowed
    assert found == {rule for rule, _ in RECORDED_WARNINGS[scenario]}, [f.title for f in report.findings]
    for finding in warned:
        assert_costed(finding)


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.parent.name)
def test_every_rule_says_what_it_checked(shared_traces, path):
    report = TraceAnalysis(shared_traces[path]).report
    lines = {c["rule"]: c["summary"] for c in report.checked}
    # straggler is being rewritten in another change; every other rule states what it looked at.
    assert all(summary for rule, summary in lines.items() if rule != "straggler"), lines
