"""How the hosts of a run are named, by one rule for every path that labels them."""

from __future__ import annotations


def host_labels(claimed: list[str], file_hosts: list[str]) -> list[str]:
    """Each file's host in a run: the host it names, unless two files claim one host name (processes
    of one machine), when every file is known by its file name instead. The readers and the
    host-by-host pod analysis label hosts by this one rule."""
    return list(file_hosts) if len(set(claimed)) < len(claimed) else list(claimed)
