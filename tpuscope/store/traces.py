"""A columnar cache of loaded traces, so re-opening an unchanged profile is instant.

Keyed by its source files' identity (`tpuscope.store.identity`: resolved path, size, modification
time), with the cache format's version in the entry's name, stored in the store's `traces` folder
(`tpuscope.store.layout`), under the one switch and cap of every cache (`tpuscope.store.cache_limit`).

Format: one file per trace. The object graph (planes, tracks, string table) is pickled with
protocol 5 and its numpy columns go *out of band*: their raw bytes follow the pickle, each 64-byte
aligned. Re-opening maps the file (copy-on-write) and hands pickle those mapped bytes, so every
column is a zero-copy view of the page cache: the cost is the small object graph, not the size of
the trace (1M or 10M events: ~2 ms). Columns stay writable; a write copies only the touched page.

    [header: magic, format version, label length, pickle length, buffer count, total length,
             checksum of the header, label, pickle and buffer table]
    [label: JSON, what `tpuscope cache` shows, and the source files' fingerprints][pickle]
    [buffer table: (offset, length, checksum) int64 triples][padding][buffers...]

An entry proves itself before it is used: the header's checksum, the sources' content fingerprints
(`tpuscope.store.identity.content_fingerprint`: a profile rewritten in place with the same size and
mtime is not the one cached) and a checksum per column buffer (`buffer_checksum`), all checked on
open. Any failed check drops the entry, says so once and the profile is decoded again (and cached
anew); a damaged entry never reaches pickle or the analysis. The entry and its partial file are
opened only as regular files (`identity.open_regular`: a FIFO, device or link in their place is
removed, never waited on).

The answer never waits for the cache. Writing a 10M-event entry (370 MB) took 0.1-1.3 s on this
machine, as long as decoding the file (benchmarks/README.md, "The trace cache"). So `store` pickles
the small graph on the caller's thread (the trace may change once returned: its sources are set by
the opener) and a background thread writes the columns while the caller prints or draws. A process
that exits before the write is done hands it, at exit, to a detached child that continues from the
same open file (Linux: `os.fork`; the child touches no lock another thread may hold: it only writes
bytes and renames); elsewhere the exit waits for it.

Nothing partial is ever an entry: an entry is written under `.<name>.partial`, locked (flock) while
written, and renamed into place when complete; two processes writing the same trace: the second
sees the lock and leaves it to the first. The header is written last, once the buffers' checksums
are known. A cache that cannot be read or written, or an entry that fails its checks, costs one
warning on stderr at most and the trace opens from its files.

Bounded: the whole store holds at most `size_limit()` bytes (TPUSCOPE_CACHE_MAX, the app's setting,
or by default the smaller of 4 GiB and a quarter of the disk's free space); least-recently-used
entries of any kind (a hit touches its entry's mtime) are removed when a new one is written
(`tpuscope.store.bound`), and so are trace entries of older formats and partial files no writer holds.
"""

from __future__ import annotations

import errno
import json
import mmap
import os
import pickle
import re
import stat
import struct
import sys
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tpuscope.model.records import record
from tpuscope.model.trace import Trace
from tpuscope.store import bound, cache_limit, identity, inventory, layout
from tpuscope.store.bound import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES  # the cap's defaults, for callers
from tpuscope.store.bound import FREE_DISK_SHARE as FREE_DISK_SHARE
from tpuscope.store.bound import MIN_FREE_BYTES as MIN_FREE_BYTES
from tpuscope.store.cache_limit import MAX_ENV as MAX_ENV  # the limit's settings, for callers of the cache
from tpuscope.store.cache_limit import parse_size as parse_size
from tpuscope.store.cache_limit import set_size_limit as set_size_limit

