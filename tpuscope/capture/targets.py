"""Parsing what users type: profiler targets (`host:port`), SSH hosts and durations."""

from __future__ import annotations

import re

from tpuscope.capture.errors import CaptureError
from tpuscope.model.records import record

DEFAULT_SSH_PORT = 22
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "ip6-localhost"})
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|sec|m|min)?\s*$", re.IGNORECASE)
_UNIT_SECONDS = {None: 1.0, "ms": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0}
# The longest duration, delay or timeout a capture takes (our heuristic: a profiler server buffers
# every event of the window in memory, and a day of tracing is far past what any holds; a number
# beyond it is a typo, and past ~1e16 s it overflows the gRPC call's millisecond and deadline fields).
MAX_DURATION_S = 24 * 3600.0


@record(frozen=True)
class Target:
    """One profiler server: the program's `jax.profiler.start_server(port)` as seen from where we connect."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def is_loopback(self) -> bool:
        return self.host.lower() in LOOPBACK_NAMES


@record(frozen=True)
class SshHost:
    """An SSH destination as typed: `[user@]host[:port]`; host may be an alias from ~/.ssh/config."""

    host: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{user}{self.host}{port}"


def _split_host_port(text: str, what: str) -> tuple[str, str | None]:
    if text.startswith("["):  # [ipv6]:port
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise CaptureError(
                f"The {what} {text!r} is not valid: an IPv6 address must look like [::1]:9012."
            )
        return host, rest[1:] or None
    host, sep, port = text.rpartition(":")
    return (host, port) if sep else (text, None)


def _port(value: str, text: str, what: str) -> int:
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise CaptureError(
            f"The {what} {text!r} has no valid port: {value!r} is not a number from 1 to 65535."
        )
    return int(value)


def parse_target(text: str) -> Target:
    """`host:port` (a leading `grpc://` is accepted and dropped, as TensorBoard's capture dialog allows)."""
    raw = text.strip()
    if raw.lower().startswith("grpc://"):
        raw = raw[len("grpc://") :]
    raw = raw.rstrip("/")
    if not raw:
        raise CaptureError("A capture target is empty: give each one as host:port, e.g. localhost:9012.")
    host, port = _split_host_port(raw, "target")
    if port is None:
        if raw.isdigit():  # just a port: the program runs here (or on the SSH host)
            return Target("localhost", _port(raw, text, "target"))
        raise CaptureError(f"The target {text!r} has no port: give it as host:port, e.g. {raw}:9012.")
    if not host:
        host = "localhost"
    return Target(host, _port(port, text, "target"))


def parse_targets(text: str | list[str]) -> list[Target]:
    """A comma-separated list (or several arguments) of targets, in order, without duplicates."""
    parts = text if isinstance(text, list) else [text]
    targets: list[Target] = []
    for part in parts:
        for piece in part.split(","):
            if piece.strip():
                target = parse_target(piece)
                if target not in targets:
                    targets.append(target)
    if not targets:
        raise CaptureError("No capture target was given: name at least one host:port, e.g. localhost:9012.")
    return targets


def parse_ssh_host(text: str) -> SshHost:
    raw = text.strip()
    if raw.lower().startswith("ssh://"):
        raw = raw[len("ssh://") :]
    user, at, rest = raw.rpartition("@")
    if not at:
        user, rest = "", raw
    host, port = _split_host_port(rest, "SSH host")
    if not host:
        raise CaptureError(f"The SSH host {text!r} names no host: give it as [user@]host[:port].")
    return SshHost(host=host, user=user or None, port=_port(port, text, "SSH host") if port else None)


def parse_duration(text: str | float | int, what: str = "duration") -> float:
    """Seconds from `2s`, `500ms`, `1.5` (seconds) or `1m`."""
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        match = _DURATION.match(text)
        if not match:
            raise CaptureError(f"The {what} {text!r} is not a duration: write it like 2s, 500ms or 1m.")
        unit = match.group(2).lower() if match.group(2) else None
        seconds = float(match.group(1)) * _UNIT_SECONDS[unit]
    if seconds < 0:
        raise CaptureError(f"The {what} {text!r} is negative.")
    if not seconds <= MAX_DURATION_S:  # NaN included
        raise CaptureError(
            f"The {what} {text!r} is longer than {MAX_DURATION_S / 3600:g} hours, which no capture takes."
        )
    return seconds


def check_run_name(name: str) -> str:
    """`name` when it is one plain folder name; a CaptureError otherwise (`../x`, `a/b`, `.`: the run
    folder must stay inside the logdir's plugins/profile)."""
    if (
        not name
        or name in (".", "..")
        or any(sep in name for sep in ("/", "\\", "\0"))
        or name.strip() != name
    ):
        raise CaptureError(
            f"The run name {name!r} is not a plain folder name: the run is saved inside the logdir "
            "(OUT/plugins/profile/RUN), so leave out /, \\ and .. (e.g. --run baseline)."
        )
    return name


def file_label(target: Target, via: SshHost | None = None) -> str:
    """The host name a capture is saved under: `<host>_<port>` like TensorFlow's client does.

    Through SSH, a loopback target is named after the SSH host, since
    "localhost" would say nothing about which VM it was.
    """
    host = via.host if via is not None and target.is_loopback else target.host
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{host}_{target.port}")
