"""Profiles in cloud storage: `gs://bucket/logdir` and any other fsspec URL.

TPU pods write their profiles straight to a bucket (`jax.profiler.trace("gs://bucket/logdir")`), so a
logdir is usually remote. Runs and hosts are listed from the bucket's listing alone (names and sizes, no
download); opening a run fetches its host files in parallel into the store's `downloads` folder
(`remote_cache_dir`), each written to a temporary name and renamed only when complete, so a cancelled
or broken download never leaves a half-written file that a later open would take for a profile. A
file already fetched at the same version (the object's generation or etag, and its size) is not
fetched again. With caching off (TPUSCOPE_NO_CACHE, or TPUSCOPE_CACHE_MAX=0) runs still download, into
a temporary folder kept for this session only and removed when the process exits.

Every failure becomes one ProfileError sentence naming the URL: no credentials, a bucket that does not
exist, permission denied, a network that drops mid-download, a URL scheme nobody installed.
`fsspec` and the scheme's filesystem (`gcsfs` for gs://) are the optional `cloud` extra.

Retry policy. A storage server that cannot be reached at all is not retried: before any request the
server's name is resolved and one TCP connection is opened to it (`probe_endpoint`, CONNECT_TIMEOUT_S
for each step), so no network, a name that does not resolve or a refused connection is one sentence
within seconds, where gcsfs would retry each request 6 times over about 30 s of back-off. Once the
server answers, failures keep gcsfs's own policy (gcsfs/retry.py): HTTP 408, 429 and 5xx and dropped
connections are retried up to 6 times with exponential back-off (1, 2, 4, 8, 16 s plus jitter);
401, 403 and 404 are not retried.
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import shutil
import socket
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit

from tpuscope.errors import LoadCancelled, ProfileError
from tpuscope.model.hosts import natural_key
from tpuscope.model.records import record
from tpuscope.readers import formats_help, host_from_filename, listed_suffixes
from tpuscope.readers.registry import ProgressCallback
from tpuscope.store import cache_limit, identity, layout

# logdir/<sub>/plugins/profile/<run>/<host>.xplane.pb and a little more, as for local logdirs.
MAX_SEARCH_DEPTH = 6
# Parallel downloads: host files are independent objects and cloud storage serves them side by side.
FETCH_WORKERS = 8
_CHUNK_BYTES = 4 << 20
_INSTALL_HINT = "pip install 'tpuscope[cloud]'"


@record(frozen=True)
class RemoteFile:
    """One profile object: where it is, how big, and the version that keys the local copy."""

    url: str
    size: int
    version: str

    @property
    def name(self) -> str:
        return PurePosixPath(self.url.split("://", 1)[1]).name

    @property
    def host(self) -> str:
        return host_from_filename(PurePosixPath(self.name))


@record(frozen=True)
class RemoteRun:
    """One profiling session in the bucket: a folder with one file per host."""

    name: str
    folder: str
    files: tuple[RemoteFile, ...]

    @property
    def hosts(self) -> list[str]:
        return [f.host for f in self.files]

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


def list_remote_runs(url: str) -> list[RemoteRun]:
    """All runs under `url`, oldest first, from the listing alone (nothing is downloaded).

    `url` may be one profile object, a run folder or a logdir, as for local paths.
    """
    fs, root = _filesystem(url)
    fs.invalidate_cache()  # a long-lived app must see runs and hosts written since the last listing
    with _ErrorsAsProfileErrors(url):
        try:
            info = fs.info(root)
        except FileNotFoundError:
            raise ProfileError(url, _why_missing(fs, url)) from None
        if info.get("type") == "file":
            if not root.endswith(listed_suffixes()):
                raise ProfileError(url, f"it is not a profile file (profiles are {formats_help()})")
            remote = _remote_file(fs, root, info)
            return [RemoteRun(remote.host, _parent_url(fs, root), (remote,))]
        found = fs.find(root, maxdepth=MAX_SEARCH_DEPTH, detail=True)
    per_folder: dict[str, list[RemoteFile]] = {}
    suffixes = listed_suffixes()  # the registry's, once for the whole listing
    for path, detail in sorted(found.items()):
        if detail.get("type") == "file" and path.endswith(suffixes):
            folder = str(PurePosixPath(path).parent)
            per_folder.setdefault(folder, []).append(_remote_file(fs, path, detail))
    for files in per_folder.values():  # host2 before host10, as a local run's files
        files.sort(key=lambda remote: (natural_key(remote.name), remote.url))
    if not per_folder:
        raise ProfileError(url, f"no profiles were found under this URL (looked for: {formats_help()})")
    # Run folders are named by capture time (YYYY_MM_DD_HH_MM_SS), so the name orders them.
    runs = [
        RemoteRun(PurePosixPath(folder).name, fs.unstrip_protocol(folder), tuple(files))
        for folder, files in sorted(per_folder.items(), key=lambda item: PurePosixPath(item[0]).name)
    ]
    return runs


def choose_run(url: str, runs: list[RemoteRun], run: str | None) -> RemoteRun:
    """The run named `run`, else the newest."""
    if run is None:
        return runs[-1]
    for candidate in runs:
        if candidate.name == run:
            return candidate
    names = ", ".join(r.name for r in runs)
    raise ProfileError(url, f"there is no run named {run!r} (runs: {names})")


@record(frozen=True)
class FetchedRun:
    """A remote run mirrored in a local folder: exactly its host files, each with its URL."""

    folder: Path
    files: tuple[Path, ...]
    urls: tuple[str, ...]


def fetch_run(
    url: str,
    run: str | None = None,
    progress: ProgressCallback | None = None,
    cache_root: Path | None = None,
    workers: int = FETCH_WORKERS,
) -> FetchedRun:
    """Local copies of the chosen run's host files, fetched in parallel where not cached yet.

    The local folder mirrors the run: a host file the bucket no longer lists is removed from it.
    Raises ProfileError on any storage failure and LoadCancelled when `progress` returns False; in
    both cases the files fetched completely stay cached and no partial file is left behind.
    """
    chosen = choose_run(url, list_remote_runs(url), run)
    folder = (cache_root or remote_cache_dir()) / _folder_key(chosen.folder)
    folder.mkdir(parents=True, exist_ok=True)
    targets = [(remote, folder / remote.name) for remote in chosen.files]
    missing = [(remote, local) for remote, local in targets if not _is_current(remote, local)]
    total = sum(remote.size for remote, _ in missing) or 1
    done_bytes = [0]
    lock = threading.Lock()
    cancelled = threading.Event()

    def advance(count: int, name: str) -> None:
        with lock:
            done_bytes[0] += count
            fraction = done_bytes[0] / total
        if progress is not None and progress(min(1.0, fraction), f"downloading {name}") is False:
            cancelled.set()

    if missing:
        fs, _ = _filesystem(url)
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(missing)))) as pool:
            futures = [
                pool.submit(_download, fs, remote, local, advance, cancelled) for remote, local in missing
            ]
            first_error: BaseException | None = None
            for future in as_completed(futures):
                error = future.exception()
                if error is not None and first_error is None:
                    first_error = error
                    cancelled.set()  # stop the other downloads: the run cannot open without this host
        if cancelled.is_set() and first_error is None:
            raise LoadCancelled()
        if isinstance(first_error, LoadCancelled):
            raise first_error
        if first_error is not None:
            if isinstance(first_error, ProfileError):
                raise first_error
            raise _as_profile_error(url, first_error) from None
    _remove_stale(folder, {local.name for _, local in targets})
    return FetchedRun(folder, tuple(local for _, local in targets), tuple(r.url for r, _ in targets))


def _remove_stale(folder: Path, keep: set[str]) -> None:
    suffixes = listed_suffixes()
    for entry in folder.iterdir():
        if entry.name.endswith(suffixes) and entry.name not in keep:
            entry.unlink(missing_ok=True)
            _version_file(entry).unlink(missing_ok=True)


def remote_cache_dir() -> Path:
    """Where fetched host files live: the store's `downloads` folder, so a run is fetched once for
    every later session; with caching off, a folder of this session's (`_session_downloads`)."""
    if cache_limit.caching_on():
        return layout.folder(layout.DOWNLOADS)
    return _session_downloads()


