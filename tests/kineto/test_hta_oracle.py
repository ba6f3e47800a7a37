"""HTA (facebookresearch/HolisticTraceAnalysis, PyPI `holistictraceanalysis`) as an independent oracle.

HTA's GPU events are the records whose category matches `kernel` or `gpu_mem*` (hta/common/
trace_filter.py GPUKernelFilter), whatever their pid: what tpuscope counts as device work. By default it
rounds each event inward to whole microseconds (hta/common/trace_parser.py `round_down_time_stamps`,
pytorch/pytorch PR #122425); its switch HTA_DISABLE_NS_ROUNDING keeps the trace's nanoseconds, so
that its sums are exact. It keeps only the kernels
of the traced iterations when a trace has several `ProfilerStep`s (hta/common/trace.py
`_filter_irrelevant_gpu_kernels`): the traces here have none or one, where it keeps every kernel.
Its kernel breakdown also lists the `cuda_sync` records (`Stream Wait Event`), which Kineto writes
as sync markers on a stream (libkineto/include/ActivityType.h CUDA_SYNC), not work: TraceLens and
tpuscope leave them out, and so does the comparison (its temporal breakdown counts them as compute
time, so that figure is compared only on a trace without them).
"""

from __future__ import annotations

import gzip
import json
import shutil
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tests.kineto.conftest import BERT, KINETO
from tpuscope.analysis.device_ops import find_devices, merge_intervals
from tpuscope.app.opener import open_trace

hta_analysis = pytest.importorskip("hta.trace_analysis")

PS_PER_US = 1e6
ALEXNET = KINETO / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
# Both read the trace's microseconds with three decimals; sums of floats differ in the last digits.
SAME_US = 0.002
# HTA's memory kernels, left out of its compute time (hta/utils/utils.py `get_kernel_type`).
HTA_MEMORY_PREFIXES = ("Memcpy", "Memset", "hipMemcpy", "hipMemset", "dma")
EVERY_KERNEL = 1_000_000  # so that HTA's breakdown folds none into "others"


def _hta(path: Path, folder: Path):
    """HTA's kernel metrics and temporal breakdown of the trace (copied: HTA reads a folder)."""
    folder.mkdir()
    shutil.copy(path, folder / path.name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analysis = hta_analysis.TraceAnalysis(trace_dir=str(folder))
        _, kernels = analysis.get_gpu_kernel_breakdown(
            visualize=False, num_kernels=EVERY_KERNEL, duration_ratio=1.0
        )
        temporal = analysis.get_temporal_breakdown(visualize=False)
    return kernels, temporal


def _sync_names(path: Path) -> set[str]:
    with gzip.open(path) as handle:
        records = json.load(handle)["traceEvents"]
    return {r["name"] for r in records if r.get("cat") == "cuda_sync"}


@pytest.mark.parametrize("path", [BERT, ALEXNET], ids=["bert_h100", "alexnet_a100"])
def test_kernel_sums_and_compute_time_agree_with_hta(path, tmp_path, monkeypatch):
    monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "1")
    kernels, temporal = _hta(path, tmp_path / "trace")
    trace = open_trace(path, use_cache=False)
    (device,) = find_devices(trace)
    ours: dict[str, list[float]] = defaultdict(list)
    for track, idx in device.events:
        for i in idx.tolist():
            ours[track.event_name(i)].append(int(track.duration_ps[i]) / PS_PER_US)
    syncs = _sync_names(path)
    theirs = {
        name: float(total)
        for name, total in zip(kernels["name"], kernels["sum (us)"], strict=True)
        if name not in syncs
    }
    assert set(theirs) == set(ours)
    for name, durations in ours.items():
        assert abs(sum(durations) - theirs[name]) <= SAME_US, name
    if syncs:  # HTA's temporal breakdown counts the sync markers as compute: no common figure
        return
    compute_us = _union_us(device, lambda name: not name.startswith(HTA_MEMORY_PREFIXES))
    assert abs(compute_us - float(temporal["compute_time(us)"].iloc[0])) <= SAME_US


def _union_us(device, keep) -> float:
    """The time the device ran ops whose names `keep` accepts (their intervals' union)."""
    starts, ends = [], []
    for track, idx in device.events:
        picked = np.array([i for i in idx.tolist() if keep(track.event_name(i))], np.int64)
        starts.append(track.start_ps[picked])
        ends.append(track.end_ps[picked])
    merged_starts, merged_ends = merge_intervals(np.concatenate(starts), np.concatenate(ends))
    return int((merged_ends - merged_starts).sum()) / PS_PER_US
