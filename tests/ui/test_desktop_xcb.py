"""The app as a Linux desktop starts it: `tpuscope FILE` on Qt's xcb platform, on a real X server (Xvfb).

The other UI tests use Qt's offscreen platform, which needs none of the X libraries that
libqxcb.so loads; this one proves the whole path a user takes: the platform check passes, Qt
loads its xcb plugin, the window maps on the X server with the profile's name in its title, and
what the X server shows of it is a painted window, not a blank rectangle.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT, SAMPLES

SAMPLE = SAMPLES / "tpu_v6e_inference_4chip.xplane.pb"
TITLE = f"{SAMPLE.name} - tpuscope"  # what MainWindow shows once the profile is loaded
SCREEN = "1920x1200x24"
GIVE_UP_S = 90.0
MIN_COLOURS = 20  # a painted timeline has dozens of colours; a blank or unpainted window has one or two

# Grabs an X window by id through Qt's own xcb platform and saves it as a PNG.
_GRAB = """
import sys
from PySide6.QtGui import QGuiApplication
app = QGuiApplication(["grab", "-platform", "xcb"])
image = app.primaryScreen().grabWindow(int(sys.argv[1], 16)).toImage()
sys.exit(0 if image.save(sys.argv[2], "PNG") else 1)
"""


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.fail(f"{tool} is missing: install xvfb and x11-utils (sh tools/system-packages.sh does)")
    return path


@pytest.fixture
def x_display(tmp_path):
    """A fresh Xvfb server on a display number it picks itself; yields DISPLAY."""
    read_end, write_end = os.pipe()
    server = subprocess.Popen(
        [_require("Xvfb"), "-displayfd", str(write_end), "-screen", "0", SCREEN, "-nolisten", "tcp"],
        pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(write_end)
    with os.fdopen(read_end) as announced:
        number = announced.readline().strip()
    try:
        assert number.isdigit(), "Xvfb did not start"
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def _desktop_environment(tmp_path: Path, display: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QT_", "WAYLAND_", "XDG_SESSION"))}
    env.update(
        DISPLAY=display,
        XDG_CONFIG_HOME=str(tmp_path / "config"),  # the app's settings and recent files land here
        XDG_RUNTIME_DIR=str(tmp_path / "runtime"),
        TPUSCOPE_CACHE_DIR=str(tmp_path / "cache"),
    )
    (tmp_path / "runtime").mkdir(mode=0o700)
    return env


def _window_with_title(display: str, title: str) -> str | None:
    """The id of the mapped (viewable) top-level window with this title, else None."""
    tree = subprocess.run([_require("xwininfo"), "-display", display, "-root", "-tree"],
                          capture_output=True, text=True, timeout=30).stdout  # fmt: skip
    for line in tree.splitlines():
        if f'"{title}"' in line:
            window = line.split()[0]
            state = subprocess.run([_require("xwininfo"), "-display", display, "-id", window],
                                   capture_output=True, text=True, timeout=30).stdout  # fmt: skip
            if "Map State: IsViewable" in state:
                return window
    return None


def _colours(png: Path) -> int:
    from PySide6.QtGui import QImage

    image = QImage(str(png)).convertToFormat(QImage.Format.Format_RGB32)
    pixels = np.frombuffer(image.constBits(), np.uint32, image.sizeInBytes() // 4)
    return len(np.unique(pixels))


def test_the_app_maps_and_paints_its_window_on_xcb(tmp_path, x_display):
    env = _desktop_environment(tmp_path, x_display)
    app = subprocess.Popen([sys.executable, "-m", "tpuscope", str(SAMPLE)], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    shot = tmp_path / "window.png"
    colours = 0
    try:
        deadline = time.monotonic() + GIVE_UP_S
        while time.monotonic() < deadline and app.poll() is None:
            window = _window_with_title(x_display, TITLE)
            if window is not None:
                grab = subprocess.run([sys.executable, "-c", _GRAB, window, str(shot)], env=env,
                                      capture_output=True, text=True, timeout=60)  # fmt: skip
                assert grab.returncode == 0, grab.stderr
                colours = _colours(shot)
                if colours >= MIN_COLOURS:
                    break
            time.sleep(0.2)
        still_running = app.poll() is None
    finally:
        app.send_signal(signal.SIGTERM)
        _, err = app.communicate(timeout=30)
    assert still_running, f"the app exited early: {err[-2000:]}"
    assert "Could not load the Qt platform plugin" not in err
    assert shot.is_file(), f"no mapped window titled {TITLE!r} within {GIVE_UP_S:g} s: {err[-2000:]}"
    assert colours >= MIN_COLOURS, f"the window shows {colours} colours: not painted"
