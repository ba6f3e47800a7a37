"""The Overview's step chart on a run of several hosts shows the pod (the mean over its hosts) or one
host, picked beside it, with the headline split `overview --json` prints for that choice (issue 33).

On the real 4-process JAX run whose worker 2 waits for its data loader every step (the committed
sample of tests/pods/recordings.py's `straggler` scenario); a single-host profile keeps the chart as
it was, with no picker."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import SAMPLES
from tests.pods.recordings import STRAGGLER
from tests.ui.widgets import show_exposed
from tpuscope.analysis.metrics import PERCENT, format_metric
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.ui.overview_view import OverviewView

WAIT_MS = 60_000  # generous: the CI machine is shared
POD_RUN = SAMPLES / "jax_cpu_pod_straggler"
SINGLE_HOST = SAMPLES / "tpu_v6e_inference_4chip.xplane.pb"
HOSTS = [f"worker{i}" for i in range(4)]
WORKER = f"worker{STRAGGLER}"


@pytest.fixture(scope="module")
def overview_json():
    """`tpuscope overview RUN --json`, as a user reads it."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["overview", str(POD_RUN), "--json"]) == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def traces():
    return {"pod": open_trace(POD_RUN, use_cache=False), "single": open_trace(SINGLE_HOST, use_cache=False)}


@pytest.fixture
def view(qtbot):
    widget = show_exposed(qtbot, OverviewView(), 1600, 1000)
    yield widget
    widget.shutdown()


def _load(qtbot, view, trace):
    with qtbot.waitSignal(view.overviewReady, timeout=WAIT_MS):
        view.set_trace(trace)


def _picker_items(view) -> list[str]:
    return [view.host_picker.itemText(i) for i in range(view.host_picker.count())]


def _input_share(split) -> float:
    """The input share of all the charted steps' time (percent)."""
    return 100.0 * float(split.part("input").sum()) / float(split.step_ps.sum())


def test_the_picker_lists_the_pod_then_each_host_and_the_pod_is_the_default(qtbot, view, traces):
    _load(qtbot, view, traces["pod"])
    assert view.host_picker.isVisibleTo(view)
    assert _picker_items(view) == ["Pod (mean of 4 hosts)", *HOSTS]
    assert view.picked_host() is None
    assert view.chart_title.text() == "Where step time goes: mean of 4 hosts"
    split = view.pod_split
    assert split is not None and split.hosts == tuple(HOSTS) and len(split) == 8
    # The pod's bars are the mean over the hosts' bars, step by step.
    rows = [view.overview.pod.matrix("input")[view.overview.pod.hosts.index(h)] for h in HOSTS]
    np.testing.assert_allclose(split.part("input"), np.mean(rows, axis=0))
    # The legend names the pod table's parts the chart draws (no compilation in these steps).
    legend = view.legend.text()
    assert "device&nbsp;compute" in legend and "in&nbsp;collectives" in legend and "compiling" not in legend
    assert "mean of 4 hosts" in view.step_plot.tooltip(0)


def test_the_pods_split_is_the_overview_jsons_headline(qtbot, view, traces, overview_json):
    _load(qtbot, view, traces["pod"])
    headline = overview_json["step_time_split_percent"]
    for part, value in headline.items():
        assert view.chart_split[part] == pytest.approx(value, rel=1e-12, abs=1e-12), part
    caption = view.chart_caption.text()
    assert caption.startswith("mean of 4 hosts: ")
    assert f"waiting for input {format_metric(headline['input'], PERCENT)}" in caption


def test_picking_the_input_bound_worker_shows_its_split(qtbot, view, traces, overview_json):
    _load(qtbot, view, traces["pod"])
    pod_input = _input_share(view.pod_split)
    view.pick_host(WORKER)
    assert view.picked_host() == WORKER
    assert view.chart_title.text() == f"Where step time goes: {WORKER}"
    own = overview_json["headline"]["per_host"][WORKER]["step_time_split_percent"]
    for part, value in own.items():
        assert view.chart_split[part] == pytest.approx(value, rel=1e-12, abs=1e-12), part
    assert view.chart_split["input"] > 30 > overview_json["step_time_split_percent"]["input"]
    assert view.chart_caption.text().startswith(f"{WORKER}: ")
    # Its bars: its own row of the pod table, its input wait far above the pod's mean.
    assert view.pod_split.hosts == (WORKER,)
    assert _input_share(view.pod_split) > 2 * pod_input
    assert WORKER in view.step_plot.tooltip(0)
    # A step double-clicked is that host's step on the timeline.
    pod = view.overview.pod
    k = pod.hosts.index(WORKER)
    with qtbot.waitSignal(view.zoomRequested) as zoom:
        view.zoom_to_step(3)
    start = int(pod.start_matrix()[k, 3])
    assert zoom.args == [start, int(start + pod.matrix("step")[k, 3])]


def test_a_single_host_profile_has_no_picker_and_a_new_profile_rebuilds_it(qtbot, view, traces):
    _load(qtbot, view, traces["pod"])
    view.pick_host(WORKER)
    _load(qtbot, view, traces["single"])
    assert not view.host_picker.isVisibleTo(view) and view.host_picker.count() == 0
    assert not view.chart_caption.isVisibleTo(view) and view.pod_split is None and view.chart_split == {}
    assert view.chart_title.text() == "Where step time goes"
    assert "device&nbsp;busy" in view.legend.text()
    assert "worker" not in view.step_plot.tooltip(0)
    _load(qtbot, view, traces["pod"])  # back on the run: the picker anew, on the pod
    assert _picker_items(view) == ["Pod (mean of 4 hosts)", *HOSTS] and view.picked_host() is None
