"""The bundled samples are real, load, and show what samples/README.md says they show."""

from __future__ import annotations

import json

import pytest

from tests.conftest import SAMPLES
from tpuscope.app.opener import open_trace
from tpuscope.cli import main

SAMPLE_FILES = sorted(SAMPLES.glob("*.xplane.pb"))


def test_every_sample_has_a_provenance_line():
    readme = (SAMPLES / "README.md").read_text()
    assert len(SAMPLE_FILES) >= 5
    for path in SAMPLE_FILES:
        assert path.name in readme


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_sample_loads(path):
    assert open_trace(path).event_count > 1000


def _findings(path, capsys) -> dict[str, str]:
    assert main(["diagnose", str(path), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["framework"] == "JAX"
    return {f["id"]: f["severity"] for f in payload["findings"]}


def test_healthy_sample_has_no_warning(capsys):
    findings = _findings(SAMPLES / "jax_cpu_healthy.xplane.pb", capsys)
    assert set(findings.values()) <= {"info"}


def test_input_bound_sample(capsys):
    assert _findings(SAMPLES / "jax_cpu_input_bound.xplane.pb", capsys)["input_bound"] == "critical"


def test_recompile_sample(capsys):
    # Three recompilations after the first step take 60% of the step time: critical.
    assert _findings(SAMPLES / "jax_cpu_recompile.xplane.pb", capsys)["recompilation"] == "critical"
