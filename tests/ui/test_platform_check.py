"""The check before Qt starts: a platform plugin that cannot load is one sentence and exit 2, not an abort."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLES
from tpuscope.ui.platform_check import (
    DEFAULT_PLATFORM,
    PACKAGES,
    PluginProblem,
    check_platform_plugin,
    find_plugin,
    platform_candidates,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the check is for Linux")
SAMPLE = SAMPLES / "tpu_v6e_inference_4chip.xplane.pb"
NEEDED = b"libxcb-cursor.so.0"  # one of the libraries libqxcb.so names in its ELF dynamic section
ABSENT = b"libxcb-cursXr.so.0"  # the same length, so the patched plugin stays a valid ELF file


def test_the_plugins_of_this_qt_load_here():
    for platform in ("offscreen", "xcb"):
        assert find_plugin(platform, {}) is not None
        assert check_platform_plugin(environ={"QT_QPA_PLATFORM": platform}) is None


def test_qt_s_choice_of_platform_is_followed():
    assert platform_candidates([], {}) == [DEFAULT_PLATFORM]
    assert platform_candidates([], {"QT_QPA_PLATFORM": "wayland;xcb"}) == ["wayland", "xcb"]
    assert platform_candidates([], {"QT_QPA_PLATFORM": "offscreen:fontengine=freetype"}) == ["offscreen"]
    assert platform_candidates(["f.pb", "-platform", "minimal"], {"QT_QPA_PLATFORM": "xcb"}) == ["minimal"]
    session = {"XDG_SESSION_TYPE": "wayland", "WAYLAND_DISPLAY": "wayland-0"}
    assert platform_candidates([], session) == ["wayland", "xcb"]
    assert platform_candidates([], {"XDG_SESSION_TYPE": "wayland"}) == [DEFAULT_PLATFORM]  # no compositor


def test_a_platform_this_qt_does_not_ship_is_left_to_qt():
    assert check_platform_plugin(environ={"QT_QPA_PLATFORM": "no-such-platform"}) is None


def test_the_sentence_names_the_libraries_and_both_install_commands():
    problem = PluginProblem("xcb", Path("libqxcb.so"), ("libxcb-cursor.so.0", "libxcb-icccm.so.4"), "")
    assert problem.sentence() == (
        "the desktop app cannot start: Qt's xcb platform plugin needs the system libraries "
        "libxcb-cursor.so.0 and libxcb-icccm.so.4, not installed here; install with "
        "`sudo apt-get install libxcb-cursor0 libxcb-icccm4` (Debian, Ubuntu) or "
        "`sudo dnf install xcb-util-cursor xcb-util-wm` (Fedora)."
    )
    one = PluginProblem("xcb", Path("libqxcb.so"), ("libxcb-randr.so.0", "libxcb-shm.so.0"), "").sentence()
    assert "`sudo dnf install libxcb`" in one  # one Fedora package holds both: named once


def test_every_library_the_xcb_plugin_loads_from_the_system_has_its_packages():
    plugin = find_plugin("xcb", {})
    listing = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, check=True).stdout
    qt_folder = str(plugin.parents[2])
    system = {line.split()[0] for line in listing.splitlines() if "=>" in line and qt_folder not in line}
    # Every library of the X, GL, font, GLib and D-Bus stacks (libc, libstdc++, zlib are in every system).
    stacks = ("libxcb", "libX11", "libxkb", "libGL", "libEGL", "libOpenGL", "libfont", "libfreetype",
              "libglib", "libgthread", "libdbus")  # fmt: skip
    needed = {name for name in system if name.startswith(stacks)}
    assert len(needed) > 20 and needed <= set(PACKAGES)


def _plugin_needing_an_absent_library(tmp_path: Path) -> Path:
    """A copy of the real libqxcb.so whose ELF names a library no system has, beside the real Qt libraries."""
    real = find_plugin("xcb", {})
    platforms = tmp_path / "Qt" / "plugins" / "platforms"
    platforms.mkdir(parents=True)
    (tmp_path / "Qt" / "lib").symlink_to(real.parents[2] / "lib")  # the plugin's RUNPATH: $ORIGIN/../../lib
    data = real.read_bytes()
    assert data.count(NEEDED) == 1
    (platforms / real.name).write_bytes(data.replace(NEEDED, ABSENT))
    return platforms


def test_a_missing_library_is_found_before_qt_starts(tmp_path):
    platforms = _plugin_needing_an_absent_library(tmp_path)
    environ = {"QT_QPA_PLATFORM": "xcb", "QT_QPA_PLATFORM_PLUGIN_PATH": str(platforms)}
    problem = check_platform_plugin(environ=environ)
    assert problem is not None and problem.missing == (ABSENT.decode(),)
    assert problem.plugin == platforms / "libqxcb.so"
    assert f"`apt-file search {ABSENT.decode()}`" in problem.sentence()


def test_the_app_says_so_in_one_sentence_and_exits_2(tmp_path):
    platforms = _plugin_needing_an_absent_library(tmp_path)
    env = dict(os.environ, QT_QPA_PLATFORM="xcb", QT_QPA_PLATFORM_PLUGIN_PATH=str(platforms), DISPLAY=":0")
    result = subprocess.run([sys.executable, "-m", "tpuscope", str(SAMPLE)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(
        "tpuscope: the desktop app cannot start"
    )
    assert ABSENT.decode() in result.stderr and "Qt platform plugin" not in result.stderr
