"""One capture from start to finish: tunnels, parallel Profile RPCs, progress, cancel, saving.

The result is a run folder in the layout XProf and TensorBoard read,
`<logdir>/plugins/profile/<run>/<host>.xplane.pb`, one file per worker, so the
workers open together as one multi-host trace. Files are written under a
staging folder with a `.part` suffix and moved into place only when every
worker succeeded: a cancelled, interrupted or failed capture leaves nothing
that looks like a valid profile.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import field, replace
from datetime import datetime
from pathlib import Path

import grpc

from tpuscope.capture.errors import CaptureCancelled, CaptureError, PassphraseRequired, UnknownHostKey
from tpuscope.capture.grpc_client import ProfileCall, TracerLevels, build_request, explain_rpc_error
from tpuscope.capture.ssh import LocalForward, SshConnection, SshOptions, SshRoute, connect
from tpuscope.capture.targets import SshHost, Target, check_run_name, file_label, parse_duration
from tpuscope.model.records import record

# What a profiler server writes and a capture saves: one XPlane file per host (see the module docstring).
PROFILE_SUFFIX = ".xplane.pb"
# progress(fraction_done, what_is_happening) -> False to cancel (as tpuscope.readers.ProgressCallback)
ProgressCallback = Callable[[float, str], bool | None]

# tsl's client waits max(60 s, 2 x duration) for the answer (openxla/xla
# `xla/tsl/profiler/utils/session_manager.cc`); we wait the same
# beyond the capture window unless told otherwise.
MIN_RESPONSE_WAIT_S = 60.0
_POLL_S = 0.1
_PROFILING_SHARE = 0.9  # of the progress bar: the rest is receiving and saving
MAX_LEVELS = {"host": 3, "device": 1, "python": 1}  # tsl profiler_options.proto ProfileOptions field docs
_LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", socket.gethostname().lower()}
# SSH connections opened at once: a 64-worker slice connects in a few handshakes' time, as gcloud's
# --worker=all runs its connections in parallel threads (our heuristic for the count).
MAX_PARALLEL_CONNECTIONS = 16


@record
class CaptureSettings:
    """Everything a capture needs; the CLI and the dialog both fill one of these."""

    targets: list[Target]
    logdir: Path
    duration_s: float = 2.0
    delay_s: float = 0.0
    levels: TracerLevels = field(default_factory=TracerLevels)
    # none; one for all targets; one per target; or several for one target (the same port on each machine)
    ssh_hosts: list[SshHost] = field(default_factory=list)
    ssh: SshOptions = field(default_factory=SshOptions)
    timeout_s: float | None = None  # wait for answers this long beyond the window; None: tsl's rule
    run_name: str | None = None  # default: capture start time, like tsl (`2026_11_30_08_43_55`)
    # Ask for the XSpace in the answer. Either way the request names a folder on the server's machine
    # where a server that cannot answer inline saves the trace, and tpuscope fetches it from there;
    # False forces that path.
    inline: bool = True
    # Machines reached each over its own SSH route (a TPU slice's workers); the target, one for all
    # or one per route, is as seen from each machine. Used instead of ssh_hosts when given.
    routes: list[SshRoute] = field(default_factory=list)
    # Keep the workers that answered when others cannot be reached or fail: the result names the
    # missing ones (CaptureResult.missing) instead of the whole capture failing.
    keep_partial: bool = False

    def with_passphrase(self, passphrase: str) -> CaptureSettings:
        """The same settings with the key's passphrase (kept in memory only) on every SSH route."""
        routes = [replace(r, options=replace(r.options, passphrase=passphrase)) for r in self.routes]
        return replace(self, ssh=replace(self.ssh, passphrase=passphrase), routes=routes)

    def response_wait_s(self) -> float:
        if self.timeout_s is not None:
            return self.timeout_s
        return max(MIN_RESPONSE_WAIT_S, self.duration_s)


@record
class CaptureResult:
    run_folder: Path
    files: list[Path]
    hosts: list[str]
    bytes_received: int
    missing: list[str] = field(default_factory=list)  # one sentence per worker left out (keep_partial)


@record
class _Worker:
    target: Target
    label: str  # file name stem: <label>.xplane.pb
    address: str  # what gRPC connects to (a local forward when through SSH)
    via: SshConnection | None = None
    forward: LocalForward | None = None
    call: ProfileCall | None = None
    repository_root: str = ""

    description: str = ""  # what messages call it ("worker 2 of my-tpu (10.0.0.4)"), when it has a name

    def describe(self) -> str:
        if self.description:
            return self.description
        return f"{self.target} (via SSH {self.via.label})" if self.via else str(self.target)

    def started_call(self) -> ProfileCall:
        """The worker's Profile call: _profile_all starts one for every worker before it polls any."""
        if self.call is None:
            raise RuntimeError(f"no Profile call was started for {self.describe()}")
        return self.call


