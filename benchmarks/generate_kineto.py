"""Writes a PyTorch-profiler-shaped (Kineto) JSON trace of about N events, for load benchmarks.

The shape follows the real Kineto traces of HolisticTraceAnalysis's test data
(facebookresearch/HolisticTraceAnalysis, tests/data): one `ProfilerStep#N` user annotation per
step on the main thread, nested `cpu_op`s, `cudaLaunchKernel` runtime calls with a `correlation`
id, the kernels they launch on two GPU streams (same correlation, grid/block args), `ac2g` flow
pairs from launch to kernel, a host-to-device copy per step and one `cudaStreamSynchronize`.

    python benchmarks/generate_kineto.py OUT.pt.trace.json [--events 1000000] [--gzip]
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import msgspec
import numpy as np

PID, TID, GPU_PID = 4242, 4242, 0
STREAMS = (7, 20)
KERNELS = (
    "ampere_sgemm_128x64_tn",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float>>>",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>",
)
OPS = ("aten::linear", "aten::add", "aten::mean", "aten::relu", "aten::mm")
# Events (X records) per launched kernel: cpu_op, cudaLaunchKernel, kernel (plus a flow start and end).
RECORDS_PER_KERNEL = 3


def kineto_trace(n_events: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    kernels_per_step = 200
    steps = max(1, n_events // (kernels_per_step * RECORDS_PER_KERNEL))
    events: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": PID, "tid": 0, "args": {"name": "python3"}},
        {"name": "thread_name", "ph": "M", "pid": PID, "tid": TID, "args": {"name": "thread 4242 (python3)"}},
        {"name": "process_name", "ph": "M", "pid": GPU_PID, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_labels", "ph": "M", "pid": GPU_PID, "tid": 0, "args": {"labels": "GPU 0"}},
    ]
    events += [
        {"name": "thread_name", "ph": "M", "pid": GPU_PID, "tid": s, "args": {"name": f"stream {s}"}}
        for s in STREAMS
    ]
    t = 1_000_000.0
    correlation = 1
    gpu_free = t
    for step in range(steps):
        step_start = t
        step_events: list[dict] = []
        durations = rng.uniform(5.0, 60.0, kernels_per_step)
        for k in range(kernels_per_step):
            op_start = t
            launch_start = t + 2.0
            kernel_start = max(gpu_free, launch_start + 5.0)
            kernel_dur = float(durations[k])
            gpu_free = kernel_start + kernel_dur
            stream = STREAMS[k % 3 == 0]
            step_events += [
                {"ph": "X", "cat": "cpu_op", "name": OPS[k % len(OPS)], "pid": PID, "tid": TID,
                 "ts": round(op_start, 3), "dur": 9.0,
                 "args": {"External id": correlation, "Sequence number": k, "Fwd thread id": 0,
                          "Input Dims": [[64, 256], [256, 256]], "Input type": ["float", "float"]}},
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": PID, "tid": TID,
                 "ts": round(launch_start, 3), "dur": 4.0,
                 "args": {"External id": correlation, "cbid": 211, "correlation": correlation}},
                {"ph": "s", "id": correlation, "pid": PID, "tid": TID, "ts": round(launch_start, 3),
                 "cat": "ac2g", "name": "ac2g"},
                {"ph": "X", "cat": "kernel", "name": KERNELS[k % len(KERNELS)], "pid": GPU_PID, "tid": stream,
                 "ts": round(kernel_start, 3), "dur": round(kernel_dur, 3),
                 "args": {"External id": correlation, "queued": 0, "device": 0, "context": 1,
                          "stream": stream, "correlation": correlation, "registers per thread": 64,
                          "shared memory": 16384, "grid": [864, 1, 1], "block": [256, 1, 1],
                          "est. achieved occupancy %": 50}},
                {"ph": "f", "id": correlation, "pid": GPU_PID, "tid": stream, "ts": round(kernel_start, 3),
                 "cat": "ac2g", "name": "ac2g", "bp": "e"},
            ]  # fmt: skip
            correlation += 1
            t += 10.0
        sync_start = t
        t = max(t, gpu_free) + 3.0
        step_events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaStreamSynchronize",
                "pid": PID,
                "tid": TID,
                "ts": round(sync_start, 3),
                "dur": round(t - sync_start, 3),
                "args": {"cbid": 131, "correlation": correlation},
            }  # fmt: skip
        )
        correlation += 1
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{step}",
                "pid": PID,
                "tid": TID,
                "ts": round(step_start - 1.0, 3),
                "dur": round(t - step_start + 2.0, 3),
                "args": {"External id": correlation},
            }  # fmt: skip
        )
        events += step_events
        t += 20.0
    return {
        "schemaVersion": 1,
        "deviceProperties": [
            {
                "id": 0,
                "name": "NVIDIA A100-SXM4-80GB",
                "totalGlobalMem": 85899345920,
                "computeMajor": 8,
                "computeMinor": 0,
                "numSms": 108,
            }
        ],  # fmt: skip
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1700000000000000000,
        "traceEvents": events,
        "traceName": "generated.pt.trace.json",
    }


def write_kineto(path: Path, n_events: int, compress: bool = False) -> Path:
    data = msgspec.json.encode(kineto_trace(n_events))
    path.write_bytes(gzip.compress(data, compresslevel=1) if compress else data)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--gzip", action="store_true")
    args = parser.parse_args()
    write_kineto(args.out, args.events, args.gzip)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
