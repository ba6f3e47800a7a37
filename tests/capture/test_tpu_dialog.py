"""The Capture dialog's Cloud TPU slice: the user's TPU VMs listed with gcloud (a stand-in on PATH
answering in the documented schema), their workers, and a slice captured over the real sshd."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.capture.tpu_slice import PROJECT, ZONE, guest_attributes, make_slice, node_json
from tpuscope.ui.capture_dialog import TPU_COLUMNS, CaptureDialog

SLOW_MS = 180_000  # gcloud (a Python process) and a real capture on a loaded 2-core machine


@pytest.fixture
def tpu(sshd, tmp_path, monkeypatch):
    made = make_slice(sshd, tmp_path)
    for key in ("HOME", "PATH", "TPUSCOPE_GCLOUD_STATE"):
        monkeypatch.setenv(key, made.env[key])
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return made


def rows(dialog: CaptureDialog) -> list[list[str]]:
    tree = dialog.tpu_tree
    found = []
    for index in range(tree.topLevelItemCount()):
        item = tree.topLevelItem(index)
        found.append([item.text(c) for c in range(len(TPU_COLUMNS))])
        found.extend([["", *[item.child(k).text(c) for c in range(2)]] for k in range(item.childCount())])
    return found


def test_the_dialog_lists_the_users_tpu_vms_and_their_workers(qtbot, dialog, tpu):
    tpu.set(nodes=[
        node_json("pod-a", [("10.130.0.2", "34.1.2.3"), ("10.130.0.3", "34.1.2.4")]),
        node_json("small", [("10.130.0.9", None)], state="STOPPED", accelerator="v5litepod-1"),
        node_json("elsewhere", [("10.1.0.2", None)], zone="europe-west4-a"),
    ])  # fmt: skip
    dialog.tpu_group.setChecked(True)
    dialog.zone.setText(ZONE)
    dialog.project.setText(PROJECT)
    dialog.list_tpus_button.click()
    qtbot.waitUntil(lambda: dialog.tpu_tree.topLevelItemCount() == 2, timeout=SLOW_MS)
    assert rows(dialog) == [
        ["pod-a", ZONE, "v4-16", "READY"],
        ["", "worker 0", "10.130.0.2, external 34.1.2.3"],
        ["", "worker 1", "10.130.0.3, external 34.1.2.4"],
        ["small", ZONE, "v5litepod-1", "STOPPED"],
        ["", "worker 0", "10.130.0.9"],
    ]
    listed = next(c for c in tpu.calls_made() if "list" in c)
    assert f"--zone={ZONE}" in listed and f"--project={PROJECT}" in listed
    # picking a worker row names its TPU and that worker
    dialog.tpu_tree.setCurrentItem(dialog.tpu_tree.topLevelItem(0).child(1))
    assert dialog.tpu_name.text() == "pod-a" and dialog.tpu_workers.text() == "1"
    # an empty zone lists every zone (gcloud's --zone=-)
    dialog.zone.setText("")
    dialog.list_tpus_button.click()
    qtbot.waitUntil(lambda: dialog.tpu_tree.topLevelItemCount() == 3, timeout=SLOW_MS)
    assert dialog.tpu_tree.topLevelItem(2).text(1) == "europe-west4-a"


def test_listing_when_gcloud_is_logged_out_says_so(qtbot, dialog, tpu):
    tpu.set(logged_out=True)
    dialog.tpu_group.setChecked(True)
    dialog.zone.setText(ZONE)
    dialog.list_tpus_button.click()
    qtbot.waitUntil(lambda: "not logged in" in dialog.status.text(), timeout=SLOW_MS)
    assert dialog.status.text().startswith(
        "gcloud is not logged in (You do not currently have an active account"
    )
    assert dialog.list_tpus_button.isEnabled() and dialog.tpu_tree.topLevelItemCount() == 0


def test_the_dialog_captures_a_slice_and_emits_its_run_folder(
    qtbot, dialog, tpu, sshd, training_worker, tmp_path
):
    tpu.set(nodes=[node_json("my-tpu", [("10.130.0.2", "127.0.0.1")])],
            guest_attributes={"my-tpu": guest_attributes(sshd, 1)})  # fmt: skip
    dialog.targets.setText(f"localhost:{training_worker.port}")
    dialog.logdir.setText(str(tmp_path / "out"))
    dialog.duration.setValue(0.5)
    dialog.tpu_group.setChecked(True)
    dialog.tpu_name.setText("my-tpu")
    dialog.zone.setText(ZONE)
    with qtbot.waitSignal(dialog.captured, timeout=SLOW_MS) as emitted:
        dialog.start_button.click()
    run_folder = Path(emitted.args[0])
    assert [f.name for f in run_folder.iterdir()] == ["my-tpu-worker0.xplane.pb"]
    assert dialog.values()["tpu"] == "my-tpu" and dialog.values()["use_tpu"] is True
