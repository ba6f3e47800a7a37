"""`tpuscope mcp` through the MCP SDK's own client: `ClientSession` over `stdio_client` starts the server
as a subprocess, lists its tools and calls each on the shared profiles; every result must equal what the
command prints with `--json` (run in this process through `tpuscope.cli.main`), errors must be one
sentence with the server still answering, and the locked SQL must write nothing."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import GPU_TRACE, PTXLA_TRACE, SHARED_TRACES, TF_TRACE, TPU_TRACE

mcp = pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

KINETO = SHARED_TRACES / "kineto"
BERT = KINETO / "tracelens__h100__gaunernst_bert-small-uncased__1016001.json.gz"
RESNET = KINETO / "kineto_tb__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz"
MI250 = KINETO / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"
CPU_ONLY = KINETO / "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
QUERY = "SELECT name, count(*) AS n FROM events GROUP BY name ORDER BY n DESC, name LIMIT 25"
PROFILES = [TPU_TRACE, GPU_TRACE, PTXLA_TRACE, TF_TRACE, BERT, RESNET, MI250, CPU_ONLY]
BIG = 5_000_000  # the tools' largest byte budget: nothing of these profiles is cut under it
EXPECTED_TOOLS = {
    "info", "overview", "diagnose", "ops", "op_details", "memory", "compare", "history", "sql_tables", "sql",
    "metrics", "flame", "graph", "comms",
}  # fmt: skip


def with_server(work: Callable[[ClientSession], Awaitable[None]]) -> None:
    """Starts `python -m tpuscope mcp` (this interpreter, this environment: the test's cache folder) and
    runs `work` on an initialized session."""

    async def main() -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "tpuscope", "mcp"], env=dict(os.environ)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await work(session)

    anyio.run(main)


def cli_json(capsys, *argv: str) -> Any:
    from tpuscope.cli import main

    capsys.readouterr()
    assert main(list(argv)) in (0, 1), capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, {**arguments, "max_bytes": BIG})
    assert not result.is_error, (tool, arguments, result.content)
    assert result.structured_content is not None
    payload = dict(result.structured_content)
    assert payload.pop("bounds") == {"max_bytes": BIG, "cut": []}, (tool, arguments)
    # the text content is the same JSON (clients that show no structured content read it)
    assert json.loads(result.content[0].text)["bounds"]["max_bytes"] == BIG  # type: ignore[union-attr]
    return payload


async def error_of(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, (tool, arguments)
    (text,) = [c.text for c in result.content]  # type: ignore[union-attr]
    assert "Traceback" not in text and "\n" not in text, text
    return text


def test_the_tools_are_listed_with_schemas_a_model_can_read():
    async def work(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == EXPECTED_TOOLS
        for tool in tools.values():
            assert tool.description and len(tool.description) > 40, tool.name
            assert tool.annotations is not None and tool.annotations.read_only_hint, tool.name
            for name, schema in tool.input_schema["properties"].items():
                assert schema.get("description"), (tool.name, name)
        assert tools["ops"].input_schema["properties"]["by"]["enum"] == [
            "op",
            "category",
            "program",
            "framework",
            "source",
        ]
        assert tools["sql"].input_schema["properties"]["max_rows"]["maximum"] == 10_000

    with_server(work)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name.split(".")[0][:40])
def test_each_tool_equals_the_commands_json(profile: Path, capsys):
    path = str(profile)
    expected = {
        "info": cli_json(capsys, "info", path, "--json"),
        "overview": cli_json(capsys, "overview", path, "--json", "--top", "7"),
        "diagnose": cli_json(capsys, "diagnose", path, "--json"),
        "memory": cli_json(capsys, "memory", path, "--json"),
        "sql": cli_json(capsys, "sql", path, QUERY, "--json"),
        "metrics": cli_json(capsys, "metrics", path, "--json"),
        "comms": cli_json(capsys, "comms", path, "--json"),
    }
    from tpuscope.cli import main

    has_ops = main(["ops", path, "--json", "--top", "1"]) == 0
    capsys.readouterr()
    graph_error = None
    if has_ops:
        for by in ("op", "category", "framework", "source"):
            expected[f"ops {by}"] = cli_json(capsys, "ops", path, "--json", "--by", by, "--top", "15")
        for by in ("scope", "op"):
            expected[f"flame {by}"] = cli_json(capsys, "flame", path, "--by", by, "--format", "json")
        top_op = expected["ops op"]["rows"][0]
        graph_argv = ["graph", path, top_op["name"], "--program", str(top_op["program"]), "--json"]
        if main(graph_argv) == 0:
            expected["graph"] = json.loads(capsys.readouterr().out)
        else:  # a profile without HLO: the same sentence as an error result
            graph_error = capsys.readouterr().err.strip().removeprefix("tpuscope: ")

    async def work(session: ClientSession) -> None:
        got = {
            "info": await call(session, "info", path=path),
            "overview": await call(session, "overview", path=path, top=7),
            "diagnose": await call(session, "diagnose", path=path),
            "memory": await call(session, "memory", path=path),
        }
        sql = await call(session, "sql", path=path, query=QUERY)
        assert sql.pop("row_count") == len(sql["rows"]) and sql.pop("cut") is False
        got["sql"] = sql
        got["metrics"] = await call(session, "metrics", path=path)
        got["comms"] = await call(session, "comms", path=path)
        for key in [k for k in expected if k.startswith("flame ")]:
            got[key] = await call(session, "flame", path=path, by=key.split()[1])
        if has_ops:
            top_op = expected["ops op"]["rows"][0]
            graph_args = {"path": path, "op": top_op["name"], "program": str(top_op["program"])}
            if graph_error is None:
                got["graph"] = await call(session, "graph", **graph_args)
            else:
                assert (await error_of(session, "graph", **graph_args)).endswith(graph_error)
        for key in [k for k in expected if k.startswith("ops ")]:
            result = await call(session, "ops", path=path, by=key.split()[1], top=15)
            assert result.pop("offset") == 0 and result.pop("total_rows") >= len(result["rows"])
            got[key] = result
        for key, value in expected.items():
            assert got[key] == value, key
        if has_ops:  # the op with most self time: its details are its ops row plus its code
            top = expected["ops op"]["rows"][0]
            details = await call(session, "op_details", path=path, name=top["name"], program=top["program"])
            assert details["matches"] == 1
            assert {k: details["ops"][0][k] for k in top} == top
            assert set(details["ops"][0]) >= {
                "framework_op",
                "source",
                "stack",
                "hlo_text",
                "traceback",
                "fused",
            }
        else:
            assert "holds no device ops" in await error_of(session, "ops", path=path)
        # every tool above opened the profile once
        assert (await call(session, "info", path=path))["events"] == expected["info"]["events"]

    with_server(work)


def test_compare_history_and_the_schema_equal_the_commands_json(capsys):
    base, new = str(PTXLA_TRACE), str(TF_TRACE)
    expected_compare = cli_json(capsys, "compare", base, new, "--json")
    expected_cross = cli_json(capsys, "compare", str(RESNET), str(GPU_TRACE), "--json")
    expected_history = cli_json(capsys, "history", base, new, str(BERT), "--json")
    expected_schema = cli_json(capsys, "sql", base, "--schema", "--json")

    async def work(session: ClientSession) -> None:
        assert await call(session, "compare", base=base, new=new) == expected_compare
        assert await call(session, "compare", base=str(RESNET), new=str(GPU_TRACE)) == expected_cross
        history = await call(session, "history", paths=[base, new, str(BERT)])
        assert history["runs"] == expected_history["runs"]
        assert len(history["runs"]) == 3
        assert await call(session, "sql_tables") == expected_schema

    with_server(work)


def test_errors_are_one_sentence_and_the_server_keeps_answering(tmp_path: Path):
    target = tmp_path / "written.csv"
    cut = tmp_path / "bad.xplane.pb"
    cut.write_bytes(b"this is no profile at all\n" * 10)
    path = str(TPU_TRACE)

    async def work(session: ClientSession) -> None:
        missing = await error_of(session, "info", path=str(tmp_path / "missing.xplane.pb"))
        assert "missing.xplane.pb" in missing and "does not exist" in missing
        assert "bad.xplane.pb" in await error_of(session, "diagnose", path=str(cut))
        copy = await error_of(session, "sql", path=path, query=f"COPY (SELECT 1 AS x) TO '{target}' (HEADER)")
        assert "COPY" in copy
        attach = await error_of(session, "sql", path=path, query=f"ATTACH '{tmp_path / 'x.db'}' AS x")
        assert attach
        assert await error_of(session, "sql", path=path, query=f"SELECT * FROM read_csv('{cut}')")
        assert await error_of(session, "sql", path=path, query="SELEC name FROM events")
        assert "no op named" in await error_of(session, "op_details", path=path, name="not-an-op")
        assert "no program named" in await error_of(session, "memory", path=path, program="nope")
        assert "matches no device" in await error_of(session, "ops", path=path, device="9")
        # still alive, and the profile that failed nothing is still open
        assert (await call(session, "info", path=path))["events"] > 0

    with_server(work)
    assert not target.exists() and list(tmp_path.iterdir()) == [cut]


def test_results_are_bounded_and_say_what_was_left_out():
    path = str(TPU_TRACE)

    async def work(session: ClientSession) -> None:
        result = await session.call_tool("memory", {"path": path, "max_bytes": 5000})
        assert not result.is_error
        memory = result.structured_content
        assert memory is not None
        assert len(json.dumps(memory["programs"] if "programs" in memory else memory)) < 20_000
        cuts = memory["bounds"]["cut"]
        assert cuts and all(c["total"] > c["returned"] for c in cuts)
        first = await call(session, "ops", path=path, top=5)
        second = await call(session, "ops", path=path, top=5, offset=5)
        assert first["total_rows"] == second["total_rows"] > 10
        everything = await call(session, "ops", path=path, top=10)
        assert first["rows"] + second["rows"] == everything["rows"]
        sql = await session.call_tool("sql", {"path": path, "query": "SELECT * FROM events", "max_rows": 3})
        rows = sql.structured_content
        assert rows is not None and rows["row_count"] == 3 and rows["cut"] is True

    with_server(work)


def test_the_server_keeps_what_it_opened(tmp_path: Path):
    """Opened once: after the file is gone, every tool still answers from the profile in memory; a file
    written again at the path is opened again."""
    copy = tmp_path / "kept.xplane.pb"
    copy.write_bytes(PTXLA_TRACE.read_bytes())

    async def work(session: ClientSession) -> None:
        events = (await call(session, "info", path=str(copy)))["events"]
        copy.unlink()
        assert (await call(session, "overview", path=str(copy)))["steps"]["count"] > 0
        assert (await call(session, "diagnose", path=str(copy)))["findings"]
        assert (await call(session, "info", path=str(copy)))["events"] == events
        assert "does not exist" in await error_of(session, "info", path=str(tmp_path / "other.xplane.pb"))
        # recorded again at the same path: opened again
        copy.write_bytes(GPU_TRACE.read_bytes())
        again = await call(session, "info", path=str(copy))
        assert again["events"] != events and any(p["name"].startswith("/device:GPU") for p in again["planes"])

    with_server(work)


def test_a_profile_is_opened_once_per_server(tmp_path: Path):
    """The cache of the server itself (in process: the same class the stdio server uses)."""
    from tpuscope.agents.server import ProfileCache

    cache = ProfileCache(capacity=2)
    first = cache.get(str(PTXLA_TRACE))
    relative = os.path.relpath(PTXLA_TRACE)
    assert cache.get(relative) is first and cache.opened == 1
    cache.get(str(GPU_TRACE))
    cache.get(str(TPU_TRACE))  # the least recently used (PTXLA) is dropped
    assert cache.get(str(GPU_TRACE)) is not None and cache.opened == 3
    assert cache.get(str(PTXLA_TRACE)) is not first and cache.opened == 4


def test_the_skill_ships_in_the_package_and_names_every_tool(capsys):
    from tpuscope.cli import main

    assert main(["mcp", "--skill"]) == 0
    skill = capsys.readouterr().out
    assert skill.startswith("---\nname: tpuscope\ndescription: ")
    assert all(f"`{tool}`" in skill for tool in EXPECTED_TOOLS)
