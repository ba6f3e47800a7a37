"""Event colours and labels, computed per metadata row (a few hundred per plane), never per event.

An event's colour is its HLO category when its metadata has one (so all
fusions of a kind read alike across devices), else a stable colour of its
name: the same name gets the same colour in every profile and every run,
because it comes from a CRC of the name, not from the order of appearance.
"""

from __future__ import annotations

import re
import zlib

import numpy as np

from tpuscope.model.trace import Plane
from tpuscope.model.vocabulary import Stat

# Medium-light, mutually distinct fills that keep black labels legible (contrast >= 4.5:1).
PALETTE: tuple[str, ...] = (
    "#7fb3e0",
    "#f2a766",
    "#8fd18f",
    "#e88a8a",
    "#b9a2dc",
    "#c9a48f",
    "#ef9fcf",
    "#b4b4b4",
    "#d3d36b",
    "#6fd0d8",
    "#a8c8f0",
    "#f7c98b",
    "#b5e3a8",
    "#f4b6b6",
    "#d5c6ec",
    "#e0c7b8",
    "#f6c6e3",
    "#d8d8d8",
    "#e6e69a",
    "#a6e3e8",
)
# HLO categories as XLA names them (the `hlo_category` stat of TPU ops, e.g. in XProf's test profile
# openxla/xprof `xprof/convert/test_xplanes/tpu_inference_2.xplane.pb`), given fixed,
# distinct colours so the common ones never share one by hash collision.
CATEGORY_COLOURS: dict[str, int] = {
    "convolution": 0,
    "loop fusion": 1,
    "input fusion": 2,
    "output fusion": 18,
    "custom fusion": 4,
    "non-fusion elementwise": 5,
    "data formatting": 6,
    "copy": 7,
    "copy-start": 8,
    "copy-done": 9,
    "all-reduce": 3,
    "all-gather": 10,
    "reduce-scatter": 11,
    "all-to-all": 12,
    "collective-permute": 13,
    "broadcast": 14,
    "custom-call": 15,
    "dynamic slice": 16,
    "dynamic update slice": 16,
    "while": 17,
}
_NUMBER_SUFFIX = re.compile(r"[.#_/:-]?\d+$")


def short_name(name: str) -> str:
    """The op name of an HLO expression (`%fusion.3 = f32[..] fusion(..)` -> `fusion.3`), else the name."""
    head, sep, _ = name.partition(" = ")
    if sep:
        return head.strip().lstrip("%")
    return name


def colour_key(name: str) -> str:
    """What names are coloured by: the short name without its instance number (`fusion.3` -> `fusion`)."""
    return _NUMBER_SUFFIX.sub("", short_name(name)) or name


def colour_of_key(key: str) -> int:
    return zlib.crc32(key.encode("utf-8", "replace")) % len(PALETTE)


class PlaneColours:
    """Palette index and label for each metadata row of one plane."""

    def __init__(self, plane: Plane):
        trace = plane.trace
        meta = plane.metadata
        names = [trace.strings[int(i)] for i in meta.name_ids]
        categories = meta.stats.column(Stat.OP_CATEGORY)
        category_of: dict[int, str] = {}
        if categories is not None and categories.kind == "str":
            rows = range(len(categories.values)) if categories.rows is None else categories.rows
            category_of = {
                int(r): trace.strings[int(v)] for r, v in zip(rows, categories.values, strict=True)
            }
        colours = np.empty(len(names), np.int16)
        for row, name in enumerate(names):
            category = category_of.get(row)
            if category is not None and category in CATEGORY_COLOURS:
                colours[row] = CATEGORY_COLOURS[category]
            else:
                colours[row] = colour_of_key(category or colour_key(name))
        self.colour_of_row = colours
        self.label_of_row = [short_name(n) for n in names]
        self.category_of_row = category_of


class Colours:
    """PlaneColours for every plane of a trace, made on first use."""

    def __init__(self) -> None:
        self._planes: dict[int, PlaneColours] = {}

    def of(self, plane: Plane) -> PlaneColours:
        found = self._planes.get(id(plane))
        if found is None:
            found = self._planes[id(plane)] = PlaneColours(plane)
        return found


def text_is_dark(hex_colour: str) -> bool:
    """Whether black text reads better than white on this fill (relative luminance above the midpoint)."""
    r, g, b = (int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.45
