"""The Python API (`tpuscope.open`, `tpuscope.compare`) returns the records the commands print with --json."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import tpuscope
from tests.conftest import SAMPLES
from tpuscope.cli import main
from tpuscope.errors import ProfileError
from tpuscope.query.session import QueryError

SAMPLE = SAMPLES / "tpu_v6e_inference_4chip.xplane.pb"
CPU_SAMPLE = SAMPLES / "jax_cpu_recompile.xplane.pb"


def _json(capsys, *argv) -> dict:
    assert main(list(argv)) in (0, 1)
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def profile() -> tpuscope.Profile:
    return tpuscope.open(SAMPLE)


def test_records_equal_the_commands_json(capsys, profile):
    ops = _json(capsys, "ops", str(SAMPLE), "--json")
    assert profile.ops() == ops["rows"]
    assert [{k: v for k, v in r.items() if k not in ("ts_ps", "dur_ps")} for r in profile.steps()] == (
        ops["steps"]["rows"]
    )
    assert (
        profile.ops(by="category") == _json(capsys, "ops", str(SAMPLE), "--by", "category", "--json")["rows"]
    )
    assert profile.diagnose() == _json(capsys, "diagnose", str(SAMPLE), "--json")
    assert profile.memory() == _json(capsys, "memory", str(SAMPLE), "--json")


def test_compare_equals_the_command(capsys, profile):
    theirs = _json(capsys, "compare", str(CPU_SAMPLE), str(SAMPLE), "--json")
    ours = tpuscope.compare(CPU_SAMPLE, profile)
    assert json.loads(json.dumps(ours, default=str)) == theirs


def test_sql_returns_a_relation(profile):
    relation = profile.sql(
        "SELECT name, count(*) AS n FROM events GROUP BY name ORDER BY n DESC, name LIMIT 3"
    )
    rows = relation.fetchall()
    assert len(rows) == 3 and rows[0][1] >= rows[1][1]
    table = relation.arrow().read_all() if hasattr(relation.arrow(), "read_all") else relation.arrow()
    assert table.num_rows == 3
    assert profile.table("tracks").num_rows == len(profile.trace.track_list())
    with pytest.raises(QueryError, match="COPY"):
        profile.sql("COPY events TO 'x.csv'")
    with pytest.raises(ValueError, match="by must be"):
        profile.ops(by="nonsense")


def test_bad_path_is_one_sentence(tmp_path):
    with pytest.raises(ProfileError):
        tpuscope.open(tmp_path / "missing.xplane.pb")


def test_import_stays_light():
    heavy = "('duckdb', 'pyarrow', 'tpuscope.analysis')"
    code = f"import sys, tpuscope; print(any(m.startswith({heavy}) for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
