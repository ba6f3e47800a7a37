"""The shared PyTorch profiler traces that come with another tool's own numbers beside them."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.conftest import SHARED_TRACES

KINETO = SHARED_TRACES / "kineto"
# TraceLens' regression trace and three of the CSVs its test compares against (AMD-AGI/TraceLens,
# tests/traces/h100 and its `_perf_report_csvs/`).
BERT = KINETO / "tracelens__h100__gaunernst_bert-small-uncased__1016001.json.gz"
BERT_REFERENCE = KINETO / "tracelens__h100__gaunernst_bert-small-uncased__1016001.reference"
# The TensorBoard plugin's 2021 sample and its end-to-end test's expected results (pytorch/kineto
# tb_plugin/samples/resnet50_num_workers_0, tb_plugin/test/result_check_file.txt).
RESNET = KINETO / "kineto_tb__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz"
RESNET_RESULTS = KINETO / "kineto_tb__resnet50.result_check_file.txt"


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="session")
def bert_trace():
    from tpuscope.app.opener import open_trace

    return open_trace(BERT, use_cache=False)


@pytest.fixture(scope="session")
def resnet_trace():
    from tpuscope.app.opener import open_trace

    return open_trace(RESNET, use_cache=False)
