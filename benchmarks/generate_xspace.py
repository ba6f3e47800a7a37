"""Writes a TPU-shaped XSpace of N events, for the loader benchmarks.

    python benchmarks/generate_xspace.py --events 1000000 [--out FILE] [--devices 4] [--seed 0]

Shape (like the real TPU v6e profile in ../shared/traces/tpu): device planes
`/device:TPU:i` with lines `Steps`, `XLA Modules` and `XLA Ops`; XLA Ops events
carry `device_offset_ps`/`device_duration_ps` event stats and their metadata
carries `flops`, `bytes_accessed`, `hlo_category`, `program_id`, `symbol_id`; plus a
`/host:CPU` plane whose thread lines hold nested TraceMe events. About 35 bytes
per event, like the issue's 35 MB / 1M-event file.

The device planes carry the real sample's plane stats (`core_details`, the chip's kind
and peaks) and the ops their `symbol_id`, which XProf's op tools need: without them its
hlo_stats reads the file but finds no ops, and the op-table comparison is not like-for-like.

Why not build XEvent messages with protobuf: a Python object per event costs
~1 us, i.e. minutes and gigabytes for 10M events. The small parts (planes,
metadata, line headers) are built with our generated proto
(tpuscope.readers.xplane.xplane_pb2); each line's events are written as protobuf wire
bytes computed column-wise with numpy, in chunks, and streamed to the file.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tpuscope.readers.xplane import xplane_pb2 as pb  # noqa: E402

DEFAULT_DIR = Path(__file__).resolve().parent / "data"
CHUNK_EVENTS = 1 << 19  # events encoded per numpy pass: bounds the generator's working memory
HOST_SHARE = 0.10  # fraction of events on host threads
HOST_THREADS = 8
NEST_DEPTH = 4  # host TraceMe nesting: each root has a chain of this many levels
OPS_PER_MODULE = 200
MODULES_PER_STEP = 4
N_OP_KINDS = 120  # distinct HLO ops per device (the real file has ~130 metadata per TPU plane)
HLO_CATEGORIES = ["convolution", "data formatting", "loop fusion", "non-fusion elementwise", "all-reduce",
                  "custom-call", "output fusion", "copy"]  # fmt: skip
BASE_NS = 1_741_700_000_000_000_000  # a 2025 wall-clock time in ns, like real files
# The device planes' own stats, as the real TPU v6e sample (../shared/traces/tpu) carries them on
# each /device:TPU:i plane: XProf's tools read the chip's kind and peaks from these.
TPU_V6E_PLANE_STATS = {
    "device_type_string": "TPU v6 Lite",
    "peak_teraflops_per_second": 918.0,
    "peak_hbm_bw_gigabytes_per_second": 1637.993152512,
    "peak_cmem_rd_bw_gigabytes_per_second": 0.0,
    "peak_cmem_wr_bw_gigabytes_per_second": 0.0,
    "peak_vmem_rd_bw_gigabytes_per_second": 23296.0099876864,
    "peak_vmem_wr_bw_gigabytes_per_second": 16128.031693209601,
    "peak_sram_rd_bw_gigabytes_per_second": 23296.0099876864,
    "peak_sram_wr_bw_gigabytes_per_second": 16128.031693209601,
    "has_megacore": 0,
    "has_merged_vmem": 1,
}
# The sample's `core_details` (a serialized CoreDetails message) numbers TPU:i with device ordinal
# and local chip id i, global chip and core id i + 4 (its 4 chips are the second 4 of 8); fields:
CORE_DETAILS_FIELDS = {"device_ordinal": 2, "local_chip_id": 4, "global_chip_id": 5, "global_core_id": 6}
GLOBAL_ID_OFFSET = 4


# ----- protobuf wire encoding, column-wise -------------------------------------------------------


def _varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Varint bytes of each value as an (n, 10) uint8 matrix, plus each encoding's length."""
    v = values.astype(np.uint64)
    n = len(v)
    out = np.zeros((n, 10), np.uint8)
    lengths = np.ones(n, np.int64)
    rest = v.copy()
    for k in range(10):
        low = (rest & np.uint64(0x7F)).astype(np.uint8)
        rest >>= np.uint64(7)
        more = rest != 0
        out[:, k] = low | (more.astype(np.uint8) << 7)
        if not more.any():
            break
        lengths += more
    width = int(lengths.max()) if n else 1
    return out[:, :width], lengths


