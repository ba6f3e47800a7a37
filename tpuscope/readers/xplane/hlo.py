"""Program signatures from the serialized XLA `HloProto`s that profiles keep in `/host:metadata`.

JAX, PyTorch/XLA and TensorFlow/XLA profiles store one HloProto per compiled module as the
bytes stat `Hlo Proto` of an event metadata named `<module>(<program_id>)`. Of that proto
tpuscope needs only the entry computation's signature: when the same function is compiled
several times, the parameter shapes are what tell the user *why* (a batch that changes
size, a dtype that flips). Only the few fields below are read (`wire`, without protobuf's
runtime); the rest (computations, schedule, buffer assignment) is skipped unread. Their numbers
are xla/service/hlo.proto's and xla/xla_data.proto's, as `hlo.proto` beside this file lists them.

The result is the model's `ProgramSignature`, so nothing above this layer sees protobuf; the
trace's dialect hands this decoder to the model (`Dialect.decode_program_signature`).
"""

from __future__ import annotations

from tpuscope.model.programs import ProgramSignature
from tpuscope.readers.xplane.wire import (
    BOOL,
    INT32,
    INT64,
    MESSAGE,
    STRING,
    Field,
    Message,
    Schema,
    WireError,
    parse,
)

# Element type names as XLA prints them in HLO text (`f32[8,128]`, `bf16[]`, `pred[]`): xla_data.proto
# PrimitiveType, lower case, with XLA's own words for the four that print otherwise.
_TYPE_NAMES = {
    0: "invalid", 1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32", 9: "u64",
    10: "f16", 11: "f32", 12: "f64", 13: "tuple", 14: "opaque", 15: "c64", 16: "bf16", 17: "token",
    18: "c128", 19: "f8e5m2", 20: "f8e4m3fn", 21: "s4", 22: "u4", 23: "f8e4m3b11fnuz", 24: "f8e5m2fnuz",
    25: "f8e4m3fnuz", 26: "s2", 27: "u2", 28: "f8e4m3", 29: "f8e3m4", 30: "s1", 31: "u1", 32: "f4e2m1fn",
    33: "f8e8m0fnu", 34: "buffer",
}  # fmt: skip
_TUPLE, _TOKEN, _OPAQUE = 13, 17, 14
# Nested tuples deeper than this are printed as `(...)`: real signatures nest one or two levels;
# a corrupt blob can claim far more.
MAX_TUPLE_DEPTH = 8

# xla_data.proto: TileProto, LayoutProto, ShapeProto, ProgramShapeProto.
TILE = Schema({1: Field("dimensions", INT64, repeated=True)})
LAYOUT = Schema(
    {
        1: Field("minor_to_major", INT64, repeated=True),
        6: Field("tiles", MESSAGE, repeated=True, schema=TILE),
        7: Field("element_size_in_bits", INT64),
        8: Field("memory_space", INT64),
    }
)
SHAPE = Schema(
    {
        2: Field("element_type", INT32),
        3: Field("dimensions", INT64, repeated=True),
        5: Field("layout", MESSAGE, schema=LAYOUT),
        6: Field("is_dynamic_dimension", BOOL, repeated=True),
    }
)
SHAPE.add(4, Field("tuple_shapes", MESSAGE, repeated=True, schema=SHAPE))
_PROGRAM_SHAPE = Schema(
    {
        1: Field("parameters", MESSAGE, repeated=True, schema=SHAPE),
        2: Field("result", MESSAGE, schema=SHAPE),
        3: Field("parameter_names", STRING, repeated=True),
    }
)
# hlo.proto: HloProto.hlo_module and, of the module, its name, entry, signature and id.
_MODULE = Schema(
    {
        1: Field("name", STRING),
        2: Field("entry_computation_name", STRING),
        4: Field("host_program_shape", MESSAGE, schema=_PROGRAM_SHAPE),
        5: Field("id", INT64),
    }
)
_HLO_PROTO = Schema({1: Field("hlo_module", MESSAGE, schema=_MODULE)})


def type_name(kind: int) -> str:
    """An element type as XLA prints it (`f32`, `bf16`, `pred`), `type<N>` for numbers we do not know."""
    return _TYPE_NAMES.get(kind, f"type{kind}")


def format_shape(shape: Message, depth: int = 0, *, layout: bool = False) -> str:
    """One shape (`SHAPE`) in XLA's own notation: `f32[64,256]`, `s32[]`, `(f32[2], u32[])`, `bf16[<=8,4]`;
    with `layout`, each array shape's layout too, as XLA prints it: `f32[5,1024]{1,0:T(8,128)S(5)}`."""
    kind = shape.element_type
    if kind == _TUPLE:
        if depth >= MAX_TUPLE_DEPTH:
            return "(...)"
        return "(" + ", ".join(format_shape(s, depth + 1, layout=layout) for s in shape.tuple_shapes) + ")"
    name = type_name(kind)
    if kind in (_TOKEN, _OPAQUE):
        return f"{name}[]"
    dynamic = shape.is_dynamic_dimension
    dims = [f"<={d}" if k < len(dynamic) and dynamic[k] else str(d) for k, d in enumerate(shape.dimensions)]
    text = f"{name}[{','.join(dims)}]"
    if not layout or not shape.has("layout"):
        return text
    body = _layout_text(shape.layout)
    if not shape.dimensions and not body:
        return text  # XLA prints no `{}` for a scalar's empty layout
    return text + "{" + body + "}"


def _layout_text(layout: Message) -> str:
    """What goes between a shape's braces, after xla/layout.cc `Layout::ToString` for the fields
    tpuscope reads: the minor-to-major order, then tiles `T(8,128)(2,1)`, element size `E(4)` and
    memory space `S(5)`."""
    extras = "".join(
        ("T" if k == 0 else "") + "(" + ",".join(str(d) for d in tile.dimensions) + ")"
        for k, tile in enumerate(layout.tiles)
    )
    if layout.element_size_in_bits:
        extras += f"E({layout.element_size_in_bits})"
    if layout.memory_space:
        extras += f"S({layout.memory_space})"
    return ",".join(str(d) for d in layout.minor_to_major) + (":" + extras if extras else "")


def decode_program_signature(blob: bytes, program_id: int | None = None) -> ProgramSignature | None:
    """The signature in one serialized `xla.HloProto`, or None when the bytes are not one.

    Never raises: a profile with a damaged or foreign blob still loads and diagnoses.
    """
    if not isinstance(blob, (bytes, bytearray, memoryview)) or len(blob) == 0:
        return None
    try:
        proto = parse(bytes(blob), _HLO_PROTO)
        if not proto.has("hlo_module"):
            return None
        module = proto.hlo_module
        if not module.name or not module.has("host_program_shape"):
            return None
        shape = module.host_program_shape
        return ProgramSignature(
            module_name=module.name,
            program_id=program_id,
            module_id=int(module.id),
            parameters=[format_shape(p) for p in shape.parameters],
            parameter_names=list(shape.parameter_names),
            result=format_shape(shape.result) if shape.has("result") else "",
            entry_computation=module.entry_computation_name,
        )
    except (WireError, RecursionError):
        return None
