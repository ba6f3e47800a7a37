"""File > Open URL as a user drives it: type a gs:// logdir, see its runs listed, open one."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from tests.storage.conftest import GPU_SAMPLE, TPU_SAMPLE, upload_run  # noqa: E402
from tests.ui.conftest import LOAD_TIMEOUT_MS  # noqa: E402
from tpuscope.ui.open_url_dialog import OpenUrlDialog  # noqa: E402

pytestmark = pytest.mark.skipif(not TPU_SAMPLE.exists(), reason="needs the shared traces (tests/paths.py)")


@pytest.fixture
def bucket_logdir(gcs) -> str:
    upload_run(gcs, "gui/plugins/profile/2026_02_01_00_00_00", {"a.xplane.pb": GPU_SAMPLE})
    return upload_run(gcs, "gui/plugins/profile/2026_02_02_00_00_00", {"a.xplane.pb": TPU_SAMPLE}).rsplit(
        "/plugins", 1
    )[0]


def test_runs_are_listed_newest_first_and_the_chosen_one_opens(qtbot, window, bucket_logdir, tmp_path):
    dialog = OpenUrlDialog(window, bucket_logdir)
    qtbot.addWidget(dialog)
    dialog.show()
    with qtbot.waitSignal(dialog.listed, timeout=60_000) as listed:
        dialog.list_runs()
    assert listed.args == [2]
    assert [dialog.table.item(r, 0).text() for r in range(2)] == [
        "2026_02_02_00_00_00",
        "2026_02_01_00_00_00",
    ]
    dialog.grab().save(str(tmp_path / "open_url.png"))
    dialog.chosen.connect(window.open_path)
    with qtbot.waitSignal(window.traceLoaded, timeout=LOAD_TIMEOUT_MS) as loaded:
        dialog.accept()
    trace = loaded.args[0]
    assert trace.sources == [f"{bucket_logdir}/plugins/profile/2026_02_02_00_00_00/a.xplane.pb"]
    assert window.windowTitle().startswith("2026_02_02_00_00_00") or "tpuscope" in window.windowTitle()
    assert window.recent_paths()[0] == f"{bucket_logdir}/plugins/profile/2026_02_02_00_00_00"


def test_a_missing_bucket_is_one_sentence_in_the_dialog(qtbot, window, gcs):
    dialog = OpenUrlDialog(window, "gs://no-such-bucket-gui/logdir")
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.listed, timeout=60_000):
        dialog.list_runs()
    assert (
        dialog.message.text()
        == "Cannot open gs://no-such-bucket-gui/logdir: the bucket 'no-such-bucket-gui' does not exist."
    )
    assert not dialog.buttons.button(dialog.buttons.StandardButton.Open).isEnabled()
