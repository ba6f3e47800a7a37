"""Which op names count as collectives (XLA HLO names, NCCL/RCCL kernels, TPU barriers, DCN events)."""

from __future__ import annotations

import numpy as np
import pytest

from tpuscope.analysis.pod.collectives import CollectiveNames
from tpuscope.model.strings import StringTable
from tpuscope.model.vocabulary import EventClass, classify_names
from tpuscope.readers.xla_dialect import XPLANE_DIALECT

COLLECTIVES = [
    "all-reduce.2",
    "%all-gather-start.1",
    "all-gather-done",
    "reduce-scatter.7",
    "all-to-all",
    "collective-permute-start.3",
    "all-reduce fusion",
    "all-reduce-scatter fusion.1",
    "send.3",
    "recv-done.1",
    "barrier-cores",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
    "ncclKernel_AllGather_RING_LL_Sum_int8_t",
    "rcclGenericKernel",
]
NOT_COLLECTIVES = [
    "reduce.3",
    "fusion.12",
    "sender_loop",
    "recvfrom",
    "copy-start",
    "dot.1",
    "all_reduce_helper",
]


@pytest.mark.parametrize("name", COLLECTIVES + NOT_COLLECTIVES)
def test_collective_names(name):
    strings = StringTable()
    name_id = strings.intern(name)
    names = CollectiveNames(strings, XPLANE_DIALECT)
    found = name_id in set(names.op_ids.tolist()) or name_id in set(names.barrier_ids.tolist())
    assert found == (name in COLLECTIVES)


def test_dcn_events_are_found_by_their_prefix():
    classes = classify_names(["MegaScale: Communication Transport Send", "Megascale summary"], XPLANE_DIALECT)
    assert ((classes & np.uint32(EventClass.DCN_TRANSFER)) != 0).tolist() == [True, False]