_session_folder: Path | None = None
_session_lock = threading.Lock()


def _session_downloads() -> Path:
    """A temporary folder removed at exit: the opened trace, and the pod page's workers, read the
    host files while the process runs, so they cannot go sooner; nothing is kept for a later one."""
    global _session_folder
    with _session_lock:
        if _session_folder is None:
            _session_folder = Path(tempfile.mkdtemp(prefix="tpuscope-downloads-"))
            atexit.register(shutil.rmtree, _session_folder, ignore_errors=True)
        return _session_folder


def _download(fs, remote: RemoteFile, local: Path, advance, cancelled: threading.Event) -> None:
    partial = local.with_name(f".{local.name}.{os.getpid()}.{threading.get_ident()}.part")
    path = remote.url.split("://", 1)[1] if _strips_protocol(fs) else remote.url
    received = 0
    try:
        with _ErrorsAsProfileErrors(remote.url, what=f"downloading {remote.name}"):
            with fs.open(path, "rb", block_size=_CHUNK_BYTES) as source, open(partial, "wb") as sink:
                while True:
                    if cancelled.is_set():
                        raise LoadCancelled()
                    chunk = source.read(_CHUNK_BYTES)
                    if not chunk:
                        break
                    sink.write(chunk)
                    received += len(chunk)
                    advance(len(chunk), remote.name)
        if received != remote.size:
            raise ProfileError(
                remote.url,
                f"the download ended after {received:,} of {remote.size:,} bytes (the connection dropped)",
            )
        os.replace(partial, local)
        _version_file(local).write_text(_object_identity(remote))
    finally:
        partial.unlink(missing_ok=True)


