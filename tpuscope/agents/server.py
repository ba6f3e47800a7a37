"""`tpuscope mcp`: a Model Context Protocol server over stdio whose tools answer what the commands'
`--json` answers, from the same functions (`tpuscope.app.payloads`, the analyses' `to_json`).

Built on the official Python SDK's `MCPServer` (PyPI `mcp` 2.x, https://github.com/modelcontextprotocol/
python-sdk): each tool's input schema comes from its signature, with a description per argument a
model can read, and its result is structured content (a JSON object) with the same JSON as text.

What an agent can rely on:
- every result is the command's JSON plus `bounds`: the byte budget and what was cut to fit it
  (each cut list's or string's path, total and how many were returned; `tpuscope.agents.bounds`);
  `ops` and `sql` also page (`offset`, `top`/`max_rows`) and say their totals;
- a bad path, a profile that fails to load, a bad query or a request the profile cannot answer is an
  error result of one sentence (never a traceback; the server keeps running);
- each profile is opened once and kept (`ProfileCache`), so a second tool on it costs its own
  analysis only; the trace cache on disk makes a re-open after a restart fast too;
- `sql` is the `sql` command's locked DuckDB (read-only statements, no file or network access, no
  extension; `tpuscope.query.engine`), with a time limit and a row cap.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from tpuscope.agents.bounds import DEFAULT_MAX_BYTES, MAX_BYTES_CEILING, bound, to_plain_json
from tpuscope.analysis.ops import GROUPINGS
from tpuscope.analysis.overview import TOP_OPS
from tpuscope.api import Profile
from tpuscope.app.payloads import RequestError
from tpuscope.errors import LoadCancelled, ProfileError

SERVER_NAME = "tpuscope"
INSTRUCTIONS = (
    "tpuscope reads ML accelerator profiles (XPlane .xplane.pb from JAX/TensorFlow/PyTorch-XLA, PyTorch "
    "profiler Kineto JSON, run folders and logdirs). Start with `overview` on a path, then `diagnose` for "
    "findings with evidence and advice (its `checked` list says what was ruled out), `ops` for where "
    "device time goes, `op_details` for an op's source line, stack and HLO, `memory` for HBM at its peak, "
    "`compare`/`history` across runs, and `sql` for anything else (`sql_tables` lists the tables). "
    "Times in *_ps are picoseconds, *_us microseconds."
)
# Profiles kept open at once, least recently used dropped first (our heuristic: a comparison needs
# two, a history's neighbours a few more; each holds its trace and analyses, ~7x its file).
MAX_OPEN_PROFILES = 4
# Rows the `ops` tool returns unless asked (our heuristic: the ops past the top 20 rarely hold 5% of
# device time together) and the `sql` tool's row cap unless asked (a page a model can read).
DEFAULT_TOP_ROWS = 20
DEFAULT_SQL_ROWS = 200
MAX_SQL_ROWS = 10_000
# The `sql` tool's time limit unless asked (our heuristic: an agent waits seconds, not the CLI's minutes).
DEFAULT_SQL_TIMEOUT_S = 60.0

Path_ = Annotated[
    str,
    Field(
        description="A profile: an .xplane.pb(.gz) file, a PyTorch profiler trace (*.pt.trace.json(.gz)), a "
        "Chrome trace JSON, a run folder (<logdir>/plugins/profile/<run>/), a logdir (its newest run) or a "
        "gs:// URL. Absolute paths are safest: the server's working folder is the client's choice."
    ),
]
Run = Annotated[
    str | None, Field(description="With a logdir: the run (folder name) to open instead of the newest.")
]
MaxBytes = Annotated[
    int,
    Field(
        ge=1000,
        le=MAX_BYTES_CEILING,
        description="Byte budget of the result's JSON; longer lists and strings are cut to fit and "
        "`bounds.cut` says what was cut and the totals.",
    ),
]
Device = Annotated[
    str,
    Field(
        description="'all' (default), a device number N (position in the device list), or a kind: "
        "TPU, GPU, CPU."
    ),
]


class ProfileCache:
    """Profiles opened by this server, by (path, run), the most recently used kept (MAX_OPEN_PROFILES).

    A kept profile is answered from memory while its files are as they were when it was opened (each
    file's size and modification time, the files the path resolves to now: a logdir's newest run); a
    profile recorded again at the same path, or a new run in a logdir, is opened again. A path that no
    longer resolves (the file removed) keeps the profile in memory; a URL is kept as opened."""

    def __init__(self, capacity: int = MAX_OPEN_PROFILES, opener: Callable[..., Profile] | None = None):
        from tpuscope.api import open as open_profile

        self.capacity = capacity
        self._open = opener or open_profile
        self._profiles: OrderedDict[tuple[str, str | None], tuple[Profile, Any]] = OrderedDict()
        self.opened = 0  # loads made (not answered from memory): what the tests check

    def get(self, path: str, run: str | None = None) -> Profile:
        key = (_key_path(path), run)
        stamp = _files_stamp(path, run)
        found = self._profiles.get(key)
        if found is not None and (stamp is None or stamp == found[1]):
            self._profiles.move_to_end(key)
            return found[0]
        profile = self._open(path, run=run)
        self.opened += 1
        self._profiles[key] = (profile, stamp)
        self._profiles.move_to_end(key)
        while len(self._profiles) > self.capacity:
            self._profiles.popitem(last=False)
        return profile


def _files_stamp(path: str, run: str | None) -> Any:
    """The files `path` opens now, each with its size and modification time; None when it does not
    resolve (gone) or is a URL (a bucket is listed only when opened)."""
    from tpuscope.readers.files import resolve_profile_files
    from tpuscope.urls import is_url

    if is_url(path):
        return None
    try:
        files = resolve_profile_files(path, run)
        return tuple((str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    except (ProfileError, OSError):
        return None


def _key_path(path: str) -> str:
    """One key per file however it is written (relative, with `..`); URLs as written."""
    from tpuscope.urls import is_url

    return path if is_url(path) else str(Path(path).expanduser().absolute().resolve())


def build_server(cache: ProfileCache | None = None) -> Any:
    """The MCP server with every tool registered (not yet running)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    from tpuscope.app import payloads

    profiles = cache or ProfileCache()
    lock = threading.Lock()  # the SDK runs sync tools in worker threads; the analyses are made one at a time
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version=_version())
    read_only = ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )

    def answer(compute: Callable[[], Any], max_bytes: int) -> dict[str, Any]:
        """The payload within its budget, with `bounds`; any failure as one sentence (ToolError)."""
        try:
            with lock:
                payload = to_plain_json(compute())
            kept, cuts = bound(payload, max_bytes)
        except (ProfileError, RequestError, ValueError) as error:
            raise ToolError(_sentence(error)) from None
        except LoadCancelled:
            raise ToolError("The load was cancelled.") from None
        except Exception as error:  # a failing analysis: one sentence, the server stays up
            raise ToolError(_sentence(error, f"tpuscope failed ({type(error).__name__})")) from None
        return {**kept, "bounds": {"max_bytes": max_bytes, "cut": cuts}}

    def tool(title: str):
        return server.tool(title=title, annotations=read_only, structured_output=True)

    @tool("Open a profile: hosts, planes, tracks, events")
    def info(path: Path_, run: Run = None, max_bytes: MaxBytes = DEFAULT_MAX_BYTES) -> dict[str, Any]:
        """Opens a profile (kept open for the other tools) and lists what it holds: sources, hosts, planes
        with their tracks and event counts, span, and the loader's warnings (a file cut short). Equals
        `tpuscope info PATH --json`."""
        return answer(lambda: payloads.trace_summary(profiles.get(path, run).trace), max_bytes)

    @tool("Overview: devices, steps, step time, duty cycle, top ops, top findings")
    def overview(
        path: Path_,
        run: Run = None,
        top: Annotated[int, Field(ge=1, description="How many ops to list by self time.")] = TOP_OPS,
        max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
    ) -> dict[str, Any]:
        """The first look at a profile: devices, hosts, framework, steps and where they came from, step
        time (mean/median/p95), duty cycle, how step time splits into busy/input/compile/idle, per-step
        rows, the top ops by self time and the findings' titles. Equals `tpuscope overview PATH --json`."""
        return answer(lambda: profiles.get(path, run).analysis.overview.to_json(top_ops=top), max_bytes)

    @tool("Diagnose: findings with evidence, cost and advice, and what was checked")
    def diagnose(path: Path_, run: Run = None, max_bytes: MaxBytes = DEFAULT_MAX_BYTES) -> dict[str, Any]:
        """Integration problems, worst first (input-bound, recompilation, host-device syncs, idle
        devices, stragglers, memory pressure...), each with its cost (`impact`), evidence, metrics and
        framework-specific advice; `checked` says what every rule looked at, so no finding means checked
        and clean. Equals `tpuscope diagnose PATH --json`."""
        return answer(lambda: payloads.diagnose_json(profiles.get(path, run).analysis), max_bytes)

    @tool("Ops: where device time goes, by op, category, program, framework op or source line")
    def ops(
        path: Path_,
        run: Run = None,
        by: Annotated[
            Literal["op", "category", "program", "framework", "source"],
            Field(
                description="Group by HLO op, op category, program, framework op, or source line (file:line)."
            ),
        ] = "op",
        device: Device = "all",
        top: Annotated[
            int, Field(ge=1, description="Rows to return, largest self time first.")
        ] = DEFAULT_TOP_ROWS,
        offset: Annotated[int, Field(ge=0, description="Rows to skip first (the next page).")] = 0,
        max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
    ) -> dict[str, Any]:
        """Device time per group, largest self time first: occurrences, total/self/average time (us), share
        and cumulative share, FLOPs and FLOP/s, bytes and GB/s, operational intensity, compute- or
        memory-bound; by op also each op's program, framework op, HLO text, source line and stack. Also
        busy time, duty cycle, the roofline peaks and the steps. `total_rows` counts all groups. Equals
        `tpuscope ops PATH --by BY --device DEVICE --top N --json` (offset 0)."""
        assert by in GROUPINGS

        def compute() -> dict[str, Any]:
            analysis = profiles.get(path, run).analysis
            rows = payloads.ops_rows(analysis, by, device, offset + top, path)
            payload = payloads.ops_json(analysis, by, device, None, path, rows[offset:])
            table = analysis.op_table(by, device)
            return {**payload, "total_rows": 0 if table is None else len(table), "offset": offset}

        return answer(compute, max_bytes)

    @tool("Op details: framework op, source line, stack, HLO text")
    def op_details(
        path: Path_,
        name: Annotated[
            str, Field(description="The op's name as the ops tool lists it (by op), e.g. 'fusion.12'.")
        ],
        program: Annotated[
            str | None, Field(description="The op's program, when ops of this name ran in several.")
        ] = None,
        device: Device = "all",
        run: Run = None,
        max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
    ) -> dict[str, Any]:
        """What the app's Details dock shows of one op: its row of the op table (times, FLOPs, bound),
        its framework op, source line (file:line) and function, its stack as a Python traceback, its HLO
        text and, for a fusion, the instructions it fused. One entry per program it ran in."""
        return answer(
            lambda: payloads.op_details_json(profiles.get(path, run).analysis, name, program, device, path),
            max_bytes,
        )

    @tool("Memory: each program's memory at its peak, each allocator over time")
    def memory(
        path: Path_,
        run: Run = None,
        program: Annotated[
            str | None, Field(description="Only this program: `jit_f(123)`, its module name, or its id.")
        ] = None,
        max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
    ) -> dict[str, Any]:
        """For each compiled program, its heap peak (padded and unpadded, share of the chip) and the
        buffers live at the peak with shape, layout, defining instruction and category; for each
        allocator its memory in use over time, lifetime peak, fragmentation and the allocations live at
        the peak. Equals `tpuscope memory PATH --json`."""
        return answer(lambda: payloads.memory_json(profiles.get(path, run).analysis, program), max_bytes)

    @tool("Compare two runs: verdict, cause, per-step split, ops that changed")
    def compare(
        base: Annotated[str, Field(description="The BASE profile (same kinds of path as `path`).")],
        new: Annotated[str, Field(description="The NEW profile.")],
        run_base: Annotated[str | None, Field(description="With a logdir as BASE: the run to open.")] = None,
        run_new: Annotated[str | None, Field(description="With a logdir as NEW: the run to open.")] = None,
        noise_floor: Annotated[
            float | None,
            Field(
                ge=0,
                description="Smallest change reported as significant, percent (default 10 on TPU/GPU, "
                "50 on the host CPU).",
            ),
        ] = None,
        max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
    ) -> dict[str, Any]:
        """Did the change help: the verdict (faster, slower, no_significant_change, not_comparable) with
        its cause (code, machine, input, compilation) and evidence, step time of both runs with the change
        and its 95% interval, configuration differences, the per-step split, ops/categories/programs by
        change of self time (matched across recompilations) and the findings that are new, resolved or
        changed. Equals `tpuscope compare BASE NEW --json`."""

        def compute() -> dict[str, Any]:
            from tpuscope.analysis.compare.runs import analyze_run, compare_runs

            a, b = profiles.get(base, run_base), profiles.get(new, run_new)
            return compare_runs(analyze_run(a.analysis), analyze_run(b.analysis), noise_floor).to_json(
                top_ops=None
            )

        return answer(compute, max_bytes)

    @tool("History: every run of a logdir in order, the change from the run before and its cause")
    def history(
        paths: Annotated[
            list[str],
            Field(
                min_length=1,
                description="Logdirs (every run, oldest first), run folders or profile files, "
                "read in the order given.",
            ),
        ],
        noise_floor: Annotated[float | None, Field(ge=0, description="As for compare, percent.")] = None,
        max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
    ) -> dict[str, Any]:
        """One entry per run: median step time with its 95% interval, the change from the previous run
        (slower, faster, no significant change) with its cause and the ops that changed; a run that cannot
        be read says why. Run summaries are cached on disk. Equals `tpuscope history PATH... --json`."""

        def compute() -> dict[str, Any]:
            from tpuscope.app.history import read_history

            return payloads.history_json(read_history(paths, True, noise_floor))

        return answer(compute, max_bytes)

    @tool("Metrics: the headline metrics, each with its unit, definition and scope")
    def metrics(path: Path_, run: Run = None, max_bytes: MaxBytes = DEFAULT_MAX_BYTES) -> dict[str, Any]:
        """Step time, duty cycle, the step's shares (busy, input, compile, idle), memory peaks and the
        other headline numbers, each with its unit, its definition in words and what it is measured over;
        a number missing says why. Equals `tpuscope metrics PATH --json` (a run read as one trace)."""
        return answer(lambda: payloads.metrics_json(profiles.get(path, run).analysis), max_bytes)

    @tool("Flame graph: device time as a tree by framework scope, Python stack or op")
    def flame(
        path: Path_,
        run: Run = None,
        by: Annotated[
            Literal["scope", "stack", "op"],
            Field(
                description="The tree's levels: the framework's named scopes (jax.named_scope, module "
                "paths), the Python call stack, or program/category/op."
            ),
        ] = "scope",
        fusion: Annotated[
            Literal["split", "root"],
            Field(
                description="'split': a fusion's time shared among the scopes it fused, by estimated cost "
                "(marked estimated); 'root': all on its root instruction's scope, as XProf does."
            ),
        ] = "split",
        device: Device = "all",
        max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
    ) -> dict[str, Any]:
        """Device self time as a tree: each node's name, self and total time, and children; the total
        equals the op table's self time. Equals `tpuscope flame PATH --by BY --fusion F --format json`."""

        def compute() -> dict[str, Any]:
            analysis = profiles.get(path, run).analysis
            tree = payloads.whole_flame_tree(analysis, by, fusion, device, path)
            return payloads.flame_json(analysis, tree, by, fusion, device)

        return answer(compute, max_bytes)

    @tool("HLO graph: the instructions around an op, with device time")
    def graph(
        path: Path_,
        op: Annotated[
            str, Field(description="The HLO op (instruction) name as the ops tool lists it, e.g. 'fusion.3'.")
        ],
        radius: Annotated[
            int, Field(ge=0, le=20, description="Hops out from the op, along operands and users.")
        ] = 2,
        expand: Annotated[bool, Field(description="Also list the instructions each fusion fused.")] = False,
        program: Annotated[
            str | None, Field(description="The program to look in when several have an op of that name.")
        ] = None,
        run: Run = None,
        max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
    ) -> dict[str, Any]:
        """The op's operands and users out to `radius` hops, each instruction with its opcode, shape and
        device time, and the edges between them. Equals `tpuscope graph PATH OP --json`."""
        return answer(
            lambda: payloads.op_graph_of(
                profiles.get(path, run).analysis, op, radius, expand, program, path
            ).to_json(),
            max_bytes,
        )

    @tool("Communication: collectives per op, host and step, exposed against overlapped")
    def comms(path: Path_, run: Run = None, max_bytes: MaxBytes = DEFAULT_MAX_BYTES) -> dict[str, Any]:
        """Collective time (all-reduce, all-gather, NCCL kernels, DCN transfers) per op, host and step:
        how much overlapped compute and how much was exposed, bytes and algorithm/bus bandwidth, and the
        host the others wait for. Equals `tpuscope comms PATH --json` (a run read as one trace)."""
        return answer(lambda: payloads.comms_json(profiles.get(path, run).analysis), max_bytes)

    @tool("SQL tables: the tables and columns the sql tool can query")
    def sql_tables(max_bytes: MaxBytes = DEFAULT_MAX_BYTES) -> dict[str, Any]:
        """Every table (events, tracks, args, flows, counters, ops, steps, findings, memory_*) with its
        columns, their types and meanings. Equals `tpuscope sql PATH --schema --json`."""

        def compute() -> dict[str, Any]:
            from tpuscope.query.session import schema_rows

            return {
                "columns": ["table", "column", "type", "meaning"],
                "rows": [[r.table, r.column, r.type, r.meaning] for r in schema_rows()],
            }

        return answer(compute, max_bytes)

    @tool("SQL: a read-only query (DuckDB) over the profile's tables")
    def sql(
        path: Path_,
        query: Annotated[
            str,
            Field(
                description="One read-only statement in DuckDB's dialect (SELECT/WITH/DESCRIBE/SUMMARIZE, "
                "EXPLAIN, the catalog's PRAGMAs), e.g. SELECT name, count(*), sum(dur_ps) FROM events "
                "GROUP BY name ORDER BY 3 DESC LIMIT 10"
            ),
        ],
        run: Run = None,
        max_rows: Annotated[
            int,
            Field(
                ge=1, le=MAX_SQL_ROWS, description="Rows to return at most; `cut` says when more were left."
            ),
        ] = DEFAULT_SQL_ROWS,
        timeout_s: Annotated[
            float, Field(gt=0, le=600, description="Stop the query after this many seconds.")
        ] = DEFAULT_SQL_TIMEOUT_S,
        max_bytes: MaxBytes = DEFAULT_MAX_BYTES,
    ) -> dict[str, Any]:
        """The query's columns and rows as `tpuscope sql PATH QUERY --json` prints them, read-only as the
        command is (no file, no network, no extension, no writes), within a time limit and a row cap;
        `row_count` and `cut` say whether rows were left."""

        def compute() -> dict[str, Any]:
            from tpuscope.query.cells import json_cell
            from tpuscope.query.engine import QueryLimits
            from tpuscope.query.session import QueryError

            session = profiles.get(path, run).query
            limits = QueryLimits(timeout_s, session.limits.memory_limit_bytes, max_rows)
            try:
                result = session.run(query, limits)
                try:
                    rows = [
                        [json_cell(v) for v in row]
                        for batch in result.batches()
                        for row in zip(*(column.to_pylist() for column in batch.columns), strict=True)
                    ]
                finally:
                    result.close()
            except QueryError as error:
                raise RequestError(str(error)) from None
            return {"columns": result.columns, "rows": rows, "row_count": len(rows), "cut": result.cut}

        return answer(compute, max_bytes)

    server.tpuscope_profiles = profiles  # type: ignore[attr-defined]  # tests read what was opened
    return server


def _sentence(error: BaseException, fallback: str = "") -> str:
    """The error's message as one line ending in a full stop (a traceback never reaches the client)."""
    text = " ".join(str(error).split()) or fallback or type(error).__name__
    if fallback and text != fallback and not isinstance(error, (ProfileError, RequestError, ValueError)):
        text = f"{fallback}: {text}"
    return text if text.endswith((".", "?", "!")) else text + "."


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tpuscope")
    except PackageNotFoundError:
        return ""


def serve() -> None:
    """Runs the server on stdin/stdout until the client closes them."""
    build_server().run("stdio")
