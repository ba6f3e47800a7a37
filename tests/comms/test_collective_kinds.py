"""Collective kinds, sizes and bus bandwidth factors, on the names and HLO texts real profiles hold."""

from __future__ import annotations

import pytest

from tpuscope.analysis.pod.collective_kinds import (
    ALL_DEVICES,
    Kind,
    bus_factor,
    hlo_size,
    kind_of,
    nccl_size,
    replica_group_size,
)

SEND_RECV = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"
ALL_GATHER = "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"
GRADIENT_SCOPE = "autograd::engine::evaluate_function: AccumulateGrad/c10d::allreduce_/record_param_comms"
# The TPU v6e sample's all-reduce, as its XLA Ops event names it.
TPU_ALL_REDUCE = (
    "%all-reduce = f32[5,1024,1024,256]{3,2,1,0:T(8,128)} all-reduce(f32[5,1024,1024,256]{3,2,1,0:T(8,128)} "
    "%bitcast), channel_id=1, replica_groups=[4,2]<=[2,4]T(1,0), use_global_device_ids=true, "
    "to_apply=%region_0.3.clone"
)


@pytest.mark.parametrize(
    ("name", "launcher", "kind"),
    [
        ("all-reduce.98", "", Kind("all-reduce")),
        ("all-gather-start.3", "", Kind("all-gather", "start")),
        ("all-gather-done.3", "", Kind("all-gather", "done")),
        ("collective-permute-done.1", "", Kind("collective-permute", "done")),
        ("reduce-scatter.7", "", Kind("reduce-scatter")),
        ("all-to-all.2", "", Kind("all-to-all")),
        ("recv-done.28", "", Kind("recv", "done")),
        ("send.4", "", Kind("send")),
        ("barrier-cores", "", Kind("barrier")),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "", Kind("all-reduce")),
        (ALL_GATHER, "", Kind("all-gather")),
        ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "", Kind("reduce-scatter")),
        (SEND_RECV, GRADIENT_SCOPE, Kind("all-reduce")),
        (SEND_RECV, "All2All_Pooled_Req/c10d::alltoall_base_/record_param_comms", Kind("all-to-all")),
        (SEND_RECV, "", Kind("send")),
        ("MegaScale: All-Reduce", "", Kind("dcn")),
        ("ppermute.3", "", Kind("collective-permute")),
        ("all_gather.7", "", Kind("all-gather")),
        ("psum_invariant.7", "", Kind("all-reduce")),
        ("psum_scatter.2", "", Kind("reduce-scatter")),
    ],
)  # fmt: skip
def test_kinds(name, launcher, kind):
    assert kind_of(name, launcher) == kind


def test_the_tpu_all_reduce_size_and_group():
    size = hlo_size(TPU_ALL_REDUCE, "all-reduce")
    assert size.bytes == 5 * 1024 * 1024 * 256 * 4
    assert size.group == 2  # [4,2]<=[2,4]: 4 groups of 2


def test_all_gather_and_reduce_scatter_move_the_whole_array():
    """nccl-tests' S for all-gather and reduce-scatter is the whole array: the gather's result, the
    scatter's operand."""
    groups = "replica_groups={{0,1,2,3}}, dimensions={0}"
    gather = f"%ag = f32[8,128]{{1,0}} all-gather(f32[2,128]{{1,0}} %p), {groups}"
    scatter = f"%rs = f32[2,128]{{1,0}} reduce-scatter(f32[8,128]{{1,0}} %p), {groups}"
    assert hlo_size(gather, "all-gather").bytes == hlo_size(scatter, "reduce-scatter").bytes == 8 * 128 * 4
    assert hlo_size(gather, "all-gather").group == 4


def test_replica_groups():
    assert replica_group_size("channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}") == 4
    assert replica_group_size("replica_groups=[2,4]<=[8]") == 4
    assert replica_group_size("replica_groups={}, use_global_device_ids=true") == ALL_DEVICES
    assert replica_group_size("source_target_pairs={{0,1},{1,0}}") is None


def test_bus_factors_are_nccl_tests():
    """https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"""
    assert bus_factor("all-reduce", 8) == pytest.approx(2 * 7 / 8)
    for kind in ("all-gather", "reduce-scatter", "all-to-all"):
        assert bus_factor(kind, 8) == 7 / 8
    assert bus_factor("collective-permute", None) == bus_factor("send", None) == 1.0
    assert bus_factor("all-reduce", None) is None and bus_factor("barrier", 8) is None


def test_nccl_arguments():
    assert nccl_size(1024, "Float", 8).bytes == 4096
    assert nccl_size(1024, "BFloat16", 8).bytes == 2048 and nccl_size(1024, "BFloat16", 8).group == 8
    assert nccl_size(float("nan"), "Float", 8).bytes is None
