"""Records `torch_cpu_with_stack.json.gz`: a real PyTorch profiler (Kineto) trace with Python frames.

A small conv + linear model trained for two steps on the CPU under `torch.profiler.profile(
with_stack=True)`: each `cpu_op` nests inside the `python_function` events of the Python code that
called it (`Python id`, `Python parent id`, and `CallFrom`, the line of the call, in newer PyTorch).
The trace-event tests graft these real frames onto the launches of a real GPU trace, which no machine
here can record.

Run from this folder, so that the frames name this file as `record_torch_with_stack.py` and no path
of the recording machine: `cd tests/readers/trace_event/data && python record_torch_with_stack.py`
(needs torch; recorded with torch 2.14.1, CPU).
"""

import gzip
import json

import torch
from torch.profiler import ProfilerActivity, profile


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.fc = torch.nn.Linear(8 * 14 * 14, 10)

    def forward(self, x):
        h = torch.relu(self.conv(x))  # CONV_LINE
        return self.fc(h.flatten(1))  # LINEAR_LINE


def train_step(model, x):
    loss = model(x).sum()
    loss.backward()


def main():
    torch.manual_seed(0)
    model, x = Net(), torch.randn(4, 3, 16, 16)
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        for _ in range(2):
            train_step(model, x)
            prof.step()
    prof.export_chrome_trace("torch_cpu_with_stack.json")
    with open("torch_cpu_with_stack.json") as f:
        trace = json.load(f)
    with gzip.open("torch_cpu_with_stack.json.gz", "wt") as f:
        json.dump(trace, f, separators=(",", ":"))


if __name__ == "__main__":
    main()  # MODULE_LINE
