"""Incomplete profiles are a state (issue 33): a salvaged load (a file cut short, records dropped, a host
file left out) marks every analysis of it incomplete with how much is missing, and no output reads as an
all-clear on it. The issue's case: the TPU sample cut after 15 of its 26,723 events opened to "No
problems found." and exit 0."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from tests.conftest import GPU_TRACE, PTXLA_TRACE, SHARED_TRACES, TPU_TRACE, require_shared_traces
from tests.reliability.cut_profiles import CUT_EVENTS, write_cut_tpu_profile
from tpuscope.analysis.diagnose import RULES
from tpuscope.analysis.session import TraceAnalysis
from tpuscope.app.opener import open_trace
from tpuscope.cli import main
from tpuscope.model.completeness import (
    CUT,
    DROPPED,
    DROPPED_INCOMPLETE_FRACTION,
    LEFT_OUT,
    Loss,
    completeness,
    percent_words,
)

KINETO_TRACE = (
    SHARED_TRACES / "kineto" / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
)


@pytest.fixture(scope="module")
def cut_file(tmp_path_factory):
    require_shared_traces()
    return write_cut_tpu_profile(tmp_path_factory.mktemp("cut"))


def _json(capsys, argv: list[str]) -> tuple[int, dict]:
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


def test_the_cut_file_is_incomplete_with_the_share_read(cut_file):
    trace = open_trace(cut_file, use_cache=False)
    assert trace.event_count == CUT_EVENTS
    complete = trace.completeness
    assert not complete.complete and "cut short" in complete.reason
    # The bytes read over the bytes the cut plane declares: an upper bound, under 1% of the file here
    # (15 of 26,723 events is 0.06%; the plane's own header and names are in the bytes read).
    assert complete.fraction_read is not None
    assert cut_file.stat().st_size / TPU_TRACE.stat().st_size <= complete.fraction_read < 0.01
    assert [loss.kind for loss in trace.load_losses] == [CUT]


def test_the_cache_keeps_what_is_missing(cut_file):
    first = open_trace(cut_file)  # read, and stored in the trace cache
    again = open_trace(cut_file)  # from the cache
    assert again.load_losses == first.load_losses and again.completeness == first.completeness
    assert not again.completeness.complete


def test_a_json_trace_cut_short_is_incomplete_by_an_unknown_share(tmp_path, capsys):
    """A JSON document has no declared length: the records read are counted, the share is unknown."""
    require_shared_traces()
    text = gzip.decompress(KINETO_TRACE.read_bytes())
    path = tmp_path / "cut.pt.trace.json"
    path.write_bytes(text[: len(text) // 2])
    code, data = _json(capsys, ["diagnose", str(path), "--no-cache", "--json"])
    assert (data["complete"], data["read_percent"]) == (False, None)
    assert "cut short" in data["incomplete_reason"]
    endings = ("(in the part read)", "(in the part read: cannot judge the rest)")
    assert all(c["summary"].endswith(endings) for c in data["checked"])


def _with_times_out_of_range(tmp_path, every: int):
    """The Kineto trace with every `every`-th record's `ts` at 1e20 (a time no timeline holds: dropped)."""
    document = json.loads(gzip.decompress(KINETO_TRACE.read_bytes()))
    records = document["traceEvents"]
    timed = [r for r in records if r.get("ph") == "X"]
    for record in timed[::every]:
        record["ts"] = 1e20
    path = tmp_path / f"every_{every}.pt.trace.json"
    path.write_text(json.dumps(document))
    return path, len(timed[::every])


def test_records_dropped_make_a_json_trace_incomplete_from_one_percent(tmp_path):
    require_shared_traces()
    many, dropped = _with_times_out_of_range(tmp_path, 10)  # a tenth of the complete events
    complete = open_trace(many, use_cache=False).completeness
    assert not complete.complete and complete.summary == "records were dropped as unreadable"
    assert complete.fraction_read is not None and 0.85 < complete.fraction_read < 0.95
    assert f"{dropped:,} record" in complete.reason
    few, _ = _with_times_out_of_range(tmp_path, 100_000)  # one record: a warning, the profile complete
    trace = open_trace(few, use_cache=False)
    assert trace.load_warnings and trace.completeness.complete


def test_a_whole_profile_is_complete():
    require_shared_traces()
    trace = open_trace(TPU_TRACE, use_cache=False)
    assert trace.completeness.complete and trace.load_losses == []
    assert TraceAnalysis(trace).report.to_json()["complete"] is True


def test_diagnose_text_gives_no_all_clear_and_a_gate_does_not_pass(cut_file, capsys):
    assert main(["diagnose", str(cut_file), "--no-cache"]) == 0  # a report, no gate: exit 0
    out = capsys.readouterr().out
    assert "\nNo problems found.\n" not in out
    assert "No problems found in the 0.87% of the profile that could be read" in out
    assert "Incomplete profile:" in out and "cut short" in out
    # Each rule (none found anything) says it looked at the part read and cannot judge the rest.
    code, data = _json(capsys, ["diagnose", str(cut_file), "--no-cache", "--json"])
    assert data["findings"] == [] and len(data["checked"]) == len(RULES)
    assert all(c["summary"].endswith("(in the 0.87% read: cannot judge the rest)") for c in data["checked"])
    # --fail-on: a gate cannot pass on a part of the profile, whatever the level.
    assert main(["diagnose", str(cut_file), "--no-cache", "--fail-on", "critical"]) == 1
    assert main(["diagnose", str(PTXLA_TRACE), "--no-cache", "--fail-on", "critical"]) == 0  # info only
    capsys.readouterr()
    assert main(["diagnose", str(cut_file), "--no-cache", "--strict"]) == 2
    assert "cut short" in capsys.readouterr().err


