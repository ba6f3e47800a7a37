"""The action table (tpuscope.ui.actions): every menu item is built from one of its records, each
shortcut is bound to one command only, each record names a handler the window has, and the menus
read as they did before the table."""

from __future__ import annotations

from PySide6.QtGui import QKeySequence

from tpuscope.ui.actions import (
    ACTIONS,
    MENUS,
    Action,
    BuiltMenus,
    action_list,
    plain_title,
    resolve,
    shortcut_text,
)
from tpuscope.ui.main_window import MainWindow
from tpuscope.ui.registry import TIMELINE, VIEWS
from tpuscope.ui.welcome import bundled_sample

RECORDS = {a.id: a for a in ACTIONS}

# The menus as the window built them by hand before the table (issue 32 must not change them).
FILE_MENU = [
    "&Open\u2026", "Open &Folder\u2026", "Open &URL\u2026", "Open &Recent", "Compare &with\u2026",
    "Run &History\u2026", *(["Open &Sample (TPU v6e)"] if bundled_sample() is not None else []), "",
    "&Capture\u2026", "",
    "&Export Chrome Trace\u2026", "Export Selected &Range\u2026", "Export &Report (HTML)\u2026", "",
    "Cache Size &Limit\u2026", "&Quit",
]  # fmt: skip
VIEW_MENU = [
    "Zoom to &Fit", "Zoom &In (W)", "Zoom &Out (S)", "",
    "&Collapse All Groups", "&Expand All Groups", "Show &Empty Tracks", "Align Host &Clocks",
    "Find\u2026", "",
    "Command &Palette\u2026", "Copy &Link", "",
    *(f"Go to {spec.title}" for spec in VIEWS), "",
    "Details",
]  # fmt: skip


def _menus(window: MainWindow):
    return [(a.text(), a.menu()) for a in window.menuBar().actions()]


def test_every_menu_item_is_built_from_a_record_of_the_table(qtbot, settings):
    window = MainWindow(settings)
    qtbot.addWidget(window)
    window.details_dock  # noqa: B018 - the body made: View > Details is its dock's own action
    assert [title for title, _ in _menus(window)] == list(MENUS)
    built = []
    for title, menu in _menus(window):
        for item in menu.actions():
            if item.isSeparator():
                continue
            record = RECORDS[item.objectName()]  # every item is a record's
            assert record.menu == title and item.text() == record.title
            built.append(record.id)
    expected = [a.id for a in ACTIONS if a.available is None or a.available()]
    assert built == expected  # and every record is an item, in the table's order
    assert [a.text() for a in window.menuBar().actions()[0].menu().actions()] == FILE_MENU
    assert [a.text() for a in window.menuBar().actions()[1].menu().actions()] == VIEW_MENU
    help_menu = [a.text() for a in window.menuBar().actions()[2].menu().actions()]
    assert help_menu == ["&Keys", "&Documentation\u2026", "", "&About tpuscope\u2026"]


def test_each_shortcut_belongs_to_one_command_and_is_bound_to_its_item(qtbot, settings):
    window = MainWindow(settings)
    qtbot.addWidget(window)
    window.router.build_body()  # the Details dock, whose own action takes the table's key
    keys = [shortcut_text(a.shortcut) for a in ACTIONS if a.shortcut is not None]
    bound = [key for key in keys if key]  # a platform may bind none to a standard key (Quit offscreen)
    assert len(bound) == len(set(bound))
    assert all(shortcut_text(a.shortcut) for a in ACTIONS if isinstance(a.shortcut, str))
    for record in ACTIONS:
        if record.shortcut is not None:
            assert window.menus.actions[record.id].shortcut() == QKeySequence(record.shortcut)
    assert window.menus.actions[f"view.go_to.{VIEWS[0].key}"].shortcut() == QKeySequence("Ctrl+1")


def test_each_record_names_a_handler_and_states_the_window_has(qtbot, settings):
    window = MainWindow(settings)
    qtbot.addWidget(window)
    for record in ACTIONS:
        if record.submenu or record.provided:
            assert not record.handler  # the window fills it, or a widget provides its action
            continue
        assert callable(resolve(window, record.handler)), record.id
        for state in (record.enabled_when, record.checked):
            if state is not None:
                assert isinstance(resolve(window, state), bool), record.id
    window.wait_for_background_work()


def test_the_list_for_a_palette_names_every_command_with_its_key(qtbot, settings):
    window = MainWindow(settings)  # the platform's standard keys need the application
    qtbot.addWidget(window)
    listed = action_list()
    assert ("File", "Open\u2026", QKeySequence(QKeySequence.StandardKey.Open).toString()) in listed
    assert ("View", f"Go to {VIEWS[1].title}", "Ctrl+2") in listed
    assert ("Help", "Keys", "F1") in listed
    titles = [title for _, title, _ in listed]
    assert "Open Recent" not in titles  # a submenu, no command
    assert plain_title("Zoom &In (W)") == "Zoom In (W)" and plain_title("R&&D") == "R&D"


def test_triggering_an_item_runs_its_handler(qtbot, settings):
    window = MainWindow(settings)
    qtbot.addWidget(window)
    window.menus.actions[f"view.go_to.{TIMELINE}"].trigger()
    assert window.tabs.currentWidget() is window.views[TIMELINE]
    align = window.menus.actions["view.align_clocks"]
    assert align.isChecked()  # the default
    align.trigger()  # no profile open: saved, nothing loads
    assert not window.loads.align_clocks and str(settings.value("view/align_clocks")).lower() == "false"
    assert not window.workers
    align.trigger()
    window.wait_for_background_work()


def test_a_widgets_own_action_takes_its_records_place(qtbot, settings):
    window = MainWindow(settings)
    qtbot.addWidget(window)
    menus = BuiltMenus(window, [a for a in ACTIONS if a.menu == "&Help" or a.id == "view.details"])
    from PySide6.QtGui import QAction

    provided = QAction("Details", window)
    menus.provide("view.details", provided)
    assert menus.menus["&View"].actions() == [provided]
    assert provided.objectName() == "view.details" and menus.actions["view.details"] is provided


def test_a_command_is_greyed_out_while_its_enabled_when_is_false(qtbot, settings):
    window = MainWindow(settings)
    qtbot.addWidget(window)
    fit = "router.timeline.zoom_to_fit"
    record = Action("test.fit", "Fit", "&View", fit, enabled_when="router.body_built")
    menus = BuiltMenus(window, [record])
    assert not menus.actions["test.fit"].isEnabled()  # set when built: the body is made after the paint
    window.timeline  # noqa: B018 - the body made
    menus.menus["&View"].aboutToShow.emit()  # the menu opening
    assert menus.actions["test.fit"].isEnabled()
