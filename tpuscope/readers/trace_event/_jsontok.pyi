"""Types of the C extension built from _jsontok.c (see the comments above each function there)."""

from typing import Any, TypeAlias

import numpy as np
from typing_extensions import Buffer as _Buffer

# numpy declares ndarray's buffer protocol (__buffer__) to type checkers only from Python 3.12 on.
Buffer: TypeAlias = _Buffer | np.ndarray[Any, Any]

class Decoder:
    def __init__(self, arg_keys: tuple[bytes, ...], event_args: int, max_depth: int) -> None: ...
    def feed(self, piece: Buffer, final: bool, /) -> str | None: ...
    def finish(self) -> dict[str, Any]: ...
    def held(self) -> int: ...

def renumber(ids: Buffer, size: int, itemsize: int, /) -> tuple[bytes, bytes]: ...