def validate(settings: CaptureSettings) -> None:
    if not settings.targets:
        raise CaptureError("No capture target was given: name at least one host:port, e.g. localhost:9012.")
    if settings.duration_s <= 0:
        raise CaptureError("The capture duration must be more than zero, e.g. 2s.")
    for what, seconds in (("duration", settings.duration_s), ("delay", settings.delay_s),
                          ("timeout", settings.timeout_s)):  # fmt: skip
        if seconds is not None:
            parse_duration(seconds, what)  # the same bound as typed values: MAX_DURATION_S
    if settings.run_name:  # empty: the capture time, as None
        check_run_name(settings.run_name)
    if settings.delay_s < 0:
        raise CaptureError("The capture delay cannot be negative.")
    if settings.timeout_s is not None and settings.timeout_s <= 0:
        raise CaptureError("The timeout must be more than zero seconds.")
    for name, top in MAX_LEVELS.items():
        value = getattr(settings.levels, name)
        if not 0 <= value <= top:
            raise CaptureError(f"The {name} tracer level {value} is out of range: use 0 to {top}.")
    if settings.routes and len(settings.targets) not in (1, len(settings.routes)):
        raise CaptureError(
            f"{len(settings.targets)} targets were given for {len(settings.routes)} workers: give one "
            "target for every worker, or one per worker in order."
        )
    count = len(settings.ssh_hosts)
    if count > 1 and len(settings.targets) > 1 and count != len(settings.targets):
        raise CaptureError(
            f"{count} SSH hosts were given for {len(settings.targets)} targets: give one SSH "
            "host for all targets, one per target in the same order, or one target for all "
            "SSH hosts."
        )


def new_run_name(logdir: Path) -> str:
    """The capture time as tsl names runs; a suffix keeps two captures in one second apart."""
    base = datetime.now().strftime("%Y_%m_%d_%H_%M_%S")
    profile_root = logdir / "plugins" / "profile"
    name, counter = base, 1
    while (profile_root / name).exists():
        counter += 1
        name = f"{base}_{counter}"
    return name


def capture(settings: CaptureSettings, progress: ProgressCallback | None = None) -> CaptureResult:
    """Captures every target at once and saves one run folder; raises CaptureError or CaptureCancelled."""
    validate(settings)
    logdir = Path(settings.logdir).expanduser()
    run_name = settings.run_name or new_run_name(logdir)
    final_folder = logdir / "plugins" / "profile" / run_name
    if final_folder.exists():
        raise CaptureError(f"The run folder {final_folder} already exists: choose another run name.")
    staging = final_folder.with_name(f".{run_name}.capturing")
    connections: list[SshConnection] = []
    workers: list[_Worker] = []
    local_roots: list[Path] = []
    missing: list[str] = []
    try:
        _report(progress, 0.0, "connecting")
        workers = _prepare_workers(settings, connections, progress, missing)
        _make_folder(staging)
        answered = _profile_all(settings, run_name, workers, local_roots, progress, missing)
        _report(progress, 0.95, "saving")
        kept = [w for w, _ in answered]
        files = _save(settings, run_name, kept, [r for _, r in answered], staging, final_folder)
        _report(progress, 1.0, "done")
        return CaptureResult(final_folder, files, [w.label for w in kept], sum(len(r) for _, r in answered),
                             missing)  # fmt: skip
    finally:
        for worker in workers:
            if worker.call is not None:
                worker.call.close()
        for connection in connections:
            connection.close()
        shutil.rmtree(staging, ignore_errors=True)
        for root in local_roots:
            shutil.rmtree(root, ignore_errors=True)


def _report(progress: ProgressCallback | None, fraction: float, message: str) -> None:
    if progress is not None and progress(min(1.0, max(0.0, fraction)), message) is False:
        raise CaptureCancelled()


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CaptureError(f"Cannot create the output folder {folder} ({error.strerror or error}).") from None


