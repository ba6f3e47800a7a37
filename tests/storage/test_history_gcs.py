"""`tpuscope history gs://bucket/logdir` against a real GCS API server: the bucket's runs in order,
each summarised once (a second history downloads and analyses nothing new)."""

from __future__ import annotations

import json

import pytest

from tests.storage.conftest import BUCKET, TPU_SAMPLE, upload_run
from tpuscope.app.history import read_history
from tpuscope.cli import main

pytestmark = pytest.mark.skipif(not TPU_SAMPLE.exists(), reason="needs the shared traces (tests/paths.py)")


def test_a_buckets_runs_are_a_history_and_summarised_once(gcs, capsys):
    prefix = "history_logdir"
    for name in ("2026_01_01_10_00_00", "2026_01_02_10_00_00"):
        upload_run(gcs, f"{prefix}/plugins/profile/{name}", {"worker0.xplane.pb": TPU_SAMPLE})
    url = f"gs://{BUCKET}/{prefix}"
    assert main(["history", url, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    runs = payload["runs"]
    assert [r["run"] for r in runs] == ["2026_01_01_10_00_00", "2026_01_02_10_00_00"]
    assert all(r["sources"][0].startswith(url) for r in runs)
    # The same profile twice: exactly no change, and no cause to give.
    assert runs[1]["change_from_previous"] == "no_significant_change" and runs[1]["change_percent"] == 0.0
    assert runs[1]["cause"] is None and payload["analysed_runs"] == [r["run"] for r in runs]
    again = read_history([url])
    assert again.analysed == [] and again.where("2026_01_02_10_00_00").startswith(url)
