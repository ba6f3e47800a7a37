"""The view router's public API (tpuscope.ui.view_router): views by name, `show`, pages added later,
outlining and zooming across views; and the pod session and Compare reach the window only through
the router and the load controller."""

from __future__ import annotations

import ast
import inspect

from PySide6.QtWidgets import QWidget

from tests.conftest import TPU_TRACE, require_shared_traces
from tests.ui.conftest import open_and_wait
from tpuscope.ui import compare_view, history_view
from tpuscope.ui.pod import session
from tpuscope.ui.registry import TIMELINE, VIEWS
from tpuscope.ui.view_router import FIRST_VIEWS

TAB_KEYS = [spec.key for spec in VIEWS if spec.available()]


def test_views_are_named_and_shown_by_key_before_any_load(qtbot, window):
    router = window.router
    assert list(router.views) == TAB_KEYS  # listing the keys makes no view
    assert sorted(router.made_views) == [TIMELINE]
    assert router.show(TIMELINE) and router.tabs.currentWidget() is router.views[TIMELINE]
    assert not router.show("no such view")
    assert router.has_view(TIMELINE) and not router.has_view("no such view")
    assert router.trace is None and router.path is None and router.shown_result() is None


def test_a_shown_profile_brings_the_first_view_and_routes_outlines_and_zooms(qtbot, window):
    require_shared_traces()
    router = window.router
    shown = []
    router.resultShown.connect(shown.append)
    trace = open_and_wait(qtbot, window, TPU_TRACE)
    assert [r.trace for r in shown] == [trace] and router.trace is trace and router.path == TPU_TRACE
    first = next(key for key in FIRST_VIEWS if key in TAB_KEYS)
    assert router.tabs.currentWidget() is router.made_views[first]
    assert router.status_label.text().startswith(f"{TPU_TRACE.name}: {trace.event_count:,} events")
    again = router.shown_result()
    assert again is not None and again.trace is trace and again.analysis is window.hub.analysis

    t0, t1 = trace.duration_ps // 4, trace.duration_ps // 2
    router.zoom_timeline(t0, t1)
    assert router.tabs.currentWidget() is router.views[TIMELINE]
    assert router.timeline.t0_ps == t0 and router.timeline.t1_ps == t1

    name = window.views["overview"].overview.ops.names()[0]
    router.outline_ops({name})  # before the Op breakdown is made: it is outlined there when made
    ops = router.views["ops"]
    router.show("ops")
    window.hub.wait()
    qtbot.waitUntil(lambda: ops.table is not None)
    assert ops.model.outlined_names == {name}

    router.summarize_range(float(t0), float(t1))
    assert router.selected_range == (t0, t1)
    router.show_no_trace()
    assert router.trace is None and router.selected_range is None and window.timeline.trace is None


def test_pages_added_later_are_shown_and_removed_through_the_router(qtbot, window):
    router = window.router
    page = QWidget()
    router.add_page(page, "Pod", index=0)
    router.bring_to_front(page)
    assert router.stack.currentWidget() is router.tabs and router.tabs.currentWidget() is page
    assert router.tabs.tabText(0) == "Pod"
    router.remove_page(page)
    assert router.tabs.indexOf(page) == -1
    named = QWidget()
    router.add_view("extra", named, "Extra")
    assert router.views["extra"] is named and list(router.views)[-1] == "extra"
    assert router.show("extra") and router.tabs.currentWidget() is named
    router.say("one line")
    router.set_window_title("title - tpuscope")
    assert router.status_label.text() == "one line" and window.windowTitle() == "title - tpuscope"


def _attributes_of(module, name: str) -> set[str]:
    """The attributes read of the variable or member `name` (`x.name.attr`, `name.attr`) in `module`."""
    found = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.Attribute):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id == name:
                found.add(node.attr)
            elif isinstance(owner, ast.Attribute) and owner.attr == name:
                found.add(node.attr)
    return found


def test_the_pod_session_and_compare_use_only_the_routers_and_the_controllers_public_api():
    for module in (session, compare_view, history_view):
        source = inspect.getsource(module)
        assert "main_window" not in source and "MainWindow" not in source, module.__name__
        for owner in ("router", "loads"):
            private = {a for a in _attributes_of(module, owner) if a.startswith("_")}
            assert private == set(), (module.__name__, owner, private)
        assert not {"tabs", "stack", "notice", "status_label"} & _attributes_of(module, "router")
    assert not {"window"} & _attributes_of(session, "self")


def test_a_view_added_before_the_tabs_are_made_comes_after_the_registrys(qtbot, settings):
    """`tpuscope --compare BASE NEW`: the Compare tab is added before the window first paints."""
    from tpuscope.ui.main_window import MainWindow

    window = MainWindow(settings)
    qtbot.addWidget(window)
    window.router.add_view("extra", QWidget(), "Extra")
    titles = [window.tabs.tabText(i) for i in range(window.tabs.count())]
    assert titles == [spec.title for spec in VIEWS if spec.key in TAB_KEYS] + ["Extra"]
    window.wait_for_background_work()
