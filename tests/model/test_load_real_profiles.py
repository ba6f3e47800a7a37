"""Loading real profiles: event counts, times and stats agree with JAX's own XPlane reader."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from jax.profiler import ProfileData

from tests.conftest import ALL_SHARED_TRACES, PTXLA_TRACE, TPU_TRACE, require_shared_traces
from tests.jax_recordings import record_training_profile
from tpuscope.app.opener import open_trace


@pytest.fixture(scope="session")
def jax_cpu_profile(tmp_path_factory):
    """A real JAX CPU profile of a small training loop, recorded once per session."""
    return record_training_profile(tmp_path_factory.mktemp("jax_logdir"), steps=5)


def _their_lines(path):
    """(plane, line, [(name, start_ns, duration_ns)]) as JAX's C++ reader sees the file."""
    data = ProfileData.from_file(str(path))
    return [
        (plane.name, line.name, [(e.name, e.start_ns, e.duration_ns) for e in line.events])
        for plane in data.planes
        for line in plane.lines
    ]


def _assert_matches_jax_reader(path):
    trace = open_trace(path, use_cache=False)
    theirs = _their_lines(path)
    ours = [(p.name, t) for p in trace.planes for t in p.tracks]
    assert [(p, line) for p, line, _ in theirs] == [(p, t.name) for p, t in ours]
    for (_, _, their_events), (_, track) in zip(theirs, ours, strict=True):
        assert len(track) == len(their_events)
        if not their_events:
            continue
        # Compare as multisets: both sides' orders are valid, ours is sorted by start.
        their_start = np.array([e[1] for e in their_events]) * 1000.0
        their_duration = np.array([e[2] for e in their_events]) * 1000.0
        our_start = track.start_ps + trace.origin_ns * 1000.0
        order = np.lexsort((-their_duration, their_start))
        # JAX reports whole nanoseconds; we keep picoseconds.
        np.testing.assert_allclose(our_start, their_start[order], rtol=0, atol=1000.0)
        np.testing.assert_allclose(track.duration_ps, their_duration[order], rtol=0, atol=1000.0)
        their_names = [their_events[i][0] for i in order]
        our_names = [trace.strings[i] for i in track.name_id]
        assert sorted(our_names) == sorted(their_names)
    return trace


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.name)
def test_shared_traces_match_jax_reader(path):
    require_shared_traces()
    trace = _assert_matches_jax_reader(path)
    assert trace.event_count > 0


def test_recorded_jax_cpu_profile_matches_jax_reader(jax_cpu_profile):
    trace = _assert_matches_jax_reader(jax_cpu_profile)
    steps = trace.find_events("train")
    assert sum(len(idx) for _, idx in steps) >= 5


def test_tpu_planes_have_kind_index_and_peaks():
    trace = open_trace(TPU_TRACE)
    devices = trace.device_planes("TPU")
    assert [p.index for p in devices] == [0, 1, 2, 3]
    assert all(p.device_type == "TPU v6 Lite" for p in devices)
    assert devices[0].peak_teraflops_per_second == pytest.approx(918.0)
    assert devices[0].peak_hbm_bw_gigabytes_per_second > 1000
    host = trace.find_plane("/host:CPU")
    assert host.role == "host" and host.kind == "CPU" and host.index is None


def test_metadata_stats_reach_every_event_without_objects():
    trace = open_trace(TPU_TRACE)
    ops = trace.device_planes("TPU")[0].track("XLA Ops")
    flops = ops.stat_values("flops")
    category = ops.stat_values("hlo_category", fill=-1)
    device_duration = ops.stat_values("device_duration_ps")
    assert flops.shape == category.shape == device_duration.shape == (len(ops),)
    assert np.isfinite(device_duration).all()
    names = {trace.strings[i] for i in np.unique(category[category >= 0])}
    assert "all-reduce" in names
    # The per-event view agrees with the columns.
    i = int(np.argmax(flops))
    assert ops.all_stats(i)["flops"] == flops[i]
    assert isinstance(ops.display_name_of(i), bytes)


def test_host_threads_nest():
    trace = open_trace(PTXLA_TRACE)
    python = trace.find_plane("/host:CPU").track("python")
    assert python.max_depth >= 2
    # A child never starts before, or ends after, the closest shallower event that opened before it.
    for i in np.flatnonzero(python.depth > 0)[:200]:
        parents = np.flatnonzero(python.depth[:i] == python.depth[i] - 1)
        parent = parents[-1]
        assert python.start_ps[parent] <= python.start_ps[i]
        assert python.end_ps[i] <= python.end_ps[parent]


