"""Whether a profile was read whole, and if not, how much of it is missing.

A salvaged load (a file cut short, records dropped as unreadable, a host file of a run left out)
still opens, so that what was recorded can be seen; but an analysis of a part must not read as an
analysis of the whole: "no problems found" in the first 0.9% of a profile is not an all-clear.
The loaders record each loss as a `Loss` with its numbers (`Trace.load_losses`, beside the
sentence in `Trace.load_warnings`); `completeness` turns a profile's losses into the one record
every output reads (`overview`, `diagnose` and `info`'s `"complete"`, the app's banners).

The share read is an upper bound: a cut XPlane file says how long the plane it was cut in should
have been, not how many planes followed it, so "at most 0.9%" of the bytes known to exist.
"""

from __future__ import annotations

import math
from typing import Any

from tpuscope.model.records import record

CUT = "cut"  # a file cut short: the records before the cut were read
DROPPED = "dropped"  # records that could not be read were dropped, the others read
LEFT_OUT = "left_out"  # a whole file (a host of a run) could not be read and is left out

# Records dropped as unreadable make the profile incomplete from this share of its records on (our
# heuristic): a handful of damaged records in a million is a note, a tenth of them is not the profile.
DROPPED_INCOMPLETE_FRACTION = 0.01


@record(frozen=True)
class Loss:
    """One part of a profile its load could not read, with what is known of its size.

    `units_read`/`units_known`: what was read of the source and the least it holds, in one unit
    (bytes of a cut file, records of one with dropped records, bytes of a file left out); 0 known
    when its size is unknown (a JSON document cut short)."""

    kind: str  # CUT, DROPPED or LEFT_OUT
    source: str  # the file, as the warning names it
    sentence: str  # the load warning's sentence (what is missing)
    units_read: int = 0
    units_known: int = 0
    # The units of the same load's other sources, read whole (a run's hosts that are not cut): the
    # share of the profile read counts them (one value per load, the same on each of its losses).
    others_whole: int = 0

    @property
    def makes_incomplete(self) -> bool:
        """A cut or a file left out always does; dropped records only from DROPPED_INCOMPLETE_FRACTION."""
        if self.kind != DROPPED:
            return True
        return self.units_known > 0 and 1 - self.units_read / self.units_known >= DROPPED_INCOMPLETE_FRACTION

    @property
    def fraction_read(self) -> float | None:
        return self.units_read / self.units_known if self.units_known > 0 else None


@record(frozen=True)
class Completeness:
    """Whether an analysis covers the whole profile: the record `"complete"` and the all-clear read.

    `fraction_read`: at most this share of the profile was read (None: unknown, as for a JSON
    document cut short); `reason`: the losses that make it incomplete, one sentence each."""

    complete: bool = True
    reason: str = ""
    fraction_read: float | None = None
    summary: str = ""  # the reason in a few words ("a file is cut short"), for one-line all-clears

    def to_json(self) -> dict[str, Any]:
        """The keys `overview`, `diagnose` and `info` write: `complete`, `incomplete_reason` (null when
        complete) and `read_percent` (at most that share was read; null when complete or unknown)."""
        percent = None if self.complete or self.fraction_read is None else round(self.fraction_read * 100, 3)
        return {
            "complete": self.complete,
            "incomplete_reason": None if self.complete else self.reason,
            "read_percent": percent,
        }

    def part_read(self) -> str:
        """The part of the profile an analysis covers, for "No problems found in ...": "the 0.87% of
        the profile that could be read", or "the part of the profile that could be read" (size unknown)."""
        if self.complete:
            return "the profile"
        if self.fraction_read is None:
            return "the part of the profile that could be read"
        return f"the {percent_words(self.fraction_read)} of the profile that could be read"

    def no_problems(self) -> str:
        """The sentence that replaces "No problems found." (no full stop): on a whole profile that one,
        on an incomplete one the part it covers and why the rest is missing."""
        if self.complete:
            return "No problems found"
        return f"No problems found in {self.part_read()} ({self.summary}: the rest cannot be judged)"

    def qualified(self, checked: str, found: bool) -> str:
        """A rule's "what was checked" line on this profile: on an incomplete one it says the part it
        looked at, and that a rule which found nothing cannot rule the problem out in the rest."""
        if self.complete or checked.endswith(_QUALIFIED_ENDINGS):
            return checked
        fraction = self.fraction_read
        part = "the part read" if fraction is None else f"the {percent_words(fraction)} read"
        rest = "" if found else _CANNOT_JUDGE
        return f"{checked} (in {part}{rest})"


_CANNOT_JUDGE = ": cannot judge the rest"
_QUALIFIED_ENDINGS = (" read)", f"{_CANNOT_JUDGE})")  # a line qualified once stays so


_FLOAT_SLACK = 1e-9  # 0.056 * 1000 is 55.99999...: rounded down, it must still read 0.056


def percent_words(fraction: float) -> str:
    """A share read, never rounded up to a whole profile: 0.0087 -> "0.87%", 0.456 -> "45%",
    0.9996 -> "99.9%"."""
    percent = fraction * 100
    if percent <= 0:
        return "0%"
    if percent < 1:
        digits = max(0, 1 - math.floor(math.log10(percent)))  # two significant digits
        return f"{math.floor(percent * 10**digits + _FLOAT_SLACK) / 10**digits:.{digits}f}%"
    if percent < 99:
        return f"{math.floor(percent)}%"
    return f"{min(math.floor(percent * 10) / 10, 99.9):.1f}%"


def completeness(
    losses: list[Loss], hosts_left_out: int = 0, hosts_total: int = 0, one_load: bool = True
) -> Completeness:
    """The record of a profile's (or a run's) losses. Files of one kind add up: the share read is the
    units read over the units known of those that are measured, and at most the hosts read over all
    hosts when whole hosts are left out (`hosts_left_out` of `hosts_total`, counted by the caller
    when it, not the loader, left them out). `one_load`: the losses come from one load, so their
    units (with `others_whole`) measure the whole profile; losses of hosts loaded apart do not."""
    counting = [loss for loss in losses if loss.makes_incomplete]
    if not counting and hosts_left_out == 0:
        return Completeness()
    reasons = [loss.sentence.rstrip(".") for loss in counting]
    kinds = {loss.kind for loss in counting}
    words = [_SUMMARY[kind] for kind in (CUT, DROPPED, LEFT_OUT) if kind in kinds]
    if hosts_left_out:
        reasons.append(f"{hosts_left_out} of {hosts_total} host files could not be read")
        words.append(reasons[-1])
    bounds = []
    for kind in (CUT, DROPPED, LEFT_OUT):
        measured = [loss for loss in counting if loss.kind == kind]
        if one_load and measured and all(loss.units_known > 0 for loss in measured):
            whole = max(loss.others_whole for loss in measured)
            known = sum(loss.units_known for loss in measured) + whole
            bounds.append((sum(loss.units_read for loss in measured) + whole) / known)
    if hosts_left_out and hosts_total:
        bounds.append((hosts_total - hosts_left_out) / hosts_total)
    fraction = min(bounds) if bounds else None
    return Completeness(False, "; ".join(reasons), fraction, "; ".join(dict.fromkeys(words)))


_SUMMARY = {
    CUT: "the profile is cut short",
    DROPPED: "records were dropped as unreadable",
    LEFT_OUT: "a host file could not be read",
}
