"""`tpuscope capture TARGET[,TARGET...]`: record a live trace from running programs and save it locally.

The programs run a profiler server (`jax.profiler.start_server(9012)`);
remote ones are reached through SSH port forwarding (`--ssh`), and a whole
Cloud TPU slice by its name (`--tpu NAME --zone ZONE`: the workers as the
user's gcloud describes them, reached as `gcloud compute tpus tpu-vm ssh`
reaches them, see tpuscope.capture.gcloud). The trace is saved as
`<out>/plugins/profile/<run>/<host>.xplane.pb`, which `tpuscope info`, `ops`,
`diagnose` and the app open as is.
"""

from __future__ import annotations

import getpass
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from tpuscope.capture.errors import CaptureCancelled, CaptureError, PassphraseRequired, UnknownHostKey
from tpuscope.capture.grpc_client import TracerLevels
from tpuscope.capture.session import PROFILE_SUFFIX, CaptureResult, CaptureSettings, capture
from tpuscope.capture.ssh import SshOptions, trust_host_key
from tpuscope.capture.targets import parse_duration, parse_ssh_host, parse_targets
from tpuscope.commands._console import print_json

if TYPE_CHECKING:
    from tpuscope.capture.gcloud import TpuNode

DEFAULT_LOGDIR = "tpuscope-captures"
# The profiler port of a --tpu capture when no target is given: the port the PyTorch/XLA profiling
# guide starts its server on (xp.start_server(9012); Lightning's XLAProfiler default) and this
# README's examples use; JAX's start_server has no default.
DEFAULT_TPU_TARGET = "localhost:9012"
_BAR_WIDTH = 30


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "capture", help="record a live trace from running programs (profiler servers), locally or over SSH",
        description="Ask each program's profiler server (jax.profiler.start_server(PORT)) for a trace of the "
                    f"next DURATION and save it as OUT/plugins/profile/RUN/HOST{PROFILE_SUFFIX}, "
                    "one file per host.",
    )  # fmt: skip
    parser.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET[,TARGET...]",
        help="profiler servers as host:port (as seen from the SSH host with --ssh, from each worker with "
        f"--tpu, where it defaults to {DEFAULT_TPU_TARGET})",
    )
    parser.add_argument("--duration", default="2s", help="how long to record (e.g. 2s, 500ms; default 2s)")
    parser.add_argument("--delay", default="0s", help="wait this long before recording (default 0s)")
    parser.add_argument(
        "--ssh",
        action="append",
        default=[],
        metavar="[USER@]HOST[:PORT]",
        help="reach the targets through this SSH host (once for all, or once per target)",
    )
    parser.add_argument(
        "--identity", metavar="FILE", help="SSH private key file (default: ~/.ssh/config, agent)"
    )
    parser.add_argument("--jump", metavar="[USER@]HOST[:PORT]", help="SSH jump host (like ssh -J)")
    parser.add_argument("--known-hosts", metavar="FILE", help="known_hosts file (default ~/.ssh/known_hosts)")
    parser.add_argument("--ssh-config", metavar="FILE", help="SSH config file (default ~/.ssh/config)")
    tpu = parser.add_argument_group("Cloud TPU slice (workers found with your gcloud CLI)")
    tpu.add_argument(
        "--tpu",
        metavar="[USER@]NAME",
        help="capture every worker of this TPU VM (user: your login name if not given)",
    )
    tpu.add_argument("--zone", help="the TPU's zone (default: gcloud's compute/zone)")
    tpu.add_argument("--project", help="the TPU's project (default: gcloud's core/project)")
    tpu.add_argument("--worker", default="all", metavar="all|N,...",
                     help="which workers: all (default), 0, 1,4,6 or 1-3, as in gcloud")  # fmt: skip
    tpu.add_argument("--internal-ip", action="store_true",
                     help="connect to the workers' internal IPs (from a VM in the same network)")  # fmt: skip
    tpu.add_argument("--tunnel-through-iap", action="store_true",
                     help="reach the workers through IAP (gcloud compute start-iap-tunnel)")  # fmt: skip
    parser.add_argument(
        "--out",
        default=DEFAULT_LOGDIR,
        metavar="LOGDIR",
        help=f"logdir to save into (default ./{DEFAULT_LOGDIR})",
    )
    parser.add_argument("--run", metavar="NAME", help="run folder name (default: the capture time)")
    parser.add_argument("--host-tracer-level", type=int, default=2, metavar="N", help="0-3 (default 2)")
    parser.add_argument("--device-tracer-level", type=int, default=1, metavar="N", help="0-1 (default 1)")
    parser.add_argument("--python-tracer-level", type=int, default=0, metavar="N", help="0-1 (default 0)")
    parser.add_argument("--timeout", metavar="DURATION",
                        help="how long to wait for the answers after the recording window (default max(60s, "
                        "duration))")  # fmt: skip
    parser.add_argument("--fetch-file", action="store_true",
                        help="have the server save the trace on its disk and copy it (for servers that "
                             "cannot send it back)")  # fmt: skip
    parser.add_argument("--open", action="store_true", help="open the saved trace in the app")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=run)


