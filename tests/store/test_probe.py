"""The store's cache probe (`tpuscope sql` asks it before opening): whether the open will decode the
profile's files or map its trace entry, from names alone."""

from __future__ import annotations

from tests.conftest import PTXLA_TRACE
from tests.store.cache_helpers import copied
from tpuscope.app.opener import open_trace
from tpuscope.store import traces
from tpuscope.store.probe import decodes_first


def test_a_profile_decodes_first_until_its_entry_is_written(tmp_path, monkeypatch):
    copy = copied(PTXLA_TRACE, tmp_path / "p")
    assert decodes_first(str(copy))
    open_trace(copy)
    traces.wait_for_writes()
    assert not decodes_first(str(copy))
    assert not decodes_first(str(copy.parent))  # the folder's one run: the same files
    assert decodes_first(str(copy), use_cache=False)
    monkeypatch.setenv("TPUSCOPE_CACHE_MAX", "0")
    assert decodes_first(str(copy))


def test_a_url_decodes_first_and_a_path_that_does_not_resolve_does_not(tmp_path):
    assert decodes_first("gs://bucket/logdir")
    assert not decodes_first(str(tmp_path / "missing.xplane.pb"))
