"""The garbage collector around a command: paused while it imports and loads, frozen at the process's exit,
and left as it was for a caller that runs commands in-process.

The suite runs with automatic collection off (conftest.py, as the app does): tests that need it on turn
it on themselves, and the autouse fixture restores it.
"""

from __future__ import annotations

import gc
import subprocess
import sys

import tpuscope.commands._console as shared
from tests.conftest import ROOT, SAMPLES
from tpuscope import gc_policy
from tpuscope.cli import main

TPU_SAMPLE = SAMPLES / "tpu_v6e_inference_4chip.xplane.pb"


def test_a_load_runs_with_the_collector_paused_and_the_command_ends_with_it_on(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("TPUSCOPE_CACHE_DIR", str(tmp_path))
    during_load = []
    real_open = shared.open_trace

    def watched_open(*args, **kwargs):
        during_load.append(gc.isenabled())
        return real_open(*args, **kwargs)

    monkeypatch.setattr(shared, "open_trace", watched_open)
    frozen_before = gc.get_freeze_count()
    gc.enable()
    assert main(["info", str(TPU_SAMPLE)]) == 0
    assert "Events:" in capsys.readouterr().out
    assert during_load == [False]
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen_before  # in-process: nothing frozen


def test_a_failed_load_turns_the_collector_back_on(tmp_path, capsys):
    broken = tmp_path / "broken.xplane.pb"
    broken.write_bytes(b"\xff" * 64)
    gc.enable()
    assert main(["info", str(broken)]) == 2
    assert capsys.readouterr().err.startswith("tpuscope: ")
    assert gc.isenabled()


def test_pause_leaves_a_collector_that_was_off_alone():
    """The desktop app collects from its own timer (tpuscope.gc_policy): a command must not turn it on."""
    assert not gc.isenabled()
    gc_policy.pause()
    gc_policy.resume()
    assert not gc.isenabled()


def test_the_process_freezes_its_objects_just_before_it_exits(tmp_path):
    """console_main (the `tpuscope` script) freezes what exists after the command, so finalization's
    collections walk nothing; the command's output is complete."""
    probe = (
        "import gc, sys\n"
        "from tpuscope.cli import console_main\n"
        "sys.argv = ['tpuscope', 'info', sys.argv[1], '--no-cache']\n"
        "status = console_main()\n"
        "print('frozen', gc.get_freeze_count() > 0, 'enabled', gc.isenabled(), 'status', status)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe, str(TPU_SAMPLE)], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Events:" in result.stdout
    assert result.stdout.strip().endswith("frozen True enabled True status 0")


def test_the_process_freezes_what_its_imports_and_load_made_when_the_collector_resumes(tmp_path):
    """In the `tpuscope` process the objects made while the collector was paused (modules, the trace)
    live to the exit: resume() freezes them, so the analyses' collections do not walk them again."""
    result = _info_counting_freezes(TPU_SAMPLE, "'frozen', all(count > 0 for count in frozen)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("resumes 2 frozen True status 0")


def test_a_load_that_fails_freezes_nothing_of_it(tmp_path):
    """What a failed load made is garbage its traceback holds: the process keeps it collectable."""
    broken = tmp_path / "broken.xplane.pb"
    broken.write_bytes(b"\xff" * 64)
    result = _info_counting_freezes(broken, "'load froze', frozen[-1] - frozen[0]")
    assert result.stderr.startswith("tpuscope: ")
    assert result.stdout.strip().endswith("resumes 2 load froze 0 status 2")


def _info_counting_freezes(path, measure: str) -> subprocess.CompletedProcess:
    """`tpuscope info PATH` as the script runs it, printing how often the collector resumed, `measure`
    (an expression over `frozen`, the freeze count after each resume) and the exit status."""
    probe = (
        "import gc, sys\n"
        "from tpuscope import gc_policy\n"
        "from tpuscope.cli import console_main\n"
        "real_resume, frozen = gc_policy.resume, []\n"
        "def resume():\n"
        "    real_resume()\n"
        "    frozen.append(gc.get_freeze_count())\n"
        "gc_policy.resume = resume\n"
        "sys.argv = ['tpuscope', 'info', sys.argv[1], '--no-cache']\n"
        "status = console_main()\n"
        f"print('resumes', len(frozen), {measure}, 'status', status)\n"
    )
    return subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)  # fmt: skip
