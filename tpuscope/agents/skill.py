"""The agent skill that ships in the package (`SKILL.md` beside this module): read as package data,
so an installed wheel holds it too (`tpuscope mcp --skill` prints it)."""

from __future__ import annotations

from importlib.resources import files


def skill_text() -> str:
    return files("tpuscope.agents").joinpath("SKILL.md").read_text(encoding="utf-8")