def _const(tag: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full((n, 1), tag, np.uint8), np.ones(n, np.int64)


def _concat(pieces: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise concatenation of variable-length pieces: ((n, w) bytes, lengths) each."""
    matrix = np.concatenate([m for m, _ in pieces], axis=1)
    masks = [np.arange(m.shape[1]) < lens[:, None] for m, lens in pieces]
    mask = np.concatenate(masks, axis=1)
    lengths = sum(lens for _, lens in pieces)
    # Boolean selection walks rows in order, so each row's valid bytes come out back to back.
    packed = matrix[mask]
    width = int(lengths.max()) if len(lengths) else 1
    out = np.zeros((len(lengths), width), np.uint8)
    out[np.arange(width) < lengths[:, None]] = packed
    return out, lengths


def _flatten(matrix: np.ndarray, lengths: np.ndarray) -> bytes:
    return matrix[np.arange(matrix.shape[1]) < lengths[:, None]].tobytes()


def _field_varint(tag: int, values: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    return [_const(tag, len(values)), _varints(values)]


def _int_stat(stat_id: int, values: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """An XStat {metadata_id, int64_value} wrapped as XEvent field 4."""
    n = len(values)
    body = _concat(_field_varint(0x08, np.full(n, stat_id)) + _field_varint(0x20, values))
    return [_const(0x22, n), _varints(body[1]), body]


def encode_events(meta: np.ndarray, offset_ps: np.ndarray, duration_ps: np.ndarray,
                  stats: dict[int, np.ndarray]) -> bytes:  # fmt: skip
    """Wire bytes of XLine field 4 (events) for the given columns, encoded in chunks."""
    parts = []
    for lo in range(0, len(meta), CHUNK_EVENTS):
        hi = lo + CHUNK_EVENTS
        body_pieces = _field_varint(0x08, meta[lo:hi]) + _field_varint(0x10, offset_ps[lo:hi]) + \
            _field_varint(0x18, duration_ps[lo:hi])  # fmt: skip
        for stat_id, values in stats.items():
            body_pieces += _int_stat(stat_id, values[lo:hi])
        body = _concat(body_pieces)
        n = len(body[1])
        event = _concat([_const(0x22, n), _varints(body[1]), body])
        parts.append(_flatten(*event))
    return b"".join(parts)


def _length_prefixed(tag: int, payload: bytes) -> bytes:
    matrix, lengths = _varints(np.array([len(payload)]))
    return bytes([tag]) + _flatten(matrix, lengths) + payload


# ----- the XSpace's shape ------------------------------------------------------------------------


def _stat_metadata(plane: pb.XPlane, names: list[str]) -> dict[str, int]:
    ids = {}
    for i, name in enumerate(names, start=1):
        plane.stat_metadata[i].id = i
        plane.stat_metadata[i].name = name
        ids[name] = i
    return ids


def _add_stat(msg, stat_id: int, value) -> None:
    stat = msg.stats.add()
    stat.metadata_id = stat_id
    if isinstance(value, bytes):
        stat.bytes_value = value
    elif isinstance(value, str):
        stat.str_value = value
    elif isinstance(value, float):
        stat.double_value = value
    else:
        stat.int64_value = value


def _line_bytes(line_id: int, name: str, timestamp_ns: int, events: bytes) -> bytes:
    header = pb.XLine(id=line_id, display_id=line_id, name=name, timestamp_ns=timestamp_ns)
    header = header.SerializeToString()
    return _length_prefixed(0x1A, header + events)  # XPlane field 3


def core_details(index: int) -> bytes:
    """The `core_details` bytes of /device:TPU:`index`, as the real sample has them (zero fields omitted)."""
    global_id = index + GLOBAL_ID_OFFSET
    values = {"device_ordinal": index, "local_chip_id": index, "global_chip_id": global_id,
              "global_core_id": global_id}  # fmt: skip
    out = b""
    for name, field in CORE_DETAILS_FIELDS.items():
        if values[name]:
            matrix, lengths = _varints(np.array([values[name]]))
            out += bytes([field << 3]) + _flatten(matrix, lengths)
    return out


def device_plane(index: int, n_ops: int, rng: np.random.Generator) -> bytes:
    """One /device:TPU:i plane with `n_ops` XLA Ops plus the Steps/XLA Modules over them."""
    plane = pb.XPlane(id=index, name=f"/device:TPU:{index}")
    sid = _stat_metadata(plane, ["flops", "bytes_accessed", "hlo_category", "program_id",
                                 "device_offset_ps", "device_duration_ps", "run_id", "step_num",
                                 "symbol_id", "core_details", *TPU_V6E_PLANE_STATS])  # fmt: skip
    # Without `core_details` XProf logs "No CoreDetails found for TPU device plane"; without the
    # ops' `symbol_id` (below) its hlo_stats table stays empty.
    _add_stat(plane, sid["core_details"], core_details(index))
    for name, value in TPU_V6E_PLANE_STATS.items():
        _add_stat(plane, sid[name], value)
    for op in range(1, N_OP_KINDS + 1):
        md = plane.event_metadata[op]
        md.id = op
        md.name = f"%fusion.{op} = bf16[8,128,1024]{{2,1,0}} fusion(bf16[8,128,1024] %param.{op}), kind=kLoop"
        md.display_name = f"fusion.{op}".encode()
        _add_stat(md, sid["flops"], int(rng.integers(1e6, 1e10)))
        _add_stat(md, sid["bytes_accessed"], int(rng.integers(1e4, 1e8)))
        _add_stat(md, sid["hlo_category"], HLO_CATEGORIES[op % len(HLO_CATEGORIES)])
        _add_stat(md, sid["program_id"], 1000 + op % 3)
        _add_stat(md, sid["symbol_id"], op)
    module_meta, step_meta = N_OP_KINDS + 1, N_OP_KINDS + 2
    plane.event_metadata[module_meta].id = module_meta
    plane.event_metadata[module_meta].name = "jit_train_step(1000)"
    plane.event_metadata[step_meta].id = step_meta
    plane.event_metadata[step_meta].name = "train_step"
    header = plane.SerializeToString()

    # XLA Ops back to back with small gaps; modules group OPS_PER_MODULE ops, steps group modules.
    duration = rng.integers(200_000, 4_000_000, n_ops)  # 0.2-4 us
    gap = rng.integers(10_000, 100_000, n_ops)
    offset = np.concatenate([[0], np.cumsum(duration + gap)[:-1]])
    meta = rng.integers(1, N_OP_KINDS + 1, n_ops)
    device_offset = offset + 123_456_789  # device clock: a fixed skew
    device_duration = duration - rng.integers(0, 10_000, n_ops)
    ops = encode_events(meta, offset, duration, {sid["device_offset_ps"]: device_offset,
                                                 sid["device_duration_ps"]: device_duration})  # fmt: skip

    def groups(starts_idx: np.ndarray, meta_id: int, stat_id: int, extra: int) -> bytes:
        ends_idx = np.append(starts_idx[1:], n_ops) - 1
        g_offset = offset[starts_idx]
        g_duration = offset[ends_idx] + duration[ends_idx] - g_offset
        number = np.arange(len(starts_idx)) + extra
        return encode_events(np.full(len(starts_idx), meta_id), g_offset, g_duration, {stat_id: number})

    module_starts = np.arange(0, n_ops, OPS_PER_MODULE)
    step_starts = module_starts[::MODULES_PER_STEP]
    ts = BASE_NS + index * 1000
    steps = groups(step_starts, step_meta, sid["step_num"], 1) if n_ops else b""
    modules = groups(module_starts, module_meta, sid["run_id"], 7) if n_ops else b""
    lines = [
        _line_bytes(1, "Steps", ts, steps),
        _line_bytes(2, "XLA Modules", ts, modules),
        _line_bytes(3, "XLA Ops", ts, ops),
    ]
    return _length_prefixed(0x0A, header + b"".join(lines))  # XSpace field 1


def host_plane(n_events: int, rng: np.random.Generator) -> bytes:
    """A /host:CPU plane: HOST_THREADS thread lines of TraceMe chains nested NEST_DEPTH deep."""
    plane = pb.XPlane(id=100, name="/host:CPU")
    sid = _stat_metadata(plane, ["step_num", "correlation_id"])
    names = ["PjitFunction(train_step)", "PjRtStreamExecutorClient::Execute", "ExecuteHelper",
             "TpuCompiler::RunBackend"]  # fmt: skip
    for level, name in enumerate(names, start=1):
        plane.event_metadata[level].id = level
        plane.event_metadata[level].name = name
    header = plane.SerializeToString()
    lines = []
    per_thread = n_events // HOST_THREADS
    for thread in range(HOST_THREADS):
        count = per_thread + (1 if thread < n_events % HOST_THREADS else 0)
        roots = -(-count // NEST_DEPTH)
        root_duration = rng.integers(2_000_000, 20_000_000, roots)
        root_start = np.concatenate([[0], np.cumsum(root_duration + 500_000)[:-1]])
        level = np.tile(np.arange(NEST_DEPTH), roots)[:count]
        root = np.repeat(np.arange(roots), NEST_DEPTH)[:count]
        # Each level starts a little later and ends earlier than its parent: strictly nested.
        inset = level * 100_000
        offset = root_start[root] + inset
        duration = root_duration[root] - 2 * inset
        events = encode_events(level + 1, offset, duration, {sid["correlation_id"]: root})
        lines.append(_line_bytes(thread + 1, f"python/{4000 + thread}", BASE_NS, events))
    return _length_prefixed(0x0A, header + b"".join(lines))


def generate(n_events: int, out: Path, devices: int = 4, seed: int = 0) -> Path:
    """Writes the XSpace to `out` plane by plane (only one plane's bytes in memory at once)."""
    rng = np.random.default_rng(seed)
    n_host = int(n_events * HOST_SHARE)
    n_device_total = n_events - n_host
    # Each device's ops plus its modules and steps add up to its share of the events.
    per_op = 1 + 1 / OPS_PER_MODULE + 1 / (OPS_PER_MODULE * MODULES_PER_STEP)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".partial")
    with open(tmp, "wb") as handle:
        for index in range(devices):
            share = n_device_total // devices + (1 if index < n_device_total % devices else 0)
            handle.write(device_plane(index, int(share / per_op), rng))
        handle.write(host_plane(n_host, rng))
        handle.write(_length_prefixed(0x22, b"benchmark-host"))  # XSpace.hostnames
    tmp.replace(out)
    return out


def default_path(n_events: int) -> Path:
    label = f"{n_events // 1_000_000}M" if n_events % 1_000_000 == 0 else str(n_events)
    # One file per folder: a folder is one profiling session to xprof-rs and XProf.
    return DEFAULT_DIR / f"tpu_{label}" / f"tpu_{label}.xplane.pb"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="number of events (default 1M)")
    parser.add_argument("--out", type=Path, help="default: benchmarks/data/tpu_<N>/tpu_<N>.xplane.pb")
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    out = args.out or default_path(args.events)
    began = time.perf_counter()
    generate(args.events, out, args.devices, args.seed)
    size = out.stat().st_size
    print(f"wrote {out} ({size / 1e6:.1f} MB, {size / max(args.events, 1):.1f} bytes/event) "
          f"in {time.perf_counter() - began:.1f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
