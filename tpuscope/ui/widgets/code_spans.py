"""Finding texts and step descriptions mark code with Markdown backticks (`jit_f`, `copy-done.4`):
the CLI prints them as they are, the app renders them (issue 23: they showed literally).

`code_spans_html` is for rich text (labels, text browsers): escaped, each span a <code>;
`without_code_marks` for plain text (painted list items, tooltips): the code without its backticks.
"""

from __future__ import annotations

import html
import re

_CODE_SPAN = re.compile(r"`([^`\n]+)`")  # CommonMark's single-backtick span, one line


def code_spans_html(text: str) -> str:
    """`text` as escaped HTML, each `code` span set in the monospace face."""
    parts = []
    last = 0
    for match in _CODE_SPAN.finditer(text):
        parts.append(html.escape(text[last : match.start()]))
        parts.append(f"<code>{html.escape(match.group(1))}</code>")
        last = match.end()
    parts.append(html.escape(text[last:]))
    return "".join(parts)


def without_code_marks(text: str) -> str:
    """`text` with the backticks of its code spans removed (a lone backtick stays)."""
    return _CODE_SPAN.sub(r"\1", text)
