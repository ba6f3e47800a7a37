from tpuscope.xplane import xplane_pb2 as _xplane_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class XSpaceSkeleton(_message.Message):
    __slots__ = ("planes", "errors", "warnings", "hostnames")
    PLANES_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    HOSTNAMES_FIELD_NUMBER: _ClassVar[int]
    planes: _containers.RepeatedCompositeFieldContainer[XPlaneSkeleton]
    errors: _containers.RepeatedScalarFieldContainer[str]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    hostnames: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, planes: _Optional[_Iterable[_Union[XPlaneSkeleton, _Mapping]]] = ..., errors: _Optional[_Iterable[str]] = ..., warnings: _Optional[_Iterable[str]] = ..., hostnames: _Optional[_Iterable[str]] = ...) -> None: ...

class XPlaneSkeleton(_message.Message):
    __slots__ = ("id", "name", "lines", "event_metadata", "stat_metadata", "stats")
    class EventMetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: _xplane_pb2.XEventMetadata
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[_xplane_pb2.XEventMetadata, _Mapping]] = ...) -> None: ...
    class StatMetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: _xplane_pb2.XStatMetadata
        def __init__(self, key: _Optional[int] = ..., value: _Optional[_Union[_xplane_pb2.XStatMetadata, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    EVENT_METADATA_FIELD_NUMBER: _ClassVar[int]
    STAT_METADATA_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    id: int
    name: str
    lines: _containers.RepeatedScalarFieldContainer[bytes]
    event_metadata: _containers.MessageMap[int, _xplane_pb2.XEventMetadata]
    stat_metadata: _containers.MessageMap[int, _xplane_pb2.XStatMetadata]
    stats: _containers.RepeatedCompositeFieldContainer[_xplane_pb2.XStat]
    def __init__(self, id: _Optional[int] = ..., name: _Optional[str] = ..., lines: _Optional[_Iterable[bytes]] = ..., event_metadata: _Optional[_Mapping[int, _xplane_pb2.XEventMetadata]] = ..., stat_metadata: _Optional[_Mapping[int, _xplane_pb2.XStatMetadata]] = ..., stats: _Optional[_Iterable[_Union[_xplane_pb2.XStat, _Mapping]]] = ...) -> None: ...
