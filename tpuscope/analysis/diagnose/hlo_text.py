"""Shapes, layouts and opcode of one HLO instruction, read from its text.

TPU profiles name each op's metadata by its full HLO instruction, e.g.
`%copy-done = f32[5,1024]{1,0:T(8,128)} copy-done((f32[5,1024]{1,0:T(8,128)}, f32[5,1024]{1,0:T(8,128)S(5)},
u32[]{:S(2)}) %copy-start)`: result shape, opcode, operand shapes with their layouts (minor-to-major
dimension order, `T(8,128)` tiles, `S(n)` memory space). That is all the op-level rules need
(alignment padding, dtypes, what an async op waits for), without decoding the HLO protos.
The notation is XLA's (openxla/xla xla/shape_util.cc, xla/layout.cc `ToString`).
"""

from __future__ import annotations

import math
import re
from dataclasses import field

from tpuscope.model.records import record

# `bf16[8,128]{1,0:T(8,128)(2,1)S(1)}`: element type, dimensions, optional layout.
_SHAPE = re.compile(r"\b([a-z][a-z0-9]*)\[([0-9,<=]*)\](\{[^}]*\})?")
_TILE = re.compile(r"T\(([0-9,]+)\)")
_MEMORY_SPACE = re.compile(r"S\((\d+)\)")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*")
_OPCODE = re.compile(r"\s*([a-z][\w\-]*)\(")
# XLA's host memory space (openxla/xla xla/layout.h, Layout::kHostMemorySpace = 5).
HOST_MEMORY_SPACE = 5
ELEMENT_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
                 "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}  # fmt: skip
FLOAT_TYPES = {"f16", "bf16", "f32", "f64"}


@record(frozen=True)
class Shape:
    element_type: str
    dims: tuple[int, ...]
    minor_to_major: tuple[int, ...] = ()
    tile: tuple[int, ...] = ()  # the first tile, e.g. (8, 128)
    memory_space: int = 0

    @property
    def elements(self) -> int:
        return math.prod(self.dims) if self.dims else 1

    @property
    def bytes(self) -> int:
        return self.elements * ELEMENT_BYTES.get(self.element_type, 4)

    def minor_dims(self) -> list[int]:
        """Dimension indices from the most minor (fastest varying) outwards."""
        if self.minor_to_major and len(self.minor_to_major) == len(self.dims):
            return list(self.minor_to_major)
        return list(range(len(self.dims) - 1, -1, -1))  # XLA's default layout: row major

    def padded_elements(self, tile: tuple[int, ...]) -> int:
        """Elements once the minor dimensions are padded up to `tile` (e.g. (8, 128))."""
        dims = list(self.dims)
        minors = self.minor_dims()
        for k, size in enumerate(reversed(tile)):
            if k < len(minors):
                d = minors[k]
                dims[d] = -(-dims[d] // size) * size if dims[d] else 0
        return math.prod(dims) if dims else 1


@record
class Instruction:
    opcode: str
    results: list[Shape] = field(default_factory=list)
    operands: list[Shape] = field(default_factory=list)
    attributes: str = ""


def parse_shape(match: re.Match) -> Shape:
    element, dims_text, layout = match.group(1), match.group(2), match.group(3) or ""
    dims = tuple(int(d.replace("<=", "")) for d in dims_text.split(",") if d)
    body = layout[1:-1]
    order_text, _, rest = body.partition(":")
    minor_to_major = tuple(int(d) for d in order_text.split(",") if d.strip().isdigit())
    tile_match = _TILE.search(rest)
    tile = tuple(int(t) for t in tile_match.group(1).split(",")) if tile_match else ()
    space_match = _MEMORY_SPACE.search(rest)
    return Shape(element, dims, minor_to_major, tile, int(space_match.group(1)) if space_match else 0)


def shapes_in(text: str) -> list[Shape]:
    return [parse_shape(m) for m in _SHAPE.finditer(text)]


def parse_instruction(text: str) -> Instruction | None:
    """The opcode and shapes of `%name = RESULT opcode(OPERANDS), attrs`, or None for other text."""
    head = _INSTRUCTION.match(text)
    if head is None:
        return None
    rest = text[head.end() :]
    result_text, rest = _split_result(rest)
    opcode = _OPCODE.match(rest)
    if opcode is None:
        return None
    operands_text, attributes = split_balanced(rest[opcode.end() - 1 :])
    return Instruction(opcode.group(1), shapes_in(result_text), shapes_in(operands_text), attributes)


def _split_result(text: str) -> tuple[str, str]:
    if text.startswith("("):
        inside, after = split_balanced(text)
        return inside, after
    match = _SHAPE.match(text)
    if match is None:
        return "", text
    return text[: match.end()], text[match.end() :]


def split_balanced(text: str) -> tuple[str, str]:
    """Splits `(...)rest` at the parenthesis that closes the first one: (what is inside, the rest).
    The one reading of an instruction's operand list (this parser, the HLO graph, the fusion cost)."""
    depth = 0
    for k, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return text[1:k], text[k + 1 :]
    return text[1:], ""
