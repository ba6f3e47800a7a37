"""Shared fixtures: the real profiles (tests/paths.py: $TPUSCOPE_TRACES, else ../shared/traces) and an
isolated cache folder."""

from __future__ import annotations

import gc
import os

import pytest

from tests.paths import ROOT, SAMPLES, SHARED_TRACES  # noqa: F401 - the tests import ROOT and SAMPLES from here

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

TPU_TRACE = SHARED_TRACES / "tpu" / "tpu_v6e_inference_4chip.xplane.pb"
GPU_TRACE = SHARED_TRACES / "gpu" / "jax_mi300x_attention.xplane.pb"
PTXLA_TRACE = SHARED_TRACES / "pytorch_xla" / "ptxla_cpu_host_sync.xplane.pb"
TF_TRACE = SHARED_TRACES / "tensorflow" / "tf_keras_cpu_prefetch.xplane.pb"
ALL_SHARED_TRACES = sorted(SHARED_TRACES.glob("*/*.xplane.pb"))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Each test gets its own trace cache folder, so tests never share or pollute a user cache."""
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_main_thread():
    """As the app does (tpuscope.gc_policy): no collection in worker threads, where Qt objects die badly.

    A cyclic collection that happens to run in a loader or capture thread can destroy Qt
    objects there and crash the process; every test collects on the main thread instead.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    yield
    gc.collect()
    if was_enabled:
        gc.enable()


@pytest.fixture(autouse=True)
def _message_boxes_never_block(monkeypatch):
    """A modal QMessageBox in a test would wait forever for a click, and pytest-timeout cannot
    interrupt Qt's event loop: the test run would hang instead of failing. Tests see what the box
    would have said in `shown_message_boxes`; a test that checks a box patches it itself."""
    try:
        from PySide6.QtWidgets import QMessageBox
    except ImportError:
        return

    def record(kind: str):
        def show(*args, **kwargs):
            shown_message_boxes.append((kind, *[a for a in args if isinstance(a, str)]))
            return QMessageBox.StandardButton.Ok

        return show

    shown_message_boxes.clear()
    for kind in ("warning", "critical", "information", "question"):
        monkeypatch.setattr(QMessageBox, kind, staticmethod(record(kind)))


# What the message boxes of the current test would have shown: (kind, title, text).
shown_message_boxes: list[tuple[str, ...]] = []


def require_shared_traces() -> None:
    if not ALL_SHARED_TRACES:
        pytest.fail(f"the real profiles are missing: expected them under {SHARED_TRACES}")
