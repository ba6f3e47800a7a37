"""The host x step table: per-host summaries from one host's planes, aligned across hosts."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np

from tests.pods import recordings
from tpuscope.analysis.pod import analyze_pod, host_trace, summarize_host
from tpuscope.analysis.pod.analysis import ALIGN_BY_NUMBER, ALIGN_BY_ORDER
from tpuscope.analysis.pod.summary import PARTS
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace


def _summary(trace, host=None):
    """`host`'s summary (default: the trace's only host) from an analysis of its planes alone."""
    one = trace if host is None else host_trace(trace, host)
    return summarize_host(TraceAnalysis(one).context, host)


def test_each_host_is_summarized_from_its_own_file_alone(pod_run, pod_trace):
    trace = pod_trace("straggler")
    alone = open_trace(pod_run("straggler") / "worker1.xplane.pb", use_cache=False)
    from_pod = _summary(trace, "worker1")
    from_file = _summary(alone)
    assert from_file.host == alone.hosts[0]  # alone, the host is named by the file itself
    np.testing.assert_array_equal(from_pod.step_number, from_file.step_number)
    for part in PARTS:  # same numbers whether the other hosts were loaded or not
        np.testing.assert_allclose(from_pod.part(part), from_file.part(part), rtol=0, atol=1)
    assert [p.host for p in host_trace(trace, "worker1").planes] == ["worker1"] * len(
        [p for p in trace.planes if p.host == "worker1"]
    )


def test_summary_is_small_and_picklable(pod_trace):
    summary = _summary(pod_trace("straggler"), "worker0")
    data = pickle.dumps(summary)
    assert len(data) < 64_000
    back = pickle.loads(data)
    assert back.host == "worker0" and len(back) == recordings.STEPS
    assert back.busiest_op and back.evidence["collective"]


def test_parts_add_up_to_the_step_and_steps_align_by_number(pod_trace):
    pod = TraceAnalysis(pod_trace("straggler")).pod
    assert pod.hosts == [f"worker{i}" for i in range(recordings.PROCESSES)]
    assert pod.alignment == ALIGN_BY_NUMBER
    assert pod.step_number.tolist() == list(range(recordings.STEPS))
    total = sum(pod.matrix(p) for p in PARTS)
    np.testing.assert_allclose(total, pod.matrix("step"), rtol=1e-9)
    rows = pod.rows()
    assert [r.host for r in rows] == pod.hosts
    late = rows[recordings.STRAGGLER]
    assert late.parts_ps["input"] > 5 * max(r.parts_ps["input"] for r in rows if r is not late)
    payload = pod.to_json()
    assert len(payload["per_host_step_us"]["collective"]) == recordings.PROCESSES


def test_a_host_that_missed_the_first_step_is_aligned_by_number(pod_trace):
    summaries = [_summary(pod_trace("straggler"), h) for h in pod_trace("straggler").hosts]
    summaries[0] = _without_first_step(summaries[0])
    pod = analyze_pod(summaries)
    assert pod.alignment == ALIGN_BY_NUMBER
    assert pod.step_number.tolist() == list(range(1, recordings.STEPS))
    assert pod.positions[0].tolist() == list(range(recordings.STEPS - 1))
    assert pod.positions[1].tolist() == list(range(1, recordings.STEPS))


def test_without_shared_step_numbers_steps_align_by_order(pod_trace):
    summaries = [_summary(pod_trace("straggler"), h) for h in pod_trace("straggler").hosts]
    summaries[1] = dataclasses.replace(summaries[1], step_number=summaries[1].step_number + 1000)
    pod = analyze_pod(summaries)
    assert pod.alignment == ALIGN_BY_ORDER
    assert pod.step_count == recordings.STEPS


def _without_first_step(summary):
    keep = slice(1, None)
    return dataclasses.replace(
        summary,
        step_number=summary.step_number[keep],
        start_ps=summary.start_ps[keep],
        end_ps=summary.end_ps[keep],
        parts={k: v[keep] for k, v in summary.parts.items()},
        device_collective_ps=summary.device_collective_ps[:, keep],
        device_compute_ps=summary.device_compute_ps[:, keep],
        step_event_index=summary.step_event_index[keep],
    )
