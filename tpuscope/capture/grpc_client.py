"""One Profile RPC to one profiler server, and the translation of its failures into sentences.

The server (`tensorflow.ProfilerService`, started in the program by
`jax.profiler.start_server`) profiles for the requested window and answers
with the XSpace inline when the request sets `emit_xspace`; otherwise it saves
the file on its own disk under `repository_root/<session_id>/<host>.xplane.pb`.
"""

from __future__ import annotations

import time

import grpc

from tpuscope.capture import profiler_service_pb2 as pb
from tpuscope.capture import profiler_service_pb2_grpc as pb_grpc
from tpuscope.model.records import record

# The C++ client (tsl capture_profile.cc) caps a session at this many events per host.
MAX_EVENTS = 1_000_000
_CHANNEL_OPTIONS = [
    # An XSpace from a busy TPU host is easily hundreds of MB; the default cap is 4 MB
    # (a 133 KB XSpace already needs grpc.max_receive_message_length=-1 on the client channel).
    ("grpc.max_receive_message_length", -1),
    # Profiler servers are reached directly or through our own SSH tunnel, never via an HTTP proxy.
    ("grpc.enable_http_proxy", 0),
]


@record(frozen=True)
class TracerLevels:
    """Profiler option levels, as in TensorBoard's capture dialog."""

    host: int = 2  # 0 off, 1 user annotations only, 2 default, 3 verbose (ProfileOptions docs)
    device: int = 1  # 0 off, 1 on
    python: int = (
        0  # 0 off, 1 on; XProf's web capture defaults to 0 (openxla/xprof `xprof/profile_plugin.py`)
    )


@record
class ProfileReply:
    xspace: bytes
    empty_trace: bool


class ProfileCall:
    """An in-flight Profile RPC; poll `done()`, then `result()` (raises grpc.RpcError) or `cancel()`."""

    def __init__(self, address: str, request: pb.ProfileRequest, timeout_s: float):
        self.address = address
        self.started = time.monotonic()
        self._channel = grpc.insecure_channel(address, options=_CHANNEL_OPTIONS)
        stub = pb_grpc.ProfilerServiceStub(self._channel)
        self._future = stub.Profile.future(request, timeout=timeout_s)

    def done(self) -> bool:
        return self._future.done()

    def result(self) -> ProfileReply:
        response = self._future.result()
        return ProfileReply(xspace=response.xspace, empty_trace=response.empty_trace)

    def cancel(self) -> None:
        self._future.cancel()

    def close(self) -> None:
        self._future.cancel()
        self._channel.close()


def build_request(
    duration_s: float,
    delay_s: float,
    levels: TracerLevels,
    session_id: str,
    host_label: str,
    inline: bool = True,
    repository_root: str = "",
) -> pb.ProfileRequest:
    duration_ms = max(1, round(duration_s * 1000))
    options = pb.ProfileOptions(
        host_tracer_level=levels.host,
        device_tracer_level=levels.device,
        python_tracer_level=levels.python,
        include_dataset_ops=True,
        enable_hlo_proto=True,
        duration_ms=duration_ms,
        session_id=session_id,
        override_hostname=host_label,
        version=1,
    )
    if delay_s > 0:
        # The server waits until this wall-clock time before it starts profiling.
        options.start_timestamp_ns = time.time_ns() + round(delay_s * 1e9)
    return pb.ProfileRequest(
        duration_ms=duration_ms,
        max_events=MAX_EVENTS,
        opts=options,
        session_id=session_id,
        host_name=host_label,
        emit_xspace=inline,
        repository_root=repository_root,
    )


def explain_rpc_error(error: grpc.RpcError, target: str, port: int, waited_s: float) -> str:
    """One sentence for a failed Profile RPC, from the status codes and texts reproduced in
    reproduced with a jax 0.10.2 profiler server and a grpcio client (tsl
    `xla/tsl/profiler/rpc/client/capture_profile.cc` writes the same texts)."""
    code = error.code() if hasattr(error, "code") else None
    details = (error.details() if hasattr(error, "details") else str(error)) or ""
    lowered = details.lower()
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return (
            f"No answer from {target} within {waited_s:.0f} s: the program may be stuck or the link "
            "slow; try a longer --timeout."
        )
    if "http/2" in lowered or "settings frame" in lowered or "http1" in lowered:
        if "timed out" in lowered:
            return (
                f"{target} accepted the connection but never answered as a gRPC server: "
                "it is not a profiler server, or the program is frozen."
            )
        return (
            f"{target} is a web server (it answered in HTTP/1), not a profiler gRPC server: use the port "
            "given to jax.profiler.start_server in the program, not TensorBoard's or XProf's web port."
        )
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return (
            f"{target} answered but does not offer the profiler service "
            f"({details.strip() or 'unimplemented'}): "
            "it is another kind of server or a proxy."
        )
    if "another profiling session" in lowered or code == grpc.StatusCode.ALREADY_EXISTS:
        return (
            f"Another profiling session is already active in the program at {target} (a "
            "jax.profiler.trace in its code or another capture): wait for it to end and try again."
        )
    if code == grpc.StatusCode.UNAVAILABLE:
        if "connection refused" in lowered:
            return (
                f"Nothing is listening on {target}: start the profiler server in the program "
                f"(jax.profiler.start_server({port})) or check the host and port."
            )
        if any(word in lowered for word in ("lookup", "resolv", "dns", "name or service not known")):
            return f"The host of {target} cannot be found (DNS lookup failed): check the host name."
        if any(
            word in lowered
            for word in (
                "stream removed",
                "socket closed",
                "connection reset",
                "goaway",
                "end of tcp stream",
                "broken pipe",
                "eof",
            )
        ):
            return (
                f"The program at {target} closed the connection during the capture: it probably exited "
                "or crashed, so this window's trace is lost."
            )
        return (
            f"Cannot reach the profiler server at {target} ({_last_error(details)}): the host is down, "
            f"or a firewall blocks port {port}."
        )
    name = code.name if code is not None else "error"
    return f"The profiler server at {target} failed the capture ({name}: {details.strip() or 'no details'})."


def _last_error(details: str) -> str:
    """The useful tail of gRPC's "failed to connect to all addresses; last error: ..." text."""
    tail = details.rsplit("last error:", 1)[-1].strip()
    return tail.rsplit(": ", 1)[-1].strip() or details.strip() or "unavailable"
