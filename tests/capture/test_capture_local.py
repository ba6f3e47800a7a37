"""Capturing from real JAX programs (jax.profiler.start_server on 127.0.0.1), and every failure users hit."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.capture.processes import free_port, start_worker, stop, wait_until_profiler_free
from tpuscope.app.opener import open_trace
from tpuscope.capture.errors import CaptureCancelled, CaptureError
from tpuscope.capture.session import CaptureSettings, capture
from tpuscope.capture.targets import SshHost, parse_targets

SHORT_S = 1.0  # capture window for most tests: long enough for dozens of training steps


def settings(targets: str, logdir: Path, **overrides) -> CaptureSettings:
    overrides = {"duration_s": SHORT_S, **overrides}
    return CaptureSettings(targets=parse_targets(targets), logdir=logdir, **overrides)


def profile_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and ".xplane.pb" in p.name)


def step_names(trace) -> set[str]:
    aggregate = trace.aggregate_by_name(list(trace.tracks()))
    return {trace.strings[i] for i in aggregate.name_ids}


def test_one_worker_saves_a_run_folder_that_opens(training_worker, tmp_path):
    seen = []
    result = capture(settings(training_worker.target, tmp_path), progress=lambda f, m: seen.append((f, m)))
    assert result.run_folder.parent == tmp_path / "plugins" / "profile"
    assert result.files == [result.run_folder / f"127.0.0.1_{training_worker.port}.xplane.pb"]
    assert profile_files(tmp_path) == result.files  # no staging leftovers
    trace = open_trace(result.run_folder, use_cache=False)
    assert len(trace.hosts) == 1  # named by the XSpace itself (the machine's host name)
    names = step_names(trace)
    assert any("train_step" in name for name in names), sorted(names)[:20]
    assert "train" in names  # the StepTraceAnnotation of each training step
    # the trace covers about the requested window, not the program's whole life
    assert 0.3 * SHORT_S < trace.duration_ps / 1e12 < 3 * SHORT_S
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(m.startswith("profiling") for _, m in seen)


def test_two_workers_land_in_one_run_folder_and_open_as_one_trace(training_worker, second_training_worker,
                                                                  tmp_path):  # fmt: skip
    targets = f"{training_worker.target},localhost:{second_training_worker.port}"
    result = capture(settings(targets, tmp_path))
    expected = {f"127.0.0.1_{training_worker.port}", f"localhost_{second_training_worker.port}"}
    assert {p.name.removesuffix(".xplane.pb") for p in result.files} == expected
    assert len({p.parent for p in result.files}) == 1
    trace = open_trace(result.run_folder, use_cache=False)
    # both programs run on this machine, so their XSpaces claim one host name: the file names tell them apart
    assert set(trace.hosts) == expected
    for host in expected:
        host_events = sum(len(t) for p in trace.planes if p.host == host for t in p.tracks)
        assert host_events > 0, host


def test_server_saved_file_is_fetched_when_not_sent_back(training_worker, tmp_path):
    result = capture(settings(training_worker.target, tmp_path, inline=False))
    trace = open_trace(result.run_folder, use_cache=False)
    assert any("train_step" in name for name in step_names(trace))


def test_delay_postpones_the_window(training_worker, tmp_path):
    started = time.monotonic()
    result = capture(settings(training_worker.target, tmp_path, duration_s=0.5, delay_s=1.0))
    assert time.monotonic() - started >= 1.4  # the server waited, then recorded for the duration
    trace = open_trace(result.run_folder, use_cache=False)
    assert trace.duration_ps / 1e12 < 1.2  # the trace covers the window only, not the delay


def test_nothing_listening(tmp_path):
    port = free_port()
    with pytest.raises(
        CaptureError,
        match=rf"^Nothing is listening on 127\.0\.0\.1:{port}: start the "
        r"profiler",
    ):
        capture(settings(f"127.0.0.1:{port}", tmp_path))
    assert profile_files(tmp_path) == []


def test_unknown_host_name(tmp_path):
    with pytest.raises(CaptureError, match=r"^The host of nosuchhost\.invalid:9012 cannot be found"):
        capture(settings("nosuchhost.invalid:9012", tmp_path))


def test_web_server_instead_of_profiler(web_server, tmp_path):
    with pytest.raises(CaptureError, match="is a web server .* not a profiler gRPC server"):
        capture(settings(f"127.0.0.1:{web_server}", tmp_path))


def test_idle_program_collects_no_trace_events(idle_worker, tmp_path):
    with pytest.raises(CaptureError, match="No trace events were collected from .* the program was idle"):
        capture(settings(idle_worker.target, tmp_path))
    assert profile_files(tmp_path) == []


def test_second_concurrent_session_is_refused(training_worker, tmp_path):
    first: dict = {}

    def long_capture():
        first["result"] = capture(settings(training_worker.target, tmp_path / "first", duration_s=3.0))

    thread = threading.Thread(target=long_capture)
    thread.start()
    try:
        time.sleep(1.0)
        with pytest.raises(CaptureError, match="Another profiling session is already active in the program"):
            capture(settings(training_worker.target, tmp_path / "second"))
    finally:
        thread.join(timeout=30)
    assert first["result"].files  # the first session was not disturbed
    assert profile_files(tmp_path / "second") == []


def test_program_dying_during_capture(tmp_path):
    worker = start_worker("exit-after", "1.0")
    try:
        with pytest.raises(
            CaptureError, match="closed the connection during the capture: it probably exited"
        ):
            capture(settings(worker.target, tmp_path, duration_s=5.0))
    finally:
        stop(worker.process)
    assert profile_files(tmp_path) == []


def test_timeout_ends_the_wait_cleanly(silent_listener, tmp_path):
    started = time.monotonic()
    with pytest.raises(CaptureError, match=f"127.0.0.1:{silent_listener} within 2 s"):
        capture(settings(f"127.0.0.1:{silent_listener}", tmp_path, duration_s=0.5, timeout_s=1.5))
    assert time.monotonic() - started < 10
    assert profile_files(tmp_path) == []


def test_cancel_leaves_nothing_that_looks_like_a_profile(training_worker, tmp_path):
    started = time.monotonic()
    with pytest.raises(CaptureCancelled):
        capture(settings(training_worker.target, tmp_path, duration_s=10.0),
                progress=lambda f, m: time.monotonic() - started < 0.5)  # fmt: skip
    assert time.monotonic() - started < 5
    assert profile_files(tmp_path) == []
    assert list((tmp_path / "plugins" / "profile").iterdir()) == []
    # the program ends its profiling session too, and is free for the next capture at once
    assert wait_until_profiler_free(training_worker.target, tmp_path / "next") < 5


def test_bad_settings_are_refused_before_connecting(tmp_path):
    with pytest.raises(CaptureError, match="host tracer level 7 is out of range"):
        from tpuscope.capture.grpc_client import TracerLevels

        capture(settings("localhost:1", tmp_path, levels=TracerLevels(host=7)))
    with pytest.raises(CaptureError, match="duration must be more than zero"):
        capture(settings("localhost:1", tmp_path, duration_s=0))
    with pytest.raises(CaptureError, match="2 SSH hosts were given for 3 targets"):
        capture(settings("a:1,b:1,c:1", tmp_path, ssh_hosts=[SshHost("x"), SshHost("y")]))


def test_output_folder_that_cannot_be_created(training_worker, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(CaptureError, match=f"^Cannot create the output folder {blocker}"):
        capture(settings(training_worker.target, blocker))
