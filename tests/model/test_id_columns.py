"""`tpuscope.model.id_columns`: distinct values and table lookups made a slice at a time equal numpy's
whole-column ones, over several slices (the last one partial) and every integer width ids come in."""

from __future__ import annotations

import numpy as np
import pytest

from tpuscope.model.id_columns import SLICE, distinct, take


@pytest.mark.parametrize("dtype", [np.uint16, np.int32, np.int64, np.uint64])
@pytest.mark.parametrize("size", [0, 1, SLICE, 2 * SLICE + 7])
def test_slices_give_numpy_whole_column_answers(dtype, size):
    rng = np.random.default_rng(size)
    ids = rng.integers(0, 500, size).astype(dtype)
    found = distinct(ids)
    assert found.dtype == np.int64 and np.array_equal(found, np.unique(ids))
    table = rng.integers(-(2**31), 2**31 - 1, 500).astype(np.int32)
    out = np.full(size, 7, np.int32)
    assert take(table, ids, out) is out and np.array_equal(out, table[ids])