FORMAT_VERSION = 16  # 3: Trace.load_warnings; 4: TrackKind per track, plane identity, trace dialect;
# 5: the dialect's op families (a pickled dialect keeps the fields it was written with); 7: the
# dialect's new event classes and compile, version and framework-op names, and the plane identity's
# `sparse_core`; 8: the dialect's program decoders (pickled by reference) and allocator names; 9: the
# dialect's input and DCN event classes and barrier names; 10: the dialect's program-code decoder;
# 11: PyTorch kernels' Python source and stack stats; 12: the header holds the version, the total
# length and a label, the version is in the entry's name, the key is the files' identity alone;
# 13: checksums of the header and of each column buffer, the sources' fingerprints in the label;
# 14: Trace.load_losses (what a salvaged load is missing, measured); 15: Kineto's records with no
# pid or tid in a group and track with names ("Trace markers"); 16: PyTorch kernels' name scope holds
# the record_function ranges and nn.Module calls around their CPU ops
_MAGIC = b"TPUSCOPC"  # formats up to 11 began b"TPUSCOPE" and a pickle length
# magic, version, label length, pickle length, buffers, total length, checksum (then 4 bytes unused)
_HEADER = struct.Struct("<8sIIqqqI4x")
_TABLE_COLUMNS = 4  # offset, length and the two sums of each buffer's checksum (`buffer_checksum`)
# The checksum's weighted sum counts the buffer's words in blocks of this size (a write piece holds
# whole blocks, so the writer sums piece by piece what the reader sums at once).
CHECKSUM_BLOCK_BYTES = 32 << 10
_LABEL_MAX_BYTES = 1 << 20  # a label longer than this is not ours (`read_label`)
_ALIGNMENT = 64  # numpy's preferred alignment for SIMD loops over the mapped columns
ENTRY_SUFFIX = ".trace"
PARTIAL_SUFFIX = ".partial"
_ENTRY_NAME = re.compile(r"^([0-9a-f]{16})-v(\d+)\.trace$")
# Entries of formats up to 11: a 16-hex key (two zlib checksums) or, before that, 32 hex of SHA-256.
_OLD_ENTRY_NAME = re.compile(r"^(?:[0-9a-f]{16}|[0-9a-f]{32})\.trace$")
# Columns are written in pieces of this size, so a writer stops within one piece when told to (whole
# checksum blocks: CHECKSUM_BLOCK_BYTES divides it).
WRITE_PIECE_BYTES = 16 << 20
assert WRITE_PIECE_BYTES % CHECKSUM_BLOCK_BYTES == 0
# A detached writer that has not finished in this time is stuck (a full, hung network disk): its
# default SIGALRM ends it, and its partial file is removed by the next writer (our heuristic).
DETACHED_TIME_LIMIT_S = 1800
_warned = False
_writers: list[_Writer] = []
_writers_lock = threading.Lock()
_exit_hook_registered = False


def _stderr_warning(sentence: str) -> None:
    print(f"tpuscope: warning: {sentence}", file=sys.stderr)


warn: Callable[[str], None] = _stderr_warning  # where the one warning goes (the app may set its own)


def _warn_once(sentence: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        try:
            warn(sentence)
        except (OSError, ValueError):  # stderr closed: the warning is not worth a failure
            pass


def cache_dir() -> Path:
    """The folder of trace entries: `traces` in the store's root (TPUSCOPE_CACHE_DIR, else the
    user's cache folder)."""
    return layout.folder(layout.TRACES)


def key(files: list[Path]) -> str | None:
    """The files' identity (`tpuscope.store.identity`) as 16 hex digits; None when one cannot be
    read. Stable across cache formats: the version is in the entry's name, not in the key."""
    return identity.files_key(files)


def entry_name(files_key: str) -> str:
    return f"{files_key}-v{FORMAT_VERSION}{ENTRY_SUFFIX}"


def configured_limit() -> tuple[int | None, str]:
    """The explicit cap and where it comes from, or (None, 'default'); a bad TPUSCOPE_CACHE_MAX warns."""
    limit, source, problem = cache_limit.configured_limit()
    if problem:
        _warn_once(problem)
    return limit, source


def size_limit() -> int:
    """Bytes the whole store may hold (`tpuscope.store.bound.size_limit`); a bad TPUSCOPE_CACHE_MAX warns."""
    configured_limit()
    return bound.size_limit()


def _enabled() -> bool:
    configured_limit()  # a bad TPUSCOPE_CACHE_MAX: one warning, then the switch ignores it too
    return cache_limit.caching_on()


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGNMENT) * _ALIGNMENT


