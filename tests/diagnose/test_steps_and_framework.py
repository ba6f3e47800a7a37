"""Step finding and framework detection on the real shared profiles and fresh JAX recordings."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import (
    GPU_TRACE,
    PTXLA_TRACE,
    TF_TRACE,
    TPU_TRACE,
)
from tests.diagnose.recordings import STEPS
from tpuscope.analysis import steps as steps_mod
from tpuscope.analysis.framework import JAX, PYTORCH_XLA, TENSORFLOW, detect_framework
from tpuscope.analysis.steps import find_steps


def test_pytorch_xla_steps_come_from_step_trace_annotations(shared_traces):
    steps = find_steps(shared_traces[PTXLA_TRACE])
    assert steps.source == steps_mod.SOURCE_HOST_ANNOTATION
    assert steps.name == "train_step"
    assert steps.number.tolist() == list(range(15))  # the recorder's xp.StepTrace step_num values
    assert np.all(steps.end_ps > steps.start_ps)
    assert np.all(np.diff(steps.start_ps) > 0)


def test_tensorflow_steps_come_from_the_keras_step_function(shared_traces):
    steps = find_steps(shared_traces[TF_TRACE])
    assert steps.source == steps_mod.SOURCE_TF_MARKER
    assert steps.name == "multi_step_on_iterator"
    assert len(steps) == 20


def test_tpu_inference_steps_fall_back_to_the_dominant_program(shared_traces):
    trace = shared_traces[TPU_TRACE]
    steps = find_steps(trace)
    assert steps.source == steps_mod.SOURCE_DEVICE_PROGRAM
    modules = trace.device_planes("TPU")[0].track("XLA Modules")
    names = [modules.event_name(i) for i in range(len(modules))]
    dominant = max(set(names), key=names.count)
    assert steps.name == dominant
    assert len(steps) == names.count(dominant)


def test_op_by_op_gpu_profile_has_no_steps(shared_traces):
    # Eager attention: the largest jitted primitive holds under half of the dispatch time.
    steps = find_steps(shared_traces[GPU_TRACE])
    assert len(steps) == 0 and steps.source == steps_mod.SOURCE_NONE


def test_recorded_jax_steps_with_and_without_annotations(recorded_trace):
    annotated = find_steps(recorded_trace("healthy"))
    assert annotated.source == steps_mod.SOURCE_HOST_ANNOTATION
    assert annotated.number.tolist() == list(range(STEPS))
    plain = find_steps(recorded_trace("healthy_unannotated"))
    assert plain.source == steps_mod.SOURCE_HOST_PROGRAM
    assert plain.name == "PjitFunction(train_step)"
    assert len(plain) == STEPS  # nested duplicate PjitFunction events are counted once


def test_step_of_maps_times_to_steps(shared_traces):
    steps = find_steps(shared_traces[PTXLA_TRACE])
    inside = (steps.start_ps + steps.end_ps) // 2
    assert steps.step_of(inside).tolist() == list(range(len(steps)))
    assert steps.step_of(np.array([steps.start_ps[0] - 1])).tolist() == [-1]


@pytest.mark.parametrize(
    ("path", "expected"),
    [(TPU_TRACE, JAX), (GPU_TRACE, JAX), (PTXLA_TRACE, PYTORCH_XLA), (TF_TRACE, TENSORFLOW)],
    ids=["tpu", "gpu", "ptxla", "tf"],
)
def test_framework_of_each_shared_profile(shared_traces, path, expected):
    framework = detect_framework(shared_traces[path])
    assert framework.name == expected
    assert framework.evidence


def test_framework_of_a_recorded_jax_profile_uses_the_version_stat(recorded_trace):
    framework = detect_framework(recorded_trace("healthy"))
    assert framework.name == JAX
    assert "jax_version" in framework.evidence