def test_diagnose_overview_and_info_json_say_incomplete(cut_file, capsys):
    for command in ("diagnose", "overview", "info"):
        code, data = _json(capsys, [command, str(cut_file), "--no-cache", "--json"])
        assert code == 0, command
        assert data["complete"] is False, command
        assert "cut short" in data["incomplete_reason"], command
        assert 0 < data["read_percent"] < 1, command
    code, data = _json(capsys, ["overview", str(TPU_TRACE), "--no-cache", "--json"])
    assert (data["complete"], data["incomplete_reason"], data["read_percent"]) == (True, None, None)


def test_overview_text_says_the_part_read(cut_file, capsys):
    assert main(["overview", str(cut_file), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "Incomplete:  at most 0.87% of the profile could be read" in out
    assert "No problems found (" not in out
    assert "No problems found in the 0.87% of the profile that could be read" in out
    assert "no device activity recorded" not in out  # none in the part read, which says nothing of the rest


def test_a_run_with_a_host_file_left_out_is_incomplete(tmp_path, capsys):
    """A host of a run folder that cannot be read: the others are analysed, the run is incomplete."""
    require_shared_traces()
    run = tmp_path / "logs" / "plugins" / "profile" / "2026_01_01_00_00_00"
    run.mkdir(parents=True)
    shutil.copy(PTXLA_TRACE, run / "worker0.xplane.pb")
    shutil.copy(PTXLA_TRACE, run / "worker1.xplane.pb")
    (run / "worker2.xplane.pb").write_bytes(b"\x0a\xff\xff\xff\xff\x0f not an xspace")
    code, data = _json(capsys, ["diagnose", str(run), "--no-cache", "--json", "--workers", "here"])
    assert code == 0 and len(data["unreadable"]) == 1
    assert data["complete"] is False and "1 of 3 host files could not be read" in data["incomplete_reason"]
    assert data["read_percent"] == pytest.approx(200 / 3, abs=1e-3)  # at most the hosts read
    assert main(["diagnose", str(run), "--no-cache", "--workers", "here", "--fail-on", "critical"]) == 1
    assert "Incomplete profile: 1 of 3 host files could not be read." in capsys.readouterr().out
    code, data = _json(capsys, ["overview", str(run), "--no-cache", "--json", "--workers", "here"])
    assert data["complete"] is False and len(data["unreadable"]) == 1
    assert main(["overview", str(run), "--no-cache", "--workers", "here"]) == 0
    out = capsys.readouterr().out
    assert "Incomplete:  1 of 3 host files could not be read" in out
    assert "No problem between hosts in the 66% of the profile that could be read" in out


def test_a_host_cut_before_its_first_event_is_left_out_and_counted(tmp_path):
    """Loaded as one trace: the cut host is left out by the loader, its bytes count as not read."""
    require_shared_traces()
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(GPU_TRACE, run / "a.xplane.pb")
    (run / "b.xplane.pb").write_bytes(GPU_TRACE.read_bytes()[:40])
    trace = open_trace(run, use_cache=False)
    assert [loss.kind for loss in trace.load_losses] == [LEFT_OUT]
    complete = trace.completeness
    assert not complete.complete and complete.summary == "a host file could not be read"


def test_shares_of_several_losses_of_one_load():
    # A run of a whole 900-byte host and a host cut at 50 of its 100 known bytes: 950 of 1000 read.
    cut = Loss(CUT, "b", "b is cut short.", 50, 100, others_whole=900)
    assert completeness([cut]).fraction_read == pytest.approx(0.95)
    # Hosts loaded apart (a pod read host by host) are not measured against each other.
    assert completeness([cut], one_load=False).fraction_read is None
    assert completeness([cut], 1, 4, one_load=False).fraction_read == pytest.approx(0.75)


def test_dropped_records_make_a_profile_incomplete_from_the_threshold():
    few = Loss(DROPPED, "a", "3 records dropped.", 9_997, 10_000)
    many = Loss(DROPPED, "a", "500 records dropped.", 9_500, 10_000)
    assert few.makes_incomplete is False and completeness([few]).complete
    assert 500 / 10_000 >= DROPPED_INCOMPLETE_FRACTION
    assert completeness([many]) == completeness([many, few]).__class__(
        False, "500 records dropped", 0.95, "records were dropped as unreadable"
    )


@pytest.mark.parametrize(
    ("fraction", "words"),
    [(0.0087371, "0.87%"), (0.00056, "0.056%"), (0.456, "45%"), (0.9996, "99.9%"), (0.0, "0%")],
)
def test_a_share_read_is_never_rounded_up(fraction, words):
    assert percent_words(fraction) == words
