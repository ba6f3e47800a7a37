"""tpuscope for coding agents: the Model Context Protocol server (`tpuscope mcp`, `server`) whose tools
return what the commands print with `--json`, and the agent skill (`SKILL.md`) that says which tool
answers which question. Needs the optional extra `tpuscope[agents]` (the MCP SDK)."""
