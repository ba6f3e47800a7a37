"""The reader registry: a format registered in `tpuscope.readers.READERS` alone opens from the CLI,
in run folders, by its first bytes, and offers its suffix to discovery, help and the file dialog;
the built-in readers claim their files by name and by content."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, SHARED_TRACES
from tests.readers.event_csv import EVENTS, SUFFIX, event_csv_registered, write_event_csv
from tpuscope.cli import main
from tpuscope.readers import (
    READERS,
    dialog_filters,
    listed_suffixes,
    path_help,
    reader_by_content,
    reader_by_name,
)
from tpuscope.readers.files import choose_reader, list_runs, read_head

KINETO = SHARED_TRACES / "kineto" / "trace_filter__sampled_rank-0.json.gz"


def _info(capsys, path: Path) -> dict:
    assert main(["info", str(path), "--json", "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_builtin_readers_are_registered_and_claim_their_files_by_name():
    assert {"xplane", "kineto", "chrome"} <= set(READERS)
    assert reader_by_name("host0.xplane.pb.gz") is READERS["xplane"]
    assert reader_by_name("w.1234.pt.trace.json.gz") is READERS["kineto"]
    assert reader_by_name("host0.trace.json.gz") is READERS["chrome"]
    assert reader_by_name("export.json") is READERS["chrome"]
    assert reader_by_name("notes.txt") is None


def test_the_builtin_readers_claim_their_files_by_content(tmp_path):
    sample = next(SAMPLES.glob("*.xplane.pb"))
    assert reader_by_content(read_head(sample)) is READERS["xplane"]
    assert reader_by_content(read_head(KINETO)) is READERS["kineto"]
    renamed = tmp_path / "trace.bin"
    renamed.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    assert reader_by_content(read_head(renamed)) is READERS["chrome"]
    png = tmp_path / "picture.dat"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    assert reader_by_content(read_head(png)) is None
    assert choose_reader([png]) is READERS["xplane"]  # the fallback, whose error says what it is


def test_a_registered_reader_opens_from_the_cli_by_name_and_by_content(tmp_path, capsys):
    with event_csv_registered() as reader:
        assert f"*{SUFFIX}" in dialog_filters()
        assert SUFFIX in listed_suffixes() and SUFFIX in path_help()
        file = write_event_csv(tmp_path / f"worker7{SUFFIX}", EVENTS)
        summary = _info(capsys, file)
        assert summary["hosts"] == ["worker7"]
        lines = {line["name"]: line["events"] for line in summary["planes"][0]["lines"]}
        assert lines == {"loader": 2, "main": 3}
        assert summary["duration_ps"] >= 108_000_000  # the last event ends at 108 us
        unnamed = write_event_csv(tmp_path / "events.txt", EVENTS)  # no suffix: the sniff decides
        assert choose_reader([unnamed]) is reader
        assert _info(capsys, unnamed)["events"] == len(EVENTS)


def test_a_registered_reader_lists_its_files_in_run_folders(tmp_path, capsys):
    with event_csv_registered():
        run = tmp_path / "plugins" / "profile" / "2026_12_01_10_00_00"
        run.mkdir(parents=True)
        for host in ("host0", "host1"):
            write_event_csv(run / f"{host}{SUFFIX}", EVENTS)
        (run / "notes.txt").write_text("not a profile")
        assert [r.hosts for r in list_runs(tmp_path)] == [["host0", "host1"]]
        summary = _info(capsys, tmp_path)
        assert summary["hosts"] == ["host0", "host1"] and summary["events"] == 2 * len(EVENTS)


def test_without_its_registration_the_format_is_not_opened(tmp_path, capsys):
    file = write_event_csv(tmp_path / f"worker7{SUFFIX}", EVENTS)
    with event_csv_registered():
        pass
    assert SUFFIX not in listed_suffixes()
    assert main(["info", str(file), "--no-cache"]) == 2
    error = capsys.readouterr().err
    assert file.name in error and "Traceback" not in error


@pytest.mark.parametrize("name", ["info", "overview", "diagnose"])
def test_every_reading_command_accepts_the_registered_format(tmp_path, capsys, name):
    with event_csv_registered():
        file = write_event_csv(tmp_path / f"worker7{SUFFIX}", EVENTS)
        assert main([name, str(file), "--json", "--no-cache"]) == 0
        json.loads(capsys.readouterr().out)


def test_a_format_without_device_ops_gets_the_ops_commands_sentence(tmp_path, capsys):
    with event_csv_registered():
        file = write_event_csv(tmp_path / f"worker7{SUFFIX}", EVENTS)
        assert main(["ops", str(file), "--no-cache"]) == 2
        assert "holds no device ops" in capsys.readouterr().err
