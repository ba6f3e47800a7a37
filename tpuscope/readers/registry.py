"""What a reader of one file format declares, so that opening, run discovery, the file dialog, the
CLI's help and the cloud listing all learn the formats from one table (`tpuscope.readers.READERS`).

A reader's `load` is imported only when a file of its format is opened: the table itself costs a
command's start nothing but these few objects.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from tpuscope.errors import LoadCancelled
from tpuscope.model.records import record

if TYPE_CHECKING:
    from tpuscope.model.trace import Trace


@record(frozen=True, eq=False)
class MemoryFile:
    """A profile held in memory, handed to a reader's load in place of a file's path (jax-ml/jax#40258
    asks for profiler results without a file round trip). It has what the readers take from a path, a
    `name` (the host's file name, which picks the host label) and a `stem`, and its `data` is what the
    file's bytes (mapped or read) would be: the readers decode either with the same code
    (`tpuscope.readers.files.read_profile_bytes`, `profile_size`). Messages name it `<memory: NAME>`."""

    name: str
    data: bytes

    def __str__(self) -> str:
        return f"<memory: {self.name}>"

    @property
    def stem(self) -> str:
        return PurePath(self.name).stem

    @property
    def parent(self) -> str:
        """Where a run of several files is said to be, for one held in memory: the profile itself."""
        return str(self)


# What a reader's load reads: a file, or a profile held in memory.
ProfileFile = Path | MemoryFile


def source_of(file: ProfileFile) -> Path | str:
    """What `Trace.sources` lists for a file a reader read: its path, or `<memory: NAME>`."""
    return str(file) if isinstance(file, MemoryFile) else file


# progress(fraction_done, what_is_happening) -> False to cancel
ProgressCallback = Callable[[float, str], bool | None]
# load(files, progress, strict) -> Trace; raises ProfileError (one sentence) on bad input
LoadFunction = Callable[[Sequence[ProfileFile], ProgressCallback | None, bool], "Trace"]


@record(frozen=True)
class Reader:
    """One file format.

    `suffixes` are the endings of the format's files in run folders and buckets (what discovery
    lists); `named_suffixes` the further endings a file may have when the user names it directly
    (a plain `.json` file opens, but a run folder's `.json` files are not all profiles). `sniff`
    tells the format from a file's first bytes (gunzipped) when its name does not. `load` is
    "module:function", imported on first use. When a run folder holds files of several formats, only
    those of the reader with the highest `preference` load (JAX writes a JSON twin of every XPlane
    file, with fewer stats). Readers with the same `load` open a run's files
    together (Kineto and other trace-event JSON are one parse with two mappings)."""

    name: str
    title: str  # the format for people: "XPlane" (the file dialog says "XPlane files", notes "XPlane files")
    suffixes: tuple[str, ...]
    sniff: Callable[[bytes], bool]
    load: str
    named_suffixes: tuple[str, ...] = ()
    preference: int = 0

    def load_files(
        self, files: Sequence[ProfileFile], progress: ProgressCallback | None, strict: bool
    ) -> Trace:
        module, _, function = self.load.partition(":")
        loaded: LoadFunction = getattr(importlib.import_module(module), function)
        return loaded(files, progress, strict)

    def load_bytes(self, data: bytes, name: str, progress: ProgressCallback | None, strict: bool) -> Trace:
        """A profile held in memory (`tpuscope.open(data)`), read by this format's `load` from the bytes
        themselves (a `MemoryFile` in place of a file: nothing is written anywhere), named `name` (the
        host the trace is labelled with). The trace's sources, warnings and errors say `<memory: name>`."""
        from tpuscope.errors import ProfileError

        file = MemoryFile(name, data)
        try:
            trace = self.load_files([file], progress, strict)
        except ProfileError as error:  # the reader named the MemoryFile: its str() is the label
            raise ProfileError(str(file), error.cause) from None
        return trace

    @property
    def all_suffixes(self) -> tuple[str, ...]:
        """Every ending a file of this format may have: listed ones and those only named directly."""
        return self.suffixes + self.named_suffixes


def report_progress(progress: ProgressCallback | None, fraction: float, message: str) -> None:
    """Tells `progress` how far a load is (at most 1.0); LoadCancelled when it answers False."""
    if progress is not None and progress(min(1.0, fraction), message) is False:
        raise LoadCancelled()
