"""`tpuscope.open(bytes)`: a profile held in memory gives the same trace and results as its file, on
every shared profile (XSpace, gzip or not, and trace-event JSON); and `tpuscope.capture()` records a
JAX program in process and opens it as the file it wrote opens."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tpuscope
from tests.conftest import SHARED_TRACES, TPU_TRACE
from tpuscope.errors import ProfileError
from tpuscope.readers import host_from_filename

SHARED = sorted(p for p in SHARED_TRACES.glob("*/*") if p.name.endswith((".xplane.pb", ".json.gz")))


def events_of(profile: tpuscope.Profile) -> list[tuple]:
    """Every track's events, by plane and track: names, starts, durations, nesting, event names."""
    trace = profile.trace
    return [
        (plane.name, track.name, track.start_ps.tobytes(), track.duration_ps.tobytes(), track.depth.tobytes(),
         [trace.strings[int(i)] for i in np.unique(track.name_id)])
        for plane in trace.planes
        for track in plane.tracks
    ]  # fmt: skip


def test_every_shared_profile_is_found():
    assert len([p for p in SHARED if p.suffix == ".pb"]) == 4 and len(SHARED) >= 12


@pytest.mark.parametrize("path", SHARED, ids=lambda p: p.name[:40])
def test_bytes_open_as_the_file_does(path: Path):
    from_file = tpuscope.open(path, use_cache=False)
    data = path.read_bytes()
    from_bytes = tpuscope.open(data, name=path.name)
    assert from_bytes.trace.sources == [f"<memory: {path.name}>"]
    assert from_bytes.trace.hosts == from_file.trace.hosts
    assert from_bytes.trace.event_count == from_file.trace.event_count > 0
    assert events_of(from_bytes) == events_of(from_file)
    assert from_bytes.ops() == from_file.ops()
    assert from_bytes.diagnose() == from_file.diagnose()
    # the other encoding of the same document: gzip for a plain file, plain for a gzip file
    other = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else gzip.compress(data, compresslevel=1)
    unnamed = tpuscope.open(other)
    # its host: the one the profile names (an XSpace's hostnames), else the file name's, here `profile`
    named_by_file = from_file.trace.hosts == [host_from_filename(path)]
    assert unnamed.trace.hosts == (["profile"] if named_by_file else from_file.trace.hosts)
    assert unnamed.trace.event_count == from_file.trace.event_count
    assert events_of(unnamed) == events_of(from_file)


def test_bad_bytes_are_one_sentence():
    with pytest.raises(ProfileError, match=r"^Cannot open <memory>: the profile is empty \(0 bytes\)\.$"):
        tpuscope.open(b"")
    with pytest.raises(ProfileError) as raised:
        tpuscope.open(b"\x89PNG\r\n\x1a\n" + bytes(100))
    assert str(raised.value).startswith("Cannot open <memory: profile.xplane.pb>: ") and "\n" not in str(
        raised.value
    )
    with pytest.raises(ProfileError, match="<memory: profile"):
        tpuscope.open(TPU_TRACE.read_bytes()[:2000] + b"\xff" * 10, use_cache=False)


CAPTURE = textwrap.dedent(
    """
    import json, sys
    import jax, jax.numpy as jnp
    import tpuscope

    @jax.jit
    def step(w, x):
        return w - 0.01 * jax.grad(lambda w: jnp.mean((x @ w) ** 2))(w)

    w, x = jnp.ones((64, 64)), jnp.ones((32, 64))
    step(w, x).block_until_ready()
    with tpuscope.capture(logdir=sys.argv[1] if len(sys.argv) > 1 else None) as run:
        for i in range(4):
            with jax.profiler.StepTraceAnnotation("train", step_num=i):
                w = step(w, x)
        w.block_until_ready()
    print(json.dumps({"events": run.trace.event_count, "ops": run.ops()[:3], "steps": run.diagnose()["steps"],
                      "sources": [str(s) for s in run.trace.sources]}))
    """
)


def test_capture_records_in_process_and_opens_as_the_file(tmp_path: Path):
    env = {"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin", "TPUSCOPE_CACHE_DIR": str(tmp_path / "cache")}
    kept = subprocess.run([sys.executable, "-c", CAPTURE, str(tmp_path / "logs")], check=True, timeout=240,
                          env=env, capture_output=True, text=True)  # fmt: skip
    captured = json.loads(kept.stdout)
    (written,) = sorted((tmp_path / "logs").glob("plugins/profile/*/*.xplane.pb"))
    from_file = tpuscope.open(written, use_cache=False)
    assert captured["events"] == from_file.trace.event_count > 0
    assert captured["ops"] == from_file.ops()[:3] and captured["ops"]
    assert captured["steps"] == from_file.diagnose()["steps"] and captured["steps"]["count"] >= 3
    # without a logdir: a temporary folder, removed once the profile is in memory
    temporary = subprocess.run([sys.executable, "-c", CAPTURE], check=True, timeout=240, env=env,
                               capture_output=True, text=True)  # fmt: skip
    fresh = json.loads(temporary.stdout)
    assert fresh["events"] > 0 and fresh["steps"]["count"] >= 3
    assert not any(Path(s).exists() for s in fresh["sources"])
