"""A bucket's run of many hosts opens to the pod page from its local copies, one host at a time."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from tests.storage.conftest import TPU_SAMPLE, upload_run  # noqa: E402
from tests.ui.conftest import LOAD_TIMEOUT_MS  # noqa: E402
from tpuscope.app.where import MANY_HOSTS  # noqa: E402

pytestmark = pytest.mark.skipif(not TPU_SAMPLE.exists(), reason="needs the shared traces (tests/paths.py)")


def test_a_bucket_run_of_many_hosts_opens_to_the_pod_page(qtbot, window, gcs):
    names = [f"tpu-host-{i:02d}.xplane.pb" for i in range(MANY_HOSTS)]
    url = upload_run(gcs, "pod/plugins/profile/2026_03_01_00_00_00", dict.fromkeys(names, TPU_SAMPLE))
    with qtbot.waitSignal(window.pods.podShown, timeout=LOAD_TIMEOUT_MS) as shown:
        window.open_path(url)
    qtbot.waitUntil(lambda: not window.workers, timeout=LOAD_TIMEOUT_MS)
    result = shown.args[0]
    assert result.hosts == [n.removesuffix(".xplane.pb") for n in names]
    assert window.trace is None and window.recent_paths()[0] == url
    local = [h.source for h in result.run.hosts]  # the cached copies are what is summarized
    assert all(s.endswith(n) and "://" not in s for s, n in zip(local, names, strict=True))
    with qtbot.waitSignal(window.pods.hostShown, timeout=LOAD_TIMEOUT_MS):
        window.pods.page.open_host("tpu-host-03")
    qtbot.waitUntil(lambda: not window.workers, timeout=LOAD_TIMEOUT_MS)
    assert [s.rsplit("/", 1)[-1] for s in map(str, window.trace.sources)] == ["tpu-host-03.xplane.pb"]
