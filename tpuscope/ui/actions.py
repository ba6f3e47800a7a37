"""The window's commands as one declarative table: the menus and their shortcuts are built from it.

Each command is one `Action` record (what it is called, where it sits, its key, which method runs
it and when it can run), so the menu bar, a command palette and the Keys help page read one list
instead of each keeping its own: napari's `app_model` actions are the pattern (a record per command,
menus and key bindings derived from the records). Handlers are named, not bound: "loads.open_path"
is looked up on the window when the command runs, so the table is plain data that can be listed
without a window (`action_list`), and the window's heavy parts (the timeline) are made only when a
command needs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu

from tpuscope.model.records import record
from tpuscope.ui.registry import VIEWS

Shortcut = str | QKeySequence.StandardKey

FILE, VIEW, HELP = "&File", "&View", "&Help"
MENUS = (FILE, VIEW, HELP)  # the menu bar, left to right
ELLIPSIS = "\u2026"


@record(frozen=True)
class Action:
    """One command: `handler` is an attribute path on the window ("loads.open_file_dialog"), called
    with `args` (and, for a checkable action, its new checked state last)."""

    id: str
    title: str  # as the menu shows it, with its & mnemonic
    menu: str  # one of MENUS
    handler: str = ""
    args: tuple[Any, ...] = ()
    shortcut: Shortcut | None = None
    group: str = ""  # a separator goes between two groups of one menu
    # An attribute path on the window read when the menus are built, when one opens and after each
    # load: False greys the command out (its shortcut does nothing either). None of today's commands
    # has one: each does nothing, or says why in a dialog, when it cannot run, and the menus read as
    # they did before the table.
    enabled_when: str | None = None
    checkable: bool = False
    checked: str | None = None  # an attribute path on the window: the checked state when built
    # Whether this build has the command (Open Sample: a sample is bundled); read when the menus are built.
    available: Callable[[], bool] | None = None
    submenu: bool = False  # a submenu the window fills (Open Recent); no handler
    # Made by a widget rather than built here (the Details dock's own show/hide action): the window
    # provides it when the widget is made, and it takes this record's place in the menu.
    provided: bool = False


def _sample_bundled() -> bool:
    from tpuscope.ui.welcome import bundled_sample

    return bundled_sample() is not None


MAX_GO_TO_SHORTCUTS = 9  # Ctrl+1 .. Ctrl+9 (Ctrl+0 resets the zoom)


def _go_to_actions() -> tuple[Action, ...]:
    """View > Go to ...: one per tab of the registry, Ctrl+1 for the first to Ctrl+9 for the ninth
    (a key sequence has one digit: the later tabs have no shortcut)."""
    return tuple(
        Action(
            f"view.go_to.{spec.key}",
            f"Go to {spec.title}",
            VIEW,
            "router.show",
            (spec.key,),
            f"Ctrl+{number}" if number <= MAX_GO_TO_SHORTCUTS else None,
            group="go to",
        )
        for number, spec in enumerate(VIEWS, start=1)
    )


ACTIONS: tuple[Action, ...] = (
    # File
    Action("file.open", f"&Open{ELLIPSIS}", FILE, "loads.open_file_dialog",
           shortcut=QKeySequence.StandardKey.Open, group="open"),
    Action("file.open_folder", f"Open &Folder{ELLIPSIS}", FILE, "loads.open_folder_dialog",
           shortcut="Ctrl+Shift+O", group="open"),
    Action("file.open_url", f"Open &URL{ELLIPSIS}", FILE, "loads.open_url_dialog",
           shortcut="Ctrl+Shift+U", group="open"),
    Action("file.recent", "Open &Recent", FILE, group="open", submenu=True),
    Action("file.compare", f"Compare &with{ELLIPSIS}", FILE, "compare_with_dialog",
           shortcut="Ctrl+Shift+K", group="open"),
    Action("file.history", f"Run &History{ELLIPSIS}", FILE, "history_dialog",
           shortcut="Ctrl+Shift+H", group="open"),
    Action("file.sample", "Open &Sample (TPU v6e)", FILE, "loads.open_sample", group="open",
           available=_sample_bundled),
    Action("file.capture", f"&Capture{ELLIPSIS}", FILE, "open_capture_dialog",
           shortcut="Ctrl+Shift+C", group="capture"),
    Action("file.export", f"&Export Chrome Trace{ELLIPSIS}", FILE, "export_dialog", (False,),
           shortcut="Ctrl+E", group="export"),
    Action("file.export_range", f"Export Selected &Range{ELLIPSIS}", FILE, "export_dialog", (True,),
           shortcut="Ctrl+Shift+E", group="export"),
    Action("file.export_report", f"Export &Report (HTML){ELLIPSIS}", FILE, "export_report_dialog",
           group="export"),
    Action("file.cache_limit", f"Cache Size &Limit{ELLIPSIS}", FILE, "ask_cache_limit", group="app"),
    Action("file.quit", "&Quit", FILE, "close", shortcut=QKeySequence.StandardKey.Quit, group="app"),
    # View
    Action("view.zoom_fit", "Zoom to &Fit", VIEW, "router.timeline.zoom_to_fit",
           shortcut="Ctrl+0", group="zoom"),
    Action("view.zoom_in", "Zoom &In (W)", VIEW, "router.timeline.zoom", (1.25,),
           shortcut=QKeySequence.StandardKey.ZoomIn, group="zoom"),
    Action("view.zoom_out", "Zoom &Out (S)", VIEW, "router.timeline.zoom", (0.8,),
           shortcut=QKeySequence.StandardKey.ZoomOut, group="zoom"),
    Action("view.collapse", "&Collapse All Groups", VIEW, "router.timeline.set_all_collapsed", (True,),
           group="tracks"),
    Action("view.expand", "&Expand All Groups", VIEW, "router.timeline.set_all_collapsed", (False,),
           group="tracks"),
    Action("view.show_empty", "Show &Empty Tracks", VIEW, "router.timeline.set_show_empty",
           group="tracks", checkable=True),
    Action("view.align_clocks", "Align Host &Clocks", VIEW, "set_align_clocks", group="tracks",
           checkable=True, checked="loads.align_clocks"),
    Action("view.find", f"Find{ELLIPSIS}", VIEW, "router.focus_search",
           shortcut=QKeySequence.StandardKey.Find, group="tracks"),
    Action("view.command_palette", f"Command &Palette{ELLIPSIS}", VIEW, "show_command_palette",
           shortcut="Ctrl+Shift+P", group="link"),
    Action("view.copy_link", "Copy &Link", VIEW, "copy_link", shortcut="Ctrl+Shift+L", group="link"),
    *_go_to_actions(),
    Action("view.details", "Details", VIEW, shortcut="Ctrl+Shift+D", group="panels", provided=True),
    # Help
    Action("help.keys", "&Keys", HELP, "show_keys", shortcut="F1"),
    Action("help.docs", f"&Documentation{ELLIPSIS}", HELP, "show_documentation"),
    Action("help.about", f"&About tpuscope{ELLIPSIS}", HELP, "show_about", group="about"),
)  # fmt: skip


def resolve(owner: object, path: str) -> Any:
    """The attribute `path` ("router.timeline.zoom") of `owner`, looked up now."""
    target = owner
    for name in path.split("."):
        target = getattr(target, name)
    return target


def plain_title(title: str) -> str:
    """A menu title without its mnemonic marks, as a palette or help page lists it."""
    return title.replace("&&", "\0").replace("&", "").replace("\0", "&")


def shortcut_text(shortcut: Shortcut | None) -> str:
    """The key as this platform writes it ("Ctrl+Shift+O"); "" for none (a QGuiApplication must exist
    for the platform's standard keys)."""
    if shortcut is None:
        return ""
    return QKeySequence(shortcut).toString(QKeySequence.SequenceFormat.NativeText)


def action_list(actions: Iterable[Action] = ACTIONS) -> list[tuple[str, str, str]]:
    """Every command with its shortcut, as (menu, title, shortcut) without mnemonics, in menu order:
    what a command palette or the Keys page lists."""
    return [
        (plain_title(a.menu), plain_title(a.title), shortcut_text(a.shortcut))
        for a in actions
        if not a.submenu and (a.available is None or a.available())
    ]


class BuiltMenus(QObject):
    """The menu bar built from the table: the QActions and submenus by id, the enabled states kept
    up to date (`refresh`), and the actions widgets provide slotted in where the table puts them."""

    def __init__(self, window: QMainWindow, actions: Iterable[Action] = ACTIONS):
        super().__init__(window)
        self._window = window
        self.actions: dict[str, QAction] = {}
        self.submenus: dict[str, QMenu] = {}
        self.menus: dict[str, QMenu] = {}
        self._order: dict[str, list[Action]] = {}  # each menu's records as the table lists them
        for title in MENUS:
            menu = window.menuBar().addMenu(title)
            menu.aboutToShow.connect(self.refresh)
            self.menus[title] = menu
            self._order[title] = []
        last_group: dict[str, str | None] = dict.fromkeys(MENUS)
        for action in actions:
            if action.available is not None and not action.available():
                continue
            menu = self.menus[action.menu]
            self._order[action.menu].append(action)
            if last_group[action.menu] not in (None, action.group):
                menu.addSeparator()
            last_group[action.menu] = action.group
            if action.submenu:
                submenu = menu.addMenu(action.title)
                submenu.menuAction().setObjectName(action.id)
                self.submenus[action.id] = submenu
            elif not action.provided:
                menu.addAction(self._build(action))
        self.refresh()

    def _build(self, action: Action) -> QAction:
        built = QAction(action.title, self._window)
        built.setObjectName(action.id)
        if action.shortcut is not None:
            built.setShortcut(QKeySequence(action.shortcut))
        if action.checkable:
            built.setCheckable(True)
            if action.checked is not None:
                built.setChecked(bool(resolve(self._window, action.checked)))
        built.triggered.connect(lambda checked=False, a=action: self._run(a, checked))
        self.actions[action.id] = built
        return built

    def _run(self, action: Action, checked: bool) -> None:
        handler = resolve(self._window, action.handler)
        if action.checkable:
            handler(*action.args, bool(checked))
        else:
            handler(*action.args)

    def provide(self, action_id: str, built: QAction) -> None:
        """Puts a widget's own action (the Details dock's) where record `action_id` sits in its menu."""
        entry = next(a for records in self._order.values() for a in records if a.id == action_id)
        records = self._order[entry.menu]
        later = records[records.index(entry) + 1 :]
        before = next((self.actions[a.id] for a in later if a.id in self.actions), None)
        built.setObjectName(action_id)
        if entry.shortcut is not None:  # the table's key, so the Keys page and the menu agree
            built.setShortcut(QKeySequence(entry.shortcut))
        menu = self.menus[entry.menu]
        if before is None:
            menu.addAction(built)
        else:
            menu.insertAction(before, built)
        self.actions[action_id] = built

    def refresh(self) -> None:
        """Greys out the commands that cannot run now (their `enabled_when` is false)."""
        for records in self._order.values():
            for entry in records:
                built = self.actions.get(entry.id)
                if built is not None and entry.enabled_when is not None:
                    built.setEnabled(bool(resolve(self._window, entry.enabled_when)))