def _is_current(remote: RemoteFile, local: Path) -> bool:
    try:
        fetched_from = _version_file(local).read_text()
        return local.stat().st_size == remote.size and fetched_from == _object_identity(remote)
    except OSError:
        return False


def _object_identity(remote: RemoteFile) -> str:
    """What the local copy was fetched from (`tpuscope.store.identity`): URL, size and generation."""
    return identity.object_identity(remote.url, remote.size, remote.version)


def _version_file(local: Path) -> Path:
    return local.with_name(f".{local.name}.version")


def _folder_key(folder_url: str) -> str:
    """A readable and unique local folder name for a remote run folder (its URL's key: a run is
    fetched into the same folder whatever its objects' generations, and refreshed there)."""
    digest = identity.key_of([folder_url], salt=layout.DOWNLOADS)
    tail = re.sub(r"[^A-Za-z0-9_.-]+", "_", PurePosixPath(folder_url.split("://", 1)[-1]).name)[:60]
    return f"{tail}-{digest}"


def _why_missing(fs, url: str) -> str:
    bucket = _bucket_of(url)
    if bucket and _strips_protocol(fs):
        try:
            exists = fs.exists(bucket)
        except Exception:  # noqa: BLE001 - the bucket probe is only for a better sentence
            exists = True
        if not exists:
            return f"the bucket {bucket!r} does not exist"
    return "nothing exists at this URL"


def _remote_file(fs, path: str, detail: dict[str, Any]) -> RemoteFile:
    version = (
        detail.get("generation") or detail.get("etag") or detail.get("ETag") or detail.get("mtime") or ""
    )
    return RemoteFile(fs.unstrip_protocol(path), int(detail.get("size") or 0), str(version))


def _parent_url(fs, path: str) -> str:
    return fs.unstrip_protocol(str(PurePosixPath(path).parent))


def _strips_protocol(fs) -> bool:
    """Object-store filesystems take paths without their scheme; HTTP takes whole URLs."""
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol not in ("http", "https")


def _quiet_storage_loggers() -> None:
    """gcsfs logs every retry with a traceback; the user gets our one sentence instead.

    A NullHandler keeps Python's last-resort handler from printing them when the application has
    configured no logging; an application that has keeps its own handlers.
    """
    for name in ("gcsfs", "fsspec", "google", "aiohttp"):
        logger = logging.getLogger(name)
        if not logger.handlers:
            logger.addHandler(logging.NullHandler())


# gcsfs first asks Google's gRPC endpoint whether a bucket is hierarchical/zonal and waits up to 60 s
# for an answer where gRPC cannot get through (a GCS emulator, some proxies) before using the JSON API
# anyway (gcsfs/__init__.py reads this variable). Listing and reading profiles need only the JSON API.
_GCSFS_BUCKET_TYPE_PROBE_ENV = "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"


# The endpoint probe's limit for resolving the server's name and, again, for connecting to it.
CONNECT_TIMEOUT_S = 4.0
# Where gs:// requests go: the emulator variable Google's client libraries and gcsfs honour, else the
# JSON API's host in the configured universe (gcsfs/core.py `_location`).
_EMULATOR_ENV = "STORAGE_EMULATOR_HOST"
_UNIVERSE_ENV = "GOOGLE_CLOUD_UNIVERSE_DOMAIN"


def storage_endpoint(url: str) -> tuple[str, int] | None:
    """(host, port) that requests for `url` go to, where it is known (gs:// and http(s)://)."""
    scheme = url.split("://", 1)[0].lower()
    if scheme in ("gs", "gcs"):
        emulator = os.environ.get(_EMULATOR_ENV, "")
        if emulator not in ("", "default"):
            target = emulator if "://" in emulator else f"http://{emulator}"
        else:
            target = f"https://storage.{os.environ.get(_UNIVERSE_ENV) or 'googleapis.com'}"
    elif scheme in ("http", "https"):
        target = url
    else:
        return None
    parts = urlsplit(target)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    return (parts.hostname, port) if parts.hostname else None


