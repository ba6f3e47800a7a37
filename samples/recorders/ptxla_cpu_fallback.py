"""Records a real PyTorch/XLA (PJRT CPU) profile whose training step uses ops XLA has no lowering for,
so PyTorch/XLA runs them on the CPU (`aten::` fallbacks) -- the evidence for the `cpu_fallback` rule.

Each step weights the per-sample losses by their rank against the batch median (`torch.median`
-> `aten::median`), and every other step logs a histogram of the logits (`torch.histc` ->
`aten::histc`); both are in torch_xla 2.9's `executed_fallback_ops()`. Every third step also logs
the loss with `.item()` (`aten::_local_scalar_dense`: a host read, not a fallback), so the profile
holds transfers off the device that are not followed by one back.

torch_xla's fallback kernel (`xla_fallback`) bumps an `aten::<op>` counter but emits no TraceMe,
so the XPlane names no fallback op: each one shows only as a host round trip on the calling
thread (`PjRtComputationClient::TransferFromDevice` of its inputs, the untraced CPU op, then
`PjRtComputationClient::TransferToDevice` of its result). The metrics report of the profiled
steps is saved beside the profile (`metrics.txt`) to check the trace against PyTorch/XLA's counters.

Run: PJRT_DEVICE=CPU python ptxla_cpu_fallback.py OUTDIR   (torch 2.9.1, torch-xla 2.9.0)
"""

import sys

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
import torch_xla.debug.profiler as xp

STEPS = 6  # profiled steps: few, so the sample stays small
HISTOGRAM_EVERY = 2  # steps between logit histograms, so the two ops' counts differ (6 vs 3)
LOG_EVERY = 3  # steps between loss logs (.item())
WARMUP_STEPS = 2  # compile outside the profile


def main(out: str) -> None:
    torch.manual_seed(0)
    dev = torch_xla.device()
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64, device=dev)
    y = torch.randint(0, 10, (32,), device=dev)

    def step(i: int) -> torch.Tensor:
        logits = model(x)
        per_sample = torch.nn.functional.cross_entropy(logits, y, reduction="none")
        median = torch.median(per_sample.detach())  # no XLA lowering: aten::median on the CPU
        weights = 1.0 + (per_sample.detach() > median).float()
        loss = (per_sample * weights).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % HISTOGRAM_EVERY == 0:
            torch.histc(logits.detach(), bins=16)  # no XLA lowering: aten::histc on the CPU
        if i % LOG_EVERY == 0:
            print(f"step {i}: loss {loss.item():.4f}")  # a host read, lowered: not a fallback
        return loss

    for i in range(WARMUP_STEPS):
        step(i)
        torch_xla.sync()
    xm.wait_device_ops()
    met.clear_all()
    xp.start_trace(out)
    for i in range(STEPS):
        with xp.StepTrace("train_step", step_num=i):
            step(i)
    xm.wait_device_ops()
    xp.stop_trace()
    report = met.metrics_report()
    with open(f"{out}/metrics.txt", "w") as f:
        f.write(report)
    print("executed_fallback_ops:", met.executed_fallback_ops())
    for name in met.executed_fallback_ops():
        print(name, met.counter_value(name))


if __name__ == "__main__":
    main(sys.argv[1])