# ----- reading ------------------------------------------------------------------------------------


def load(files: list[Path]) -> Trace | None:
    """The cached trace of `files`, or None: no entry, caching off, or an entry that failed a check
    (then it is removed, and one warning says why)."""
    if not _enabled():
        return None
    files_key = key(files)
    if files_key is None:
        return None
    path = cache_dir() / entry_name(files_key)
    try:
        descriptor = identity.open_regular(path)
    except OSError as error:
        if error.errno in _NO_ENTRY:  # no entry, or not ours to remove: the folder's owner must fix it
            return None
        _drop(path, None, "not a regular file")
        return None
    try:
        entry_stat = os.fstat(descriptor)
        mapped = mmap.mmap(descriptor, 0, access=mmap.ACCESS_COPY) if entry_stat.st_size else None
    except (OSError, ValueError):
        os.close(descriptor)
        return None
    os.close(descriptor)
    if mapped is None:
        _drop(path, entry_stat, "empty")
        return None
    fingerprints = identity.files_fingerprints(files)
    if fingerprints is None:
        return None
    try:
        trace = _decode(mapped, fingerprints)
    except _FailedCheck as failure:
        _drop(path, entry_stat, failure.reason)
        return None
    bound.touch(path)  # least recently used goes first when the store is full
    return trace


# Errors that say there is no entry, or none that can be read, not that it is wrong: a miss, and
# whatever is there is left where it is.
_NO_ENTRY = {errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EPERM}


class _FailedCheck(Exception):
    """An entry that is not what its header, checksums or fingerprints say: `reason` in a few words."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _drop(path: Path, read: os.stat_result | None, reason: str) -> None:
    """Removes an entry that failed a check (unless another process has put a new one in its place
    meanwhile: `read` is what was checked) and says so once."""
    removed = False
    try:
        now = os.lstat(path)
        if read is None or (now.st_ino, now.st_dev) == (read.st_ino, read.st_dev):
            if stat.S_ISDIR(now.st_mode):
                os.rmdir(path)  # only an empty folder: anything in it is not ours to remove
            else:
                os.unlink(path)  # a link or a FIFO goes, not what it names
            removed = True
    except OSError:
        pass
    outcome = "it was removed" if removed else "it could not be removed"
    _warn_once(
        f"the trace cache entry {path} was {reason}: {outcome}, and the profile is read from its files."
    )


def has_entry(files: list[Path]) -> bool:
    """Whether `load(files)` will find an entry, from its name alone (nothing is read): for a caller
    that plans other work around the load (`tpuscope sql` overlaps a decode, not a cache hit)."""
    if not _enabled():
        return False
    files_key = key(files)
    return files_key is not None and (cache_dir() / entry_name(files_key)).is_file()


def _header_checksum(fields: tuple, rest: memoryview) -> int:
    """CRC-32 of the header's fields (its checksum as 0), then of the label, pickle and buffer table."""
    return zlib.crc32(rest, zlib.crc32(_HEADER.pack(*fields, 0)))


