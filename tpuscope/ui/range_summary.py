"""The Details panel's page for a Shift-drag selection: the area pivot (tpuscope.analysis.area_pivot)
by one dimension, links to pivot by the others, and one that opens the same pivot as SQL in the Query
tab (tpuscope.query.area), whose rows equal these.

Links: `pivot:<dimension>` shows the pivot by another dimension (computed already, no new pass);
`sql:<dimension>` asks for the SQL of the one shown.
"""

from __future__ import annotations

import html

from tpuscope.analysis.area_pivot import DIMENSIONS, AreaPivot
from tpuscope.model.units import SHORT_SPEC, format_duration
from tpuscope.query.area import area_pivot_sql
from tpuscope.ui.timeline.palette import short_name
from tpuscope.ui.widgets.elide import elide

MAX_RANGE_ROWS = 200  # rows listed for a range; the rest are counted in one line
# Characters of a name cell: the cell never wraps (a word broken mid-way read as two names, issue 37),
# so a longer name is shortened keeping its distinguishing tail (`elide`), the full name its tooltip.
# Our heuristic: a name and the count and total fit the Details dock's start width; self and average
# show when the dock is widened (the page scrolls sideways, its rows stay one line tall).
NAME_CELL_CHARS = 30
PIVOT_LINK = "pivot:"
SQL_LINK = "sql:"
_TITLES = {key: title for key, title, _ in DIMENSIONS}
_NONE_LABEL = "<span style='color:#5b6473'>(none)</span>"


def _duration(ps: float) -> str:
    """A duration kept on one line: Qt's rich text ignores `nowrap`, so its space is a no-break one."""
    return html.escape(format_duration(int(ps), SHORT_SPEC)).replace(" ", "&nbsp;")


def range_pivot_html(pivot: AreaPivot, dimension: str = "name") -> str:
    """The page: what the range holds, the pivot by `dimension`, the other dimensions and "as SQL"."""
    table = pivot.by[dimension]
    t0, t1 = pivot.t0_ps, pivot.t1_ps
    head = (
        f"<h3 style='margin-bottom:4px'>Range {_duration(t1 - t0)}</h3>"
        f"<p style='margin:2px 0'>{_duration(t0)} to {_duration(t1)}: {pivot.events:,} events, "
        f"{len(pivot.by['name']):,} names on the {pivot.track_count:,} expanded tracks</p>"
    )
    choices = " | ".join(
        f"<b>{html.escape(title)}</b>"
        if key == dimension
        else f"<a href='{PIVOT_LINK}{key}'>{html.escape(title)}</a>"
        for key, title, _ in DIMENSIONS
        if key in pivot.by
    )
    links = f"<p style='margin:4px 0'>By {choices} &nbsp; <a href='{SQL_LINK}{dimension}'>as SQL</a></p>"
    rows = []
    shown = min(len(table), MAX_RANGE_ROWS)
    for label, count, total, own, average in table.rows()[:shown]:
        rows.append(
            f"<tr><td nowrap>{_name_cell(label)}</td><td align='right'>{count:,}</td>"
            f"<td align='right'>{_duration(total)}</td>"
            f"<td align='right'>{_duration(own)}</td><td align='right'>{_duration(average)}</td></tr>"
        )
    body = (
        f"<table cellspacing='0' cellpadding='2'><tr><th align='left'>{html.escape(_TITLES[dimension])}</th>"
        f"<th>Count</th><th>Total</th><th>Self</th><th>Average</th></tr>{''.join(rows)}</table>"
    )
    more = f"<p>and {len(table) - shown:,} more rows</p>" if len(table) > shown else ""
    return head + links + body + more


def _name_cell(label: str | None) -> str:
    """A name that fits NAME_CELL_CHARS (its tail kept), with the full name as its tooltip."""
    if label is None:
        return _NONE_LABEL
    name = short_name(label)
    shown = elide(name, lambda text: len(text) <= NAME_CELL_CHARS)
    if shown == name:
        return html.escape(name)
    return f'<span title="{html.escape(label, quote=True)}">{html.escape(shown)}</span>'


def range_pivot_sql(pivot: AreaPivot, dimension: str) -> str:
    """The SQL whose rows are the pivot by `dimension` (for the Query tab)."""
    return area_pivot_sql(dimension, pivot.t0_ps, pivot.t1_ps, pivot.track_ids, pivot.all_tracks)
