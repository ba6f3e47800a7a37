"""What each instruction of a fusion costs, from its shapes: the weights that split a fusion's time
among the scopes (and stacks) of the instructions it fused.

A device op that is a fusion ran many instructions at once, and the profile times only the whole.
Its time is split in proportion to each fused instruction's estimated time, computed the way XLA's
own cost model estimates an instruction (openxla/xla, xla/service/hlo_cost_analysis.cc):

- bytes accessed: the sizes of the instruction's output and operands (`Preprocess`); parameters,
  constants, get-tuple-element, bitcasts, after-all and add-dependency touch nothing of their own
  (`HandleParameter`, `HandleConstant`, `HandleGetTupleElement`, `HandleBitcast`, `HandleAfterAll`,
  `HandleAddDependency`), and a tuple only its index table (`HandleTuple`; nothing here);
- FLOPs: a dot's `2 x output elements x the product of the lhs contracting dimensions`
  (`GetDotFlops`, kFmaFlops = 2); a convolution's `2 x output elements x the kernel's elements per
  output feature` (`GetConvolutionFlops`, without its count of valid window positions at padded
  edges); an elementwise op's one per output element (`HandleElementwiseOp`); others none here (a
  reduction's FLOPs, one per reduced element, stay below its bytes at any ridge of 1 or more);
- the estimated time is the bottleneck of the two, `max(FLOPs / peak FLOP/s, bytes / peak bytes/s)`
  (`Postprocess`' optimal_seconds), so only the ratio of the peaks (the ridge point) matters.

Shapes are read from the instruction's text as XLA prints it (`%x = f32[8,4]{1,0} dot(f32[8,2]{1,0}
%a, ...)`, with operand shapes), so any reader that prints HLO text gives the weights. Every number
here is an estimate: the split is marked as one wherever it is shown.
"""

from __future__ import annotations

import math
import re

from tpuscope.analysis.diagnose.hlo_text import split_balanced

# Bytes per element of XLA's primitive types (xla/xla_data.proto PrimitiveType; 4-bit types are half
# a byte, as ShapeUtil::ByteSizeOfPrimitiveType packs them).
ELEMENT_BYTES = {
    "pred": 1.0, "s2": 0.25, "u2": 0.25, "s4": 0.5, "u4": 0.5, "s8": 1.0, "u8": 1.0, "s16": 2.0, "u16": 2.0,
    "f16": 2.0, "bf16": 2.0, "s32": 4.0, "u32": 4.0, "f32": 4.0, "s64": 8.0, "u64": 8.0, "f64": 8.0,
    "c64": 8.0, "c128": 16.0, "token": 0.0,
}  # fmt: skip
FP8_BYTES = 1.0  # f8e4m3fn, f8e5m2, ... (xla_data.proto: 8-bit floats); f4e2m1fn is half that
# Peak FLOP/s over peak bytes/s assumed when the device's peaks are unknown (XLA:CPU, most GPUs in a
# profile): our heuristic, about a server CPU core's vector FLOP rate over its share of DRAM
# bandwidth. Only the ratio matters (module docstring); on TPU the chip's own peaks are used.
DEFAULT_RIDGE_FLOPS_PER_BYTE = 10.0
FMA_FLOPS = 2  # HloCostAnalysis::kFmaFlops
# Instructions that move no data of their own (module docstring).
_FREE_OPCODES = frozenset(
    {"parameter", "constant", "get-tuple-element", "bitcast", "tuple", "after-all", "add-dependency"}
)
_ELEMENTWISE = frozenset(
    "abs add and atan2 cbrt ceil clamp clz compare complex convert cos divide erf exp expm1 floor imag "
    "is-finite log log1p logistic maximum minimum multiply negate not or popcnt power real "
    "reduce-precision remainder round-nearest-afz round-nearest-even rsqrt select shift-left "
    "shift-right-arithmetic shift-right-logical sign sin sqrt subtract tan tanh xor".split()
)
_SHAPE = re.compile(r"\b([a-z]+[0-9]*[a-z0-9]*)\[([0-9,]*)\]")
_HEAD = re.compile(r"^%?\S+ = (.*?) ([a-z][a-z0-9-]*)\((.*)$", re.DOTALL)
_CONTRACTING = re.compile(r"lhs_contracting_dims=\{([0-9,]*)\}")
_DIM_LABELS = re.compile(r"dim_labels=([0-9a-z]+)_([0-9a-z]+)->([0-9a-z]+)")


def _element_bytes(dtype: str) -> float | None:
    if dtype in ELEMENT_BYTES:
        return ELEMENT_BYTES[dtype]
    if dtype.startswith("f8"):
        return FP8_BYTES
    if dtype.startswith("f4"):
        return FP8_BYTES / 2
    return None


def _shapes(text: str) -> list[tuple[float, list[int]]]:
    """(bytes per element, dimensions) of each array shape written in `text`, in order."""
    found = []
    for dtype, dims in _SHAPE.findall(text):
        size = _element_bytes(dtype)
        if size is not None:
            found.append((size, [int(d) for d in dims.split(",") if d]))
    return found


def _bytes(shapes: list[tuple[float, list[int]]]) -> float:
    return sum(size * math.prod(dims) for size, dims in shapes)


def instruction_cost(text: str, ridge_flops_per_byte: float = DEFAULT_RIDGE_FLOPS_PER_BYTE) -> float:
    """The instruction's estimated time in byte-equivalents, `max(FLOPs / ridge, bytes)` (module
    docstring): 0 for instructions that touch nothing of their own or whose text gives no shapes."""
    head = _HEAD.match(text.strip())
    if head is None:
        return 0.0
    result_text, opcode, rest = head.groups()
    if opcode in _FREE_OPCODES:
        return 0.0
    operand_text, attributes = split_balanced("(" + rest)  # `rest` follows `opcode(`
    result, operands = _shapes(result_text), _shapes(operand_text)
    if not result:
        return 0.0
    bytes_accessed = _bytes(result) + _bytes(operands)
    output_elements = sum(math.prod(dims) for _, dims in result)
    flops = 0.0
    if opcode == "dot" and operands:
        found = _CONTRACTING.search(attributes)
        lhs = operands[0][1]
        width = 1
        for dim in (int(d) for d in found.group(1).split(",") if d) if found else ():
            width *= lhs[dim] if dim < len(lhs) else 1
        flops = FMA_FLOPS * output_elements * width
    elif opcode == "convolution" and len(operands) >= 2:
        kernel = operands[1][1]
        labels = _DIM_LABELS.search(attributes)
        # The kernel's output-feature dimension: `o` in its dim_labels, else last (XLA's default 01io).
        out_dim = labels.group(2).find("o") if labels else len(kernel) - 1
        per_output = math.prod(kernel) / max(kernel[out_dim], 1) if 0 <= out_dim < len(kernel) else 1
        flops = FMA_FLOPS * output_elements * per_output
    elif opcode in _ELEMENTWISE:
        flops = float(output_elements)
    return max(flops / ridge_flops_per_byte, bytes_accessed)
