from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PrimitiveType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRIMITIVE_TYPE_INVALID: _ClassVar[PrimitiveType]
    PRED: _ClassVar[PrimitiveType]
    S8: _ClassVar[PrimitiveType]
    S16: _ClassVar[PrimitiveType]
    S32: _ClassVar[PrimitiveType]
    S64: _ClassVar[PrimitiveType]
    U8: _ClassVar[PrimitiveType]
    U16: _ClassVar[PrimitiveType]
    U32: _ClassVar[PrimitiveType]
    U64: _ClassVar[PrimitiveType]
    F16: _ClassVar[PrimitiveType]
    F32: _ClassVar[PrimitiveType]
    F64: _ClassVar[PrimitiveType]
    TUPLE: _ClassVar[PrimitiveType]
    OPAQUE_TYPE: _ClassVar[PrimitiveType]
    C64: _ClassVar[PrimitiveType]
    BF16: _ClassVar[PrimitiveType]
    TOKEN: _ClassVar[PrimitiveType]
    C128: _ClassVar[PrimitiveType]
    F8E5M2: _ClassVar[PrimitiveType]
    F8E4M3FN: _ClassVar[PrimitiveType]
    S4: _ClassVar[PrimitiveType]
    U4: _ClassVar[PrimitiveType]
    F8E4M3B11FNUZ: _ClassVar[PrimitiveType]
    F8E5M2FNUZ: _ClassVar[PrimitiveType]
    F8E4M3FNUZ: _ClassVar[PrimitiveType]
    S2: _ClassVar[PrimitiveType]
    U2: _ClassVar[PrimitiveType]
    F8E4M3: _ClassVar[PrimitiveType]
    F8E3M4: _ClassVar[PrimitiveType]
    S1: _ClassVar[PrimitiveType]
    U1: _ClassVar[PrimitiveType]
    F4E2M1FN: _ClassVar[PrimitiveType]
    F8E8M0FNU: _ClassVar[PrimitiveType]
    BUFFER: _ClassVar[PrimitiveType]
PRIMITIVE_TYPE_INVALID: PrimitiveType
PRED: PrimitiveType
S8: PrimitiveType
S16: PrimitiveType
S32: PrimitiveType
S64: PrimitiveType
U8: PrimitiveType
U16: PrimitiveType
U32: PrimitiveType
U64: PrimitiveType
F16: PrimitiveType
F32: PrimitiveType
F64: PrimitiveType
TUPLE: PrimitiveType
OPAQUE_TYPE: PrimitiveType
C64: PrimitiveType
BF16: PrimitiveType
TOKEN: PrimitiveType
C128: PrimitiveType
F8E5M2: PrimitiveType
F8E4M3FN: PrimitiveType
S4: PrimitiveType
U4: PrimitiveType
F8E4M3B11FNUZ: PrimitiveType
F8E5M2FNUZ: PrimitiveType
F8E4M3FNUZ: PrimitiveType
S2: PrimitiveType
U2: PrimitiveType
F8E4M3: PrimitiveType
F8E3M4: PrimitiveType
S1: PrimitiveType
U1: PrimitiveType
F4E2M1FN: PrimitiveType
F8E8M0FNU: PrimitiveType
BUFFER: PrimitiveType

class TileProto(_message.Message):
    __slots__ = ("dimensions",)
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, dimensions: _Optional[_Iterable[int]] = ...) -> None: ...

class LayoutProto(_message.Message):
    __slots__ = ("minor_to_major", "tiles", "element_size_in_bits", "memory_space")
    MINOR_TO_MAJOR_FIELD_NUMBER: _ClassVar[int]
    TILES_FIELD_NUMBER: _ClassVar[int]
    ELEMENT_SIZE_IN_BITS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SPACE_FIELD_NUMBER: _ClassVar[int]
    minor_to_major: _containers.RepeatedScalarFieldContainer[int]
    tiles: _containers.RepeatedCompositeFieldContainer[TileProto]
    element_size_in_bits: int
    memory_space: int
    def __init__(self, minor_to_major: _Optional[_Iterable[int]] = ..., tiles: _Optional[_Iterable[_Union[TileProto, _Mapping]]] = ..., element_size_in_bits: _Optional[int] = ..., memory_space: _Optional[int] = ...) -> None: ...

