"""TPU rules whose patterns no real profile here has, on GENERATED XSpaces (tests/diagnose/xspace_builder.py).

The data is generated: planes, lines, op names, HLO instruction text, tiles and stats are those of the
real TPU v6e sample (../shared/traces/tpu), arranged into the pattern each rule looks for. Each test
also builds the same program without the pattern and checks the rule stays silent on it.
"""

from __future__ import annotations

import pytest

from tests.diagnose.costs import assert_costed
from tests.diagnose.xspace_builder import Op, TpuSteps, host_steps, sparsecore_plane, tpu_profile
from tpuscope.analysis.diagnose import (
    Severity,
    dtype,
    embedding_lookup,
    flops_utilization,
    infeed_outfeed,
    shape_alignment,
    sparsecore,
    tensorcore_idle,
)
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace

PEAK_FLOPS = 918e12  # the sample's peak_teraflops_per_second
N = 4096
BF16 = "{1,0:T(8,128)(2,1)}"
F32 = "{1,0:T(8,128)}"


def matmul(name: str, m: int, k: int, n: int, element: str = "bf16", layout: str = BF16) -> Op:
    """A fused matmul as TPU profiles name it: `%fusion.N = bf16[m,n]{...} fusion(bf16[m,k], bf16[k,n])`."""
    size = 2 if element == "bf16" else 4
    hlo = (
        f"%{name} = {element}[{m},{n}]{layout} fusion({element}[{m},{k}]{layout} %p0, "
        f"{element}[{k},{n}]{layout} %p1), kind=kOutput, calls=%fused_computation.{name}"
    )
    return Op(name, hlo, "convolution fusion", 2 * m * k * n, size * (m * k + k * n + m * n))


def at_utilization(op: Op, utilization: float) -> tuple[Op, int]:
    return op, int(op.flops / (utilization * PEAK_FLOPS) * 1e12)


HEALTHY = [at_utilization(matmul("fusion.1", N, N, N), 0.8), at_utilization(matmul("fusion.2", N, N, N), 0.8)]


def _open(tmp_path, program: TpuSteps, extra=None):
    return open_trace(tpu_profile(tmp_path / "generated.xplane.pb", program, extra=extra), use_cache=False)


def _one(outcome, severity=Severity.WARNING):
    """The outcome's one finding, at least `severity`, and as severe as its impact makes it."""
    (finding,) = outcome.findings
    assert_costed(finding, severity)
    assert finding.evidence and finding.advice
    return finding


def test_a_healthy_generated_tpu_program_gets_no_finding(tmp_path):
    report = TraceAnalysis(_open(tmp_path, TpuSteps(HEALTHY))).report
    assert report.rule_errors == {}
    assert report.findings == [], [f.title for f in report.findings]
    checked = {c["rule"]: c["summary"] for c in report.checked}
    assert "reach 80% of the peak" in checked["flops_utilization"]


def test_low_flop_rate_names_the_slow_matmul(tmp_path):
    slow = at_utilization(matmul("fusion.3", N, N, N), 0.2)
    outcome = flops_utilization.run(TraceAnalysis(_open(tmp_path, TpuSteps([HEALTHY[0], slow]))).context)
    finding = _one(outcome)
    m = finding.metrics
    assert m["utilization_percent"] == pytest.approx(
        100 * 2 / (1 / 0.8 + 1 / 0.2), abs=0.1
    )  # harmonic mean: 32%
    assert m["ops"][0]["op"] == "fusion.3"
    assert m["ops"][0]["utilization_percent"] == pytest.approx(20, abs=0.1)


def test_misaligned_contracting_dimension_is_named(tmp_path):
    # k = 130: the minor dimension of the first operand pads to 256 (97% padding), the second's
    # second-minor to 136.
    # The matrix units run the padded matmul: its time is that of k = 256 at 80% of the peak.
    odd = matmul("fusion.4", N, 130, N)
    padded_time = at_utilization(matmul("padded", N, 256, N), 0.8)[1]
    outcome = shape_alignment.run(TraceAnalysis(_open(tmp_path, TpuSteps([(odd, padded_time)]))).context)
    finding = _one(outcome)
    (row,) = finding.metrics["ops"]
    assert row["op"] == "fusion.4"
    assert row["operand"] == f"bf16[{N},130]"
    assert row["padding_percent"] == pytest.approx(100 * (256 / 130 - 1), abs=0.01)
    assert "dimension 1 is 130, padded to 256 (make it a multiple of 128)" in row["change"]
    assert row["wasted_bytes_per_call"] == 2 * (N * 256 - N * 130) + 2 * (136 - 130) * N
    assert finding.metrics["wasted_ms_estimate"] == pytest.approx(
        20 * (1 - 130 / 256) * padded_time / 1e9, abs=0.001
    )
    assert shape_alignment.run(TraceAnalysis(_open(tmp_path, TpuSteps(HEALTHY))).context).findings == []


