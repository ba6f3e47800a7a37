"""Program signatures from the serialized XLA `HloProto`s that profiles keep in `/host:metadata`.

JAX, PyTorch/XLA and TensorFlow/XLA profiles store one HloProto per compiled module as the
bytes stat `Hlo Proto` of an event metadata named `<module>(<program_id>)`. Of that proto
tpuscope needs only the entry computation's signature: when the same function is compiled
several times, the parameter shapes are what tell the user *why* (a batch that changes
size, a dtype that flips). Only the few fields in hlo.proto are decoded; protobuf skips the
rest (computations, schedule, buffer assignment) without building objects for it.

The result is the model's `ProgramSignature`, so nothing above this layer sees protobuf; the
trace's dialect hands this decoder to the model (`Dialect.decode_program_signature`).
"""

from __future__ import annotations

from google.protobuf.message import DecodeError

from tpuscope.model.programs import ProgramSignature
from tpuscope.readers.xplane import hlo_pb2

# Element type names as XLA prints them in HLO text (`f32[8,128]`, `bf16[]`, `pred[]`).
_PRIMITIVE_TYPES = hlo_pb2.DESCRIPTOR.enum_types_by_name["PrimitiveType"]
_TYPE_NAMES = {value.number: value.name.lower() for value in _PRIMITIVE_TYPES.values}
_TYPE_NAMES.update({0: "invalid", 14: "opaque", 13: "tuple", 17: "token"})
_TUPLE, _TOKEN, _OPAQUE = 13, 17, 14
# Nested tuples deeper than this are printed as `(...)`: real signatures nest one or two levels;
# a corrupt blob can claim far more.
MAX_TUPLE_DEPTH = 8


def type_name(kind: int) -> str:
    """An element type as XLA prints it (`f32`, `bf16`, `pred`), `type<N>` for numbers we do not know."""
    return _TYPE_NAMES.get(kind, f"type{kind}")


def format_shape(shape: hlo_pb2.ShapeProto, depth: int = 0) -> str:
    """One shape in XLA's own notation: `f32[64,256]`, `s32[]`, `(f32[2], u32[])`, `bf16[<=8,4]`."""
    kind = shape.element_type
    if kind == _TUPLE:
        if depth >= MAX_TUPLE_DEPTH:
            return "(...)"
        return "(" + ", ".join(format_shape(s, depth + 1) for s in shape.tuple_shapes) + ")"
    name = type_name(kind)
    if kind in (_TOKEN, _OPAQUE):
        return f"{name}[]"
    dynamic = list(shape.is_dynamic_dimension)
    dims = [f"<={d}" if k < len(dynamic) and dynamic[k] else str(d) for k, d in enumerate(shape.dimensions)]
    return f"{name}[{','.join(dims)}]"


def decode_program_signature(blob: bytes, program_id: int | None = None) -> ProgramSignature | None:
    """The signature in one serialized `xla.HloProto`, or None when the bytes are not one.

    Never raises: a profile with a damaged or foreign blob still loads and diagnoses.
    """
    if not isinstance(blob, (bytes, bytearray, memoryview)) or len(blob) == 0:
        return None
    try:
        proto = hlo_pb2.HloProto.FromString(bytes(blob))
    except (DecodeError, ValueError, RecursionError):
        return None
    if not proto.HasField("hlo_module"):
        return None
    module = proto.hlo_module
    if not module.name or not module.HasField("host_program_shape"):
        return None
    shape = module.host_program_shape
    try:
        return ProgramSignature(
            module_name=module.name,
            program_id=program_id,
            module_id=int(module.id),
            parameters=[format_shape(p) for p in shape.parameters],
            parameter_names=list(shape.parameter_names),
            result=format_shape(shape.result) if shape.HasField("result") else "",
            entry_computation=module.entry_computation_name,
        )
    except RecursionError:
        return None
