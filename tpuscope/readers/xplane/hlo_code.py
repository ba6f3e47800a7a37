"""Each instruction's code in one serialized XLA `HloProto`: framework op, source, stack and text.

XLA records in every instruction's `OpMetadata` the framework op it came from (`op_name`, e.g.
`jit(f)/jit(main)/add`), its `op_type`, a `source_file`/`source_line` and, in newer XLA, a
`stack_frame_id` into the module's `StackFrameIndexProto` (xla/service/hlo.proto): flat arrays
of file names, function names, file locations and frames whose parent ids chain a frame to its
callers. JAX 0.10 on the CPU writes only the index (no instruction has a `source_file`); XLA:TPU
and XLA:GPU profiles carry both. Each stack is walked as XProf walks it
(xprof/utils/hlo_module_utils.cc `ExtractStackFrames`: from the instruction's frame through its
parents, stopping at 0 or an id out of range; a missing file is "", a missing line or column -1),
except that a chain that comes back to a frame it passed is cut there instead of looping forever.

The text of an instruction is what XProf's "HLO op text" shows (`HloInstruction::ToString` with
operand shapes, without metadata and backend config; xprof/utils/hlo_module_utils.h): `%name =
<shape with layout> opcode(<shape> %operand, ...)` followed by the attributes tpuscope knows how to
print (fusion kind, dimensions, slices, collectives' channel and replica groups, operand precision,
custom calls' target, operand layout constraints, side effect, output-to-operand aliasing, schedule
and API version, called computations, frontend attributes, control predecessors), in XLA's order
(xla/hlo/ir/hlo_instruction.cc, `ExtraAttributesToString`). Attributes it does not decode
(sharding, convolution windows, gather/scatter dimension numbers, literals) are left out.

The proto is parsed once; each instruction is decoded (its stack walked, its text printed) when
first asked for: a large program has tens of thousands of instructions and a profile names a few
hundred of them as ops (50k instructions: 0.09 s to parse and index, 80 us per instruction asked).

Bad input is expected: decoding never raises; what it could not make sense of is listed in the
result's `notes`, and the rest is returned.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from google.protobuf.message import DecodeError

from tpuscope.model.code import UNKNOWN_LINE, InstructionCode, ProgramCode, SourceFrame
from tpuscope.readers.xplane import hlo_pb2
from tpuscope.readers.xplane.hlo_memory import shape_text

# Attributes by opcode, as XLA's instruction classes print them (xla/hlo/ir/hlo_instructions.cc).
_DIMENSIONS_OPCODES = frozenset(
    {"broadcast", "reduce", "transpose", "reverse", "concatenate", "sort", "all-gather",
     "all-gather-start", "all-to-all", "reduce-scatter"}
)  # fmt: skip
_COLLECTIVE_OPCODES = frozenset(
    {"all-reduce", "all-reduce-start", "all-gather", "all-gather-start", "reduce-scatter", "all-to-all",
     "ragged-all-to-all", "collective-broadcast", "collective-permute", "collective-permute-start"}
)  # fmt: skip
_TO_APPLY_OPCODES = frozenset(
    {"reduce", "all-reduce", "all-reduce-start", "reduce-scatter", "map", "reduce-window", "scatter",
     "sort", "call"}
)  # fmt: skip
# XLA prints the API version of a custom call only when it is not the original one
# (xla/service/hlo.proto CustomCallApiVersion: 1 is API_VERSION_ORIGINAL).
_CUSTOM_CALL_API_VERSIONS = {
    2: "API_VERSION_STATUS_RETURNING",
    3: "API_VERSION_STATUS_RETURNING_UNIFIED",
    4: "API_VERSION_TYPED_FFI",
}
# XLA's PrecisionConfig.Precision names as it prints them (xla/xla_data.proto; PrecisionToString).
_PRECISIONS = {0: "default", 1: "high", 2: "highest", 3: "packed_nibble"}
# xla/xla_data.proto PaddingType and CustomCallSchedule, printed by their enum names (0: not printed).
_PADDING_TYPES = {1: "PADDING_VALID", 2: "PADDING_SAME"}
_CUSTOM_CALL_SCHEDULES = {1: "SCHEDULE_LATEST", 2: "SCHEDULE_EARLIEST"}
# XProf cuts op text at this many characters (xprof/utils/hlo_module_utils.h kMaxHlolNameSize).
MAX_TEXT_CHARS = 1_000_000
# XLA marks every 5th operand with its index (HloPrintOptions print_operand_index_annotation_interval).
OPERAND_INDEX_INTERVAL = 5


def decode_program_code(blob: bytes, program_id: int | None = None) -> ProgramCode | None:
    """The code of every instruction in one serialized `xla.HloProto`, or None when it is not one.

    The proto is parsed here; each instruction is decoded when first asked for (`ProgramCode.get`).
    Never raises: damage inside a readable proto gives a partial result with `notes`.
    """
    if not isinstance(blob, (bytes, bytearray, memoryview)) or len(blob) == 0:
        return None
    try:
        module = _ModuleCode(bytes(blob))
    except (DecodeError, ValueError, RecursionError):
        return None
    if not module.name:
        return None
    return ProgramCode(
        module_name=module.name, program_id=program_id, index=module, has_stack_index=module.has_stack_index
    )


class _Stacks:
    """The module's stack frames, each resolved once, and every frame id's chain to the outermost."""

    def __init__(self, index: hlo_pb2.StackFrameIndexProto) -> None:
        self.index = index
        self.frames: dict[int, SourceFrame] = {}
        self.chains: dict[int, tuple[SourceFrame, ...]] = {0: ()}
        self.dangling = 0  # instructions whose frame id is out of range
        self.loops = 0  # chains that came back to a frame they passed

    def frame(self, frame_id: int) -> SourceFrame:
        found = self.frames.get(frame_id)
        if found is not None:
            return found
        index = self.index
        frame = index.stack_frames[frame_id - 1]
        file, line, column, function = "", UNKNOWN_LINE, UNKNOWN_LINE, ""
        if 0 < frame.file_location_id <= len(index.file_locations):
            location = index.file_locations[frame.file_location_id - 1]
            line, column = location.line, location.column
            if 0 < location.file_name_id <= len(index.file_names):
                file = index.file_names[location.file_name_id - 1]
            if 0 < location.function_name_id <= len(index.function_names):
                function = index.function_names[location.function_name_id - 1]
        found = self.frames[frame_id] = SourceFrame(file, line, column, function)
        return found

    def chain(self, frame_id: int) -> tuple[SourceFrame, ...]:
        """The frames from `frame_id` through its parents, innermost first."""
        found = self.chains.get(frame_id)
        if found is not None:
            return found
        count = len(self.index.stack_frames)
        if not 0 < frame_id <= count:
            self.dangling += 1
            return ()
        frames: list[SourceFrame] = []
        seen: set[int] = set()
        current = frame_id
        while 0 < current <= count:
            if current in seen:
                self.loops += 1
                break
            known = self.chains.get(current)
            if known is not None:  # the rest of the chain is one already walked
                frames.extend(known)
                break
            seen.add(current)
            frames.append(self.frame(current))
            current = self.index.stack_frames[current - 1].parent_frame_id
        chain = self.chains[frame_id] = tuple(frames)
        return chain


class _ModuleCode:
    """One program's instructions (`tpuscope.model.code.InstructionIndex`), decoded on first use.

    Holds the serialized proto and, parsed from it, the module; a pickled copy keeps only the bytes
    and parses them again when asked.
    """

    def __init__(self, blob: bytes) -> None:
        self._blob = blob
        self._load()

    def __getstate__(self) -> dict:
        return {"_blob": self._blob}

    def __setstate__(self, state: dict) -> None:
        self._blob = state["_blob"]
        self._load()

    def _load(self) -> None:
        proto = hlo_pb2.HloCodeProto.FromString(self._blob)
        module = proto.hlo_module
        self._module = module
        self.name = module.name if proto.HasField("hlo_module") else ""
        self.has_stack_index = (
            module.HasField("stack_frame_index") and len(module.stack_frame_index.stack_frames) > 0
        )
        self._lock = threading.Lock()
        self._decoded: dict[str, InstructionCode] = {}
        self._where: dict[str, tuple[int, int]] | None = None
        self._ids: dict[int, hlo_pb2.HloInstructionProto] | None = None
        self._unique_ids = True
        self._local_ids: dict[int, dict[int, hlo_pb2.HloInstructionProto]] = {}
        self._computations: dict[int, hlo_pb2.HloComputationProto] = {}
        self._stacks = _Stacks(module.stack_frame_index)
        self._shape_texts: dict[str, str] = {}
        self._missing_calls = 0
        self._missing_operands = 0

    def _index(self) -> dict[str, tuple[int, int]]:
        """name -> (computation, position): one pass over the module, on first use."""
        if self._where is None:
            module = self._module
            self._computations = {c.id: c for c in module.computations}
            self._where = {
                instruction.name: (k, j)
                for k, computation in enumerate(module.computations)
                for j, instruction in enumerate(computation.instructions)
            }
        return self._where

    def _operand(self, computation_index: int, instruction_id: int) -> hlo_pb2.HloInstructionProto | None:
        """The instruction an operand or control predecessor id names.

        Instruction ids are unique in a module in current XLA; older protos number each computation
        from 0, so there ids are looked up in their own computation first.
        """
        if self._ids is None:
            self._ids = {i.id: i for c in self._module.computations for i in c.instructions}
            self._unique_ids = len(self._ids) == len(self._index())
        if self._unique_ids:
            return self._ids.get(instruction_id)
        local = self._local_ids.get(computation_index)
        if local is None:
            instructions = self._module.computations[computation_index].instructions
            local = self._local_ids[computation_index] = {i.id: i for i in instructions}
        return local.get(instruction_id) or self._ids.get(instruction_id)

    def names(self) -> list[str]:
        return list(self._index())

    def get(self, name: str) -> InstructionCode | None:
        found = self._decoded.get(name)
        if found is not None:
            return found
        with self._lock:  # the analysis may ask from several worker threads
            found = self._decoded.get(name)
            if found is None:
                where = self._index().get(name)
                if where is None:
                    return None
                try:
                    found = self._decode(*where)
                except RecursionError:
                    return None
                self._decoded[name] = found
        return found

    def notes(self) -> list[str]:
        for name in self.names():
            self.get(name)
        notes = []
        stacks = self._stacks
        if stacks.dangling:
            where = (
                "the index does not have them"
                if self.has_stack_index
                else "the module has no stack-frame index"
            )
            notes.append(f"{stacks.dangling} stack frame ids point at frames that do not exist ({where})")
        if stacks.loops:
            notes.append(f"{stacks.loops} stacks loop back to a frame they passed; each is cut there")
        if self._missing_calls:
            notes.append(f"{self._missing_calls} calls name a computation the module does not have")
        if self._missing_operands:
            notes.append(f"{self._missing_operands} operands name an instruction the module does not have")
        return notes

    def _shape_of(self, instruction: hlo_pb2.HloInstructionProto) -> str:
        text = self._shape_texts.get(instruction.name)  # names are unique in a module
        if text is None:
            text = self._shape_texts[instruction.name] = _shape_text(instruction.shape)
        return text

    def _decode(self, computation_index: int, position: int) -> InstructionCode:
        computation = self._module.computations[computation_index]
        instruction = computation.instructions[position]
        operands = []
        for operand_id in instruction.operand_ids:
            operand = self._operand(computation_index, operand_id)
            if operand is None:
                self._missing_operands += 1
            operands.append(operand)
        called: list[str | None] = []
        for computation_id in instruction.called_computation_ids:
            callee = self._computations.get(computation_id)
            if callee is None:
                self._missing_calls += 1
            called.append(callee.name if callee is not None else None)
        fused: tuple[str, ...] = ()
        if instruction.opcode == "fusion" and called and called[0] is not None:
            fused = tuple(
                i.name for i in self._computations[instruction.called_computation_ids[0]].instructions
            )
        predecessors = [self._operand(computation_index, i) for i in instruction.control_predecessor_ids]
        metadata = instruction.metadata
        text = instruction_text(instruction, operands, called, predecessors, self._shape_of)
        return InstructionCode(
            name=instruction.name,
            opcode=instruction.opcode,
            text=text[:MAX_TEXT_CHARS],
            framework_op=metadata.op_name,
            op_type=metadata.op_type,
            source_file=metadata.source_file,
            source_line=metadata.source_line,
            stack=self._stacks.chain(metadata.stack_frame_id) if metadata.stack_frame_id else (),
            computation=computation.name,
            fused=fused,
        )


def _ints(values: Iterable[int]) -> str:
    return "{" + ",".join(str(int(v)) for v in values) + "}"


def _shape_text(shape: hlo_pb2.ShapeProto) -> str:
    """A shape with its layout, as the memory decoder writes it (`hlo_memory.shape_text`, which reads
    shapes without protobuf): the same words for a shape in the code view and the memory view."""
    return shape_text(shape.SerializeToString())


def _replica_groups(instruction: hlo_pb2.HloInstructionProto) -> str:
    """`{{0,1},{2,3}}`, or the iota form `[4,2]<=[2,4]T(1,0)` (xla/hlo/ir/collective_device_list.cc)."""
    devices = instruction.collective_device_list
    iota = devices.iota_replica_group_list
    if devices.HasField("iota_replica_group_list") and iota.num_replica_groups:
        text = f"[{iota.num_replica_groups},{iota.num_devices_per_group}]<="
        text += "[" + ",".join(str(d) for d in iota.iota_reshape_dims) + "]"
        perm = list(iota.iota_transpose_perm)
        if perm and perm != list(range(len(perm))):
            text += "T(" + ",".join(str(p) for p in perm) + ")"
        return text
    groups = devices.replica_groups if len(devices.replica_groups) else instruction.replica_groups
    return "{" + ",".join(_ints(g.replica_ids) for g in groups) + "}"


def _attributes(instruction: hlo_pb2.HloInstructionProto) -> list[str]:
    """The opcode's own attributes (XLA's `ExtraAttributesToStringImpl`), in XLA's order."""
    opcode = instruction.opcode
    found: list[str] = []
    if opcode == "fusion" and instruction.fusion_kind:
        found.append(f"kind={instruction.fusion_kind}")
    if opcode in _COLLECTIVE_OPCODES:
        if instruction.channel_id > 0:
            found.append(f"channel_id={instruction.channel_id}")
        found.append(f"replica_groups={_replica_groups(instruction)}")
    if opcode in _DIMENSIONS_OPCODES:
        found.append(f"dimensions={_ints(instruction.dimensions)}")
    if opcode in _COLLECTIVE_OPCODES and instruction.use_global_device_ids:
        found.append("use_global_device_ids=true")
    if opcode == "iota" and len(instruction.dimensions):  # HloIotaInstruction keeps it in `dimensions`
        found.append(f"iota_dimension={instruction.dimensions[0]}")
    if opcode == "sort" and instruction.is_stable:
        found.append("is_stable=true")
    if opcode == "get-tuple-element":
        found.append(f"index={instruction.tuple_index}")
    if opcode == "slice":
        parts = []
        for s in instruction.slice_dimensions:
            parts.append(f"[{s.start}:{s.limit}" + (f":{s.stride}" if s.stride != 1 else "") + "]")
        found.append("slice={" + ", ".join(parts) + "}")
    if opcode == "dynamic-slice":
        found.append(f"dynamic_slice_sizes={_ints(instruction.dynamic_slice_sizes)}")
    if opcode == "compare" and instruction.comparison_direction:
        found.append(f"direction={instruction.comparison_direction}")
    if opcode == "dot" and instruction.HasField("dot_dimension_numbers"):
        numbers = instruction.dot_dimension_numbers
        for label, values in (
            ("lhs_batch_dims", numbers.lhs_batch_dimensions),
            ("lhs_contracting_dims", numbers.lhs_contracting_dimensions),
            ("rhs_batch_dims", numbers.rhs_batch_dimensions),
            ("rhs_contracting_dims", numbers.rhs_contracting_dimensions),
        ):
            if len(values) or label.endswith("contracting_dims"):
                found.append(f"{label}={_ints(values)}")
    if opcode in ("dot", "convolution", "custom-call"):
        found.extend(_precision(instruction))
    if opcode == "custom-call":
        found.extend(_custom_call(instruction))
    if opcode == "copy-start" and instruction.HasField("cross_program_prefetch_index"):
        found.append(f"cross_program_prefetch_index={instruction.cross_program_prefetch_index}")
    return found


