"""What the memory tests share: XProf's Memory Viewer and Memory Profile run on a copy of a profile."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.jax_recordings import record_memory_profile


class XProfMemory:
    """XProf's memory tools on one profile, copied first: XProf writes files beside its input."""

    def __init__(self, source: Path, folder: Path):
        from xprof.convert.raw_to_tool_data import xspace_to_tool_names

        self.copy = folder / "profile.xplane.pb"
        shutil.copyfile(source, self.copy)
        xspace_to_tool_names([str(self.copy)])  # writes <module>(<id>).hlo_proto.pb beside the copy

    def viewer(self, program: str, memory_space: int) -> dict:
        from xprof.convert.raw_to_tool_data import xspace_to_tool_data

        data, _ = xspace_to_tool_data(
            [str(self.copy)], "memory_viewer", {"module_name": program, "memory_space": memory_space}
        )
        return json.loads(data) if data else {}

    def profile(self) -> dict:
        from xprof.convert.raw_to_tool_data import xspace_to_tool_data

        data, _ = xspace_to_tool_data([str(self.copy)], "memory_profile", {})
        return json.loads(data) if data else {}


def mib_to_bytes(mib: float) -> int:
    """XProf writes bytes / 2**20 as a double, exact below 2**53 bytes: this gives back the byte count."""
    return round(mib * (1 << 20))


@pytest.fixture(scope="session")
def memory_recording(tmp_path_factory) -> Path:
    """Recorded once per session: JAX on the CPU running `jit_spread` (MEMORY_PROGRAM)."""
    return record_memory_profile(tmp_path_factory.mktemp("jax_memory"))
