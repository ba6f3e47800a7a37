"""Garbage is collected on the UI thread, by its timer, never automatically in worker threads."""

from __future__ import annotations

import gc

from tpuscope.gc_policy import MainThreadCollector
from tpuscope.ui.app import application


class Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_the_app_installs_one_collector_and_turns_automatic_collection_off(qtbot):
    app = application()
    collector = app.findChild(MainThreadCollector)
    assert isinstance(collector, MainThreadCollector) and collector.timer.isActive()
    assert application().findChildren(MainThreadCollector) == [collector]
    gc.enable()
    MainThreadCollector(app).deleteLater()
    assert not gc.isenabled()


def test_collects_the_generation_whose_threshold_is_crossed():
    gc.collect()
    assert MainThreadCollector.collect_if_due() == -1
    threshold = gc.get_threshold()[0]
    garbage = [Node() for _ in range(threshold + 10)]
    del garbage
    assert gc.get_count()[0] > threshold
    assert MainThreadCollector.collect_if_due() >= 0
    assert gc.get_count()[0] < threshold
