"""The overlapped share of communication time against HTA's communication/computation overlap.

HTA (facebookresearch/HolisticTraceAnalysis, PyPI `holistictraceanalysis`) merges each rank's NCCL
kernels and its compute kernels (memory kernels are neither) and divides the time both run by the
communication time (hta/analyzers/communication_analysis.py). It keeps the kernels launched before the
last `ProfilerStep` starts unless `include_last_profiler_step=True`, which keeps the last step too
(hta/common/trace.py `_filter_irrelevant_gpu_kernels`). tpuscope's `overlap_percent` is over every
step, so it is compared with HTA over every step, and its per-step figures without the last step with
HTA's default (11.81% on rank 0 of the HTA test job, which the issue quotes).
"""

from __future__ import annotations

import shutil
import warnings

import pytest

from tests.comms.conftest import NCCL_TRACES
from tests.conftest import require_shared_traces
from tpuscope.analysis.pod.comms_report import CommsReport
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace

hta_analysis = pytest.importorskip("hta.trace_analysis")

# The issue's bound: the overlapped share agrees with HTA's within 1.5 percentage points.
POINTS = 1.5


def _hta_overlap(path, folder, include_last: bool) -> float:
    folder.mkdir()
    shutil.copy(path, folder / path.name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        analysis = hta_analysis.TraceAnalysis(trace_dir=str(folder), include_last_profiler_step=include_last)
        table = analysis.get_comm_comp_overlap(visualize=False)
    return float(table["comp_comm_overlap_pctg"].iloc[0])


@pytest.mark.parametrize("path", NCCL_TRACES, ids=lambda p: p.name.split(".")[0])
def test_overlap_percent_equals_htas(path, tmp_path):
    require_shared_traces()
    report = CommsReport.of(TraceAnalysis(open_trace(path)).pod)
    assert report.communication_total_ps > 0
    every_step = _hta_overlap(path, tmp_path / "all", include_last=True)
    assert report.overlap_percent == pytest.approx(every_step, abs=POINTS)
    # HTA's default leaves the last step out: tpuscope's per-step figures of the other steps agree too.
    steps = report.per_step()[:-1]
    communication = sum(s["communication_us"] for s in steps)
    overlapped = sum(s["overlapped_us"] for s in steps)
    default = _hta_overlap(path, tmp_path / "default", include_last=False)
    assert 100.0 * overlapped / communication == pytest.approx(default, abs=POINTS)


def test_rank_0_is_the_issues_figure(tmp_path):
    """HTA 0.5.0 says 11.81% for rank 0 of the trace_filter job (steps before the last)."""
    require_shared_traces()
    report = CommsReport.of(TraceAnalysis(open_trace(NCCL_TRACES[0])).pod)
    first = report.per_step()[0]
    assert 100.0 * first["overlapped_us"] / first["communication_us"] == pytest.approx(11.81, abs=0.01)
