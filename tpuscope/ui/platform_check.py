"""Before Qt starts: can its platform plugin load? If a system library is missing, say which and where from.

Without this, a fresh Linux desktop that lacks, say, libxcb-cursor0 gets Qt's own abort:
a wall of text ("Could not load the Qt platform plugin xcb ... Available platform plugins are:
...") and a core dump. The check loads the plugin file the way Qt will (dlopen resolves every
library it needs, immediately), without importing Qt, and turns a failure into one sentence
naming the missing libraries and the apt and dnf commands that install them.

Only Linux needs this: the PySide6 wheels for macOS and Windows carry what their plugins need.
Nothing here imports Qt, so it runs before PySide6 aborts the process.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tpuscope.model.records import record

# The libraries the PySide6 wheel's Qt platform plugins (libqxcb.so, libqwayland*.so,
# libqoffscreen.so) and the Qt libraries under them load from the system, found with
# `ldd PySide6/Qt/plugins/platforms/libqxcb.so` (Qt's list: https://doc.qt.io/qt-6/linux-requirements.html),
# with the package that ships each: Debian/Ubuntu (https://packages.debian.org) and Fedora/RHEL
# (https://packages.fedoraproject.org) names.
PACKAGES: dict[str, tuple[str, str]] = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxcb-glx.so.0": ("libxcb-glx0", "libxcb"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libX11.so.6": ("libx11-6", "libX11"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libwayland-client.so.0": ("libwayland-client0", "libwayland-client"),
    "libwayland-cursor.so.0": ("libwayland-cursor0", "libwayland-cursor"),
    "libwayland-egl.so.1": ("libwayland-egl1", "libwayland-egl"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libGLX.so.0": ("libglx0", "libglvnd-glx"),
    "libGLdispatch.so.0": ("libglvnd0", "libglvnd"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libOpenGL.so.0": ("libopengl0", "libglvnd-opengl"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libgthread-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
}
DEFAULT_PLATFORM = "xcb"  # the platform the PySide6 Linux wheels start on outside a Wayland session
_MISSING = re.compile(r"^\s*(\S+) => not found", re.MULTILINE)
_CANNOT_OPEN = re.compile(r"(\S+\.so[.\d]*): cannot open shared object file")


@record(frozen=True)
class PluginProblem:
    """Why the platform plugin cannot load: the missing system libraries, or the loader's own words."""

    platform: str
    plugin: Path
    missing: tuple[str, ...]
    loader_error: str

    def sentence(self) -> str:
        """One sentence: what is missing and the commands that install it."""
        where = f"Qt's {self.platform} platform plugin"
        if not self.missing:
            return (
                f"the desktop app cannot start: {where} ({self.plugin}) does not load: {self.loader_error}."
            )
        names = _join(self.missing)
        known = [PACKAGES[name] for name in self.missing if name in PACKAGES]
        unknown = [name for name in self.missing if name not in PACKAGES]
        libraries = "library" if len(self.missing) == 1 else "libraries"
        text = (
            f"the desktop app cannot start: {where} needs the system {libraries} {names}, not installed here"
        )
        if known:
            apt = " ".join(dict.fromkeys(deb for deb, _ in known))
            dnf = " ".join(dict.fromkeys(rpm for _, rpm in known))
            text += f"; install with `sudo apt-get install {apt}` (Debian, Ubuntu)"
            text += f" or `sudo dnf install {dnf}` (Fedora)"
        if unknown:
            files = " ".join(unknown)
            text += f"; find the package of {_join(unknown)} with `apt-file search {files}`"
            text += f" or `dnf provides '*/{unknown[0]}'`"
        return text + "."


def check_platform_plugin(
    argv: list[str] | None = None, environ: dict[str, str] | None = None
) -> PluginProblem | None:
    """None when Qt's platform plugin will load (or this is not Linux, or the plugin is not found)."""
    if not sys.platform.startswith("linux"):
        return None
    environ = dict(os.environ if environ is None else environ)
    problems = []
    for platform in platform_candidates(argv or [], environ):
        plugin = find_plugin(platform, environ)
        if plugin is None:
            continue  # not a plugin this Qt ships (or a custom one): Qt itself will say what it thinks
        problem = _load(platform, plugin)
        if problem is None:
            return None  # Qt tries the candidates in order and keeps the first that loads
        problems.append(problem)
    return problems[0] if problems else None


def platform_candidates(argv: list[str], environ: dict[str, str]) -> list[str]:
    """The platforms Qt will try, in order: `-platform NAME`, QT_QPA_PLATFORM ("a;b"), else the session's."""
    if "-platform" in argv[:-1]:
        chosen = argv[argv.index("-platform") + 1]
    else:
        chosen = environ.get("QT_QPA_PLATFORM", "")
    if chosen.strip():
        return [name.split(":", 1)[0].strip() for name in chosen.split(";") if name.strip()]
    if environ.get("XDG_SESSION_TYPE") == "wayland" and environ.get("WAYLAND_DISPLAY"):
        return ["wayland", DEFAULT_PLATFORM]
    return [DEFAULT_PLATFORM]


def find_plugin(platform: str, environ: dict[str, str]) -> Path | None:
    """The plugin file Qt would load: QT_QPA_PLATFORM_PLUGIN_PATH, QT_PLUGIN_PATH, then the wheel's own."""
    folders = [Path(p) for p in environ.get("QT_QPA_PLATFORM_PLUGIN_PATH", "").split(os.pathsep) if p]
    folders += [Path(p) / "platforms" for p in environ.get("QT_PLUGIN_PATH", "").split(os.pathsep) if p]
    wheel = _pyside_folder()
    if wheel is not None:
        folders.append(wheel / "Qt" / "plugins" / "platforms")
    for folder in folders:
        plugin = folder / f"libq{platform}.so"
        if plugin.is_file():
            return plugin
    return None


def _pyside_folder() -> Path | None:
    spec = importlib.util.find_spec("PySide6")  # finds the package without importing it (and Qt)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _load(platform: str, plugin: Path) -> PluginProblem | None:
    try:
        ctypes.CDLL(str(plugin))  # what Qt's QLibrary does; the libraries stay loaded for Qt to reuse
    except OSError as error:
        message = str(error)
        missing = _missing_libraries(plugin) or tuple(_CANNOT_OPEN.findall(message))
        return PluginProblem(platform, plugin, missing, message)
    return None


def _missing_libraries(plugin: Path) -> tuple[str, ...]:
    """Every library the plugin needs that the system lacks (dlopen names only the first); () without ldd."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return ()
    try:
        listing = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(dict.fromkeys(_MISSING.findall(listing)))


def _join(names: list[str] | tuple[str, ...]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
