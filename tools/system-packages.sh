#!/bin/sh
# Installs the Debian/Ubuntu system packages that building tpuscope and running its test suite
# need, skipping those already installed; the README's test command runs it first.
#
#   sh tools/system-packages.sh            install what is missing (apt-get; through sudo unless root)
#   sh tools/system-packages.sh --check    list what is missing, install nothing (exit 1 if anything is)
#   sh tools/system-packages.sh --list     print the package names, one line (for .ci/run's apt-get)
#
# Nothing is missing -> nothing runs: no apt-get update, no sudo prompt, exit 0 (run it as often
# as you like). TPUSCOPE_SYSTEM_PACKAGES replaces the fixed list below (the tests use it).
set -eu

# openssh-server, openssh-client: the capture tests start a real sshd on 127.0.0.1 (and ssh-keygen).
# xvfb, x11-utils: one test starts the app on Qt's xcb platform under Xvfb and finds its window.
# The rest: what the PySide6 wheel's Qt loads from the system for its offscreen and xcb platforms
# (`ldd` on PySide6/Qt/plugins/platforms/libqxcb.so and libqoffscreen.so), and a font.
FIXED_PACKAGES="openssh-server openssh-client xvfb x11-utils \
libegl1 libgl1 libglib2.0-0 libfontconfig1 libfreetype6 libdbus-1-3 libxkbcommon0 libxkbcommon-x11-0 \
libx11-6 libx11-xcb1 libxcb1 libxcb-cursor0 libxcb-glx0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 \
libxcb-randr0 libxcb-render0 libxcb-render-util0 libxcb-shape0 libxcb-shm0 libxcb-sync1 libxcb-util1 \
libxcb-xfixes0 libxcb-xkb1 fonts-dejavu-core"
PACKAGES="${TPUSCOPE_SYSTEM_PACKAGES:-$FIXED_PACKAGES}"

mode="${1:-install}"
case "$mode" in
  install | --check | --list) ;;
  *) echo "usage: sh tools/system-packages.sh [--check | --list]" >&2; exit 2 ;;
esac

# What the Python side needs, when python3 is Debian's own (a pyenv or conda python brings its own
# venv module and headers): python3 itself, its venv module (`python3 -m venv`), and the C
# compiler, libc headers and Python headers that `pip install -e .` uses to build the C decoder.
python_packages() {
  if [ -n "${TPUSCOPE_SYSTEM_PACKAGES:-}" ]; then return; fi
  python="$(command -v python3 || true)"
  if [ -z "$python" ]; then
    echo "python3 python3-venv python3-dev"
  elif [ "$(readlink -f "$python")" = "$(readlink -f /usr/bin/python3 2>/dev/null || echo none)" ]; then
    "$python" -c "import ensurepip" 2>/dev/null || echo "python3-venv"
    "$python" -c "import os, sysconfig; assert os.path.isfile(sysconfig.get_paths()['include'] + '/Python.h')" \
      2>/dev/null || echo "python3-dev"
  fi
  command -v cc >/dev/null 2>&1 || echo "gcc"
  [ -e /usr/include/stdio.h ] || echo "libc6-dev"
}

all_packages() {
  # shellcheck disable=SC2046 # word splitting is the point: one name per word
  echo $PACKAGES $(python_packages)
}

if [ "$mode" = "--list" ]; then
  all_packages
  exit 0
fi

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "system-packages: not a Debian/Ubuntu system (no apt-get): install the equivalents of these yourself:" \
    "$(all_packages)" >&2
  exit 0
fi

# Installed packages and the names they provide (Ubuntu 24.04's libglib2.0-0t64 provides libglib2.0-0).
installed=" $(dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Provides}\n' 2>/dev/null \
  | sed -n 's/^ii *//p' | sed 's/([^)]*)//g; s/,/ /g' | tr -s ' \n' '  ') "
missing=""
for package in $(all_packages); do
  case "$installed" in
    *" $package "*) ;;
    *) missing="$missing $package" ;;
  esac
done
missing="${missing# }"

if [ -z "$missing" ]; then
  echo "system-packages: all $(all_packages | wc -w) present"
  exit 0
fi
if [ "$mode" = "--check" ]; then
  echo "system-packages: missing: $missing"
  exit 1
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=""
elif command -v sudo >/dev/null 2>&1; then
  as_root="sudo"
else
  echo "system-packages: these packages are missing and installing them needs root (run this as root, or" \
    "install sudo): $missing" >&2
  exit 1
fi
echo "system-packages: installing $missing"
# shellcheck disable=SC2086 # $as_root and $missing are word lists on purpose
$as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# shellcheck disable=SC2086
$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
case " $missing " in
  *" openssh-server "*)
    if [ -d /run/systemd/system ]; then
      echo "system-packages: note: Debian starts the ssh service when openssh-server is installed; the tests" \
        "start their own sshd on a free port (stop the service with: sudo systemctl disable --now ssh)."
    fi ;;
esac
