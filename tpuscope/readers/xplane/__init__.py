"""The XPlane reader: `.xplane.pb(.gz)`, the XSpace protobuf that JAX, TensorFlow and PyTorch/XLA
profilers write (tsl/profiler/protobuf/xplane.proto). Decoding is in `decode` (and its C line
decoder), the format's names in `dialect`, the HLO protos of `/host:metadata` in `hlo` and
`hlo_memory`, the trace's assembly in `assemble`."""

from __future__ import annotations

from tpuscope.readers.registry import Reader

# The first byte of a serialized XSpace: the key of one of its fields (1 planes, 2 errors, 3 warnings,
# 4 hostnames), each length-delimited (wire type 2): tsl/profiler/protobuf/xplane.proto.
_XSPACE_FIRST_BYTES = b"\x0a\x12\x1a\x22"


def looks_like_xspace(head: bytes) -> bool:
    return bool(head) and head[0] in _XSPACE_FIRST_BYTES


XPLANE_READER = Reader(
    name="xplane",
    title="XPlane",
    suffixes=(".xplane.pb", ".xplane.pb.gz"),
    sniff=looks_like_xspace,
    load="tpuscope.readers.xplane.assemble:load_xplane_files",
    preference=1,
)
