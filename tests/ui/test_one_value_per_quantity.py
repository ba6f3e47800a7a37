"""One value per quantity in the app (issue 33): on the TPU v6e sample, every card and every finding
(the Overview's list and the Diagnostics view's list and detail pane) shows duty cycle, step time and
async wait exactly as the metrics registry formats them: 80.3% of the profile and 100.0% of step
time, never a 96.48% beside a 96.5%, nor a 784.16 ms beside 784.156 ms.

A number shown near one of a quantity's values (within a rounding's reach) must be the text of one
of that quantity's metrics; numbers far from every value are other quantities (an op's share).
"""

from __future__ import annotations

import re

from PySide6.QtWidgets import QListWidget

from tests.paths import SHARED_TRACES
from tests.ui.conftest import open_and_wait
from tpuscope.analysis.metrics import FRACTION, PERCENT, US, format_metric
from tpuscope.analysis.metrics.definitions import METRICS
from tpuscope.ui.main_window import MainWindow
from tpuscope.ui.widgets.delegates import EXPLANATION_ROLE

TPU = SHARED_TRACES / "tpu" / "tpu_v6e_inference_4chip.xplane.pb"
QUANTITIES = {
    "duty cycle": ("duty_cycle", "step_duty_cycle", "steady_state_duty_cycle"),
    "step time": ("step_time_mean", "step_time_median", "step_time_p95", "steady_step_time_median"),
    "async wait": ("async_wait_share", "async_wait_step_share"),
}
# A shown share this close to a quantity's value (percentage points) is that quantity, however it
# was rounded (96% or 96.48% for 96.5%); a duration within this fraction of it.
PERCENT_REACH = 1.0
DURATION_REACH = 0.01
NUMBER = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)[\s\u00a0]*(%|ms|us|µs|ns|s)(?!\w)")
PS_PER = {"s": 1e12, "ms": 1e9, "us": 1e6, "µs": 1e6, "ns": 1e3}


def _metric_values(win: MainWindow) -> dict[str, tuple[float, str, str]]:
    """Each metric of QUANTITIES: (value in percent or picoseconds, unit kind, the text it is shown as)."""
    metrics = win.hub.analysis.get(METRICS)
    found = {}
    for names in QUANTITIES.values():
        for name in names:
            row = metrics.get(name)
            if row is None or row.value is None:
                continue
            if row.unit == FRACTION:
                found[name] = (row.value * 100.0, "%", format_metric(row.value, row.unit))
            elif row.unit == PERCENT:
                found[name] = (row.value, "%", format_metric(row.value, row.unit))
            elif row.unit == US:
                found[name] = (row.value * 1e6, "time", format_metric(row.value, row.unit))
    return found


def _findings_texts(win: MainWindow) -> list[str]:
    """What every finding shows: the Overview's list (title, cost and explanation, tooltip), the
    Diagnostics view's list and each finding's detail pane."""
    texts: list[str] = []
    overview_list = win.views["overview"].findings_list
    for row in range(overview_list.count()):
        item = overview_list.item(row)
        texts += [item.text(), item.toolTip(), str(item.data(EXPLANATION_ROLE) or "")]
    diagnostics = win.views["diagnostics"]
    assert win.show_view("diagnostics")
    win.hub.wait()
    findings: QListWidget = diagnostics.findings
    assert findings.count() >= 1
    for row in range(findings.count()):
        findings.setCurrentRow(row)
        texts += [findings.item(row).text(), findings.item(row).toolTip(), diagnostics.detail.toPlainText()]
    return texts


def _misshown(texts: list[str], values: dict[str, tuple[float, str, str]]) -> list[str]:
    """The numbers shown near one of a quantity's values that are not the text of one of its metrics."""
    wrong = []
    for text in texts:
        for match in NUMBER.finditer(text):
            number, unit = float(match.group(1).replace(",", "")), match.group(2)
            shown = f"{match.group(1)}{'%' if unit == '%' else ' ' + unit}"
            for names in QUANTITIES.values():
                group = [values[n] for n in names if n in values]
                if unit == "%":
                    near = any(k == "%" and abs(number - v) <= PERCENT_REACH for v, k, _ in group)
                else:
                    ps = number * PS_PER[unit]
                    near = any(k == "time" and abs(ps - v) <= DURATION_REACH * v for v, k, _ in group)
                if near and shown.replace("µs", "us") not in {t for _, _, t in group}:
                    wrong.append(f"{shown!r} in {text[:120]!r}")
    return wrong


def test_cards_and_findings_show_each_quantity_as_its_metric(qtbot, window: MainWindow):
    open_and_wait(qtbot, window, TPU, view="overview")
    values = _metric_values(window)
    assert {
        "duty_cycle",
        "step_duty_cycle",
        "step_time_mean",
        "async_wait_share",
        "async_wait_step_share",
    } <= set(values)
    text = {name: shown for name, (_, _, shown) in values.items()}
    # The TPU sample's windows differ: the card must say which is which.
    assert (
        text["duty_cycle"] != text["step_duty_cycle"]
        and text["async_wait_share"] != text["async_wait_step_share"]
    )
    cards = window.views["overview"].cards
    assert cards["duty_cycle"].value.text() == text["duty_cycle"]
    assert "of the profile" in cards["duty_cycle"].detail.text()
    assert f"{text['step_duty_cycle']} of step time" in cards["duty_cycle"].detail.text()
    assert cards["step_time"].value.text() == text["step_time_mean"]
    assert f"median {text['step_time_median']}" in cards["step_time"].detail.text()
    assert cards["async_wait"].isVisible() and cards["async_wait"].value.text() == text["async_wait_share"]
    assert f"{text['async_wait_step_share']} of step time" in cards["async_wait"].detail.text()
    for key, name in (
        ("duty_cycle", "duty_cycle"),
        ("step_time", "step_time_mean"),
        ("async_wait", "async_wait_share"),
    ):
        tooltip = cards[key].toolTip()
        assert name in tooltip and window.hub.analysis.get(METRICS).get(name).definition in tooltip

    card_texts = [t for c in cards.values() for t in (c.value.text(), c.detail.text())]
    findings = _findings_texts(window)
    shown_async = [t for t in findings if text["async_wait_share"] in t]
    assert shown_async, "the async-wait finding shows the async wait share"
    wrong = _misshown(card_texts + findings, values)
    assert not wrong, "shown otherwise than the metrics: " + "; ".join(wrong)


def test_a_number_rounded_another_way_is_caught():
    """The check itself: 96.48% or 96% beside the metric's 96.5%, 784.16 ms beside 784.156 ms."""
    values = {"async_wait_share": (96.48, "%", "96.5%"), "step_time_mean": (784.156e9, "time", "784.156 ms")}
    assert _misshown(["waiting 96.5% of the time, 784.156 ms per step; copy-done 24.7%"], values) == []
    assert len(_misshown(["96.48% of device time", "96% of it", "a step of 784.16 ms"], values)) == 3
