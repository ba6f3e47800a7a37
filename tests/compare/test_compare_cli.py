"""`tpuscope compare` end to end: JSON shape, text, bad paths."""

from __future__ import annotations

import json

from tpuscope.cli import main


def test_json_has_the_documented_shape(pair_paths, capsys):
    code = main(["compare", str(pair_paths["plain"]), str(pair_paths["extra_op"]), "--json", "--no-cache"])
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert {"verdict", "step_time", "parity", "split", "ops", "findings", "summary"} <= set(payload)
    step = payload["step_time"]
    assert {
        "base_median_ms",
        "new_median_ms",
        "change_percent",
        "ci95_percent",
        "significant",
        "method",
    } <= set(step)
    low, high = step["ci95_percent"]
    assert low <= step["change_percent"] <= high or low <= 0 <= high or step["significant"]
    assert payload["verdict"] == "slower" and step["significant"] is True
    op = payload["ops"][0]
    assert {"name", "match", "base_self_us", "new_self_us", "delta_us", "share_of_change"} <= set(op)
    assert op["delta_us"] == round(op["new_self_us"] - op["base_self_us"], 3)
    assert set(payload["findings"]) == {"new", "resolved", "changed"}
    assert {"aspect", "base", "new", "same"} <= set(payload["parity"][0])


def test_text_starts_with_the_verdict(pair_paths, capsys):
    assert main(["compare", str(pair_paths["input_bound"]), str(pair_paths["prefetched"])]) == 0
    out = capsys.readouterr().out
    assert "Verdict: faster" in out and "waiting for input" in out and "Ops by change of self time" in out


def test_a_missing_profile_is_one_sentence_and_exit_2(pair_paths, tmp_path, capsys):
    args = [
        "compare",
        str(pair_paths["plain"]),
        str(tmp_path / "nope.xplane.pb"),
        "--fail-on-regression",
        "5",
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.xplane.pb" in err


def test_a_corrupt_base_is_exit_2(pair_paths, tmp_path, capsys):
    broken = tmp_path / "broken.xplane.pb"
    broken.write_bytes(pair_paths["plain"].read_bytes()[:100])
    assert main(["compare", str(broken), str(pair_paths["plain"])]) == 2
    assert "broken.xplane.pb" in capsys.readouterr().err
