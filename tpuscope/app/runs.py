"""A run's host files, local or in a bucket, as the host-by-host pod analysis reads them.

The CLI (`--per-host`) and the GUI's pod page decide from the same count whether a run is big
enough to be analysed host by host, and read the same files, so both give one answer. The count
comes from the listing alone (a bucket's run is not downloaded to decide); the files of a bucket's
run are its copies in the local cache, fetched in parallel with progress (`storage.remote.fetch_run`).
A JAX run folder with both `<host>.xplane.pb` and `<host>.trace.json.gz` counts each host once.
"""

from __future__ import annotations

from pathlib import Path

from tpuscope.readers.files import one_format, resolve_profile_files
from tpuscope.readers.registry import ProgressCallback
from tpuscope.urls import is_url

# tpuscope.store.remote (sockets, threads, logging, temporary folders: ~12 ms to import) is imported
# only for a URL: every command on a local path asks host_file_count first.


def host_file_count(path: str | Path, run: str | None = None) -> int:
    """How many host files the run at `path` (file, run folder, logdir or URL) has, without reading them."""
    if is_url(path):
        from tpuscope.store.remote import choose_run, list_remote_runs

        chosen = choose_run(str(path), list_remote_runs(str(path)), run)
        return len(one_format([Path(f.name) for f in chosen.files])[0])
    return len(one_format(resolve_profile_files(path, run))[0])


def host_files(
    path: str | Path, run: str | None = None, progress: ProgressCallback | None = None
) -> list[Path]:
    """The run's host files on this machine: a bucket's run is fetched into the local cache first."""
    if is_url(path):
        from tpuscope.store.remote import fetch_run

        files = list(fetch_run(str(path), run, progress).files)
    else:
        files = resolve_profile_files(path, run)
    return one_format(files)[0]