def probe_endpoint(url: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Raises ProfileError at once when the storage server of `url` cannot be reached (see the
    module's retry policy): its name does not resolve, it refuses the connection, or it does not
    answer within `timeout_s`. Reaching it proves nothing more; requests then follow gcsfs's retries."""
    endpoint = storage_endpoint(url)
    if endpoint is None:
        return
    host, port = endpoint
    found: list = []
    failed: list[BaseException] = []

    def resolve() -> None:
        try:
            found.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except OSError as error:
            failed.append(error)

    resolver = threading.Thread(target=resolve, daemon=True)  # getaddrinfo has no timeout of its own
    resolver.start()
    resolver.join(timeout_s)
    if failed or not found:
        detail = f" ({failed[0]})" if failed else f" (no answer within {timeout_s:.0f} s)"
        raise ProfileError(
            url,
            f"the storage server's name {host} does not resolve (no network, no DNS or no such server)"
            f"{detail}",
        )
    family, kind, proto, _, address = found[0]
    try:
        with socket.socket(family, kind, proto) as connection:
            connection.settimeout(timeout_s)
            connection.connect(address)
    except ConnectionRefusedError:
        raise ProfileError(url, f"the storage server {host}:{port} refused the connection") from None
    except TimeoutError:
        raise ProfileError(
            url, f"the storage server {host}:{port} did not answer within {timeout_s:.0f} s (no network?)"
        ) from None
    except OSError as error:
        raise ProfileError(
            url, f"the network connection to {host}:{port} failed ({error.strerror or error})"
        ) from None


def _filesystem(url: str):
    _quiet_storage_loggers()
    os.environ.setdefault(_GCSFS_BUCKET_TYPE_PROBE_ENV, "false")
    probe_endpoint(url)
    try:
        import fsspec
    except ImportError:
        raise ProfileError(url, f"opening URLs needs the optional cloud support ({_INSTALL_HINT})") from None
    scheme = url.split("://", 1)[0].lower()
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ImportError as error:
        package = getattr(error, "name", None) or "its filesystem package"
        raise ProfileError(url, f"{scheme}:// URLs need {package} ({_INSTALL_HINT})") from None
    except ValueError as error:
        if "protocol" in str(error).lower():
            raise ProfileError(url, f"no storage system is known for {scheme}:// URLs") from None
        raise ProfileError(url, f"the URL is not valid ({error})") from None
    except Exception as error:  # noqa: BLE001 - credential and configuration failures of any backend
        raise _as_profile_error(url, error) from None
    return fs, path


class _ErrorsAsProfileErrors:
    """Turns a storage exception inside the block into one ProfileError sentence."""

    def __init__(self, url: str, what: str = ""):
        self.url = url
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> Literal[False]:
        if error is None or isinstance(error, (ProfileError, LoadCancelled, KeyboardInterrupt)):
            return False
        if isinstance(error, Exception):
            raise _as_profile_error(self.url, error, self.what) from None
        return False


def _as_profile_error(url: str, error: BaseException, what: str = "") -> ProfileError:
    """One sentence for a storage failure, from the exception's kind and HTTP status."""
    code = getattr(error, "code", None) or getattr(error, "status", None)
    text = str(error)
    kind = type(error).__name__
    if kind in ("DefaultCredentialsError", "RefreshError") or code == 401:
        return ProfileError(
            url,
            "no valid cloud credentials were found (run `gcloud auth application-default login` "
            "or set GOOGLE_APPLICATION_CREDENTIALS)",
        )
    # gcsfs raises OSError("Forbidden: ...") for HTTP 403 (gcsfs/retry.py validate_response).
    if code == 403 or isinstance(error, PermissionError) or text.startswith("Forbidden"):
        return ProfileError(url, "permission denied: these credentials may not read this bucket or object")
    if isinstance(error, FileNotFoundError) or code == 404:
        return ProfileError(url, "nothing exists at this URL (it was removed while being read)")
    if _is_network_error(error):
        where = f" while {what}" if what else ""
        return ProfileError(url, f"the network connection failed{where} ({_short(text) or kind})")
    return ProfileError(url, f"the storage request failed ({kind}: {_short(text)})")


def _is_network_error(error: BaseException) -> bool:
    if isinstance(error, (ConnectionError, TimeoutError, OSError)):
        return True
    module = type(error).__module__
    return module.startswith(("aiohttp", "asyncio", "requests", "urllib3"))


def _bucket_of(url: str) -> str:
    rest = url.split("://", 1)[-1]
    return rest.split("/", 1)[0]


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
