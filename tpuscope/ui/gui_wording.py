"""Sentences written for the CLI, reworded for a dialog: flags become the dialog's field labels and
Markdown backticks become quotes, so a GUI user is never told to "give --project" (issue 37).

The capture layer words its errors once, for both front ends; the translation lives here, in the ui
layer, because only the dialog knows what its fields are called.
"""

from __future__ import annotations

import re

# The capture CLI's flags and the Capture dialog's controls that hold the same setting.
FLAG_FIELDS = {
    "--project": "Project",
    "--zone": "Zone",
    "--tpu": "TPU",
    "--worker": "Workers",
    "--internal-ip": "Internal IPs",
    "--tunnel-through-iap": "Tunnel through IAP",
    "--ssh": "Through SSH",
    "--identity": "Key file",
    "--jump": "Jump host",
    "--timeout": "Timeout",
    "--duration": "Duration",
    "--delay": "Delay",
    "--logdir": "Save into (logdir)",
}

_QUOTED = re.compile(r"`([^`]*)`")
_FLAG = re.compile(r"(give |set |try a longer |capture with |capture through |with )?(--[a-z][a-z-]*)\b(?!=)")


def _field(match: re.Match[str], fields: dict[str, str]) -> str:
    verb, flag = match.group(1) or "", match.group(2)
    label = fields.get(flag)
    if label is None:
        return match.group(0)
    if verb in ("give ", "set "):
        return f"fill in the \u201c{label}\u201d field"
    if verb == "try a longer ":
        return f"try a longer \u201c{label}\u201d"
    if verb:
        return f"{verb}the \u201c{label}\u201d setting"
    return f"the \u201c{label}\u201d setting"


def for_dialog(message: str, fields: dict[str, str] = FLAG_FIELDS) -> str:
    """`message` with each flag outside a quoted command named by its field, and backticks as quotes.

    A command the user is told to run (`gcloud config set project PROJECT`) is kept verbatim, flags
    included, since it is typed in a terminal.
    """
    parts = _QUOTED.split(message)  # even indices: prose; odd: the insides of backticks
    for index in range(0, len(parts), 2):
        parts[index] = _FLAG.sub(lambda match: _field(match, fields), parts[index])
    for index in range(1, len(parts), 2):
        parts[index] = f"\u201c{parts[index]}\u201d"
    return "".join(parts).replace("`", "")
