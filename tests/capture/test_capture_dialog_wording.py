"""The Capture dialog speaks GUI words (issue 37): field labels instead of CLI flags, no Markdown
backticks, tracer levels explained, and no progress bar before a capture starts."""

from __future__ import annotations

from tests.capture.processes import free_port
from tpuscope.capture import gcloud

SLOW_MS = 120_000

# gcloud's own words when no project is configured (what `gcloud compute tpus tpu-vm list` prints).
NO_PROJECT = (
    "ERROR: (gcloud.compute.tpus.tpu-vm.list) The required property [project] is not currently set.\n"
    "failed to find attribute [project] in resource\n"
)


def test_capture_errors_name_the_dialogs_fields_not_flags(dialog):
    sentence = gcloud._explain(NO_PROJECT, "listing the TPU VMs")
    assert "--project" in sentence and "`" in sentence  # the CLI's wording, shared by both front ends
    dialog._tpu_list_failed(sentence)  # the slot the gcloud listing's failure reaches
    shown = dialog.status.text()
    assert "--" not in shown.replace("--zone=", "") and "`" not in shown
    assert "\u201cProject\u201d field" in shown
    assert "\u201cgcloud config set project PROJECT\u201d" in shown  # a command to type stays verbatim


def test_tracer_levels_say_what_each_level_records(dialog):
    host = dialog.host_level.toolTip()
    assert all(f"\n{level}" in host for level in range(4)) and "annotations" in host
    assert "0:" in dialog.device_level.toolTip() and "1 (default)" in dialog.device_level.toolTip()
    assert "Python function call" in dialog.python_level.toolTip()


def test_the_progress_bar_shows_only_while_capturing(qtbot, dialog, tmp_path):
    dialog.show()
    assert not dialog.progress.isVisible()
    dialog.targets.setText(f"127.0.0.1:{free_port()}")
    dialog.logdir.setText(str(tmp_path))
    dialog.duration.setValue(0.5)
    dialog.start_button.click()
    assert not dialog.progress.isHidden()
    qtbot.waitUntil(lambda: not dialog.is_running(), timeout=SLOW_MS)
    qtbot.waitUntil(lambda: dialog.progress.isHidden(), timeout=5_000)
    assert "Nothing is listening" in dialog.status.text()
