"""Records the bundled JAX CPU sample profiles (healthy, input-bound, recompiling).

The loops are the same scenarios the diagnose tests record (tests/diagnose/recordings.py),
so the samples show exactly what the tests prove tpuscope finds. Run with JAX installed
(`pip install -e '.[test]'`):  python samples/record_samples.py
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLES = {
    "healthy": "jax_cpu_healthy",
    "input_bound": "jax_cpu_input_bound",
    "recompile": "jax_cpu_recompile",
}


def _recordings():
    path = HERE.parent / "tests" / "diagnose" / "recordings.py"
    spec = importlib.util.spec_from_file_location("recordings", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    recordings = _recordings()
    with tempfile.TemporaryDirectory() as tmp:
        for scenario, name in SAMPLES.items():
            written = recordings.record(scenario, Path(tmp) / scenario)
            target = HERE / f"{name}.xplane.pb"
            shutil.copyfile(written, target)
            print(f"{target.name}: {target.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