def buffer_checksum(
    data: memoryview, first_block: int = 0, buffer_bytes: int | None = None
) -> tuple[int, int]:
    """Two 64-bit checksums of a column buffer (`data`, or a piece of a buffer of `buffer_bytes` that
    begins at its block `first_block`: the pieces' checksums add up to the buffer's, modulo 2**64).

    A buffer of less than CHECKSUM_BLOCK_BYTES (one piece): its CRC-32, and 0. A larger one: the sum
    of its little-endian 64-bit words, modulo 2**64, and the sum of each block's sum weighted by the
    block's place (1, 2, ...); the bytes after the last whole word count as one more word,
    zero-padded. Any change to one word changes the sum; a moved or zeroed block changes the
    weighted sum too. Why not CRC-32 throughout: numpy sums the mapped words at memory speed, where
    CRC-32 ran at ~1 GB/s here, 0.42 s of a 10M-event entry (370 MB), more than the whole re-open
    took without it; and why CRC-32 for small ones: numpy's calls cost ~15 us a buffer, 30 ms of
    the 2,155 buffers of a small sample's entry, where zlib's costs ~1 us."""
    if (len(data) if buffer_bytes is None else buffer_bytes) < CHECKSUM_BLOCK_BYTES:
        return zlib.crc32(data), 0
    words = len(data) // 8
    per_block = CHECKSUM_BLOCK_BYTES // 8
    whole_blocks = words // per_block
    values = np.frombuffer(data, dtype="<u8", count=words)
    sums = np.empty(whole_blocks + 1, dtype=np.uint64)
    values[: whole_blocks * per_block].reshape(whole_blocks, per_block).sum(
        axis=1, dtype=np.uint64, out=sums[:-1]
    )
    tail = int.from_bytes(bytes(data[words * 8 :]), "little")
    sums[-1] = (int(values[whole_blocks * per_block :].sum(dtype=np.uint64)) + tail) & _WORD_MASK
    weights = np.arange(first_block + 1, first_block + len(sums) + 1, dtype=np.uint64)
    return int(sums.sum(dtype=np.uint64)), int((sums * weights).sum(dtype=np.uint64))


_WORD_MASK = (1 << 64) - 1


def _decode(mapped: mmap.mmap, fingerprints: list[str]) -> Trace:
    """The trace in a mapped entry, once every check has passed; _FailedCheck says which did not."""
    view = memoryview(mapped)
    if len(view) < _HEADER.size:
        raise _FailedCheck("cut short")
    *fields, checksum = _HEADER.unpack_from(view, 0)
    magic, version, label_length, pickle_length, n_buffers, total = fields
    if magic != _MAGIC or version != FORMAT_VERSION:
        raise _FailedCheck("not an entry of this format")
    if total != len(view):
        raise _FailedCheck("cut short" if len(view) < total else "longer than its header says")
    start = _HEADER.size + label_length
    table_start = start + pickle_length
    table_end = table_start + 8 * _TABLE_COLUMNS * n_buffers
    if min(label_length, pickle_length, n_buffers) < 0 or table_end > len(view):
        raise _FailedCheck("damaged (its header is out of range)")
    if _header_checksum(tuple(fields), view[_HEADER.size : table_end]) != checksum:
        raise _FailedCheck("damaged (its header does not match its checksum)")
    try:
        label = json.loads(bytes(view[_HEADER.size : start]))
    except ValueError:
        raise _FailedCheck("damaged (its label is not JSON)") from None
    if not isinstance(label, dict) or label.get("fingerprints") != fingerprints:
        raise _FailedCheck(
            "made from other contents of the profile (rewritten since, with the same size and time)"
        )
    table = np.frombuffer(view[table_start:table_end], dtype="<u8").reshape(-1, _TABLE_COLUMNS)
    offsets, lengths = table[:, 0], table[:, 1]
    size = np.uint64(len(view))
    if (
        (offsets < table_end).any()
        or (offsets > size).any()
        or (lengths > size - np.minimum(offsets, size)).any()
    ):
        raise _FailedCheck("damaged (its buffer table is out of range)")
    buffers = []
    for index, (offset, length, *expected) in enumerate(table.tolist()):
        buffer = view[offset : offset + length]
        if buffer_checksum(buffer) != tuple(expected):
            raise _FailedCheck(f"damaged (column buffer {index} of {n_buffers} does not match its checksum)")
        buffers.append(buffer)
    try:
        trace = pickle.loads(view[start:table_start], buffers=buffers)
    except Exception as error:  # noqa: BLE001 - checked bytes that still do not unpickle: a code change
        raise _FailedCheck(f"not readable by this tpuscope ({type(error).__name__})") from None
    if not isinstance(trace, Trace):
        raise _FailedCheck("not a trace")
    return trace


