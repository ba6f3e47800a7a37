"""The bundled pod sample (samples/jax_cpu_pod_straggler/) shows what samples/README.md says."""

from __future__ import annotations

import json

from tests.conftest import SAMPLES
from tpuscope.cli import main

POD_SAMPLE = SAMPLES / "jax_cpu_pod_straggler"


def test_pod_sample_names_its_late_host(capsys):
    assert "jax_cpu_pod_straggler/" in (SAMPLES / "README.md").read_text()
    assert sorted(p.name for p in POD_SAMPLE.glob("*.xplane.pb")) == [
        f"worker{i}.xplane.pb" for i in range(4)
    ]
    assert main(["diagnose", str(POD_SAMPLE), "--json", "--no-cache"]) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    straggler = [f for f in findings if f["id"] == "straggler"]
    assert len(straggler) == 1 and straggler[0]["metrics"]["straggler"] == "worker2"
    assert straggler[0]["metrics"]["doing_instead"] == "input"
    assert "collective_bound" not in {f["id"] for f in findings}
