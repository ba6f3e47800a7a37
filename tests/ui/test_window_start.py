"""Issue 12, time to the first picture: the window paints before it imports what only its views,
the readers and the rules need; those load after the first paint or in the worker threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import TPU_TRACE, require_shared_traces
from tpuscope.ui.registry import VIEWS

ROOT = Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter (sys.modules of the test process has everything): the real window,
# the modules loaded when it first painted, then the same after a profile was opened.
CHILD = r"""
import json, os, sys, tempfile
from pathlib import Path
from PySide6.QtCore import QEvent, QObject, QSettings, QTimer
from tpuscope.ui.app import application
from tpuscope.ui.main_window import MainWindow

app = application()
window = MainWindow(QSettings(str(Path(tempfile.mkdtemp()) / "s.ini"), QSettings.Format.IniFormat))
seen = {}

class FirstPaint(QObject):
    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint and "at_paint" not in seen:
            seen["at_paint"] = sorted(sys.modules)
            seen["views_made_at_paint"] = window.router.views_built
            seen["body_made_at_paint"] = window.router.body_built
            QTimer.singleShot(0, lambda: window.open_path(sys.argv[1]))
        return False

watch = FirstPaint()
app.installEventFilter(watch)
window.traceLoaded.connect(lambda _trace: QTimer.singleShot(0, app.quit))
window.loadFailed.connect(lambda message: app.exit(2))
window.show()
code = app.exec()
window.hub.wait()
seen["tabs"] = [window.tabs.tabText(i) for i in range(window.tabs.count())]
seen["after_load"] = sorted(sys.modules)
window.wait_for_background_work()
print("SEEN " + json.dumps(seen))
sys.exit(code)
"""

# What the first paint must not wait for: the capture dialog's SSH and gRPC stacks, the charts'
# plotting library, the readers (protobuf and the decoder), the diagnose rules, and (issue 23) numpy,
# the timeline, the analyses and the pod session: the empty window needs Qt and the welcome page.
NOT_AT_FIRST_PAINT = (
    "paramiko",
    "grpc",
    "pyqtgraph",
    "numpy",
    "tpuscope.model.trace",
    "tpuscope.analysis",
    "tpuscope.ui.timeline",
    "tpuscope.ui.analysis_hub",
    "tpuscope.ui.pod",
    "tpuscope.ui.details",
    "tpuscope.app.opener",
    "tpuscope.readers.xplane.decode",
    "tpuscope.analysis.diagnose.engine",
    "tpuscope.capture",
)


def _loaded(modules: list[str], name: str) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


def test_the_window_paints_before_its_views_readers_and_rules_load():
    require_shared_traces()
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(TPU_TRACE)], capture_output=True, text=True, env=env, timeout=300
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("SEEN ")), None)
    assert done.returncode == 0 and line is not None, done.stderr[-3000:]
    seen = json.loads(line[len("SEEN ") :])
    assert seen["views_made_at_paint"] is False and seen["body_made_at_paint"] is False
    assert [name for name in NOT_AT_FIRST_PAINT if _loaded(seen["at_paint"], name)] == []
    # After the load, every tab is there in the registry's order and the readers and rules did load.
    assert seen["tabs"] == [spec.title for spec in VIEWS]
    for name in ("pyqtgraph", "tpuscope.app.opener", "tpuscope.analysis.diagnose.engine"):
        assert _loaded(seen["after_load"], name), name
    assert not _loaded(seen["after_load"], "paramiko")  # nobody opened File > Capture


# What only the Overview shows: the rules over every event (seconds on a 10M-event profile).
OVERVIEW_ONLY = ("overview_figures", "overview", "report")


def test_a_window_showing_the_timeline_computes_none_of_the_overviews_analyses(qtbot, tmp_path):
    """Issue 23: `screenshot --view timeline` waits for the analyses the views on screen ask for; the
    Overview asks for its figures and findings when it is shown, not before."""
    require_shared_traces()
    from PySide6.QtCore import QSettings

    from tpuscope.ui.loader import prepare
    from tpuscope.ui.main_window import MainWindow

    window = MainWindow(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    result = prepare(TPU_TRACE)
    window.set_result(result)  # as the screenshot command does: set, then the tab, then shown
    window.show_view("timeline")
    window.resize(1366, 768)
    window.show()
    qtbot.waitExposed(window)
    window.hub.wait()
    assert "steps" in result.analysis.computed  # the timeline's step band
    assert [name for name in OVERVIEW_ONLY if name in result.analysis.computed] == []
    overview = window.views["overview"]
    window.show_view("overview")  # the user opens the tab: now it asks, and fills in
    window.hub.wait()
    assert overview.overview is not None and overview.overview.report is not None
    assert "overview" in result.analysis.computed
    window.wait_for_background_work()


def test_the_views_modules_are_imported_in_one_call_for_a_worker_thread():
    """What the window's worker imports before the views are made: every view's module and the
    modules a view imports only when made (the Query tab's DuckDB session), none of them before."""
    child = (
        "import json, sys\n"
        "from tpuscope.ui.registry import VIEWS, import_view_modules\n"
        "wanted = [n for s in VIEWS if s.module for n in (s.module, *s.imports)]\n"
        "before = [n for n in wanted if n in sys.modules]\n"
        "import_view_modules()\n"
        "print('SEEN ' + json.dumps([before, [n for n in wanted if n not in sys.modules]]))\n"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env, timeout=300)
    line = next((x for x in done.stdout.splitlines() if x.startswith("SEEN ")), None)
    assert done.returncode == 0 and line is not None, done.stderr[-3000:]
    before, missing = json.loads(line[len("SEEN ") :])
    assert before == [] and missing == []
