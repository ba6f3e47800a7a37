"""The Source tab opening a 10k-line file: tpuscope's editor with its time gutter against a bare
QPlainTextEdit (what any Qt editor does to show a file), in the same run.

    python benchmarks/bench_source_view.py
    python benchmarks/bench_source_view.py --lines 10000 --repeat 9

Target (issue 25): the Source tab opens a 10k-line file in under 100 ms. Timed: reading the file
(`read_source`: the binary check and the decoding), `SourceEditor.show_text` with a time on every
tenth line, scrolling to a line near the end and painting the view once (`grab`), offscreen. The
peer does the same read, `setPlainText` on a plain QPlainTextEdit and the same scroll and paint.
Trials alternate; medians are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtGui import QTextCursor  # noqa: E402
from PySide6.QtWidgets import QApplication, QPlainTextEdit  # noqa: E402

from tpuscope.ui.source_files import read_source  # noqa: E402
from tpuscope.ui.source_view import SourceEditor  # noqa: E402

TARGET_MS = 100.0


def _ours(path: Path, times: dict[int, int], line: int) -> float:
    start = time.perf_counter()
    editor = SourceEditor()
    editor.resize(900, 700)
    editor.show_text(read_source(str(path)).text, times)
    editor.go_to_line(line)
    editor.grab()
    took = time.perf_counter() - start
    editor.deleteLater()
    return took


def _peer(path: Path, line: int) -> float:
    start = time.perf_counter()
    editor = QPlainTextEdit()
    editor.resize(900, 700)
    editor.setReadOnly(True)
    editor.setPlainText(read_source(str(path)).text)
    cursor = QTextCursor(editor.document().findBlockByNumber(line - 1))
    editor.setTextCursor(cursor)
    editor.centerCursor()
    editor.grab()
    took = time.perf_counter() - start
    editor.deleteLater()
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    app = QApplication.instance() or QApplication(sys.argv)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.py"
        path.write_text(
            "".join(f"    h_{k} = jnp.tanh(x @ w_{k}) + b_{k}  # layer {k}\n" for k in range(args.lines))
        )
        times = {k: 1_000_000 * (k % 97 + 1) for k in range(1, args.lines + 1, 10)}
        line = int(args.lines * 0.9)
        ours, peer = [], []
        _ours(path, times, line), _peer(path, line)  # warm up Qt's font and layout caches
        for _ in range(args.repeat):
            ours.append(_ours(path, times, line))
            peer.append(_peer(path, line))
            app.processEvents()
    ours_ms, peer_ms = 1e3 * statistics.median(ours), 1e3 * statistics.median(peer)
    print(f"{args.lines:,}-line file, median of {args.repeat}:")
    print(f"  tpuscope Source tab editor (gutter of device time): {ours_ms:7.1f} ms")
    print(f"  bare QPlainTextEdit (peer)                         : {peer_ms:7.1f} ms")
    verdict = "met" if ours_ms < TARGET_MS else "MISSED"
    print(f"  ratio {ours_ms / peer_ms:.2f}x; target under {TARGET_MS:g} ms: {verdict}")
    return 0 if ours_ms < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
