"""How the hosts of a run are named, by one rule for every path that labels them, and the order
every list of hosts (files of a run, the pod page, the per-host rows) shows them in."""

from __future__ import annotations

import re


def host_labels(claimed: list[str], file_hosts: list[str]) -> list[str]:
    """Each file's host in a run: the host it names, unless two files claim one host name (processes
    of one machine), when every file is known by its file name instead. The readers and the
    host-by-host pod analysis label hosts by this one rule."""
    return list(file_hosts) if len(set(claimed)) < len(claimed) else list(claimed)


_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """Sorts names as people number hosts: host2 before host10 (`sorted(hosts, key=natural_key)`).

    Runs of digits compare as numbers, the rest case-insensitively (the "natural sort order" of file
    managers: https://en.wikipedia.org/wiki/Natural_sort_order). Numbers sort before text at the same
    place, so the key never compares an int with a str."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part.lower()) for part in _DIGITS.split(name) if part
    )