def settings_from_args(args) -> tuple[CaptureSettings, TpuNode | None]:
    """The capture's settings, and the TPU whose workers they reach when --tpu names one."""
    settings = CaptureSettings(
        targets=parse_targets(args.targets or ([DEFAULT_TPU_TARGET] if args.tpu else [])),
        logdir=Path(args.out).expanduser(),
        duration_s=parse_duration(args.duration, "duration"),
        delay_s=parse_duration(args.delay, "delay"),
        levels=TracerLevels(
            host=args.host_tracer_level, device=args.device_tracer_level, python=args.python_tracer_level
        ),  # fmt: skip
        ssh_hosts=[parse_ssh_host(h) for h in args.ssh],
        ssh=SshOptions(
            identity_file=args.identity,
            jump=args.jump,
            known_hosts=args.known_hosts,
            config_file=args.ssh_config,
        ),  # fmt: skip
        timeout_s=parse_duration(args.timeout, "timeout") if args.timeout else None,
        run_name=args.run,
        inline=not args.fetch_file,
    )
    if args.tpu:
        if args.ssh:
            raise CaptureError("--tpu finds the workers' SSH hosts itself: leave out --ssh.")
        return with_tpu_slice(settings, args)
    if args.zone or args.project or args.internal_ip or args.tunnel_through_iap or args.worker != "all":
        raise CaptureError("--zone, --project, --worker, --internal-ip and --tunnel-through-iap need --tpu.")
    return settings, None


def with_tpu_slice(settings: CaptureSettings, args) -> tuple[CaptureSettings, TpuNode]:
    """The settings with one SSH route per chosen worker of the TPU named by --tpu."""
    from tpuscope.capture.gcloud import resolve_slice

    node, routes = resolve_slice(args.tpu, args.zone, args.project, args.worker, args.internal_ip,
                                 args.tunnel_through_iap, settings.ssh)  # fmt: skip
    return replace(settings, routes=routes, keep_partial=True), node


def run(args) -> int:
    from tpuscope.commands import EXIT_ERROR, OPEN_AFTER, UserFacingError

    try:
        settings, node = settings_from_args(args)
        result = _capture_interactively(settings)
    except CaptureCancelled:
        raise UserFacingError("The capture was cancelled; nothing was saved.") from None
    except CaptureError as error:
        raise UserFacingError(str(error)) from None
    pod = _pod_rows(result) if node is not None else None
    if args.json:
        print_json({"run_folder": str(result.run_folder), "files": [str(f) for f in result.files],
                    "hosts": result.hosts, "bytes": result.bytes_received, "missing": result.missing,
                    **({"pod": pod} if pod is not None else {})})  # fmt: skip
    else:
        print(str(result.run_folder))
        print(f"Saved {len(result.files)} host(s), {result.bytes_received / 1e6:.1f} MB: "
              f"{', '.join(result.hosts)}", file=sys.stderr)  # fmt: skip
        if pod is not None and node is not None:
            _print_pod(node, len(settings.routes), pod)
    for sentence in result.missing:
        print(f"tpuscope: {sentence}", file=sys.stderr)
    if args.open:  # the command line starts the app once this command is done (`OPEN_AFTER`)
        setattr(args, OPEN_AFTER, [str(result.run_folder)])
    return EXIT_ERROR if result.missing else 0


