"""Every kind of bad input ends in one ProfileError whose message names the file and the cause."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import zlib

import pytest

from tests.conftest import PTXLA_TRACE, TPU_TRACE
from tpuscope.app.opener import open_trace
from tpuscope.errors import ProfileError

PNG_HEADER = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(40))


def _expect_error(path, *fragments):
    with pytest.raises(ProfileError) as info:
        open_trace(path, use_cache=False)
    message = str(info.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message, message
    assert message.count(".") >= 1 and "\n" not in message
    return message


def test_missing_path(tmp_path):
    _expect_error(tmp_path / "nope.xplane.pb", "does not exist")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.xplane.pb"
    path.write_bytes(b"")
    _expect_error(path, "empty")


def test_truncated_file_loads_what_precedes_the_cut(tmp_path):
    # Issue 12: a cut file is no longer refused whole (tests/model/test_truncated_files.py has the rest).
    path = tmp_path / "cut.xplane.pb"
    data = TPU_TRACE.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    trace = open_trace(path, use_cache=False)
    assert trace.event_count > 0 and len(trace.load_warnings) == 1 and "cut short" in trace.load_warnings[0]


def test_truncated_before_any_event(tmp_path):
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(TPU_TRACE.read_bytes()[:64])
    _expect_error(path, "cut short before its first complete event")


def test_corrupted_file(tmp_path):
    path = tmp_path / "bad.xplane.pb"
    data = bytearray(TPU_TRACE.read_bytes())
    data[0] = 0x0F  # XSpace field 1 with wire type 7, which protobuf does not have
    path.write_bytes(bytes(data))
    _expect_error(path, "corrupted")


def test_json_file(tmp_path):
    path = tmp_path / "trace.xplane.pb"
    path.write_text(json.dumps({"traceEvents": [{"name": "x", "ph": "X"}]}))
    _expect_error(path, "Chrome trace-event JSON")


def test_plain_json(tmp_path):
    path = tmp_path / "config.xplane.pb"
    path.write_text('{"a": 1}')
    _expect_error(path, "JSON file")


def test_png_file(tmp_path):
    path = tmp_path / "screenshot.xplane.pb"
    path.write_bytes(PNG_HEADER)
    _expect_error(path, "PNG image")


def test_random_bytes(tmp_path):
    path = tmp_path / "noise.xplane.pb"
    path.write_bytes(os.urandom(4096))
    _expect_error(path)


def test_binary_reencoded_as_utf8(tmp_path):
    path = tmp_path / "mangled.xplane.pb"
    text = PTXLA_TRACE.read_bytes().decode("utf-8", errors="replace")
    path.write_bytes(text.encode("utf-8"))
    _expect_error(path, "re-encoded as UTF-8")


def test_binary_reencoded_from_latin1(tmp_path):
    path = tmp_path / "latin.xplane.pb"
    path.write_bytes(PTXLA_TRACE.read_bytes().decode("latin-1").encode("utf-8"))
    _expect_error(path, "re-encoded as UTF-8")


def test_gzip_cut_short_before_any_data(tmp_path):
    # A gzip cut later loads what decompresses (tests/model/test_truncated_files.py).
    path = tmp_path / "cut.xplane.pb.gz"
    data = gzip.compress(PTXLA_TRACE.read_bytes())
    path.write_bytes(data[:12])
    _expect_error(path, "gzip", "cut short")


def test_gzip_corrupted(tmp_path):
    path = tmp_path / "bad.xplane.pb.gz"
    data = bytearray(gzip.compress(PTXLA_TRACE.read_bytes()))
    data[40:60] = b"\xff" * 20
    path.write_bytes(bytes(data))
    with pytest.raises(ProfileError) as info:
        open_trace(path, use_cache=False)
    assert "gzip" in str(info.value) or "corrupted" in str(info.value)


def test_folder_without_profiles(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    _expect_error(tmp_path, "no profiles were found in this folder")


def test_run_name_that_does_not_exist(tmp_path):
    run = tmp_path / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    (run / "h.xplane.pb").write_bytes(PTXLA_TRACE.read_bytes())
    with pytest.raises(ProfileError, match="no run named 'r2'"):
        open_trace(tmp_path, run="r2")


def test_unreadable_file(tmp_path):
    path = tmp_path / "secret.xplane.pb"
    path.write_bytes(PTXLA_TRACE.read_bytes())
    path.chmod(0)
    if os.geteuid() != 0:
        _expect_error(path, "permission denied")
        return
    # root reads anything: check in a child that has dropped the capabilities that let it.
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv, which is needed to drop read override")
    code = (
        "import sys\nfrom tpuscope.errors import ProfileError\nfrom tpuscope.app.opener import open_trace\n"
        "try:\n    open_trace(sys.argv[1], use_cache=False)\nexcept ProfileError as e:\n    print(e)\n"
    )
    result = subprocess.run(
        [setpriv, "--bounding-set", "-dac_override,-dac_read_search", sys.executable, "-c", code, str(path)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "TPUSCOPE_NO_CACHE": "1"},
    )  # fmt: skip
    assert "permission denied" in result.stdout, result.stdout + result.stderr
    assert str(path) in result.stdout


def test_wrong_format_message_is_one_sentence_from_cli(tmp_path):
    path = tmp_path / "x.xplane.pb"
    path.write_bytes(PNG_HEADER)
    result = subprocess.run(
        [sys.executable, "-m", "tpuscope", "info", str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert str(path) in result.stderr and "PNG" in result.stderr


def test_cli_missing_path_exit_code(capsys):
    from tpuscope.cli import main

    assert main(["info", "/definitely/not/here.xplane.pb"]) == 2
    err = capsys.readouterr().err
    assert "does not exist" in err and "Traceback" not in err


def test_zlib_error_is_not_leaked(tmp_path):
    # A valid gzip header followed by garbage deflate data.
    path = tmp_path / "garbage.xplane.pb.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"\xff" * 64)
    with pytest.raises(ProfileError):
        open_trace(path, use_cache=False)
    assert zlib  # imported to document which error family is translated
