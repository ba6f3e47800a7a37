"""The command palette (Ctrl+Shift+P, as in Perfetto and code editors): type a few letters of anything
the window can do and press Enter.

It lists every command of the action table (`tpuscope.ui.actions`, with its shortcut: the palette
teaches the keys), every tab, every finding of the open profile, the timeline's flags (M), the
recent files, "Go to time"
(a time or range from the trace start, as a deep link's `--at` takes it) and "Go to op" (an op of
the profile by name). Entries are ranked by `fuzzy_score`, a small subsequence scorer in the manner
of fzf and VS Code's quick open: every typed letter must appear in order; letters that start a word
or follow the previous match, and a match at the start, rank higher.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QDialog, QLabel, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout

from tpuscope.model.records import record
from tpuscope.model.units import SHORT_SPEC, format_duration
from tpuscope.ui.actions import ACTIONS, plain_title, shortcut_text

if TYPE_CHECKING:
    from tpuscope.ui.main_window import MainWindow

# Scores (our heuristic, after fzf's bonuses): what makes one match read better than another.
WORD_START_BONUS = 3.0  # a typed letter that starts a word ("gt" in "Go to Timeline")
CONSECUTIVE_BONUS = 2.0  # a letter right after the previous match ("time" in "Timeline")
PREFIX_BONUS = 4.0  # the text starts with the first typed letter
SUBSTRING_BONUS = 5.0  # the typed word appears whole
EXACT_BONUS = 100.0  # the text is what was typed: first, whatever else matches
WHOLE_WORD_BONUS = 2.0  # ...and is a word of the text ("op" in "Go to Op breakdown", not in "Open")
GAP_PENALTY = 0.05  # per letter skipped between two matches
LENGTH_PENALTY = 0.01  # per letter of the text: of two equal matches the shorter ranks first
SEPARATORS = " _-./:()[]>,"
MAX_SHOWN = 200  # the list shows this many entries at most (the best ones)
PALETTE_WIDTH_SHARE = 0.6  # of the window's width
PALETTE_MAX_HEIGHT = 420  # px: fits a 720-pixel laptop screen with the window's frame
PALETTE_TOP_PX = 40  # below the window's top edge: the menu bar stays visible

KIND_COMMAND, KIND_VIEW, KIND_FINDING, KIND_RECENT, KIND_GO = "command", "view", "finding", "recent", "go to"
KIND_FLAG = "flag"


def fuzzy_score(query: str, text: str) -> float | None:
    """How well `query` matches `text` (higher is better), None when it does not: each word of the
    query must match, its letters in order (case-insensitive)."""
    lowered = text.lower()
    total = 0.0
    for word in query.lower().split():
        score = _word_score(word, lowered)
        if score is None:
            return None
        total += score
    if lowered == " ".join(query.lower().split()):
        total += EXACT_BONUS
    return total - LENGTH_PENALTY * len(text)


def _word_score(word: str, text: str) -> float | None:
    score = 0.0
    position = 0
    previous = -2
    for k, letter in enumerate(word):
        found = text.find(letter, position)
        if found < 0:
            return None
        # A later occurrence that starts a word reads better than an earlier one inside a word, if
        # the rest of the word still matches after it.
        if found != previous + 1 and not _starts_word(text, found):
            found = next(
                (
                    i
                    for i in _occurrences(text, letter, found)
                    if _starts_word(text, i) and _in_order(word[k + 1 :], text, i + 1)
                ),
                found,
            )
        if found == previous + 1:
            score += CONSECUTIVE_BONUS
        elif previous >= 0:
            score -= GAP_PENALTY * (found - previous - 1)
        if _starts_word(text, found):
            score += WORD_START_BONUS
        if found == 0:
            score += PREFIX_BONUS
        previous = found
        position = found + 1
    if word in text:
        score += SUBSTRING_BONUS
        if any(part == word for part in _words(text)):
            score += WHOLE_WORD_BONUS
    return score


def _words(text: str) -> list[str]:
    for separator in SEPARATORS[1:]:
        text = text.replace(separator, " ")
    return text.split()


def _in_order(letters: str, text: str, start: int) -> bool:
    for letter in letters:
        start = text.find(letter, start) + 1
        if start == 0:
            return False
    return True


def _occurrences(text: str, letter: str, start: int) -> list[int]:
    found, positions = text.find(letter, start), []
    while found >= 0:
        positions.append(found)
        found = text.find(letter, found + 1)
    return positions


def _starts_word(text: str, index: int) -> bool:
    return index == 0 or text[index - 1] in SEPARATORS


def ranked(query: str, titles: list[str], limit: int = MAX_SHOWN) -> list[int]:
    """The indices of `titles` matching `query`, best first (all, in order, for an empty query)."""
    if not query.strip():
        return list(range(min(len(titles), limit)))
    scored = [
        (score, -k) for k, title in enumerate(titles) if (score := fuzzy_score(query, title)) is not None
    ]
    scored.sort(reverse=True)
    return [-k for _, k in scored[:limit]]


@record(frozen=True)
class Entry:
    """One line of the palette: what it says, what kind of thing it is, its key, and what it does."""

    title: str
    kind: str
    run: Callable[[], None]
    shortcut: str = ""

    @property
    def text(self) -> str:
        return f"{self.kind}: {self.title}" if self.kind not in (KIND_COMMAND,) else self.title


def window_entries(window: MainWindow, palette: CommandPalette) -> list[Entry]:
    """Everything the palette offers in `window` now (see the module docstring)."""
    entries: list[Entry] = []
    built = window.menus.actions
    for action in ACTIONS:
        if action.submenu or action.id not in built or action.id == PALETTE_ACTION:
            continue
        qaction = built[action.id]
        title = f"{plain_title(action.menu)}: {plain_title(action.title)}".replace("\u2026", "")
        entries.append(Entry(title, KIND_COMMAND, qaction.trigger, shortcut_text(action.shortcut)))
    entries.append(Entry("Go to time (12.3ms or 12.3ms:45.6ms from the start)", KIND_GO, palette.ask_time))
    entries.append(Entry("Go to op by name", KIND_GO, palette.ask_op))
    tabs = window.tabs
    for index in range(tabs.count()):
        page = tabs.widget(index)
        entries.append(Entry(tabs.tabText(index), KIND_VIEW, partial(window.router.bring_to_front, page)))
    for position, title in enumerate(_finding_titles(window)):
        entries.append(Entry(title, KIND_FINDING, partial(_open_finding, window, position)))
    if window.router.body_built and window.trace is not None:
        for t_ps in window.timeline.flags:
            title = format_duration(t_ps, SHORT_SPEC)
            entries.append(Entry(title, KIND_FLAG, partial(_go_to_flag, window, t_ps)))
    for path in window.recent_paths():
        entries.append(Entry(path, KIND_RECENT, partial(window.open_path, path)))
    return entries


PALETTE_ACTION = "view.command_palette"  # the palette's own command is not listed in it


def _finding_titles(window: MainWindow) -> list[str]:
    """The open profile's findings, in the Diagnostics list's order, once the diagnosis has run."""
    from tpuscope.analysis.session import REPORT
    from tpuscope.ui.widgets.code_spans import without_code_marks

    if not window.router.body_built:
        return []
    analysis = window.hub.analysis
    if analysis is None or not analysis.has(REPORT):
        return []
    return [without_code_marks(f"{f.severity.label}: {f.title}") for f in analysis.get(REPORT).findings]


def _go_to_flag(window: MainWindow, t_ps: float) -> None:
    from tpuscope.ui.navigate import go_to_time

    go_to_time(window.router, t_ps)


def _open_finding(window: MainWindow, position: int) -> None:
    from tpuscope.ui.views import FindingAt

    window.router.open_view("diagnostics", FindingAt(position))


class CommandPalette(QDialog):
    """See the module docstring. `entries` are made when it opens (`window_entries`)."""

    MODE_COMMANDS, MODE_TIME, MODE_OP = "commands", "time", "op"

    def __init__(self, window: MainWindow):
        super().__init__(window, Qt.WindowType.Popup)
        self.setObjectName("commandPalette")
        self.window_ = window
        self.mode = self.MODE_COMMANDS
        self.entries: list[Entry] = []
        self._ops: list[str] = []
        self.line = QLineEdit(self)
        self.line.setPlaceholderText("Type a command, a tab, a finding or a recent file")
        self.list = QListWidget(self)
        self.list.setUniformItemSizes(True)
        self.hint = QLabel("", self)
        self.hint.setWordWrap(True)
        column = QVBoxLayout(self)
        column.setContentsMargins(6, 6, 6, 6)
        column.addWidget(self.line)
        column.addWidget(self.hint)
        column.addWidget(self.list, 1)
        self.line.textChanged.connect(self.refilter)
        self.line.installEventFilter(self)
        self.list.itemActivated.connect(self._run_item)
        self.setMaximumHeight(PALETTE_MAX_HEIGHT)

    # ----- opening ----------------------------------------------------------------------------

    def open_palette(self) -> None:
        """Shows the palette over the top of the window, every entry listed."""
        self.mode = self.MODE_COMMANDS
        self.entries = window_entries(self.window_, self)
        self.line.setPlaceholderText("Type a command, a tab, a finding or a recent file")
        self.hint.hide()
        self.line.clear()
        self.refilter()
        host = self.window_
        width = int(host.width() * PALETTE_WIDTH_SHARE)
        top_left = host.mapToGlobal(host.rect().topLeft())
        self.setGeometry(
            top_left.x() + (host.width() - width) // 2, top_left.y() + 40, width, PALETTE_MAX_HEIGHT
        )
        self.show()
        self.line.setFocus()

    def ask_time(self) -> None:
        """The palette asks for a time or range; Enter goes there (`tpuscope.ui.navigate.go_to_time`)."""
        self._switch(self.MODE_TIME, "12.3ms, or 12.3ms:45.6ms (from the start of the trace)")

    def ask_op(self) -> None:
        """The palette lists the profile's ops by name; Enter shows the chosen op's longest event."""
        from tpuscope.ui.navigate import op_names

        self._ops = op_names(self.window_.router)
        self._switch(self.MODE_OP, "An op's name (its longest event is shown on the timeline)")

    def _switch(self, mode: str, placeholder: str) -> None:
        self.mode = mode
        self.line.setPlaceholderText(placeholder)
        self.line.clear()
        self.refilter()
        self.show()
        self.line.setFocus()

    # ----- filtering and running ----------------------------------------------------------------

    def refilter(self) -> None:
        query = self.line.text()
        self.list.clear()
        self.hint.hide()
        if self.mode == self.MODE_TIME:
            self._show_time_hint(query)
            return
        if self.mode == self.MODE_OP:
            for k in ranked(query, self._ops):
                self._add(self._ops[k], "", ("op", self._ops[k]))
        else:
            for k in ranked(query, [e.text for e in self.entries]):
                entry = self.entries[k]
                self._add(entry.text, entry.shortcut, ("entry", k))
        if self.list.count():
            self.list.setCurrentRow(0)

    def _add(self, text: str, shortcut: str, data: tuple[str, object]) -> None:
        item = QListWidgetItem(f"{text}    {shortcut}" if shortcut else text)
        item.setData(Qt.ItemDataRole.UserRole, data)
        item.setToolTip(text)
        self.list.addItem(item)

    def _show_time_hint(self, query: str) -> None:
        from tpuscope.ui.launch import LaunchError, format_time, parse_range_ps

        if not query.strip():
            return
        try:
            t0, t1 = parse_range_ps(query)
        except LaunchError as error:
            self.hint.setText(str(error))
            self.hint.show()
            return
        shown = format_time(t0) + (f" to {format_time(t1)}" if t1 is not None else "")
        self._add(f"Go to {shown}", "", ("time", (t0, t1)))
        self.list.setCurrentRow(0)

    def run_current(self) -> bool:
        """Runs the selected entry (Enter); False when there is none."""
        item = self.list.currentItem()
        if item is None:
            return False
        self._run_item(item)
        return True

    def _run_item(self, item: QListWidgetItem) -> None:
        from tpuscope.ui import navigate

        kind, value = item.data(Qt.ItemDataRole.UserRole)
        router = self.window_.router
        if kind == "entry":
            entry = self.entries[int(value)]
            if entry.kind != KIND_GO:
                self.hide()
            entry.run()  # a "go to" entry asks for its argument in the palette itself
            return
        self.hide()
        if kind == "time":
            t0, t1 = value
            if not navigate.go_to_time(router, t0, t1):
                router.say("That time lies past the end of the profile.")
        elif kind == "op" and not navigate.go_to_op(router, str(value)):
            router.say(f"No event is named {value!r} in this profile.")

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Up/Down/Page keys in the line move through the list; Enter runs; Esc closes."""
        if watched is self.line and event.type() == QEvent.Type.KeyPress:
            assert isinstance(event, QKeyEvent)
            key = event.key()
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                self.run_current()
                return True
            if key == Qt.Key.Key_Escape:
                self.hide()
                return True
            if key in (Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_PageUp, Qt.Key.Key_PageDown):
                self.list.keyPressEvent(event)
                return True
        return super().eventFilter(watched, event)


def show_palette(window: MainWindow) -> CommandPalette:
    """Opens the window's palette (made on first use)."""
    palette = window.findChild(CommandPalette, "commandPalette")
    if palette is None:
        palette = CommandPalette(window)
    palette.open_palette()
    return palette
