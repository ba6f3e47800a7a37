"""`record`: tpuscope's dataclasses, with their equality, hash and repr written once here.

A dataclass's generated methods are compiled from source text when its class is defined: on
CPython 3.11 each with an `exec` of its own (`__init__`, `__repr__`, `__eq__`, and for a frozen one
`__hash__`, `__setattr__`, `__delattr__`). That is 0.5 ms for a plain dataclass of six fields and
1 ms for a frozen one (measured on our 2-core machine), and a command defines many: `overview` of
a profile defined 76 (45 ms of a 0.5 s process; 31 ms as records), `info` 25 (benchmarks/README.md,
"Where the single trace stands"). `record` is `dataclasses.dataclass` whose equality, hash and
repr are the functions below, written once and compiled with this module; only `__init__` (and a
frozen record's guards) are still generated per class.

They mean what the generated ones mean (https://docs.python.org/3/library/dataclasses.html):
equality compares two instances of the same class field by field (the fields with `compare`),
a frozen record hashes those fields (`hash` where a field sets it), a mutable one with equality is
unhashable, and the repr names the class and its fields with `repr`. A class that defines one of
these methods itself keeps its own, and `eq=False` keeps identity, as with `dataclass`.
`dataclasses.fields`, `replace` and `asdict` work on a record: it is a dataclass.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar, cast, dataclass_transform, overload

T = TypeVar("T", bound=type)

__all__ = ["record"]


@overload
def record(cls: T, /) -> T: ...


@overload
def record(*, frozen: bool = False, eq: bool = True, kw_only: bool = False) -> Callable[[T], T]: ...


@dataclass_transform(eq_default=True, field_specifiers=(field,))
def record(
    cls: T | None = None, /, *, frozen: bool = False, eq: bool = True, kw_only: bool = False
) -> T | Callable[[T], T]:
    """`@dataclass` (optionally `frozen`, `eq=False`, `kw_only`), with the methods of this module."""

    def wrap(cls: T) -> T:
        own = set(vars(cls))
        made: Any = dataclass(cls, frozen=frozen, eq=False, repr=False, kw_only=kw_only)
        every = fields(made)
        if "__repr__" not in own:
            _define(made, "__repr__", _repr_of([f.name for f in every if f.repr]))
        if eq and "__eq__" not in own:
            _define(made, "__eq__", _eq_of(_values_of([f.name for f in every if f.compare])))
            if "__hash__" not in own:  # as dataclass: a frozen record hashes its fields, a mutable one none
                hashed = [f.name for f in every if (f.compare if f.hash is None else f.hash)]
                if frozen:
                    _define(made, "__hash__", _hash_of(_values_of(hashed)))
                else:
                    made.__hash__ = None
        return cast(T, made)

    return wrap if cls is None else wrap(cls)


def _define(cls: type, name: str, method: Callable) -> None:
    method.__qualname__ = f"{cls.__qualname__}.{name}"
    method.__name__ = name
    setattr(cls, name, method)


def _values_of(names: list[str]) -> Callable[[Any], tuple]:
    """The values of the named fields of an instance, as a tuple (what the generated methods compare)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        name = names[0]
        return lambda self: (getattr(self, name),)
    return lambda self: ()


def _eq_of(values: Callable[[Any], tuple]) -> Callable[[Any, object], bool]:
    def eq(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return values(self) == values(other)

    return eq


def _hash_of(values: Callable[[Any], tuple]) -> Callable[[Any], int]:
    def hash_(self: Any) -> int:
        return hash(values(self))

    return hash_


def _repr_of(names: list[str]) -> Callable[[Any], str]:
    @reprlib.recursive_repr()
    def repr_(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"

    return repr_
