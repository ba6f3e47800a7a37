"""The Python API for notebooks and scripts: `tpuscope.open(path)`, `tpuscope.open(bytes)`,
`tpuscope.capture()` and `tpuscope.compare(a, b)`.

A `Profile` holds one loaded trace and its `TraceAnalysis`, so every method computes its result once
and returns the records the matching command prints with `--json` (the same code builds both):

    import tpuscope
    p = tpuscope.open("prof/")                # a file, run folder, logdir or gs:// URL
    p.sql("SELECT name, sum(dur_ps) FROM events GROUP BY name").df()
    p.ops()[0]["name"], p.diagnose()["findings"], p.memory()["programs"]
    p = tpuscope.open(xspace_bytes)          # a profile held in memory (XSpace or trace-event JSON)
    with tpuscope.capture() as run:           # record a JAX program in this process and open it
        train_step(state, batch)
    run.diagnose()

`sql` returns a DuckDB relation (`.df()`, `.pl()`, `.arrow()`, `.fetchall()`) over the query's rows,
read-only and bounded as the `sql` command's queries are (`tpuscope.query.session`): a time limit,
a memory limit and a row cap (`tpuscope.query.engine.QueryLimits`; pass `limits=` to change them),
and Ctrl-C (KeyboardInterrupt) stops the query.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tpuscope.analysis.session import DeviceChoice, TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.model.trace import Trace


class Profile:
    """One profile and its analyses (see the module docstring)."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.analysis = TraceAnalysis(trace)
        self._session: Any = None

    def __repr__(self) -> str:
        sources = ", ".join(str(s) for s in self.trace.sources)
        return f"<tpuscope.Profile {sources}: {self.trace.event_count:,} events>"

    @property
    def query(self):
        """The profile's `QuerySession` (its DuckDB connection), made on first use."""
        if self._session is None:
            from tpuscope.query.session import QuerySession

            self._session = QuerySession(self.analysis)
        return self._session

    def sql(self, query: str, limits: Any = None):
        """The query's result as a DuckDB relation; `tpuscope.query.session.QueryError` when refused,
        failing or past a limit (one sentence). `limits`: a `tpuscope.query.engine.QueryLimits`
        (default: `QueryLimits()`); a new memory limit opens a new session over the same analyses."""
        if limits is not None and limits.memory_bytes() != self.query.limits.memory_bytes():
            from tpuscope.query.session import QuerySession

            self._session.close()
            self._session = QuerySession(self.analysis, limits=limits)
        return self.query.sql(query, limits)

    def table(self, name: str):
        """One of the `sql` tables (`tpuscope sql PATH --schema`) as a pyarrow Table."""
        return self.query.arrow(name)

    def ops(self, by: str = "op", device: DeviceChoice = "all") -> list[dict[str, Any]]:
        """The rows of `tpuscope ops --by BY --device DEVICE --json` (empty when no device ran ops)."""
        from tpuscope.analysis.ops import GROUPINGS
        from tpuscope.query.tables import ops_records

        if by not in GROUPINGS:
            raise ValueError(f"by must be one of {', '.join(GROUPINGS)}, not {by!r}")
        return ops_records(self.analysis, by, device)

    def steps(self, device: DeviceChoice = "all") -> list[dict[str, Any]]:
        """The step rows of `tpuscope ops --json` (`steps.rows`), with each step's `ts_ps` and `dur_ps`."""
        from tpuscope.query.tables import steps_records

        return steps_records(self.analysis, device)

    def diagnose(self) -> dict[str, Any]:
        """What `tpuscope diagnose --json` prints: framework, steps, findings worst first, checked rules."""
        return self.analysis.report.to_json()

    def memory(self) -> dict[str, Any]:
        """What `tpuscope memory --json` prints: programs at their peak, allocators over time."""
        from tpuscope.analysis.memory.report import MEMORY_REPORT

        return self.analysis.get(MEMORY_REPORT).to_json()

    def overview(self) -> dict[str, Any]:
        """What `tpuscope overview --json` prints (one trace)."""
        return self.analysis.overview.to_json()


def open(  # noqa: A001
    path: str | Path | bytes | bytearray | memoryview,
    run: str | None = None,
    use_cache: bool = True,
    name: str | None = None,
) -> Profile:
    """Opens a profile as the commands do (`.xplane.pb`, Kineto/Chrome JSON, run folder, logdir, gs://),
    or one held in memory: the bytes of an XSpace (`.xplane.pb`, gzip or not) or of a trace-event JSON
    document (what `jax.profiler` or `torch.profiler` wrote, fetched from anywhere), with `name` the
    file name it would have (its host's label; default `profile.<format's suffix>`). The same trace
    and results as from the file; `tpuscope.errors.ProfileError` (one sentence) when it cannot be read."""
    if isinstance(path, (bytes, bytearray, memoryview)):
        from tpuscope.app.opener import open_bytes

        return Profile(open_bytes(path, name))
    return Profile(open_trace(str(path), run=run, use_cache=use_cache))


class Capture:
    """`with tpuscope.capture() as run: ...` records the JAX program run inside the block
    (`jax.profiler.trace`) and opens what it wrote as the block ends: `run.profile` (and every
    `Profile` method on `run` itself: `run.diagnose()`, `run.ops()`) without the caller handling files.
    The recording goes to a temporary folder removed once it is loaded, or to `logdir` when given
    (kept, in the layout TensorBoard and `tpuscope PATH` read). `options` go to `jax.profiler.trace`."""

    def __init__(self, logdir: str | Path | None = None, **options: Any):
        self.logdir = None if logdir is None else Path(logdir)
        self.options = options
        self.profile: Profile | None = None
        self._folder: Any = None
        self._trace: Any = None

    def __enter__(self) -> Capture:
        import tempfile

        try:
            import jax  # the caller's JAX: a capture records the process it runs in
        except ImportError:
            raise ImportError(
                "tpuscope.capture() records a JAX program in this process: JAX is not installed."
            ) from None

        if self.logdir is None:
            self._folder = tempfile.TemporaryDirectory(prefix="tpuscope-capture-")
        where = self.logdir if self.logdir is not None else Path(self._folder.name)
        self._trace = jax.profiler.trace(str(where), **self.options)
        self._trace.__enter__()
        return self

    def __exit__(self, kind, error, traceback) -> None:
        try:
            self._trace.__exit__(kind, error, traceback)
            if kind is None:
                where = self.logdir if self.logdir is not None else Path(self._folder.name)
                # a temporary recording is never cached: its path dies with the folder
                self.profile = Profile(open_trace(str(where), use_cache=self.logdir is not None))
        finally:
            if self._folder is not None:
                self._folder.cleanup()
                self._folder = None

    def __getattr__(self, attribute: str) -> Any:
        profile = self.__dict__.get("profile")
        if profile is None:
            raise AttributeError(
                f"{attribute!r}: the capture has no profile until its `with` block has ended"
            )
        return getattr(profile, attribute)


def capture(logdir: str | Path | None = None, **options: Any) -> Capture:
    """Records the JAX program run in a `with` block and opens it (see `Capture`)."""
    return Capture(logdir, **options)


def compare(base: str | Path | Profile, new: str | Path | Profile, noise_floor: float | None = None) -> dict:
    """What `tpuscope compare BASE NEW --json` prints (every op row)."""
    from tpuscope.analysis.compare.runs import compare_traces

    def trace_of(x: str | Path | Profile) -> Trace:
        return x.trace if isinstance(x, Profile) else open_trace(str(x))

    return compare_traces(trace_of(base), trace_of(new), noise_floor).to_json(top_ops=None)
