"""The neutral vocabulary on real XPlane profiles: track kinds, plane identities, name classes."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.conftest import (
    ALL_SHARED_TRACES,
    GPU_TRACE,
    PTXLA_TRACE,
    TF_TRACE,
    TPU_TRACE,
    require_shared_traces,
)
from tpuscope.app.opener import open_trace
from tpuscope.model.vocabulary import ROLE_DEVICE, ROLE_HOST, EventClass, TrackKind
from tpuscope.readers.xla_dialect import XPLANE_DIALECT


def test_tpu_op_lines_are_device_ops_and_steps_modules_are_marked():
    require_shared_traces()
    trace = open_trace(TPU_TRACE, use_cache=False)
    tpu = [p for p in trace.planes if p.name.startswith("/device:TPU:")]
    assert tpu and all(p.role == ROLE_DEVICE and p.kind == "TPU" for p in tpu)
    for plane in tpu:
        for track in plane.tracks:
            expected = {
                "XLA Ops": TrackKind.DEVICE_OPS,
                "Sparse Core Ops": TrackKind.DEVICE_OPS,
                "Steps": TrackKind.DEVICE_STEPS,
                "XLA Modules": TrackKind.DEVICE_MODULES,
                "Async XLA Ops": TrackKind.DEVICE_ASYNC_OPS,
            }.get(track.name, TrackKind.DEVICE_OTHER)
            assert track.kind == expected, (plane.name, track.name)
    host = trace.find_plane("/host:CPU")
    assert host is not None and host.role == ROLE_HOST
    assert {t.kind for t in host.tracks} == {TrackKind.HOST_THREAD}


def test_gpu_streams_are_device_ops_and_derived_lines_are_not():
    require_shared_traces()
    trace = open_trace(GPU_TRACE, use_cache=False)
    gpu = [p for p in trace.planes if p.name.startswith("/device:GPU:") and p.tracks]
    assert gpu and all(p.role == ROLE_DEVICE and p.kind == "GPU" for p in gpu)
    for plane in gpu:
        ops = {t.name for t in plane.tracks_of_kind(TrackKind.DEVICE_OPS)}
        assert ops and not ops & {"XLA Ops", "XLA Modules", "Steps", "Launch Stats"}
        assert all(t.kind != TrackKind.DEVICE_OPS for t in plane.tracks if t.name == "XLA Ops")


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.name)
def test_name_classes_equal_the_dialect_patterns_on_every_host_event(path):
    trace = open_trace(path, use_cache=False)
    classes = trace.name_classes()
    host_ids = np.unique(np.concatenate([t.name_id for t in trace.host_tracks()]))
    for event_class, pattern in XPLANE_DIALECT.event_patterns:
        matcher = re.compile(pattern)
        expected = {int(i) for i in host_ids if i and matcher.search(trace.strings[int(i)])}
        got = {int(i) for i in host_ids if classes[int(i)] & np.uint32(event_class)}
        assert got == expected, event_class


def test_classes_found_where_the_frameworks_write_them():
    require_shared_traces()
    ptxla = open_trace(PTXLA_TRACE, use_cache=False)
    assert ptxla.events_of_class(EventClass.SYNC), "PyTorch/XLA .item() reads are syncs"
    assert ptxla.events_of_class(EventClass.COMPILE)
    tf = open_trace(TF_TRACE, use_cache=False)
    assert not tf.events_of_class(EventClass.PROGRAM_DISPATCH), "JAX dispatch names are not in a TF trace"
    gpu = open_trace(GPU_TRACE, use_cache=False)
    dispatches = gpu.events_of_class(EventClass.PROGRAM_DISPATCH)
    assert dispatches
    track, idx = dispatches[0]
    assert gpu.dialect.dispatch_function_of(track.event_name(int(idx[0])))


def test_kinds_identities_and_dialect_survive_the_cache(tmp_path, monkeypatch):
    require_shared_traces()
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(tmp_path))
    first = open_trace(TPU_TRACE)
    first.name_classes()
    again = open_trace(TPU_TRACE)
    assert again is not first and again._name_classes is None  # derived: not stored
    assert [t.kind for t in again.tracks()] == [t.kind for t in first.tracks()]
    assert [p.identity for p in again.planes] == [p.identity for p in first.planes]
    assert again.dialect == XPLANE_DIALECT
    assert np.array_equal(again.name_classes(), first.name_classes())