def _precision(instruction: hlo_pb2.HloInstructionProto) -> list[str]:
    """`operand_precision={high,default}` when any operand's precision is not the default
    (xla/hlo/ir/hlo_instructions.cc PrintPrecisionConfig)."""
    precisions = list(instruction.precision_config.operand_precision)
    if not any(precisions):
        return []
    return ["operand_precision={" + ",".join(_PRECISIONS.get(p, str(p)) for p in precisions) + "}"]


def _custom_call(instruction: hlo_pb2.HloInstructionProto) -> list[str]:
    """A custom call's attributes after its precision, in XLA's order
    (xla/hlo/ir/hlo_instructions.cc, HloCustomCallInstruction::PrintExtraAttributesImpl)."""
    found = []
    padding = _PADDING_TYPES.get(instruction.padding_type)
    if padding:
        found.append(f"padding_type={padding}")
    found.append(f'custom_call_target="{instruction.custom_call_target}"')
    if instruction.constrain_layout:
        shapes = ", ".join(_shape_text(s) for s in instruction.operand_shapes_with_layout)
        found.append("operand_layout_constraints={" + shapes + "}")
    if instruction.custom_call_has_side_effect:
        found.append("custom_call_has_side_effect=true")
    if len(instruction.output_operand_aliasing):
        pairs = ", ".join(
            f"{_ints(a.output_shape_index)}: ({a.operand_index}, {_ints(a.operand_shape_index)})"
            for a in instruction.output_operand_aliasing
        )
        found.append("output_to_operand_aliasing={" + pairs + "}")
    schedule = _CUSTOM_CALL_SCHEDULES.get(instruction.custom_call_schedule)
    if schedule:
        found.append(f"schedule={schedule}")
    version = _CUSTOM_CALL_API_VERSIONS.get(instruction.custom_call_api_version)
    if version:
        found.append(f"api_version={version}")
    return found


