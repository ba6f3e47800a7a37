"""What one per-trace result is, what its computation may read, and the store that computes each once.

A `Result` is a name and how to compute it. Its computation reads a `ResultSource`: the trace and
the other results, nothing else, so a result (and a rule, through the facts `Context` built on the
same protocol) declares what it needs by asking for it, and no computation holds the whole analysis.
`ResultStore` computes each result once per trace and hands every later caller the same object
(`tpuscope.analysis.session.TraceAnalysis` is the store with typed shortcuts).

Apart from the session so that any analysis package can define its own results (the memory
report in `tpuscope.analysis.memory.report`, ...) without importing the session, which imports
those packages.

Thread safety lives here and nowhere else: `get` may be called from several threads (the desktop
app computes results in worker threads). Each result has its own lock, taken before its
dependencies' locks (the dependencies form a graph without cycles, so no two threads wait on each
other); two threads asking for the same result compute it once. The facts `Context` caches what only
the rules and figures ask in plain attributes, so a result that reads it says so (`reads_facts`)
and is computed holding the store's facts lock, after the results named in `first` (those that
read the facts too) are in hand; code outside a result reads the facts through `reading_facts`.
A result computed while the facts lock is held must not read the facts from another thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from tpuscope.model.records import record

if TYPE_CHECKING:
    from tpuscope.model.trace import Trace

T = TypeVar("T")


class ResultSource(Protocol):
    """What a result's computation (and a rule, through its Context) reads: the trace and results."""

    @property
    def trace(self) -> Trace: ...

    def get(self, result: Result[T]) -> T: ...

    def has(self, result: Result[Any]) -> bool: ...

    def reading_facts(self, read: Callable[[], T]) -> T: ...


@record(frozen=True, eq=False)
class Result(Generic[T]):
    """One kind of result of a trace: `name` identifies it (two equal names are the same result),
    `compute` makes it from a `ResultSource`, asking it for any other results it needs.

    `reads_facts`: the computation reads the shared facts `Context`, so it runs holding the facts
    lock; `first`: results it needs that read the facts too, computed before that lock is taken."""

    name: str
    compute: Callable[[ResultSource], T]  # called with the ResultSource (a TraceAnalysis) that is asked
    reads_facts: bool = False
    first: tuple[Result[Any], ...] = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Result) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Result({self.name!r})"


class ResultStore:
    """The results of one trace, each computed at most once (see the module docstring)."""

    def __init__(self, trace: Trace, known: Mapping[Result[Any], Any] | None = None):
        """`known`: results already in hand, used as if computed here (the pod table a run analysed
        host by host combines from its hosts' summaries, steps relabelled by a test)."""
        self._trace = trace
        self._values: dict[str, Any] = {result.name: value for result, value in (known or {}).items()}
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._facts_lock = threading.RLock()
        self.computed: list[str] = []  # result names in the order they were computed (tests, benchmarks)

    @property
    def trace(self) -> Trace:
        return self._trace

    def get(self, result: Result[T]) -> T:
        """The result, computed now if nobody has yet (an error is raised and nothing kept)."""
        try:
            return cast(T, self._values[result.name])
        except KeyError:
            pass
        for needed in result.first:  # in hand before the facts lock (see the module docstring)
            self.get(needed)
        with self._lock_of(result.name):
            if result.name not in self._values:
                if result.reads_facts:
                    with self._facts_lock:
                        value = result.compute(self)
                else:
                    value = result.compute(self)
                self._values[result.name] = value
                self.computed.append(result.name)
            return cast(T, self._values[result.name])

    def start(self, *results: Result[Any]) -> None:
        """Begins computing `results` on a daemon thread; the caller goes on and `get`s them later.

        For a command that will ask for several results of one trace on one thread: numpy releases
        the interpreter lock in its array work, so one result's arrays are computed on the second
        core while the caller computes others (or imports the rules' modules). `get` waits for a
        result still being computed (its lock), and one whose computation failed here was not kept:
        the caller's `get` computes it again and raises its error where it is handled."""

        def compute() -> None:
            for result in results:
                try:
                    self.get(result)
                except Exception:  # noqa: BLE001 - raised again by the caller's own `get`
                    return

        threading.Thread(target=compute, name="tpuscope-results-ahead", daemon=True).start()

    def has(self, result: Result[Any]) -> bool:
        """Whether `result` is computed already (asking for it then costs nothing)."""
        return result.name in self._values

    def reading_facts(self, read: Callable[[], T]) -> T:
        """`read()` run holding the facts lock: for code that reads the facts `Context` outside a
        result's computation (a host's summary, a pod's rules)."""
        with self._facts_lock:
            return read()

    def _lock_of(self, name: str) -> threading.Lock:
        with self._locks_guard:
            lock = self._locks.get(name)
            if lock is None:
                lock = self._locks[name] = threading.Lock()
            return lock
