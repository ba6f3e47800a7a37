"""A light-pass worker loads no diagnosis rules; a full pass loads them where it needs them.

Every worker of the pod page's light pass is a fresh interpreter, and what it imports is part of the
pass's fixed cost before the first host is summarized: `analyze_host(light=True)` runs no rule, so
neither `prepare_worker` nor a light task imports the pod rules (`diagnose.across_hosts` and the rule
modules it brings) or the rules' engine. The full pass, in the same kind of process, does import them
(so the first test can fail), and the pod rules stay reachable from `tpuscope.analysis.pod_run`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.paths import SHARED_TRACES
from tpuscope.app import hosts

HOST_FILE = SHARED_TRACES / "tpu" / "tpu_v6e_inference_4chip.xplane.pb"

# A worker as `HostPool` starts one (prepare_worker), then one task of `kind`: the diagnosis modules
# it imported.
_WORKER = """
import json, sys
from tpuscope.app import hosts
hosts.prepare_worker()
results, kind = hosts.read_host_file(sys.argv[1], sys.argv[2])
assert kind == sys.argv[2] and results
print(json.dumps(sorted(m for m in sys.modules if m.startswith("tpuscope.analysis.diagnose"))))
"""


def _diagnosis_modules(kind: str) -> set[str]:
    env = dict(os.environ, TPUSCOPE_NO_CACHE="1")
    out = subprocess.run(
        [sys.executable, "-c", _WORKER, str(HOST_FILE), kind],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_a_light_worker_imports_no_rules():
    loaded = _diagnosis_modules(hosts.LIGHT)
    # the package (its engine loads on first use), what a result's types name and the HLO text parser
    # (a host summary reads its collectives' sizes from their instructions) and the names of the results
    # the rules share with the metrics (no rule imported with them), nothing more
    allowed = {
        "tpuscope.analysis.diagnose",
        "tpuscope.analysis.diagnose.finding",
        "tpuscope.analysis.diagnose.hlo_text",
        "tpuscope.analysis.diagnose.rule_results",
    }
    assert loaded <= allowed, sorted(loaded)


def test_a_full_worker_imports_the_rules_it_runs():
    loaded = _diagnosis_modules(hosts.FULL)
    assert "tpuscope.analysis.diagnose.across_hosts" in loaded
    assert len(loaded) > 10  # the engine and the per-host rules


def test_the_pod_rules_are_still_named_by_pod_run():
    from tpuscope.analysis import pod_run
    from tpuscope.analysis.diagnose import across_hosts

    assert pod_run.POD_RULES is across_hosts.POD_RULES
    assert pod_run.PodDiagnosis is across_hosts.PodDiagnosis