class ShapeProto(_message.Message):
    __slots__ = ("element_type", "dimensions", "tuple_shapes", "layout", "is_dynamic_dimension")
    ELEMENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    TUPLE_SHAPES_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    IS_DYNAMIC_DIMENSION_FIELD_NUMBER: _ClassVar[int]
    element_type: PrimitiveType
    dimensions: _containers.RepeatedScalarFieldContainer[int]
    tuple_shapes: _containers.RepeatedCompositeFieldContainer[ShapeProto]
    layout: LayoutProto
    is_dynamic_dimension: _containers.RepeatedScalarFieldContainer[bool]
    def __init__(self, element_type: _Optional[_Union[PrimitiveType, str]] = ..., dimensions: _Optional[_Iterable[int]] = ..., tuple_shapes: _Optional[_Iterable[_Union[ShapeProto, _Mapping]]] = ..., layout: _Optional[_Union[LayoutProto, _Mapping]] = ..., is_dynamic_dimension: _Optional[_Iterable[bool]] = ...) -> None: ...

class ProgramShapeProto(_message.Message):
    __slots__ = ("parameters", "result", "parameter_names")
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_NAMES_FIELD_NUMBER: _ClassVar[int]
    parameters: _containers.RepeatedCompositeFieldContainer[ShapeProto]
    result: ShapeProto
    parameter_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, parameters: _Optional[_Iterable[_Union[ShapeProto, _Mapping]]] = ..., result: _Optional[_Union[ShapeProto, _Mapping]] = ..., parameter_names: _Optional[_Iterable[str]] = ...) -> None: ...

