"""The one list of the main window's tabs, in order.

A new view is its module (a `tpuscope.ui.views.View` subclass) plus one `ViewSpec` line here; the
window, its View menu and `tpuscope screenshot --view` all read this list. Nothing here imports Qt,
so the command line can list the views without starting it.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from typing import Any

from tpuscope.model.records import record

TIMELINE = "timeline"  # the tab the window builds itself (its timeline is wired to everything)


@record(frozen=True)
class ViewSpec:
    """One tab: its key (for `show_view` and `openRequested`), title and the class that makes it."""

    key: str
    title: str
    module: str = ""  # "" for the timeline, which the window builds
    class_name: str = ""
    # Modules the view imports when it is made (not at its module's top): imported with its module,
    # off the UI thread, by `import_view_modules`.
    imports: tuple[str, ...] = ()

    def available(self) -> bool:
        """Whether this build has the view (its module exists), found without importing it: the
        window adds a tab for each view it has and makes the view when the tab is first shown."""
        if not self.module:
            return True
        try:
            return importlib.util.find_spec(self.module) is not None
        except ModuleNotFoundError:  # a parent package missing from this build
            return False

    def load(self) -> Any:
        """The view class (a `View` subclass), or None while its module does not exist in this build
        (an import error inside the module is a bug and is raised)."""
        if not self.module:
            return None
        try:
            module = importlib.import_module(self.module)
        except ModuleNotFoundError as error:
            if error.name == self.module:
                return None
            raise
        return getattr(module, self.class_name)


# The Overview first, the timeline next (issue 7).
VIEWS: tuple[ViewSpec, ...] = (
    ViewSpec("overview", "Overview", "tpuscope.ui.overview_view", "OverviewView"),
    ViewSpec(TIMELINE, "Timeline"),
    ViewSpec("ops", "Op breakdown", "tpuscope.ui.ops.view", "OpsView"),
    ViewSpec("diagnostics", "Diagnostics", "tpuscope.ui.diagnostics_view", "DiagnosticsView"),
    ViewSpec("memory", "Memory", "tpuscope.ui.memory_view", "MemoryView"),
    ViewSpec("comms", "Communication", "tpuscope.ui.comms_view", "CommsView"),
    ViewSpec("source", "Source", "tpuscope.ui.source_view", "SourceView"),
    ViewSpec("roofline", "Roofline", "tpuscope.ui.roofline_view", "RooflineView"),
    ViewSpec("graph", "Graph", "tpuscope.ui.graph_view", "GraphView"),
    ViewSpec("flame", "Flame", "tpuscope.ui.flame_view", "FlameView"),
    ViewSpec("query", "Query", "tpuscope.ui.query_view", "QueryView", ("tpuscope.query.session",)),
)
VIEW_KEYS: tuple[str, ...] = tuple(spec.key for spec in VIEWS)


def import_view_modules(keys: Iterable[str] | None = None) -> None:
    """Imports the modules of the views `keys` (default every view): pyqtgraph, DuckDB and the
    analyses, most of the cost of making a view, for a worker thread to run while the window shows and
    a profile loads (the first view's) or while the user looks at it (the others'); making a view on
    the UI thread then costs only its widgets. A module missing from this build is skipped; any other
    import error is left for `ViewSpec.load` to raise where the view is made."""
    wanted = None if keys is None else set(keys)
    for spec in VIEWS:
        if wanted is not None and spec.key not in wanted:
            continue
        for name in (spec.module, *spec.imports) if spec.module else ():
            try:
                importlib.import_module(name)
            except ImportError:
                break
