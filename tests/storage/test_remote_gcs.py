"""Cloud logdirs as users open them: `tpuscope ... gs://bucket/logdir` against a real GCS API server.

Each failure a bucket can produce (no credentials, no bucket, permission denied, a connection cut
mid-download) ends as one sentence naming the URL, and never leaves a half-written file in the cache.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.storage.conftest import BUCKET, GPU_SAMPLE, TPU_SAMPLE, cli_env, upload_run
from tpuscope.app.opener import open_trace
from tpuscope.errors import LoadCancelled, ProfileError
from tpuscope.store.remote import fetch_run, list_remote_runs
from tpuscope.urls import is_url

pytestmark = pytest.mark.skipif(not TPU_SAMPLE.exists(), reason="needs the shared traces (tests/paths.py)")

RUN_OLD = "plugins/profile/2026_01_01_10_00_00"
RUN_NEW = "plugins/profile/2026_01_02_10_00_00"


def tpuscope(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tpuscope", *args], capture_output=True, text=True,
                          timeout=180, env=env)  # fmt: skip


def cache_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.fixture
def logdir(gcs, request) -> str:
    """gs://BUCKET/<test>/ with an older one-host run and a newer two-host run."""
    prefix = request.node.name.replace("[", "_").replace("]", "_")
    upload_run(gcs, f"{prefix}/{RUN_OLD}", {"worker0.xplane.pb": GPU_SAMPLE})
    upload_run(gcs, f"{prefix}/{RUN_NEW}", {"worker0.xplane.pb": TPU_SAMPLE, "worker1.xplane.pb": GPU_SAMPLE})
    return f"gs://{BUCKET}/{prefix}"


def test_urls_are_told_apart_from_paths():
    assert is_url("gs://bucket/logdir") and is_url("s3://b/x") and is_url("https://host/run/")
    assert not is_url("file:///tmp/x") and not is_url("/tmp/gs:/x") and not is_url(Path("gs://b"))


def test_runs_and_hosts_are_listed_without_downloading(logdir, tmp_path):
    runs = list_remote_runs(logdir)
    assert [r.name for r in runs] == ["2026_01_01_10_00_00", "2026_01_02_10_00_00"]
    assert runs[-1].hosts == ["worker0", "worker1"]
    assert runs[-1].size == TPU_SAMPLE.stat().st_size + GPU_SAMPLE.stat().st_size
    assert cache_files(tmp_path / "cache") == []


def test_a_remote_run_opens_like_the_same_files_on_disk(logdir, tmp_path):
    remote = open_trace(logdir)
    local_folder = tmp_path / "local_run"
    local_folder.mkdir()
    (local_folder / "worker0.xplane.pb").write_bytes(TPU_SAMPLE.read_bytes())
    (local_folder / "worker1.xplane.pb").write_bytes(GPU_SAMPLE.read_bytes())
    local = open_trace(local_folder, use_cache=False)
    assert remote.hosts == local.hosts and len(remote.hosts) == 2
    assert remote.event_count == local.event_count
    assert [len(t) for t in remote.tracks()] == [len(t) for t in local.tracks()]
    run = f"{logdir}/{RUN_NEW}"
    assert remote.sources == [f"{run}/worker0.xplane.pb", f"{run}/worker1.xplane.pb"]


def test_the_cli_opens_a_bucket_logdir_and_a_chosen_run(logdir, tmp_path):
    env = cli_env()
    newest = tpuscope("info", logdir, "--json", env=env)
    assert newest.returncode == 0, newest.stderr
    info = json.loads(newest.stdout)
    assert len(info["hosts"]) == 2
    assert info["sources"][0].startswith(f"{logdir}/{RUN_NEW}/")
    older = tpuscope("info", logdir, "--run", "2026_01_01_10_00_00", "--json", env=env)
    assert older.returncode == 0, older.stderr
    assert len(json.loads(older.stdout)["hosts"]) == 1
    assert older.stderr == ""