def test_f32_matmuls_and_promoting_reductions(tmp_path):
    f32 = at_utilization(matmul("fusion.5", N, N, N, "f32", F32), 0.3)
    reduce = Op(
        "reduce_fusion",
        f"%reduce_fusion = f32[{N}]{{0:T(1024)}} fusion(bf16[{N},{N}]{BF16} %p0), kind=kInput, "
        "calls=%fused_reduce",
        "reduction fusion",
        N * N,
        2 * N * N + 4 * N,
    )
    outcome = dtype.run(TraceAnalysis(_open(tmp_path, TpuSteps([f32, (reduce, 20_000_000)]))).context)
    matmuls, promotions = outcome.findings
    assert_costed(matmuls)
    # Half the promoting reduction's time (what bf16 accumulation would save) is under 5% of a step.
    assert promotions.severity == Severity.INFO and promotions.impact is not None
    assert promotions.impact.percent_of_step_time < 5
    assert matmuls.metrics["ops"][0]["op"] == "fusion.5"
    assert matmuls.metrics["sixteen_bit_percent_of_matmul_time"] == 0
    assert [r["op"] for r in promotions.metrics["reductions"]] == ["reduce_fusion"]
    assert dtype.run(TraceAnalysis(_open(tmp_path, TpuSteps(HEALTHY))).context).findings == []


def test_infeed_share_of_the_step(tmp_path):
    infeed = Op(
        "infeed",
        f"%infeed = ((bf16[128,1024]{BF16}), token[]) infeed(token[] %after-all)",
        "infeed",
        0,
        2 * 128 * 1024,
    )
    busy = sum(d for _, d in HEALTHY)
    trace = _open(tmp_path, TpuSteps([(infeed, busy // 3), *HEALTHY]))
    finding = _one(infeed_outfeed.run(TraceAnalysis(trace).context))
    assert finding.metrics["infeed_outfeed_percent_of_step_time"] == pytest.approx(25, abs=0.5)
    assert finding.metrics["steps"] == 19  # the first step is warm-up


def test_tensorcore_idle_after_the_launch_is_not_input(tmp_path):
    busy = sum(d for _, d in HEALTHY)
    program = TpuSteps(HEALTHY, steps_line=False, idle_in_step_ps=busy // 2)

    def add_host(space):
        host_steps(space, program.step_spans)

    outcome = tensorcore_idle.run(TraceAnalysis(_open(tmp_path, program, add_host)).context)
    finding = _one(outcome)
    assert finding.metrics["idle_percent_of_step_time"] == pytest.approx(100 / 3, abs=0.5)
    quiet = TpuSteps(HEALTHY, steps_line=False)
    assert (
        tensorcore_idle.run(
            TraceAnalysis(_open(tmp_path, quiet, lambda s: host_steps(s, quiet.step_spans))).context
        ).findings
        == []
    )


@pytest.mark.parametrize("busy_share", [0.3, 0.05])
def test_sparsecore_busy_share(tmp_path, busy_share):
    program = TpuSteps(HEALTHY)
    trace = _open(tmp_path, program, lambda space: sparsecore_plane(space, program.step_spans, busy_share))
    outcome = sparsecore.run(TraceAnalysis(trace).context)
    if busy_share < sparsecore.SPARSECORE_PERCENT / 100:
        assert outcome.findings == []
        return
    finding = _one(outcome)
    assert finding.metrics["sparsecore_percent_of_step_time"] == pytest.approx(100 * busy_share, abs=0.5)
    assert embedding_lookup.run(TraceAnalysis(trace).context).findings == []  # lookups are already offloaded


# An embedding lookup as XLA:TPU runs it on the TensorCore: a gather from a 1M-row table.
GATHER = Op(
    "gather_fusion",
    f"%gather_fusion = bf16[{N},256]{BF16} fusion(bf16[1000000,256]{BF16} %table, s32[{N}]{{0}} %ids), "
    "kind=kLoop",
    "loop fusion",
    0,
    2 * 2 * N * 256,
)


def test_gathers_dominating_the_tensorcore_are_embedding_lookups(tmp_path):
    gather = GATHER
    busy = sum(d for _, d in HEALTHY)
    finding = _one(
        embedding_lookup.run(TraceAnalysis(_open(tmp_path, TpuSteps([(gather, busy), *HEALTHY]))).context)
    )
    assert finding.metrics["gather_scatter_percent_of_device_time"] == pytest.approx(50, abs=0.1)
    assert finding.metrics["ops"][0]["op"] == "gather_fusion"