def read_label(path: Path) -> tuple[int, dict] | None:
    """An entry's format version and label (sources, events), or None when it is not one of ours."""
    try:
        with os.fdopen(identity.open_regular(path), "rb") as handle:
            head = handle.read(_HEADER.size)
            magic, version, label_length, *_ = _HEADER.unpack(head)
            if magic != _MAGIC or not 0 <= label_length < _LABEL_MAX_BYTES:
                return None
            label = json.loads(handle.read(label_length)) if version == FORMAT_VERSION else {}
    except (OSError, struct.error, ValueError):
        return None
    return version, label if isinstance(label, dict) else {}


# ----- writing ------------------------------------------------------------------------------------


@record
class _Layout:
    """What an entry holds besides its buffers' bytes, and where each buffer goes."""

    label: bytes
    graph: bytes
    offsets: list[tuple[int, int]]  # (offset, length) of each buffer
    total: int

    def head(self, checksums: list[tuple[int, int]]) -> bytes:
        """Header, label, pickle and buffer table, once every buffer's checksum is known."""
        table = np.array([(offset, length, *checksum) for (offset, length), checksum
                          in zip(self.offsets, checksums, strict=True)], dtype="<u8")  # fmt: skip
        fields = (_MAGIC, FORMAT_VERSION, len(self.label), len(self.graph), len(self.offsets), self.total)
        rest = b"".join([self.label, self.graph, table.reshape(-1, _TABLE_COLUMNS).tobytes()])
        return _HEADER.pack(*fields, _header_checksum(fields, memoryview(rest))) + rest


class _Writer:
    """One entry being written: its locked partial file and the pieces still to write. Each piece's
    checksum is taken as it is written; the head goes last, with the buffers' checksums."""

    def __init__(self, folder: Path, name: str, descriptor: int, layout: _Layout,
                 pieces: list[tuple[int, int, memoryview]]):  # fmt: skip
        self.folder = folder
        self.name = name
        self.partial = folder / f".{name}{PARTIAL_SUFFIX}"
        self.descriptor = descriptor
        self.layout = layout
        self.pieces = pieces  # (buffer index, offset in the file, bytes)
        self.checksums = [(0, 0)] * len(layout.offsets)  # summed piece by piece
        self.total = layout.total
        self.next_piece = 0
        self.prepared = False
        self.finished = False
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def run(self) -> None:
        """Writes what is left (until `stop`), then renames the entry into place and prunes."""
        try:
            if not self.prepared:
                self.prepared = True
                if not _make_room(self.folder, self.total, keep=self.name):
                    self.abandon()
                    return
                os.ftruncate(self.descriptor, 0)
            while self.next_piece < len(self.pieces):
                if self.stop.is_set():
                    return
                index, offset, data = self.pieces[self.next_piece]
                _write_at(self.descriptor, data, offset)
                buffer_offset, buffer_bytes = self.layout.offsets[index]
                first_block = (offset - buffer_offset) // CHECKSUM_BLOCK_BYTES
                piece_sum, piece_weighted = buffer_checksum(data, first_block, buffer_bytes)
                done_sum, done_weighted = self.checksums[index]
                self.checksums[index] = ((done_sum + piece_sum) & _WORD_MASK,
                                         (done_weighted + piece_weighted) & _WORD_MASK)  # fmt: skip
                self.next_piece += 1
            _write_at(self.descriptor, memoryview(self.layout.head(self.checksums)), 0)
            os.ftruncate(self.descriptor, self.total)  # the padding, and empty columns at the end
            if _LOCKS:  # renamed while locked, so no other writer takes the name meanwhile
                os.replace(self.partial, self.folder / self.name)
                self.finished = True
                self.close()
            else:  # Windows renames no open file
                self.finished = True
                self.close()
                os.replace(self.partial, self.folder / self.name)
        except OSError as error:
            self.abandon()
            _warn_once(f"the trace cache in {self.folder} could not be written ({error.strerror or error}); "
                       "profiles still open from their files.")  # fmt: skip
        except Exception:  # noqa: BLE001 - a cache never costs the user a traceback; the entry is dropped
            self.abandon()

    def close(self) -> None:
        """Closes the partial file once (a descriptor number closed twice may be another file's)."""
        descriptor, self.descriptor = self.descriptor, -1
        if descriptor >= 0:
            try:
                os.close(descriptor)
            except OSError:
                pass

    def abandon(self) -> None:
        self.finished = True
        if self.descriptor >= 0:  # still ours: the lock is held until the close below
            try:
                os.unlink(self.partial)
            except OSError:
                pass
        self.close()


