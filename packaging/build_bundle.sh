#!/usr/bin/env bash
# Builds the standalone one-folder bundle dist/tpuscope/ (no Python needed on the target),
# then proves it works by rendering the bundled TPU sample headless with the built binary.
# Usage: packaging/build_bundle.sh [PYTHON]   (default: .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${1:-.venv/bin/python}"
"$PYTHON" -m pip install -q 'pyinstaller>=6'  # the package itself must already be installed (README)
"$PYTHON" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath dist --workpath build/pyinstaller packaging/tpuscope.spec
echo "Bundle: dist/tpuscope/ ($(du -sh dist/tpuscope | cut -f1))"
out="$(mktemp -d)/bundle-smoke.png"
QT_QPA_PLATFORM=offscreen TPUSCOPE_NO_CACHE=1 \
  dist/tpuscope/tpuscope screenshot dist/tpuscope/_internal/samples/tpu_v6e_inference_4chip.xplane.pb "$out"
test -s "$out"
echo "The built binary rendered the TPU sample to $out"