def test_step_annotations_keep_their_stats():
    trace = open_trace(PTXLA_TRACE)
    hits = trace.events_named("train_step")
    assert sum(len(i) for _, i in hits) == 15
    track, idx = hits[0]
    step_numbers = track.stat_values("step_num", fill=-1)[idx]
    assert sorted(step_numbers.astype(int).tolist()) == list(range(15))


def test_overlapping_finds_events_that_started_before_the_window():
    trace = open_trace(PTXLA_TRACE)
    python = trace.find_plane("/host:CPU").track("python")
    longest = int(np.argmax(python.duration_ps))
    mid = int(python.start_ps[longest] + python.duration_ps[longest] // 2)
    found = python.overlapping(mid, mid + 1)
    assert longest in found
    expected = np.flatnonzero((python.start_ps < mid + 1) & (python.end_ps > mid))
    assert set(found.tolist()) == set(expected.tolist())


def test_aggregate_by_name_totals():
    trace = open_trace(PTXLA_TRACE)
    agg = trace.aggregate_by_name()
    assert agg.counts.sum() == trace.event_count
    row = int(np.flatnonzero(agg.name_ids == trace.strings.id_of("train_step"))[0])
    assert agg.counts[row] == 15


def test_gzip_file_loads_the_same(tmp_path):
    target = tmp_path / "host.xplane.pb.gz"
    target.write_bytes(gzip.compress(PTXLA_TRACE.read_bytes()))
    assert open_trace(target).event_count == open_trace(PTXLA_TRACE).event_count


def test_run_folder_loads_every_host_into_one_trace(tmp_path):
    run = tmp_path / "logs" / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    shutil.copy(PTXLA_TRACE, run / "worker0.xplane.pb")
    shutil.copy(TPU_TRACE, run / "worker1.xplane.pb")
    trace = open_trace(run)
    assert trace.event_count == open_trace(PTXLA_TRACE).event_count + open_trace(TPU_TRACE).event_count
    assert {p.host for p in trace.planes} == {"vm", "worker1"}
    assert len(trace.sources) == 2


def test_logdir_opens_newest_run_and_lists_runs(tmp_path):
    from tpuscope.readers.files import list_runs

    logdir = tmp_path / "logs"
    old = logdir / "plugins" / "profile" / "2026_01_01_00_00_00"
    new = logdir / "plugins" / "profile" / "2026_02_01_00_00_00"
    old.mkdir(parents=True)
    new.mkdir(parents=True)
    shutil.copy(TPU_TRACE, old / "a.xplane.pb")
    shutil.copy(PTXLA_TRACE, new / "b.xplane.pb")
    assert [r.name for r in list_runs(logdir)] == ["2026_01_01_00_00_00", "2026_02_01_00_00_00"]
    assert open_trace(logdir).sources == [new / "b.xplane.pb"]
    assert open_trace(logdir, run="2026_01_01_00_00_00").sources == [old / "a.xplane.pb"]


def test_cache_reopen_gives_the_same_trace(tmp_path):
    copy = tmp_path / "x.xplane.pb"
    shutil.copy(TPU_TRACE, copy)
    first = open_trace(copy)
    second = open_trace(copy)
    assert second.event_count == first.event_count
    for a, b in zip(first.tracks(), second.tracks(), strict=True):
        np.testing.assert_array_equal(a.start_ps, b.start_ps)
        np.testing.assert_array_equal(a.name_id, b.name_id)
    # Changing the file invalidates the cache.
    copy.write_bytes(PTXLA_TRACE.read_bytes())
    assert open_trace(copy).event_count == open_trace(PTXLA_TRACE).event_count


def test_info_json_counts_match_jax_reader(jax_cpu_profile, capsys):
    from tpuscope.cli import main

    for path in [*ALL_SHARED_TRACES, jax_cpu_profile]:
        assert main(["info", str(path), "--json"]) == 0
        payload = json.loads(capsys.readouterr().out)
        theirs = _their_lines(path)
        assert payload["events"] == sum(len(e) for _, _, e in theirs)
        ours = [(p["name"], line["name"], line["events"]) for p in payload["planes"] for line in p["lines"]]
        assert ours == [(p, line, len(e)) for p, line, e in theirs]
        assert payload["duration_ps"] > 0
        assert all({"name", "host", "kind", "lines"} <= set(p) for p in payload["planes"])


def test_cache_hit_reports_the_paths_as_named_this_time(tmp_path, monkeypatch):
    copy = tmp_path / "x.xplane.pb"
    shutil.copy(PTXLA_TRACE, copy)
    monkeypatch.chdir(tmp_path)
    assert open_trace("x.xplane.pb").sources == [Path("x.xplane.pb")]  # cached under the resolved path
    assert open_trace(copy).sources == [copy]
