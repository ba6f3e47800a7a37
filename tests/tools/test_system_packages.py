"""tools/system-packages.sh, the first step of the README's test command: what it finds missing, what it runs.

It runs for real against this machine's dpkg database. Where it would change the system
(apt-get as root, or through sudo), `apt-get` and `sudo` are stand-ins on PATH that record
their arguments, so the tests check which command the script runs without installing anything.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tpuscope.ui.platform_check import PACKAGES, find_plugin

SCRIPT = ROOT / "tools" / "system-packages.sh"
ABSENT = "tpuscope-no-such-package"
# What the script calls: the real ones, linked into a folder that is the whole PATH of a run.
TOOLS = ("sh", "env", "id", "sed", "tr", "wc", "readlink", "dpkg-query", "setpriv")
NOBODY = 65534

pytestmark = pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="a Debian/Ubuntu system")


def run(*args: str, env: dict | None = None, user: int | None = None) -> subprocess.CompletedProcess:
    command = ["sh", str(SCRIPT), *args]
    if user is not None:
        command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture
def public_folder():
    """A folder in the system's temp dir that an unprivileged user can reach and write (pytest's cannot)."""
    folder = Path(tempfile.mkdtemp(prefix="tpuscope-system-packages-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder)


def bin_folder(base: Path, stand_ins: tuple[str, ...] = ()) -> Path:
    """A PATH folder: links to the real TOOLS, plus recording stand-ins for `stand_ins` (sudo, apt-get)."""
    folder = base / "bin"
    folder.mkdir()
    for tool in TOOLS:
        (folder / tool).symlink_to(shutil.which(tool))
    log = base / "calls.log"
    for name in stand_ins:
        script = folder / name
        script.write_text(
            f'#!/bin/sh\necho "{name} $*" >> {log}\n' + ('exec "$@"\n' if name == "sudo" else "")
        )
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    folder.chmod(0o755)
    return folder


def test_the_list_covers_sshd_xvfb_and_what_qt_loads_from_the_system():
    listed = set(run("--list").stdout.split())
    assert {"openssh-server", "openssh-client", "xvfb", "x11-utils"} <= listed
    plugin = find_plugin("xcb", {})
    ldd = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, check=True).stdout
    needed = {line.split()[0] for line in ldd.splitlines() if "=>" in line}
    x_libraries = {
        PACKAGES[name][0] for name in needed if name in PACKAGES and name.startswith(("libxcb", "libX"))
    }
    assert len(x_libraries) > 10 and x_libraries <= listed


def test_on_a_set_up_machine_it_finds_everything_and_does_nothing(public_folder):
    check = run("--check")
    assert check.returncode == 0, f"this machine lacks packages: {check.stdout}"
    count = len(run("--list").stdout.split())
    assert check.stdout == f"system-packages: all {count} present\n"
    folder = bin_folder(public_folder, stand_ins=("sudo", "apt-get"))
    path = f"{folder}{os.pathsep}{os.environ['PATH']}"
    again = run(env={"PATH": path})  # install mode, as the README command runs it every time
    assert (again.returncode, again.stdout) == (0, check.stdout)
    assert not (public_folder / "calls.log").exists()  # neither sudo nor apt-get ran


def test_a_missing_package_is_found_and_an_installed_one_is_not():
    env = dict(os.environ, TPUSCOPE_SYSTEM_PACKAGES=f"dpkg {ABSENT} coreutils")
    result = run("--check", env=env)
    assert (result.returncode, result.stdout) == (1, f"system-packages: missing: {ABSENT}\n")


def test_a_name_an_installed_package_provides_counts_as_installed():
    """Ubuntu 24.04's libglib2.0-0t64 provides libglib2.0-0: asking for the old name must not reinstall."""
    listing = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev} ${Provides}\n"],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    provided = [
        name.split("(")[0].strip()
        for line in listing.splitlines() if line.startswith("ii") and line[3:].strip()
        for name in line[3:].split(",")
    ]  # fmt: skip
    virtual = next(name for name in provided if _not_a_package(name))
    result = run("--check", env=dict(os.environ, TPUSCOPE_SYSTEM_PACKAGES=virtual))
    assert (result.returncode, result.stdout) == (0, "system-packages: all 1 present\n")


def _not_a_package(name: str) -> bool:
    """True when no package of this name is installed (dpkg lists a virtual name with no status)."""
    status = subprocess.run(
        ["dpkg-query", "-W", "-f=${db:Status-Abbrev}", name], capture_output=True, text=True
    )
    return not status.stdout.startswith("ii")


def test_as_root_it_runs_apt_get_itself(public_folder):
    if os.geteuid() != 0:
        pytest.skip("needs root (CI runs as root)")
    folder = bin_folder(public_folder, stand_ins=("sudo", "apt-get"))
    env = {"PATH": str(folder), "TPUSCOPE_SYSTEM_PACKAGES": f"dpkg {ABSENT}"}
    result = run(env=env)
    assert result.returncode == 0, result.stderr
    assert (public_folder / "calls.log").read_text().splitlines() == [
        "apt-get update -qq",
        f"apt-get install -y -qq --no-install-recommends {ABSENT}",
    ]


def test_as_a_user_it_goes_through_sudo(public_folder):
    folder = bin_folder(public_folder, stand_ins=("sudo", "apt-get"))
    env = {"PATH": str(folder), "TPUSCOPE_SYSTEM_PACKAGES": f"dpkg {ABSENT}"}
    result = run(env=env, user=NOBODY if os.geteuid() == 0 else None)
    assert result.returncode == 0, result.stderr
    assert (public_folder / "calls.log").read_text().splitlines() == [
        "sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq",
        "apt-get update -qq",
        f"sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends {ABSENT}",
        f"apt-get install -y -qq --no-install-recommends {ABSENT}",
    ]


def test_as_a_user_without_sudo_it_says_what_is_missing_and_stops(public_folder):
    folder = bin_folder(public_folder, stand_ins=("apt-get",))
    env = {"PATH": str(folder), "TPUSCOPE_SYSTEM_PACKAGES": f"dpkg {ABSENT}"}
    result = run(env=env, user=NOBODY if os.geteuid() == 0 else None)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == (
        "system-packages: these packages are missing and installing them needs root (run this as root, "
        f"or install sudo): {ABSENT}"
    )
    assert not (public_folder / "calls.log").exists()


def test_ci_runs_the_readme_test_command_verbatim_and_last():
    readme = (ROOT / "README.md").read_text()
    after = readme.split("Install everything and run the whole test suite", 1)[1]
    command = after.split("```sh\n", 1)[1].split("\n```", 1)[0]
    assert command.startswith("sh tools/system-packages.sh && ") and "\n" not in command
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [line for line in ci if line.strip() and not line.lstrip().startswith("#")]
    assert command in ci
    after_readme = commands[commands.index(command) + 1 :]
    assert all(line.startswith(("status=", "set -e", "if ", "  ", "fi", "exit")) for line in after_readme)