def _write_at(descriptor: int, data: memoryview, offset: int) -> None:
    written = 0
    while written < len(data):
        if hasattr(os, "pwrite"):
            written += os.pwrite(descriptor, data[written:], offset + written)
        else:  # Windows: one writer per descriptor, so seeking first is the same
            os.lseek(descriptor, offset + written, os.SEEK_SET)
            written += os.write(descriptor, data[written:])


def store(files: list[Path], trace: Trace, wait: bool = False) -> None:
    """Writes `trace`'s entry in the background (or before returning, with `wait`).

    Only the object graph is pickled here; the columns are written by a thread, so the caller's
    answer does not wait for them."""
    if not _enabled():
        return
    files_key = key(files)
    if files_key is None:
        return
    folder = cache_dir()
    name = entry_name(files_key)
    try:
        buffers: list[pickle.PickleBuffer] = []
        graph = pickle.dumps(trace, protocol=5, buffer_callback=buffers.append)
        raws = [b.raw() for b in buffers]
    except (pickle.PicklingError, ValueError, TypeError, AttributeError):
        return
    fingerprints = identity.files_fingerprints(files)
    if fingerprints is None:
        return
    label = json.dumps({"sources": [os.path.abspath(s) for s in files], "events": trace.event_count,
                        "fingerprints": fingerprints}).encode()  # fmt: skip
    table_end = _HEADER.size + len(label) + len(graph) + 8 * _TABLE_COLUMNS * len(raws)
    offsets, position = [], _aligned(table_end)
    for raw in raws:
        offsets.append((position, raw.nbytes))
        position = _aligned(position + raw.nbytes)
    total = offsets[-1][0] + offsets[-1][1] if offsets else table_end
    pieces: list[tuple[int, int, memoryview]] = []
    for index, ((offset, length), raw) in enumerate(zip(offsets, raws, strict=True)):
        for start in range(0, length, WRITE_PIECE_BYTES):
            pieces.append((index, offset + start, raw[start : start + WRITE_PIECE_BYTES]))
    writer = _open_writer(folder, name, _Layout(label, graph, offsets, total), pieces)
    if writer is None:
        return
    if wait:
        writer.run()
        return
    _start(writer)


def _open_writer(folder: Path, name: str, layout: _Layout,
                 pieces: list[tuple[int, int, memoryview]]) -> _Writer | None:  # fmt: skip
    """The entry's partial file, created and locked; None when another writer holds it, the entry is
    already there, or the folder cannot be written (one warning). Whatever is not a regular file in
    the partial file's place (a FIFO, a link) is removed first."""
    partial = folder / f".{name}{PARTIAL_SUFFIX}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _remove_unless_regular(partial)
        descriptor = identity.open_regular(partial, os.O_WRONLY | os.O_CREAT)
    except OSError as error:
        _warn_once(f"the trace cache in {folder} cannot be written ({error.strerror or error}); "
                   "profiles still open from their files.")  # fmt: skip
        return None
    if not _lock(descriptor, exclusive=True, blocking=False):
        os.close(descriptor)  # another process is writing this entry
        return None
    writer = _Writer(folder, name, descriptor, layout, pieces)
    if _is_whole(folder / name):  # written by another process since our miss
        writer.abandon()
        return None
    return writer


