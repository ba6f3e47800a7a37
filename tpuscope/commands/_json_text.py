"""Every `--json` output as Python's `json.dumps(payload, indent=2)` writes it, encoded by msgspec.

msgspec encodes a payload ten times faster than Python's `json` (the 2.4 MB overview of the 1M-event
JAX CPU recording: 4 ms against 41 ms) and its numbers read back as the same doubles, but its text
differs in two ways, which would make every output of an earlier version differ from ours in bytes
for no change of value (and a CI job that diffs outputs would flag it):
- floats below 1e-4 or from 1e16 up: msgspec writes `1e-7`, `0.00001` and `1e16`, Python `1e-07`,
  `1e-05` and `1e+16` (`repr`: scientific below 1e-4 and from 1e16, exponent of two digits at least);
- characters outside ASCII (and DEL): msgspec writes them as they are (UTF-8), Python as `\\uXXXX`
  escapes (so the output is ASCII whatever the console's encoding is).

`python_json_text` rewrites just those tokens. Both are rare (a few per output), so they are found
with numpy over the bytes and each is checked against the line it is on: formatted JSON puts every
number on a line of its own, as `<indent>[<key>: ]<number>[,]`, so a token in the middle of a string
is never touched.
"""

from __future__ import annotations

import re

import numpy as np

from tpuscope.model import order_statistics

_DIGIT_0, _DIGIT_9, _DOT, _LOWER_E = ord("0"), ord("9"), ord("."), ord("e")
# A formatted line holding one number that msgspec and `repr` write differently: an exponent, or the
# positional form msgspec gives numbers in [1e-5, 1e-4) ("0.0000" then digits).
_NUMBER_LINE = re.compile(
    rb' *(?:"(?:[^"\\]|\\.)*": )?(-?(?:\d+(?:\.\d+)?e[-+]?\d+|0\.0000\d+))(,?)'
)  # fmt: skip
_ESCAPED_BY_PYTHON = re.compile(r"[^\x00-\x7e]")  # beyond ASCII, and DEL


def python_json_text(data: bytes) -> str:
    """msgspec's formatted JSON `data` as the text `json.dumps(..., indent=2)` gives the same values."""
    text = _python_numbers(data).decode()
    return text if text.isascii() and "\x7f" not in text else _ESCAPED_BY_PYTHON.sub(_escaped, text)


def _python_numbers(data: bytes) -> bytes:
    view = np.frombuffer(data, np.uint8)
    if len(view) < 2:
        return data
    # An "e" after a digit; found among the "e"s (a few percent of the bytes), not by a digit test of
    # every byte: two passes over the text where that took four (2.4 MB: 2.6 -> 1.6 ms).
    letters = np.flatnonzero(view[1:] == _LOWER_E) + 1
    before = view[letters - 1]
    exponent = letters[(before >= _DIGIT_0) & (before <= _DIGIT_9)]
    tiny = np.flatnonzero(view[1:-4] == _DOT) + 1  # "0.0000" then digits: a dot with room for four more
    for offset in (-1, 1, 2, 3, 4):  # each test keeps fewer dots for the next one
        tiny = tiny[view[tiny + offset] == _DIGIT_0]
    candidates = order_statistics.union(exponent, tiny)
    if len(candidates) == 0:
        return data
    parts: list[bytes] = []
    done = 0  # data[:done] is in parts
    for position in candidates.tolist():
        start = data.rfind(b"\n", 0, position) + 1
        if start < done:  # a second candidate on a line already rewritten
            continue
        end = data.find(b"\n", position)
        end = len(data) if end < 0 else end
        line = _NUMBER_LINE.fullmatch(data, start, end)
        if line is None:
            continue
        parts += [data[done : line.start(1)], repr(float(line.group(1))).encode()]
        done = line.end(1)
    parts.append(data[done:])
    return b"".join(parts)


def _escaped(character: re.Match) -> str:
    """A character beyond ASCII, or DEL, as `json` escapes it: `\\uXXXX`, a surrogate pair beyond the BMP."""
    code = ord(character.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"
