"""The pivot of a selected area (`tpuscope.analysis.area_pivot`) written as SQL over `events`, so a
user can see how its numbers are made, change the query and run it in the Query tab.

The query says the pivot's own definition: the events of the chosen tracks that overlap the range
(a zero-length event counts when it lies inside), their durations clipped to it, and each event's
self time its clipped time minus its direct children's (`events.parent_id`, the event one level up
that contains it). Its rows equal the pivot's: `label`, `count`, `total_ps`, `self_ps`, `avg_ps`.
"""

from __future__ import annotations

from collections.abc import Iterable

# The events column each pivot dimension groups by (see area_pivot.DIMENSIONS).
DIMENSION_COLUMNS = {"name": "name", "category": "category", "program": "program_id", "source": "source"}


def track_condition(track_ids: Iterable[int], all_tracks: int) -> str:
    """`track_id` in these ids, as runs (`BETWEEN`) and single ids; empty when they are every track."""
    ids = sorted(set(int(i) for i in track_ids))
    if len(ids) == all_tracks and (not ids or (ids[0] == 0 and ids[-1] == all_tracks - 1)):
        return ""
    if not ids:
        return "AND false"
    runs: list[tuple[int, int]] = []
    for i in ids:
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    singles = [str(a) for a, b in runs if a == b]
    ranges = [f"track_id BETWEEN {a} AND {b}" for a, b in runs if b > a]
    parts = ranges + ([f"track_id IN ({', '.join(singles)})"] if singles else [])
    return "AND (" + " OR ".join(parts) + ")"


def area_pivot_sql(dimension: str, t0_ps: int, t1_ps: int, track_ids: Iterable[int], all_tracks: int) -> str:
    """The SQL whose rows are the area pivot by `dimension` (name, category, program, source)."""
    column = DIMENSION_COLUMNS[dimension]
    t0, t1 = int(t0_ps), int(t1_ps)
    tracks = track_condition(track_ids, all_tracks)
    where = f"ts_ps < {t1} AND (ts_ps + dur_ps > {t0} OR (dur_ps = 0 AND ts_ps >= {t0}))"
    if tracks:
        where += f"\n    {tracks}"
    return f"""-- the selected area, {t0} ps to {t1} ps, by {dimension}
WITH area AS (
  SELECT id, parent_id, {column} AS label,
         greatest(least(ts_ps + dur_ps, {t1}) - greatest(ts_ps, {t0}), 0) AS clipped_ps
  FROM events
  WHERE {where}
),
children AS (  -- the clipped time of each event's direct children in the area
  SELECT parent_id, sum(clipped_ps) AS children_ps FROM area WHERE parent_id IS NOT NULL GROUP BY parent_id
)
SELECT label, count(*) AS count, sum(clipped_ps) AS total_ps,
       sum(greatest(clipped_ps - coalesce(children_ps, 0), 0)) AS self_ps,
       sum(clipped_ps) / count(*) AS avg_ps
FROM area LEFT JOIN children ON children.parent_id = area.id
GROUP BY label
ORDER BY total_ps DESC, label
"""
