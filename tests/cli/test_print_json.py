"""`print_json`: every command's --json text, written by msgspec with Python's `json` as the fallback."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tpuscope.commands._console import print_json


def _printed(capsys, payload) -> str:
    print_json(payload)
    return capsys.readouterr().out


def test_numpy_values_read_back_as_the_same_numbers(capsys):
    payload = {
        "count": np.int64(7),
        "share": np.float32(0.25),
        "mean": np.float64(1 / 3),
        "column": np.arange(3, dtype=np.int32),
        "rows": [{"step": 1, "us": 1e-05}, {"step": 2, "us": 1e16}],
        "tuple": (1, 2),
    }
    text = _printed(capsys, payload)
    assert json.loads(text) == {
        "count": 7, "share": 0.25, "mean": 1 / 3, "column": [0, 1, 2],
        "rows": [{"step": 1, "us": 1e-05}, {"step": 2, "us": 1e16}], "tuple": [1, 2],
    }  # fmt: skip
    assert text.startswith('{\n  "count": 7,\n')  # indented by two spaces, keys in their order


def test_nan_and_infinity_are_written_as_null(capsys):
    """JSON has no NaN: a reader like jq or JSON.parse refuses Python's `NaN` token."""
    text = _printed(capsys, {"a": float("nan"), "b": [np.inf, 1.5]})
    assert json.loads(text) == {"a": None, "b": [None, 1.5]}


def test_keys_msgspec_cannot_write_fall_back_to_python_json(capsys):
    assert json.loads(_printed(capsys, {None: 1, "x": np.int16(2)})) == {
        "null": 1,
        "x": 2,
    }


def test_a_value_neither_can_write_is_a_type_error(capsys):
    with pytest.raises(TypeError):
        print_json({"x": object()})