def _prepare_workers(settings: CaptureSettings, connections: list[SshConnection],
                     progress: ProgressCallback | None, missing: list[str]) -> list[_Worker]:  # fmt: skip
    if not settings.ssh_hosts and not settings.routes:
        return [_Worker(t, file_label(t), str(t)) for t in settings.targets]
    plan = _plan(settings)
    unique = list(dict.fromkeys(route for _, route in plan))
    _report(progress, 0.0, f"connecting to {unique[0].description}" if len(unique) == 1
            else f"connecting to {len(unique)} machines over SSH")  # fmt: skip
    opened = _connect_all(unique)
    connections.extend(o for o in opened.values() if isinstance(o, SshConnection))
    failures = [(route, o) for route, o in opened.items() if not isinstance(o, SshConnection)]
    for route, error in failures:  # the user must answer these (a host key, a passphrase) or fix them
        if not settings.keep_partial or not isinstance(error, CaptureError) or _needs_an_answer(error):
            raise error
        missing.append(f"{_capitalized(route.description)} was not captured: {error}")
    workers = []
    for target, route in plan:
        connection = opened[route]
        if not isinstance(connection, SshConnection):
            continue
        forward = connection.forward(target.host, target.port)
        label = route.label or file_label(target, route.host)
        named = route.description if route.label else ""
        workers.append(_Worker(target, label, f"127.0.0.1:{forward.local_port}", via=connection,
                               forward=forward, description=named))  # fmt: skip
    if not workers:
        raise CaptureError(f"No worker could be reached: {' '.join(missing)}")
    labels = [w.label for w in workers]
    repeats: dict[str, int] = {}
    for worker in workers:
        if labels.count(worker.label) > 1:  # e.g. alice@vm and bob@vm: keep their files apart
            repeats[worker.label] = repeats.get(worker.label, 0) + 1
            worker.label = f"{worker.label}_{repeats[worker.label]}"
    return workers


def _plan(settings: CaptureSettings) -> list[tuple[Target, SshRoute]]:
    """Each target with the SSH route it is reached through."""
    if settings.routes:
        targets, routes = settings.targets, settings.routes
        return list(zip(targets * len(routes) if len(targets) == 1 else targets, routes, strict=True))
    return [(target, SshRoute(host, settings.ssh, "", str(host))) for target, host in _pairs(settings)]


def _connect_all(routes: list[SshRoute]) -> dict[SshRoute, SshConnection | BaseException]:
    """Every route's SSH connection, opened in parallel; a failure is kept in place of its connection."""

    def attempt(route: SshRoute) -> SshConnection | BaseException:
        try:
            return connect(route.host, route.options)
        except Exception as error:  # noqa: BLE001 - handed back to the caller, which decides
            return error

    if len(routes) == 1:
        return {routes[0]: attempt(routes[0])}
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_CONNECTIONS, len(routes))) as pool:
        return dict(zip(routes, pool.map(attempt, routes), strict=True))


def _needs_an_answer(error: CaptureError) -> bool:
    """A failure the user answers (trust the host key, give the passphrase) before trying again."""
    return isinstance(error, UnknownHostKey | PassphraseRequired)


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


def _pairs(settings: CaptureSettings) -> list[tuple[Target, SshHost]]:
    """Which target is reached through which SSH host."""
    targets, hosts = settings.targets, settings.ssh_hosts
    if len(hosts) == 1:
        return [(target, hosts[0]) for target in targets]
    if len(targets) == 1:  # a pod slice: the same profiler port on every VM
        return [(targets[0], host) for host in hosts]
    return list(zip(targets, hosts, strict=True))


def _profile_all(settings: CaptureSettings, run_name: str, workers: list[_Worker], local_roots: list[Path],
                 progress: ProgressCallback | None, missing: list[str]
                 ) -> list[tuple[_Worker, bytes]]:  # fmt: skip
    window_s = settings.delay_s + settings.duration_s
    deadline_s = window_s + settings.response_wait_s()
    for worker in workers:
        worker.repository_root = _repository_root(worker, run_name, local_roots)
        request = build_request(
            settings.duration_s, settings.delay_s, settings.levels, run_name, worker.label,
            inline=settings.inline, repository_root=worker.repository_root,
        )  # fmt: skip
        worker.call = ProfileCall(worker.address, request, deadline_s)
    started = time.monotonic()
    failed: dict[int, str] = {}  # keep_partial: worker position -> why it has no trace
    try:
        while not all(w.started_call().done() for w in workers):
            elapsed = time.monotonic() - started
            if elapsed < settings.delay_s:
                message = f"waiting {settings.delay_s - elapsed:.1f} s before profiling"
            elif elapsed < window_s:
                message = f"profiling {elapsed - settings.delay_s:.1f} s / {settings.duration_s:g} s"
            else:
                message = "receiving"
            _report(progress, _PROFILING_SHARE * min(1.0, elapsed / window_s), message)
            # A failed worker fails the capture (don't make the user wait for the others), unless
            # the others are to be kept.
            for position, worker in enumerate(workers):
                if worker.started_call().done() and position not in failed:
                    _check_or_note(worker, settings, deadline_s, failed, position)
            time.sleep(_POLL_S)
    except BaseException:
        for worker in workers:
            worker.started_call().cancel()
        raise
    answered = []
    for position, worker in enumerate(workers):
        if position not in failed:
            xspace = _check_or_note(worker, settings, deadline_s, failed, position)
            if position not in failed:
                answered.append((worker, _fetch_if_needed(worker, run_name, xspace)))
    for position, why in sorted(failed.items()):
        missing.append(f"{_capitalized(workers[position].describe())} was not captured: {why}")
    if not answered:
        raise CaptureError(f"No worker was captured: {' '.join(missing)}")
    return answered