def _pod_rows(result: CaptureResult) -> dict | None:
    """The saved slice opened as a pod (host by host, as `overview --per-host`): each worker's steps
    and mean step time, and the pod's own findings (a straggler); None if it cannot be read."""
    from tpuscope.app.hosts import LIGHT, analyze_run
    from tpuscope.errors import ProfileError

    try:
        run = analyze_run(result.files, LIGHT)
    except ProfileError as error:
        return {"error": str(error)}
    rows = [row.to_json() for row in run.pod.rows()]
    return {"steps": run.pod.step_count, "aligned_by": run.pod.alignment, "per_host": rows,
            "findings": [f["title"] for f in run.pod_findings]}  # fmt: skip


def _print_pod(node: TpuNode, asked: int, pod: dict) -> None:
    print(f"TPU {node.name} ({node.accelerator_type}, {node.zone}): {asked} worker(s) asked",
          file=sys.stderr)  # fmt: skip
    if "error" in pod:
        print(f"  the saved run could not be opened as a pod: {pod['error']}", file=sys.stderr)
        return
    print(f"  {pod['steps']} steps aligned by {pod['aligned_by']}", file=sys.stderr)
    for row in pod["per_host"]:
        print(f"  {row['host'][:40]:<40} {row['steps']:>6} steps  {row['step_time_us'] / 1e3:9.2f} ms/step",
              file=sys.stderr)  # fmt: skip
    for title in pod["findings"]:
        print(f"  {title}", file=sys.stderr)


def _capture_interactively(settings: CaptureSettings) -> CaptureResult:
    """Runs the capture; in a terminal, asks for a key passphrase or to trust a new host key, then retries."""
    interactive = sys.stdin.isatty() and sys.stderr.isatty()
    while True:
        bar = _ProgressBar(enabled=sys.stderr.isatty())
        try:
            return capture(settings, progress=bar)
        except PassphraseRequired as error:
            if not interactive or settings.ssh.passphrase is not None:
                raise
            bar.clear()
            secret = getpass.getpass(f"Passphrase for {error.key_file}: ")  # kept in memory only
            settings = settings.with_passphrase(secret)
        except UnknownHostKey as error:
            if not interactive:
                raise
            bar.clear()
            print(f"tpuscope: {error}", file=sys.stderr)
            answer = input(f"Trust {error.hostname} ({error.fingerprint}) and add it to known_hosts? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                raise
            trust_host_key(error.hostname, error.key, error.known_hosts_file)
        finally:
            bar.clear()


class _ProgressBar:
    """`[#####.....] profiling 1.2 s / 2 s` on stderr when it is a terminal."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._shown = False
        self._last = 0.0

    def __call__(self, fraction: float, message: str) -> bool:
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.1 or fraction >= 1.0):
            self._last = now
            filled = "#" * int(fraction * _BAR_WIDTH)
            sys.stderr.write(f"\r[{filled:<{_BAR_WIDTH}}] {message[:45]:<45}")
            sys.stderr.flush()
            self._shown = True
        return True

    def clear(self) -> None:
        if self._shown:
            sys.stderr.write("\r" + " " * (_BAR_WIDTH + 50) + "\r")
            sys.stderr.flush()
            self._shown = False
