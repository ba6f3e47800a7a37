"""One query result cell as JSON, CSV and text show it: the `sql` command and the app's Query tab
write cells alike (a DECIMAL sum, a list or a struct the same way in both)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from tpuscope.model.plain import plain

# Characters a text cell shows at most (the CSV and JSON outputs have every character).
TEXT_CELL_CHARS = 60


def json_cell(value: Any) -> Any:
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, Decimal):  # HUGEINT sums and DECIMALs arrive as decimals through Arrow
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (list, tuple)):
        return [json_cell(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_cell(v) for k, v in value.items()}
    converted = plain(value)
    return converted if converted is not value else str(value)


def csv_cell(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return json.dumps(json_cell(value))
    return "" if value is None else value


def text_cell(value: Any) -> str:
    if value is None:
        return "NULL"
    text = json.dumps(json_cell(value)) if isinstance(value, (list, dict)) else str(value)
    return text if len(text) <= TEXT_CELL_CHARS else text[: TEXT_CELL_CHARS - 3] + "..."