def _is_whole(path: Path) -> bool:
    """An entry of this format as long as its header says (one cut short is replaced)."""
    try:
        with os.fdopen(identity.open_regular(path), "rb") as handle:
            magic, version, _, _, _, total, _ = _HEADER.unpack(handle.read(_HEADER.size))
            size = os.fstat(handle.fileno()).st_size
            return magic == _MAGIC and version == FORMAT_VERSION and total == size
    except (OSError, struct.error):
        return False


try:
    import fcntl

    _LOCKS = True
except ImportError:  # Windows: two writers of one entry may race; the rename still keeps it whole
    _LOCKS = False


def _lock(descriptor: int, exclusive: bool, blocking: bool) -> bool:
    if not _LOCKS:
        return True
    flags = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | (0 if blocking else fcntl.LOCK_NB)
    try:
        fcntl.flock(descriptor, flags)
    except BlockingIOError:
        return False
    except OSError:  # a file system without locks: write anyway, the rename keeps entries whole
        return True
    return True


def _start(writer: _Writer) -> None:
    global _exit_hook_registered
    with _writers_lock:
        _writers[:] = [w for w in _writers if not w.finished]
        _writers.append(writer)
        if not _exit_hook_registered:
            import atexit

            atexit.register(_finish_at_exit)
            _exit_hook_registered = True
    writer.thread = threading.Thread(target=writer.run, name="tpuscope-cache-writer", daemon=True)
    writer.thread.start()


def wait_for_writes(folder: Path | None = None) -> None:
    """Returns when this process's entries are written and no other process is writing in `folder`
    (tests and benchmarks; a detached writer holds its partial file's lock until it is done)."""
    with _writers_lock:
        pending = list(_writers)
    for writer in pending:
        if writer.thread is not None:
            writer.thread.join()
    folder = folder or cache_dir()
    try:
        partials = [p for p in folder.iterdir() if p.name.endswith(PARTIAL_SUFFIX)]
    except OSError:
        return
    for partial in partials:
        try:
            descriptor = identity.open_regular(partial)
        except OSError:
            continue  # renamed into place or removed meanwhile, or not a partial file of ours
        try:
            _lock(descriptor, exclusive=False, blocking=True)
        finally:
            os.close(descriptor)


def _finish_at_exit() -> None:
    """At exit, unfinished writes go on in a detached child (Linux) or are waited for (elsewhere)."""
    with _writers_lock:
        pending = [w for w in _writers if not w.finished]
    if not pending:
        return
    detach = sys.platform.startswith("linux") and hasattr(os, "fork")
    for writer in pending:
        if detach:
            writer.stop.set()
        if writer.thread is not None:
            writer.thread.join()
    pending = [w for w in pending if not w.finished]
    if not pending:
        return
    try:
        child = os.fork() if detach else 0
    except OSError:
        child = 0  # no fork: finish here
    if child == 0:
        if detach:
            _detach_from_parent()
        for writer in pending:
            writer.stop.clear()
            writer.run()
        if detach:
            os._exit(0)
        return
    for writer in pending:  # the child holds the same open files, and with them the locks
        writer.close()


def _detach_from_parent() -> None:
    """In the forked child: its own session, no terminal or pipes of the parent, a time limit."""
    import signal

    try:
        os.setsid()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(DETACHED_TIME_LIMIT_S)
        null = os.open(os.devnull, os.O_RDWR)
        for stream in (0, 1, 2):
            os.dup2(null, stream)
        os.close(null)
    except OSError:
        pass
    global warn
    warn = lambda sentence: None  # noqa: E731 (nobody reads a detached child's stderr)