def test_a_fetched_run_is_not_fetched_again_until_the_object_changes(logdir, gcs, tmp_path):
    first = fetch_run(logdir)
    stamps = [f.stat().st_mtime_ns for f in first.files]
    again = fetch_run(logdir)
    assert [f.stat().st_mtime_ns for f in again.files] == stamps
    upload_run(gcs, logdir.split(f"gs://{BUCKET}/")[1] + f"/{RUN_NEW}", {"worker1.xplane.pb": TPU_SAMPLE})
    changed = fetch_run(logdir)
    assert changed.files[0].stat().st_mtime_ns == stamps[0]
    assert changed.files[1].read_bytes() == TPU_SAMPLE.read_bytes()


def test_a_host_removed_from_the_bucket_leaves_the_local_mirror(logdir, gcs):
    fetch_run(logdir)
    gcs.rm(f"{logdir}/{RUN_NEW}/worker1.xplane.pb")
    gcs.invalidate_cache()
    trace = open_trace(logdir)
    assert [str(s).rsplit("/", 1)[1] for s in trace.sources] == ["worker0.xplane.pb"]


@pytest.mark.parametrize(
    ("url", "cause"),
    [
        ("gs://no-such-bucket-here/logdir", "the bucket 'no-such-bucket-here' does not exist"),
        (f"gs://{BUCKET}/nothing/here", "nothing exists at this URL"),
        ("nosuchscheme://bucket/logdir", "no storage system is known for nosuchscheme:// URLs"),
    ],
    ids=["no-bucket", "no-object", "no-scheme"],
)
def test_missing_things_are_one_sentence_and_exit_2(gcs, url, cause):
    result = tpuscope("info", url, env=cli_env())
    assert result.returncode == 2
    assert result.stderr.strip() == f"tpuscope: Cannot open {url}: {cause}."


def test_a_folder_without_profiles_says_so(gcs):
    folder = upload_run(gcs, "no_profiles/run", {"notes.txt": b"hello"})
    with pytest.raises(ProfileError, match="no profiles"):
        list_remote_runs(folder)


def test_a_broken_profile_in_the_bucket_is_named_by_its_url(gcs):
    folder = upload_run(gcs, "broken/plugins/profile/run", {"host.xplane.pb": b"\x00not a profile" * 8})
    with pytest.raises(ProfileError) as caught:
        open_trace(folder)
    assert str(caught.value).startswith(f"Cannot open {folder}/host.xplane.pb: ")


@pytest.mark.parametrize(
    ("status", "cause"),
    [
        (401, "no valid cloud credentials were found"),
        (403, "permission denied: these credentials may not read this bucket or object"),
    ],
    ids=["401", "403"],
)
def test_credentials_and_permission_failures(logdir, fault_proxy, status, cause, tmp_path):
    fault_proxy.status = status
    result = tpuscope(
        "info", logdir, env=cli_env(STORAGE_EMULATOR_HOST=f"http://127.0.0.1:{fault_proxy.port}")
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"tpuscope: Cannot open {logdir}: {cause}")
    assert result.stderr.count("\n") == 1  # one sentence, no traceback or retry log
    assert cache_files(tmp_path / "cache") == []


def test_a_connection_cut_mid_download_leaves_nothing_half_written(logdir, fault_proxy, tmp_path):
    fault_proxy.cut_media_after = 100_000
    with pytest.raises(ProfileError) as caught:
        fetch_run(logdir)
    message = str(caught.value)
    assert message.startswith(f"Cannot open {logdir}/{RUN_NEW}/worker") or message.startswith(
        f"Cannot open {logdir}"
    )
    assert "connection" in message or "download" in message
    leftovers = [p for p in cache_files(tmp_path / "cache") if p.suffix == ".pb" or ".part" in p.name]
    assert leftovers == []
    # The network comes back: the same open now works, from scratch.
    fault_proxy.cut_media_after = None
    assert len(open_trace(logdir).hosts) == 2


def test_host_files_download_in_parallel(logdir, fault_proxy):
    fault_proxy.cut_media_after = None
    fetch_run(logdir)
    assert fault_proxy.media_requests >= 2
    assert fault_proxy.max_active >= 2


def test_cancel_stops_the_download_and_keeps_no_partial_file(logdir, tmp_path):
    def cancel_at_first_chunk(fraction: float, message: str) -> bool:
        return False

    with pytest.raises(LoadCancelled):
        fetch_run(logdir, progress=cancel_at_first_chunk)
    assert [p for p in cache_files(tmp_path / "cache") if ".part" in p.name] == []
