"""The Protocol Buffers wire format, read by hand for the few HLO fields tpuscope decodes.

Why not protobuf: its runtime and the generated HLO schema take ~11 ms to import (protobuf 7 with
upb, `python -X importtime`), more than reading every program of a profile here, and `overview`
and `diagnose` need only a program's signature and buffer assignment. The XPlane file itself is
read by our own C decoder already; this reader covers the HLO protos in `/host:metadata`.

A `Schema` names the fields a message is read for; every other field is skipped, as protobuf keeps
an unknown field without reading into it. The semantics are protobuf's, for what we read
(https://protobuf.dev/programming-guides/encoding/):
- a varint is at most ten bytes; int64 and int32 are two's complement (int32 keeps the low 32 bits);
- a repeated number field may come packed (one length-delimited run) or one element per tag;
- a singular field seen twice keeps the last value, except a message, whose occurrences merge;
- a field whose wire type is not its type's is an unknown field (skipped), as protobuf does;
- strings are UTF-8, checked as proto3 does: bytes that are not UTF-8 make the message unreadable.
Anything else wrong (a length past the end, a truncated varint, field number 0, a group, wire type
6 or 7, nesting deeper than protobuf's limit of 100) raises `WireError`: from `parse` for the
message's own fields and its repeated messages, and from the first use of a singular message field,
which is read only then (most are never asked for). Where protobuf would refuse the whole message
for damage in a part never used, this reader answers from the parts that are intact.

Each message's top-level fields are walked in C (`_linedecode.message_fields`, which reports only
the wanted ones); Python makes their values, one dictionary lookup per field read. Decoding every
program's buffers of the shared profiles takes 1.7-2.8x protobuf's parse and attribute reads
(0.6 against 0.35 ms on the TPU sample, 4.7 against 2.0 ms on the 31 GPU programs), well under the
import it saves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from tpuscope.readers.xplane import _linedecode

MAX_DEPTH = 100  # protobuf's default recursion limit (message nesting) for parsing
_MASK_64 = (1 << 64) - 1
_SIGN_64 = 1 << 63
_MASK_32 = (1 << 32) - 1
_SIGN_32 = 1 << 31

# Field kinds.
INT64 = "int64"
INT32 = "int32"  # also enums: open in proto3, any int32
BOOL = "bool"
STRING = "string"
MESSAGE = "message"
_NUMBERS = (INT64, INT32, BOOL)
_WIRE_VARINT, _WIRE_LENGTH = 0, 2

# What the parser does with a field's value, by tag (see Schema.plan).
_SET_NUMBER, _ADD_NUMBER, _ADD_PACKED, _SET_STRING, _ADD_STRING, _SET_MESSAGE, _ADD_MESSAGE = range(7)


class WireError(ValueError):
    """The bytes are not a serialized message of the schema (truncated, corrupt or another format)."""


class Field(NamedTuple):
    """One field read from a message: its name, kind, whether it repeats, and the schema of a
    message field."""

    name: str
    kind: str
    repeated: bool = False
    schema: Schema | None = None


class Schema:
    """The fields a message is read for, by field number. A message that holds messages of its own
    kind (a tuple shape's element shapes) gets that field after it is made: `schema.add(...)`.

    `plan`: tag (field number and wire type) -> (name, action, kind, schema), the tags read (any
    other is skipped); `wanted`: a nonzero byte at each field number read, for `message_fields`."""

    def __init__(self, fields: dict[int, Field]):
        self.fields = dict(fields)
        self._prepare()

    def add(self, number: int, field: Field) -> None:
        self.fields[number] = field
        self._prepare()

    def _prepare(self) -> None:
        plan: dict[int, tuple[str, int, str, Schema | None]] = {}
        for number, field in self.fields.items():
            if field.kind in _NUMBERS:
                action = _ADD_NUMBER if field.repeated else _SET_NUMBER
                plan[number << 3 | _WIRE_VARINT] = (field.name, action, field.kind, None)
                if field.repeated:
                    plan[number << 3 | _WIRE_LENGTH] = (field.name, _ADD_PACKED, field.kind, None)
            elif field.kind == STRING:
                action = _ADD_STRING if field.repeated else _SET_STRING
                plan[number << 3 | _WIRE_LENGTH] = (field.name, action, field.kind, None)
            elif field.repeated:
                plan[number << 3 | _WIRE_LENGTH] = (field.name, _ADD_MESSAGE, field.kind, field.schema)
            else:  # kept unread under its own key (see _MessageField)
                plan[number << 3 | _WIRE_LENGTH] = (_unread_key(field.name), _SET_MESSAGE, field.kind, None)
        wanted = bytearray(max(self.fields, default=0) + 1)
        for number in self.fields:
            wanted[number] = 1
        self.plan = plan
        self.wanted = bytes(wanted)
        self.message_class: type[Message] = type("Message", (Message,), {
            field.name: _default(field) for field in self.fields.values()
        })  # fmt: skip
        self.empty = self.message_class()


def _default(field: Field) -> Any:
    """proto3's value of a field the bytes do not have; for a message field, what reads it."""
    if field.repeated:
        return ()
    if field.kind == MESSAGE:
        assert field.schema is not None
        return _MessageField(field.name, field.schema)
    return "" if field.kind == STRING else (False if field.kind == BOOL else 0)


class Message:
    """A message read by `parse`: each field of its schema as an attribute, with proto3's default
    (0, False, "", an empty tuple, an empty message) where the bytes do not have it. Each schema
    has its own subclass (`Schema.message_class`), whose class attributes are those defaults; what
    the bytes hold is in the instance's dictionary, so reading a field costs what reading an
    attribute does.

    `has(name)` tells whether a message field was present (protobuf's `HasField`); `raw` holds a
    message field's own bytes, as read (protobuf's re-encoding may order unknown fields otherwise)."""

    raw = b""

    if TYPE_CHECKING:  # the schema's fields, which type checkers cannot know

        def __getattr__(self, name: str) -> Any: ...

    def has(self, name: str) -> bool:
        return _unread_key(name) in self.__dict__


class _MessageField:
    """A singular message field of a `Message` class, read on first use (WireError then where its
    bytes are damaged): most are never asked for (an instruction's shape and metadata, where only
    the instructions that define buffers are described). The result is kept in the instance's
    dictionary, where it hides this (non-data) descriptor from then on."""

    def __init__(self, name: str, schema: Schema):
        self.name, self.key, self.schema = name, _unread_key(name), schema

    def __get__(self, message: Message | None, owner: type | None = None) -> Any:
        if message is None:
            return self
        state = message.__dict__
        unread = state.get(self.key)
        if unread is None:
            value = self.schema.empty
        else:
            data, start, stop, depth = unread
            value = _parse(data, start, stop, self.schema, depth)
            value.raw = data[start:stop]
        state[self.name] = value
        return value


def _unread_key(name: str) -> str:
    return "~" + name


def parse(data: bytes, schema: Schema) -> Message:
    """`data` read as one message of `schema`; WireError where it is not one."""
    return _parse(data, 0, len(data), schema, 0)


def _varint(data: bytes, pos: int, end: int, first: int) -> tuple[int, int]:
    """The varint whose first byte `first` (>= 0x80) was read, and the position after it."""
    result = first & 0x7F
    shift = 7
    while pos < end:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & _MASK_64, pos
        shift += 7
        if shift >= 70:
            raise WireError("a varint longer than ten bytes")
    raise WireError("the bytes end inside a varint")


def _number(kind: str, value: int) -> int | bool:
    if kind == INT64:
        return value - (1 << 64) if value & _SIGN_64 else value
    if kind == INT32:
        value &= _MASK_32
        return value - (1 << 32) if value & _SIGN_32 else value
    return value != 0


def _packed(data: bytes, pos: int, end: int, kind: str) -> list[Any]:
    values = []
    while pos < end:
        value = data[pos]
        pos += 1
        if value >= 0x80:
            value, pos = _varint(data, pos, end, value)
            values.append(_number(kind, value))
        else:
            values.append(value if kind != BOOL else value != 0)
    return values


def _parse(data: bytes, pos: int, end: int, schema: Schema, depth: int) -> Message:
    if depth >= MAX_DEPTH:
        raise WireError("messages nested too deep")
    plan = schema.plan
    try:
        found = _linedecode.message_fields(data, pos, end, schema.wanted)
    except ValueError as error:  # a length past the end, a truncated varint, field 0, a bad wire type
        raise WireError(str(error)) from None
    values: dict[str, Any] = {}
    merged: dict[str, list[bytes]] | None = None  # singular messages seen more than once: their bytes
    triples = iter(found)
    for tag, value, stop in zip(triples, triples, triples):  # noqa: B905 - triples by construction
        step = plan.get(tag)
        if step is None:  # a wanted field in a wire type not its own: unknown to protobuf too
            continue
        name, action, kind, sub = step
        if action == _SET_NUMBER:
            values[name] = value if value < 0x80 and kind != BOOL else _number(kind, value)
        elif action == _ADD_NUMBER:
            number = value if value < 0x80 and kind != BOOL else _number(kind, value)
            if name in values:
                values[name].append(number)
            else:
                values[name] = [number]
        elif action == _ADD_MESSAGE:  # from here on, a length-delimited field: `value` is where it starts
            assert sub is not None
            message = _parse(data, value, stop, sub, depth + 1)
            if name in values:
                values[name].append(message)
            else:
                values[name] = [message]
        elif action == _SET_MESSAGE:  # kept unread: read on first use (_MessageField)
            if name in values:  # a message seen twice is the merge of both: their bytes read as one
                merged = merged or {}
                first = values[name]
                merged.setdefault(name, [first[0][first[1] : first[2]]]).append(data[value:stop])
            values[name] = (data, value, stop, depth + 1)
        elif action == _ADD_PACKED:
            packed = _packed(data, value, stop, kind)
            if name in values:
                values[name].extend(packed)
            else:
                values[name] = packed
        else:
            try:
                text = data[value:stop].decode()
            except UnicodeDecodeError as error:
                raise WireError("a string that is not UTF-8") from error
            if action == _SET_STRING:
                values[name] = text
            elif name in values:
                values[name].append(text)
            else:
                values[name] = [text]
    if merged:
        for name, parts in merged.items():
            joined = b"".join(parts)
            values[name] = (joined, 0, len(joined), depth + 1)
    message = schema.message_class()
    message.__dict__ = values
    return message