# ----- the bound ----------------------------------------------------------------------------------


@record(frozen=True)
class Entry:
    """A file of the cache folder as `tpuscope cache` lists it."""

    path: Path
    size: int
    last_used: float  # the entry's mtime: touched by each hit
    version: int | None  # None: a partial file, or not a trace entry

    @property
    def current(self) -> bool:
        return self.version == FORMAT_VERSION


def _entry_version(name: str) -> int | None:
    match = _ENTRY_NAME.match(name)
    if match:
        return int(match.group(2))
    if _OLD_ENTRY_NAME.match(name):
        return 0  # format 11 or older: which one the name does not say
    return None


def entries(folder: Path | None = None) -> list[Entry]:
    """The trace entries and partial files directly in the folder (subfolders are other caches')."""
    folder = folder or cache_dir()
    found = []
    try:
        listing = list(os.scandir(folder))
    except OSError:
        return []
    for item in listing:
        version = _entry_version(item.name)
        if version is None and not item.name.endswith(PARTIAL_SUFFIX):
            continue
        try:
            st = item.stat(follow_symlinks=False)
        except OSError:
            continue
        found.append(Entry(Path(item.path), st.st_size, st.st_mtime, version))
    return found


def _make_room(folder: Path, incoming: int, keep: str) -> bool:
    """Removes stale files, then least-recently-used entries of the store until `incoming` bytes fit
    the cap; False when the entry cannot fit (larger than the cap, or the disk would be nearly full)."""
    for entry in entries(folder):
        if entry.path.name == keep or entry.path.name == f".{keep}{PARTIAL_SUFFIX}":
            continue
        if entry.version is None:  # a partial file: removed unless its writer still holds it
            _remove_unheld_partial(entry.path)
        elif entry.version < FORMAT_VERSION:
            entry.path.unlink(missing_ok=True)
    configured_limit()  # a bad TPUSCOPE_CACHE_MAX warns once
    return bound.make_room(incoming, keep=[folder / keep])


def _remove_unless_regular(path: Path) -> None:
    """Removes a FIFO, device, socket, link or empty folder at `path` (a regular file stays)."""
    try:
        found = os.lstat(path)
    except OSError:
        return
    if stat.S_ISREG(found.st_mode):
        return
    try:
        if stat.S_ISDIR(found.st_mode):
            os.rmdir(path)
        else:
            os.unlink(path)
    except OSError:
        pass


def _remove_unheld_partial(path: Path) -> None:
    try:
        descriptor = identity.open_regular(path)
    except FileNotFoundError:
        return
    except OSError:
        _remove_unless_regular(path)
        return
    try:
        if _lock(descriptor, exclusive=True, blocking=False):
            path.unlink(missing_ok=True)
    finally:
        os.close(descriptor)


def clear(folder: Path | None = None) -> tuple[int, int]:
    """Empties the trace folder (its subfolders too: an older layout kept other caches there);
    returns (files, bytes). `tpuscope cache clear` empties every kind (`tpuscope.store.inventory`)."""
    return inventory.empty_folder(folder or cache_dir())


def folder_size(folder: Path | None = None) -> int:
    """Every byte in the trace folder, its subfolders included."""
    return inventory.folder_usage(folder or cache_dir())[1]


def age_words(seconds: float) -> str:
    """'just now', '5 min ago', '3 h ago', '2 days ago' (for `tpuscope cache`)."""
    ago = max(0.0, time.time() - seconds)
    if ago < 60:
        return "just now"
    if ago < 3600:
        return f"{int(ago // 60)} min ago"
    if ago < 86400:
        return f"{int(ago // 3600)} h ago"
    return f"{int(ago // 86400)} days ago"