def _check_or_note(worker: _Worker, settings: CaptureSettings, deadline_s: float, failed: dict[int, str],
                   position: int) -> bytes:  # fmt: skip
    """The worker's trace; with keep_partial, a failure is noted in `failed` (b"" returned) instead."""
    try:
        return _check_reply(worker, settings, deadline_s)
    except CaptureError as error:
        if not settings.keep_partial:
            raise
        failed[position] = str(error)
        return b""


def _check_reply(worker: _Worker, settings: CaptureSettings, deadline_s: float) -> bytes:
    try:
        reply = worker.started_call().result()
    except grpc.FutureCancelledError:
        raise CaptureCancelled() from None
    except grpc.RpcError as error:
        if worker.forward is not None and worker.forward.error:
            raise CaptureError(worker.forward.error) from None
        message = explain_rpc_error(error, worker.describe(), worker.target.port, deadline_s)
        raise CaptureError(message) from None
    if reply.empty_trace:
        raise CaptureError(
            f"No trace events were collected from {worker.describe()} during the {settings.duration_s:g} s "
            "window: the program was idle (no steps ran); capture while it runs steps, or for longer."
        )
    return reply.xspace


def _is_local(worker: _Worker) -> bool:
    return worker.via is None and worker.target.host.lower() in _LOCAL_NAMES


def _repository_root(worker: _Worker, run_name: str, local_roots: list[Path]) -> str:
    """Where a server that does not answer inline saves the trace, on its own machine (the server
    creates the folder; with emit_xspace a current server writes nothing there)."""
    if not _is_local(worker):
        return f"/tmp/tpuscope-capture-{run_name}"
    root = Path(tempfile.mkdtemp(prefix="tpuscope-capture-"))
    local_roots.append(root)
    return str(root)


def _fetch_if_needed(worker: _Worker, run_name: str, xspace: bytes) -> bytes:
    """Falls back to the file the server wrote when it returned no XSpace in its answer."""
    if xspace:
        return xspace
    remote = f"{worker.repository_root}/{run_name}/{worker.label}{PROFILE_SUFFIX}"
    if worker.via is not None:
        local = Path(tempfile.mkstemp(prefix="tpuscope-fetch-")[1])
        try:
            folders = (f"{worker.repository_root}/{run_name}", worker.repository_root)
            worker.via.fetch(remote, local, remove_empty=folders)
            return local.read_bytes()
        finally:
            local.unlink(missing_ok=True)
    if not _is_local(worker):
        raise CaptureError(
            f"The profiler server at {worker.target} sent no trace back and saved it on its "
            f"own machine at {remote}; capture through --ssh so tpuscope can fetch it."
        )
    try:
        return Path(remote).read_bytes()
    except OSError:
        raise CaptureError(
            f"The profiler server at {worker.target} sent no trace back and saved none at {remote}."
        ) from None


def _save(settings: CaptureSettings, run_name: str, workers: list[_Worker], replies: list[bytes],
          staging: Path, final_folder: Path) -> list[Path]:  # fmt: skip
    parts = []
    try:
        for worker, xspace in zip(workers, replies, strict=True):
            part = staging / f"{worker.label}{PROFILE_SUFFIX}.part"
            part.write_bytes(xspace)
            parts.append(part)
        for part in parts:
            part.rename(part.with_suffix(""))  # drop ".part"
        staging.rename(final_folder)
    except OSError as error:
        raise CaptureError(
            f"Cannot save the capture into {final_folder.parent} ({error.strerror or error})."
        ) from None
    return sorted(final_folder / f"{w.label}{PROFILE_SUFFIX}" for w in workers)
