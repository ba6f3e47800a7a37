"""A real JAX program's collectives on XLA:CPU, named as JAX names them (`ppermute.3`, `all_gather.7`,
`psum_invariant.7`): kinds, bytes from the compiled program's instructions, the device group."""

from __future__ import annotations

import json

from tpuscope.cli import main

SHARD_BYTES = 256 * 256 * 4  # one device's f32[256,256] shard


def test_shard_map_collectives_are_listed_with_their_bytes(shard_map_profile, capsys):
    assert main(["comms", str(shard_map_profile), "--json", "--no-cache"]) == 0
    payload = json.loads(capsys.readouterr().out)
    rows = {r["kind"]: r for r in payload["collectives"]}
    assert set(rows) == {"collective-permute", "all-gather", "all-reduce"}
    assert rows["collective-permute"]["name"].startswith("ppermute.")
    assert rows["all-gather"]["name"].startswith("all_gather.")
    assert rows["collective-permute"]["bytes_per_op"] == SHARD_BYTES
    assert rows["all-reduce"]["bytes_per_op"] == SHARD_BYTES
    assert rows["all-gather"]["bytes_per_op"] == 4 * SHARD_BYTES  # the gathered array (nccl-tests' S)
    for row in rows.values():
        assert row["count"] == 4 * 3  # each of the 4 devices, each of the 3 steps
        assert row["transport"] == "host" and row["source"]
    assert rows["all-gather"]["group_size"] == 4
    # nccl-tests' all-gather factor (n-1)/n = 3/4 (both rounded to 3 decimals in the JSON).
    assert abs(rows["all-gather"]["busbw_gbps"] - rows["all-gather"]["algbw_gbps"] * 3 / 4) <= 1e-3
    assert payload["summary"]["communication_us"] > 0
