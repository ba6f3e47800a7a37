"""`record` means what `dataclass` means: the same equality, hash, repr, immutability and dataclass
functions, class by class against the dataclass it stands for."""

from __future__ import annotations

import dataclasses
from dataclasses import FrozenInstanceError, dataclass, field

import numpy as np
import pytest

from tpuscope.model.records import record


@record(frozen=True)
class Point:
    x: int
    label: str = "a"
    notes: list = field(default_factory=list, compare=False)


@dataclass(frozen=True)
class PointDataclass:
    x: int
    label: str = "a"
    notes: list = field(default_factory=list, compare=False)


@record
class Columns:
    values: np.ndarray
    count: int = 0
    hidden: str = field(default="", repr=False)


@dataclass
class ColumnsDataclass:
    values: np.ndarray
    count: int = 0
    hidden: str = field(default="", repr=False)


@record(frozen=True)
class Single:
    value: int


@record(frozen=True, eq=False)
class Identity:
    value: int


@record
class Child(Columns):
    extra: int = 1


@record
class Node:
    name: str
    children: list = field(default_factory=list)


def _same_repr(ours: object, theirs: object) -> None:
    assert repr(ours) == repr(theirs).replace(type(theirs).__qualname__, type(ours).__qualname__, 1)


def test_frozen_record_equality_hash_and_repr_match_the_dataclass():
    point, twin = Point(1, "b", [1]), PointDataclass(1, "b", [1])
    _same_repr(point, twin)
    assert point == Point(1, "b", [2])  # notes are not compared
    assert point != Point(2, "b") and point != Point(1, "c")
    assert hash(point) == hash(twin) == hash(Point(1, "b", [3]))
    assert point != twin  # another class, as for dataclasses
    assert point.__eq__(twin) is NotImplemented
    with pytest.raises(FrozenInstanceError):
        point.x = 2  # type: ignore[misc]


def test_mutable_record_is_unhashable_and_compares_its_fields_as_a_tuple():
    values = np.arange(3)
    columns, twin = Columns(values, 3, "h"), ColumnsDataclass(values, 3, "h")
    _same_repr(columns, twin)
    assert "hidden" not in repr(columns)
    with pytest.raises(TypeError):
        hash(columns)
    assert columns == Columns(values, 3, "h")  # the same array object: equal, as a dataclass's tuple says
    with pytest.raises(ValueError):
        bool(twin == ColumnsDataclass(np.arange(3), 3))  # a copy of the array: ambiguous, in both
    with pytest.raises(ValueError):
        bool(columns == Columns(np.arange(3), 3))


def test_one_field_no_equality_and_inheritance():
    assert Single(1) == Single(1) and Single(1) != Single(2) and hash(Single(1)) == hash((1,))
    assert Identity(1) != Identity(1) and hash(Identity(1)) != 0
    child = Child(np.arange(2), 2, extra=5)
    assert child == Child(child.values, 2, extra=5) and child != Child(child.values, 2, extra=6)
    assert repr(child).startswith("Child(values=array([0, 1]), count=2, extra=5)")


def test_recursive_repr_and_the_dataclass_functions():
    node = Node("root")
    node.children.append(node)
    assert repr(node) == "Node(name='root', children=[...])"
    point = Point(1, "b")
    assert dataclasses.is_dataclass(point)
    assert [f.name for f in dataclasses.fields(point)] == ["x", "label", "notes"]
    assert dataclasses.replace(point, x=4) == Point(4, "b")
    assert dataclasses.asdict(point) == {"x": 1, "label": "b", "notes": []}
    assert type(point).__eq__.__qualname__ == "Point.__eq__"