class HloModuleProto(_message.Message):
    __slots__ = ("name", "entry_computation_name", "host_program_shape", "id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COMPUTATION_NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_PROGRAM_SHAPE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    entry_computation_name: str
    host_program_shape: ProgramShapeProto
    id: int
    def __init__(self, name: _Optional[str] = ..., entry_computation_name: _Optional[str] = ..., host_program_shape: _Optional[_Union[ProgramShapeProto, _Mapping]] = ..., id: _Optional[int] = ...) -> None: ...

class HloProto(_message.Message):
    __slots__ = ("hlo_module",)
    HLO_MODULE_FIELD_NUMBER: _ClassVar[int]
    hlo_module: HloModuleProto
    def __init__(self, hlo_module: _Optional[_Union[HloModuleProto, _Mapping]] = ...) -> None: ...

class OpMetadata(_message.Message):
    __slots__ = ("op_type", "op_name", "source_file", "source_line")
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    OP_NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FILE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_LINE_FIELD_NUMBER: _ClassVar[int]
    op_type: str
    op_name: str
    source_file: str
    source_line: int
    def __init__(self, op_type: _Optional[str] = ..., op_name: _Optional[str] = ..., source_file: _Optional[str] = ..., source_line: _Optional[int] = ...) -> None: ...

class HloInstructionProto(_message.Message):
    __slots__ = ("name", "opcode", "shape", "metadata", "id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPCODE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    opcode: str
    shape: ShapeProto
    metadata: OpMetadata
    id: int
    def __init__(self, name: _Optional[str] = ..., opcode: _Optional[str] = ..., shape: _Optional[_Union[ShapeProto, _Mapping]] = ..., metadata: _Optional[_Union[OpMetadata, _Mapping]] = ..., id: _Optional[int] = ...) -> None: ...

class HloComputationProto(_message.Message):
    __slots__ = ("name", "instructions", "id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    instructions: _containers.RepeatedCompositeFieldContainer[HloInstructionProto]
    id: int
    def __init__(self, name: _Optional[str] = ..., instructions: _Optional[_Iterable[_Union[HloInstructionProto, _Mapping]]] = ..., id: _Optional[int] = ...) -> None: ...

class HloModuleMemoryProto(_message.Message):
    __slots__ = ("name", "entry_computation_name", "computations", "id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENTRY_COMPUTATION_NAME_FIELD_NUMBER: _ClassVar[int]
    COMPUTATIONS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    entry_computation_name: str
    computations: _containers.RepeatedCompositeFieldContainer[HloComputationProto]
    id: int
    def __init__(self, name: _Optional[str] = ..., entry_computation_name: _Optional[str] = ..., computations: _Optional[_Iterable[_Union[HloComputationProto, _Mapping]]] = ..., id: _Optional[int] = ...) -> None: ...

class LogicalBufferProto(_message.Message):
    __slots__ = ("id", "size", "defined_at", "color")
    class Location(_message.Message):
        __slots__ = ("instruction_name", "shape_index", "instruction_id")
        INSTRUCTION_NAME_FIELD_NUMBER: _ClassVar[int]
        SHAPE_INDEX_FIELD_NUMBER: _ClassVar[int]
        INSTRUCTION_ID_FIELD_NUMBER: _ClassVar[int]
        instruction_name: str
        shape_index: _containers.RepeatedScalarFieldContainer[int]
        instruction_id: int
        def __init__(self, instruction_name: _Optional[str] = ..., shape_index: _Optional[_Iterable[int]] = ..., instruction_id: _Optional[int] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    DEFINED_AT_FIELD_NUMBER: _ClassVar[int]
    COLOR_FIELD_NUMBER: _ClassVar[int]
    id: int
    size: int
    defined_at: LogicalBufferProto.Location
    color: int
    def __init__(self, id: _Optional[int] = ..., size: _Optional[int] = ..., defined_at: _Optional[_Union[LogicalBufferProto.Location, _Mapping]] = ..., color: _Optional[int] = ...) -> None: ...

class BufferAllocationProto(_message.Message):
    __slots__ = ("index", "size", "is_thread_local", "is_entry_computation_parameter", "parameter_number", "maybe_live_out", "color", "assigned", "is_tuple", "is_constant")
    class Assigned(_message.Message):
        __slots__ = ("logical_buffer_id", "offset", "size")
        LOGICAL_BUFFER_ID_FIELD_NUMBER: _ClassVar[int]
        OFFSET_FIELD_NUMBER: _ClassVar[int]
        SIZE_FIELD_NUMBER: _ClassVar[int]
        logical_buffer_id: int
        offset: int
        size: int
        def __init__(self, logical_buffer_id: _Optional[int] = ..., offset: _Optional[int] = ..., size: _Optional[int] = ...) -> None: ...
    INDEX_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    IS_THREAD_LOCAL_FIELD_NUMBER: _ClassVar[int]
    IS_ENTRY_COMPUTATION_PARAMETER_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_NUMBER_FIELD_NUMBER: _ClassVar[int]
    MAYBE_LIVE_OUT_FIELD_NUMBER: _ClassVar[int]
    COLOR_FIELD_NUMBER: _ClassVar[int]
    ASSIGNED_FIELD_NUMBER: _ClassVar[int]
    IS_TUPLE_FIELD_NUMBER: _ClassVar[int]
    IS_CONSTANT_FIELD_NUMBER: _ClassVar[int]
    index: int
    size: int
    is_thread_local: bool
    is_entry_computation_parameter: bool
    parameter_number: int
    maybe_live_out: bool
    color: int
    assigned: _containers.RepeatedCompositeFieldContainer[BufferAllocationProto.Assigned]
    is_tuple: bool
    is_constant: bool
    def __init__(self, index: _Optional[int] = ..., size: _Optional[int] = ..., is_thread_local: _Optional[bool] = ..., is_entry_computation_parameter: _Optional[bool] = ..., parameter_number: _Optional[int] = ..., maybe_live_out: _Optional[bool] = ..., color: _Optional[int] = ..., assigned: _Optional[_Iterable[_Union[BufferAllocationProto.Assigned, _Mapping]]] = ..., is_tuple: _Optional[bool] = ..., is_constant: _Optional[bool] = ...) -> None: ...

class HeapSimulatorTrace(_message.Message):
    __slots__ = ("events", "whole_module_simulation", "buffer_allocation_index")
    class Event(_message.Message):
        __slots__ = ("kind", "buffer_id", "computation_name", "instruction_name", "share_with_canonical_id")
        class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            ALLOC: _ClassVar[HeapSimulatorTrace.Event.Kind]
            FREE: _ClassVar[HeapSimulatorTrace.Event.Kind]
            SHARE_WITH: _ClassVar[HeapSimulatorTrace.Event.Kind]
        ALLOC: HeapSimulatorTrace.Event.Kind
        FREE: HeapSimulatorTrace.Event.Kind
        SHARE_WITH: HeapSimulatorTrace.Event.Kind
        KIND_FIELD_NUMBER: _ClassVar[int]
        BUFFER_ID_FIELD_NUMBER: _ClassVar[int]
        COMPUTATION_NAME_FIELD_NUMBER: _ClassVar[int]
        INSTRUCTION_NAME_FIELD_NUMBER: _ClassVar[int]
        SHARE_WITH_CANONICAL_ID_FIELD_NUMBER: _ClassVar[int]
        kind: HeapSimulatorTrace.Event.Kind
        buffer_id: int
        computation_name: str
        instruction_name: str
        share_with_canonical_id: int
        def __init__(self, kind: _Optional[_Union[HeapSimulatorTrace.Event.Kind, str]] = ..., buffer_id: _Optional[int] = ..., computation_name: _Optional[str] = ..., instruction_name: _Optional[str] = ..., share_with_canonical_id: _Optional[int] = ...) -> None: ...
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    WHOLE_MODULE_SIMULATION_FIELD_NUMBER: _ClassVar[int]
    BUFFER_ALLOCATION_INDEX_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[HeapSimulatorTrace.Event]
    whole_module_simulation: bool
    buffer_allocation_index: int
    def __init__(self, events: _Optional[_Iterable[_Union[HeapSimulatorTrace.Event, _Mapping]]] = ..., whole_module_simulation: _Optional[bool] = ..., buffer_allocation_index: _Optional[int] = ...) -> None: ...

class BufferAssignmentProto(_message.Message):
    __slots__ = ("logical_buffers", "buffer_allocations", "heap_simulator_traces")
    LOGICAL_BUFFERS_FIELD_NUMBER: _ClassVar[int]
    BUFFER_ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    HEAP_SIMULATOR_TRACES_FIELD_NUMBER: _ClassVar[int]
    logical_buffers: _containers.RepeatedCompositeFieldContainer[LogicalBufferProto]
    buffer_allocations: _containers.RepeatedCompositeFieldContainer[BufferAllocationProto]
    heap_simulator_traces: _containers.RepeatedCompositeFieldContainer[HeapSimulatorTrace]
    def __init__(self, logical_buffers: _Optional[_Iterable[_Union[LogicalBufferProto, _Mapping]]] = ..., buffer_allocations: _Optional[_Iterable[_Union[BufferAllocationProto, _Mapping]]] = ..., heap_simulator_traces: _Optional[_Iterable[_Union[HeapSimulatorTrace, _Mapping]]] = ...) -> None: ...

class HloMemoryProto(_message.Message):
    __slots__ = ("hlo_module", "buffer_assignment")
    HLO_MODULE_FIELD_NUMBER: _ClassVar[int]
    BUFFER_ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    hlo_module: HloModuleMemoryProto
    buffer_assignment: BufferAssignmentProto
    def __init__(self, hlo_module: _Optional[_Union[HloModuleMemoryProto, _Mapping]] = ..., buffer_assignment: _Optional[_Union[BufferAssignmentProto, _Mapping]] = ...) -> None: ...