def _calls(opcode: str, called: list[str | None]) -> list[str]:
    """The called computations, named as XLA names them by opcode."""
    names = ["%" + (name or "<missing>") for name in called]
    if not names:
        return []
    if opcode == "while" and len(names) == 2:
        return [f"condition={names[0]}", f"body={names[1]}"]
    if opcode == "conditional":
        return ["branch_computations={" + ", ".join(names) + "}"]
    if opcode == "select-and-scatter" and len(names) == 2:
        return [f"select={names[0]}", f"scatter={names[1]}"]
    if opcode == "custom-call":
        return ["called_computations={" + ", ".join(names) + "}"]
    label = "to_apply" if opcode in _TO_APPLY_OPCODES else "calls"
    return [f"{label}={names[0]}" if len(names) == 1 else f"{label}={{{', '.join(names)}}}"]


def instruction_text(
    instruction: hlo_pb2.HloInstructionProto,
    operands: list[hlo_pb2.HloInstructionProto | None],
    called: list[str | None],
    predecessors: list[hlo_pb2.HloInstructionProto | None],
    shape_of,
) -> str:
    """One instruction as XLA prints it for XProf (module docstring)."""
    opcode = instruction.opcode
    parts = []
    for k, operand in enumerate(operands):
        mark = f"/*index={k}*/" if k and k % OPERAND_INDEX_INTERVAL == 0 else ""
        parts.append(mark + (f"{shape_of(operand)} %{operand.name}" if operand is not None else "%<missing>"))
    if opcode == "parameter":
        inside = str(instruction.parameter_number)
    elif opcode == "constant":
        inside = "{...}" if instruction.shape.dimensions else "..."
    else:
        inside = ", ".join(parts)
    text = f"%{instruction.name} = {shape_of(instruction)} {opcode}({inside})"
    extras = _attributes(instruction) + _calls(opcode, called)
    attributes = instruction.frontend_attributes.map
    if len(attributes):
        extras.append(
            "frontend_attributes={" + ",".join(f'{k}="{attributes[k]}"' for k in sorted(attributes)) + "}"
        )
    if predecessors:
        names = ", ".join("%" + (p.name if p is not None else "<missing>") for p in predecessors)
        extras.append("control-predecessors={" + names + "}")
    return text + "".join(", " + e for e in extras)
