"""`print_json`: every command's --json text, written by msgspec with Python's `json` as the fallback."""

from __future__ import annotations

import json
import random

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


def _floats_of_every_size() -> list[float]:
    mantissas = (1.0, 1.5, 9.99, 1.2345678901234567, 7.61619689574115)
    return [sign * m * 10.0**e for e in range(-30, 30) for m in mantissas for sign in (1, -1)]


def test_the_text_is_pythons_json_text(capsys):
    """Byte for byte what `json.dumps(payload, indent=2)` writes: exponents (1e-07, 1e+16, 1e-05),
    escapes of every character beyond ASCII, DEL, surrogate pairs, and number-like text in strings."""
    rng = random.Random(1)
    characters = "".join(chr(i) for i in range(0x250)) + "\u2028\u2029€𝄞😀"
    strings = ["".join(rng.choice(characters) for _ in range(20)) for _ in range(200)]
    strings += ["1e-7", "x: 1e-7,", '"a": 1e-5', "0.00001", "2e16"]
    floats = _floats_of_every_size()
    payload = {
        "floats": floats,
        "rows": [{"k" + s: v, s: s} for s, v in zip(strings, floats, strict=False)],
        "strings": strings,
        "1e-7": 1e-7,
        "ints": [10**17, -5, 0],
        "empty": [[], {}, [1e-9]],
    }
    assert _printed(capsys, payload) == json.dumps(payload, indent=2) + "\n"
