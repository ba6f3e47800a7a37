"""Columnar stats: one sparse column per stat name, over the rows of a track or metadata table.

XPlane attaches a handful of named stats to events and to their metadata.
Storing them as one numpy column per (table, stat name), like Perfetto's
args table split by key, keeps them vectorized for analysis and costs no
Python object per event.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from tpuscope.model.records import record
from tpuscope.model.strings import StringTable

StatKind = Literal["int", "uint", "float", "str", "bytes"]


@record
class StatColumn:
    """Values of one stat over the rows that carry it.

    `rows` holds the sorted row indices that have a value, or None when every
    row has one (dense). `values` is int64/uint64/float64, or int32 ids into
    the trace's string table (kind "str") or blob list (kind "bytes").
    """

    name: str
    kind: StatKind
    rows: np.ndarray | None
    values: np.ndarray

    @property
    def count(self) -> int:
        return len(self.values)

    def nbytes(self) -> int:
        return self.values.nbytes + (0 if self.rows is None else self.rows.nbytes)

    def index_of(self, row: int) -> int | None:
        """Position of `row` in `values`, or None when that row lacks this stat."""
        if self.rows is None:
            return row if 0 <= row < len(self.values) else None
        pos = int(np.searchsorted(self.rows, row))
        if pos < len(self.rows) and self.rows[pos] == row:
            return pos
        return None

    def dense(self, n_rows: int, fill: float | int = 0) -> np.ndarray:
        """All rows' values as one array, `fill` where a row lacks the stat.

        Integer columns come back as int64 (float64 when fill is NaN), so
        callers can do arithmetic without caring about the narrowed storage.
        """
        dtype = self._dense_dtype(fill)
        if self.rows is None:
            return self.values.astype(dtype, copy=False)
        out = np.full(n_rows, fill, dtype=dtype)
        out[self.rows] = self.values
        return out

    def gather(self, n_rows: int, rows: np.ndarray, fill: float | int = 0, widen: bool = True) -> np.ndarray:
        """`dense(n_rows, fill)[rows]`, without building the dense column where it can be skipped.

        A dense column is gathered from directly, and when `rows` are exactly the rows that carry
        the stat (an op line's ops: every op event has its `hlo_op`) the values are the answer as
        they are: each skipped dense column is a fresh array of the whole track, whose pages cost
        more to touch than the gather. The result may be this column's own storage: read it only.
        `widen=False`: values read from the column come in the type it stores them in (narrowed
        integers), for a caller that converts them where it writes them.
        """
        dtype = self._dense_dtype(fill) if widen else self.values.dtype
        if self.rows is None:
            return self.values[rows].astype(dtype, copy=False)
        if len(self.rows) == len(rows) and np.array_equal(self.rows, rows):
            return self.values.astype(dtype, copy=False)
        return self.dense(n_rows, fill)[rows]

    def _dense_dtype(self, fill: float | int) -> type[np.number]:
        """What `dense` widens the stored values to (narrowed storage is not the callers' concern)."""
        if self.kind == "float" or (isinstance(fill, float) and np.isnan(fill)):
            return np.float64
        if self.kind == "uint":
            return np.uint64 if self.values.dtype == np.uint64 else np.int64
        if self.kind in ("str", "bytes"):
            return np.int32
        return np.int64

    def present_rows(self, n_rows: int) -> np.ndarray:
        """The rows that carry this stat (int64, ascending): `np.flatnonzero(present(n_rows))`, from
        `rows` as they are, without a mask over every row."""
        return np.arange(n_rows) if self.rows is None else self.rows.astype(np.int64)

    def present(self, n_rows: int) -> np.ndarray:
        """Boolean mask of the rows that carry this stat."""
        if self.rows is None:
            return np.ones(n_rows, dtype=bool)
        mask = np.zeros(n_rows, dtype=bool)
        mask[self.rows] = True
        return mask


class StatTable:
    """The stat columns of one table (a track's events or a plane's event metadata)."""

    def __init__(self, n_rows: int, columns: dict[str, StatColumn] | None = None):
        self.n_rows = n_rows
        self.columns: dict[str, StatColumn] = columns or {}

    def __contains__(self, name: str) -> bool:
        return name in self.columns

    def names(self) -> list[str]:
        return list(self.columns)

    def column(self, name: str) -> StatColumn | None:
        return self.columns.get(name)

    def values(self, name: str, fill: float | int = np.nan) -> np.ndarray | None:
        """Dense values of stat `name` for every row, or None when no row has it."""
        col = self.columns.get(name)
        return None if col is None else col.dense(self.n_rows, fill)

    def nbytes(self) -> int:
        return sum(c.nbytes() for c in self.columns.values())

    def row(self, row: int, strings: StringTable, blobs: list[bytes]) -> dict[str, object]:
        """The stats of one row as plain Python values, for a details panel or JSON."""
        out: dict[str, object] = {}
        for name, col in self.columns.items():
            pos = col.index_of(row)
            if pos is None:
                continue
            value = col.values[pos]
            if col.kind == "str":
                out[name] = strings[int(value)]
            elif col.kind == "bytes":
                out[name] = blobs[int(value)]
            elif col.kind == "float":
                out[name] = float(value)
            else:
                out[name] = int(value)
        return out
