"""`tpuscope memory PATH`: where the HBM goes, per compiled program and per allocator over time."""

from __future__ import annotations

from tpuscope.analysis.memory.over_time import AllocatorMemory
from tpuscope.analysis.memory.programs import ProgramMemory
from tpuscope.analysis.memory.report import MEMORY_REPORT, MemoryReport
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.payloads import RequestError, memory_json
from tpuscope.commands import COMMANDS, UserFacingError
from tpuscope.commands._console import add_path_argument, load_for_cli, print_json
from tpuscope.model.units import format_bytes, format_duration

# Buffers listed per program in the text output (the JSON has all of them).
TEXT_BUFFERS = 8


def register(subparsers) -> None:
    parser = subparsers.add_parser("memory", help=COMMANDS["memory"])
    add_path_argument(parser)
    parser.add_argument(
        "--program", metavar="NAME|ID", help="only this program: `jit_f(123)`, its module name, or its id"
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(handler=run)


def run(args) -> int:
    analysis = TraceAnalysis(load_for_cli(args))
    try:
        payload = memory_json(analysis, args.program)
    except RequestError as error:
        raise UserFacingError(str(error)) from None
    if args.json:
        print_json(payload)
        return 0
    report = analysis.get(MEMORY_REPORT)
    if args.program is not None:
        chosen = report.program(args.program)  # memory_json checked that it exists
        report = MemoryReport(chosen, report.allocators, report.capacity_bytes, report.capacity_source)
    if not report.has_data:
        print(
            "This profile has no memory data (no buffer assignments in its HLO protos, no allocator events)."
        )
        return 0
    _print_text(report)
    return 0


def _share(part: int, whole: int | None) -> str:
    return f" ({100 * part / whole:.1f}% of {format_bytes(whole)})" if whole else ""


def _print_text(report: MemoryReport) -> None:
    if report.capacity_bytes:
        print(f"Capacity: {format_bytes(report.capacity_bytes)} per device, from {report.capacity_source}")
    for program in report.programs:
        _print_program(program)
    for allocator in report.allocators:
        _print_allocator(allocator)


def _print_program(program: ProgramMemory) -> None:
    peak = program.peak_heap_bytes
    where = f", at {program.peak_instruction}" if program.peak_instruction else ""
    print(f"\n{program.name}  [{program.memory_space_name}]")
    print(
        f"  peak {format_bytes(peak)}{_share(peak, program.capacity_bytes)}, "
        f"unpadded {format_bytes(program.peak_unpadded_heap_bytes)}{where}"
    )
    print(
        f"  parameters {format_bytes(program.parameter_bytes)}, "
        f"outputs {format_bytes(program.output_bytes)}, temporaries {format_bytes(program.temporary_bytes)}, "
        f"total allocation {format_bytes(program.total_allocation_bytes)}"
    )
    for buffer in program.buffers_largest_first()[:TEXT_BUFFERS]:
        padding = ""
        if buffer.unpadded_bytes != buffer.bytes:
            padding = f" (unpadded {format_bytes(buffer.unpadded_bytes)})"
        size = format_bytes(buffer.bytes)
        print(f"    {size:>12}{padding}  {buffer.shape}  {buffer.name}  [{buffer.category}]")
    for note in program.notes:
        print(f"  note: {note}")


def _print_allocator(allocator: AllocatorMemory) -> None:
    step = f", step {allocator.peak_step}" if allocator.peak_step is not None else ""
    lifetime = allocator.peak_bytes_in_use
    print(f"\nallocator {allocator.id}  ({allocator.host}, {allocator.samples} events)")
    print(f"  lifetime peak {format_bytes(lifetime)}{_share(lifetime, allocator.capacity_bytes)}")
    print(
        f"  peak in profile {format_bytes(allocator.peak_in_profile_bytes)} "
        f"at {format_duration(allocator.peak_time_ps)}{step}; "
        f"live allocations {format_bytes(allocator.live_at_peak_bytes)}, "
        f"unattributed {format_bytes(allocator.unattributed_at_peak_bytes)}"
    )
    for live in allocator.live_at_peak[:TEXT_BUFFERS]:
        what = "  ".join(x for x in (live.shape, live.op) if x)
        print(f"    {format_bytes(live.bytes):>12}  {what}")
    for note in allocator.notes:
        print(f"  note: {note}")
