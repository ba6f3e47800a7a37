"""Opening a profile path into a Trace: the files of the path's run, the cache, remote runs, progress.

Which reader reads the files is the registry's answer (`tpuscope.readers.READERS`); this module
knows no format.
"""

from __future__ import annotations

from pathlib import Path

from tpuscope.errors import LoadCancelled, ProfileError
from tpuscope.model.trace import Trace
from tpuscope.readers.files import choose_reader, one_format, resolve_profile_files
from tpuscope.readers.registry import ProgressCallback, report_progress
from tpuscope.store import traces
from tpuscope.urls import is_url


def open_trace(
    path: str | Path,
    run: str | None = None,
    progress: ProgressCallback | None = None,
    use_cache: bool = True,
    strict: bool = False,
) -> Trace:
    """Loads a profile file, run folder or logdir (newest run unless `run` names one).

    Raises ProfileError with a one-sentence message on any bad input and
    LoadCancelled when `progress` returns False. A file cut short loads what
    precedes the cut and `Trace.load_warnings` says what is missing; with
    `strict` it is a ProfileError instead, as is a cut file with no event.

    With `use_cache`, an unchanged profile comes from the trace cache; a miss returns as soon as
    the files are read, and the cache entry is written in the background (`tpuscope.store.traces`).
    """
    if is_url(path):
        return _open_remote(str(path), run, progress, use_cache, strict)
    files, notes = one_format(resolve_profile_files(path, run))
    if use_cache:
        cached = traces.load(files)
        # A cached trace that lost something is read again under `strict`: its reader's error is the
        # one sentence, worded as it is without the traces.
        if cached is not None and not (strict and cached.load_warnings):
            cached.sources = list(files)  # as the caller named them this time, not as first cached
            report_progress(progress, 1.0, "loaded from cache")
            return cached
    trace = choose_reader(files).load_files(files, progress, strict)
    trace.warnings.extend(notes)
    if use_cache:
        traces.store(files, trace)
    return trace


def open_bytes(
    data: bytes | bytearray | memoryview,
    name: str | None = None,
    progress: ProgressCallback | None = None,
    strict: bool = False,
) -> Trace:
    """A profile held in memory: an XSpace (`.xplane.pb`, gzip or not) or a trace-event JSON document
    (Kineto, Chrome), read by the reader the registry picks for its first bytes (or for `name`'s
    suffix); the same trace as from a file of those bytes. Never cached (no file identifies it).
    ProfileError (one sentence) as for a file."""
    from tpuscope.readers import reader_for_bytes

    payload = bytes(data)
    if not payload:
        raise ProfileError("<memory>", "the profile is empty (0 bytes)")
    reader, file_name = reader_for_bytes(payload, name)
    return reader.load_bytes(payload, file_name, progress, strict)


def _open_remote(
    url: str, run: str | None, progress: ProgressCallback | None, use_cache: bool, strict: bool
) -> Trace:
    """A bucket's run: its host files fetched into the local cache (in parallel), then opened as a run folder.

    Downloading reports the first half of the progress, decoding the second; errors and the trace's
    sources name the remote objects, not their local copies.
    """

    from tpuscope.store.remote import fetch_run  # hashing, threads, the cloud clients: remote runs only

    def half(offset: float):
        if progress is None:
            return None
        return lambda fraction, message: progress(offset + 0.5 * fraction, message)

    fetched = fetch_run(url, run, half(0.0))
    urls = dict(zip(fetched.files, fetched.urls, strict=True))
    try:
        trace = open_trace(fetched.folder, None, half(0.5), use_cache, strict)
    except ProfileError as error:
        where = urls.get(error.path, url) if isinstance(error.path, Path) else url
        raise ProfileError(where, error.cause) from None
    trace.sources = [urls.get(Path(s), s) for s in trace.sources]
    return trace


__all__ = ["LoadCancelled", "ProfileError", "ProgressCallback", "open_bytes", "open_trace"]
