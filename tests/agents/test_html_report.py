"""`tpuscope report PATH -o REPORT.html` and File > Export Report: one self-contained page that holds the
top finding and the numbers the commands print, references nothing remote, and renders (Qt's text
document printed to PDF and drawn to an image, its chart through Qt's SVG renderer)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from tests.conftest import SHARED_TRACES, TPU_TRACE
from tests.ui.conftest import open_and_wait
from tpuscope.cli import main

RESNET = (
    SHARED_TRACES / "kineto" / "kineto_tb__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz"
)
MAX_BYTES = 5 * 2**20  # the bound for the TPU sample
# Anything a browser would fetch: a src/href/url()/@import to a scheme or a protocol-relative address.
REMOTE = re.compile(r"""(?:\b(?:src|href|action|data)\s*=\s*["']?\s*|url\(\s*["']?\s*|@import\s+["']?)"""
                    r"""(?:[a-z][a-z0-9+.-]*:|//)""", re.IGNORECASE)  # fmt: skip


def written(capsys, path: Path, out: Path) -> str:
    assert main(["report", str(path), "-o", str(out)]) == 0, capsys.readouterr().err
    assert f"Wrote {out}" in capsys.readouterr().out
    return out.read_text(encoding="utf-8")


def command_json(capsys, *argv: str) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) in (0, 1)
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("profile", [TPU_TRACE, RESNET], ids=["tpu", "kineto"])
def test_the_page_holds_the_findings_and_ops_and_nothing_remote(profile: Path, tmp_path: Path, capsys):
    page = written(capsys, profile, tmp_path / "report.html")
    assert len(page.encode()) < MAX_BYTES
    diagnose = command_json(capsys, "diagnose", str(profile))
    top = diagnose["findings"][0]
    assert html.escape(top["title"]) in page and html.escape(top["advice"][0]) in page
    assert all(html.escape(f["title"]) in page for f in diagnose["findings"])
    assert all(html.escape(c["rule"]) in page for c in diagnose["checked"])
    ops = command_json(capsys, "ops", str(profile), "--top", "3")["rows"]
    assert all(html.escape(r["name"]) in page for r in ops)
    assert html.escape(str(profile)) in page  # provenance: the path read
    assert not REMOTE.search(page), REMOTE.search(page)
    assert "<script" not in page.lower() and "<link" not in page.lower() and "<iframe" not in page.lower()
    assert page.count("<svg") == 1 and "<style>" in page and "@media print" in page


def test_the_remote_reference_check_can_fail():
    for bad in ['<script src="https://x/y.js">', "<link href='//cdn/x.css'>", "@import 'http://x/y.css'",
                '<img src="data:image/png;base64,AAA">', "background:url( https://x/y.png)"]:  # fmt: skip
        assert REMOTE.search(bad), bad


def test_the_page_renders_to_pdf_and_an_image(tmp_path: Path, capsys, qapp):
    from PySide6.QtCore import QByteArray, QMarginsF, QSizeF
    from PySide6.QtGui import QColor, QImage, QPageLayout, QPageSize, QPainter, QPdfWriter, QTextDocument
    from PySide6.QtSvg import QSvgRenderer

    page = written(capsys, TPU_TRACE, tmp_path / "report.html")
    document = QTextDocument()
    document.setHtml(page)
    pdf = tmp_path / "report.pdf"
    writer = QPdfWriter(str(pdf))
    writer.setPageLayout(QPageLayout(QPageSize(QPageSize.PageSizeId.A4), QPageLayout.Orientation.Portrait,
                                     QMarginsF(12, 12, 12, 12), QPageLayout.Unit.Millimeter))  # fmt: skip
    document.print_(writer)
    printed = pdf.read_bytes()
    assert printed[:5] == b"%PDF-" and len(re.findall(rb"/Type\s*/Page\b", printed)) >= 2
    document.setTextWidth(1000)
    image = QImage(1000, 1400, QImage.Format.Format_RGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    document.drawContents(painter)
    painter.end()
    image.save(str(tmp_path / "report.png"))
    inked = sum(
        1 for y in range(0, 1400, 7) for x in range(0, 1000, 7) if image.pixelColor(x, y) != QColor("white")
    )
    assert inked > 500  # text, tables and cards drawn, not a blank page
    # the chart, drawn as a browser would: Qt's SVG renderer reads it whole
    svg = re.search(r"<svg.*?</svg>", page, re.DOTALL)
    assert svg is not None
    source = svg.group(0).replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)
    renderer = QSvgRenderer(QByteArray(source.encode()))
    assert renderer.isValid() and renderer.defaultSize() == QSizeF(1000, 220).toSize()
    chart = QImage(1000, 220, QImage.Format.Format_RGB32)
    chart.fill(QColor("white"))
    painter = QPainter(chart)
    renderer.render(painter)
    painter.end()
    chart.save(str(tmp_path / "chart.png"))
    busy = QColor("#4e79a7")
    assert sum(1 for x in range(60, 990, 3) if chart.pixelColor(x, 150) == busy) > 100  # the busy bars


def test_file_export_report_writes_the_page(qtbot, window, tmp_path: Path):
    open_and_wait(qtbot, window, RESNET)
    out = tmp_path / "from_the_app.html"
    assert window.export_report_to(out)
    page = out.read_text(encoding="utf-8")
    assert "Input-bound" in page and not REMOTE.search(page)
    assert not window.export_report_to(
        tmp_path / "missing" / "x.html"
    )  # a folder that is not there: a dialog
