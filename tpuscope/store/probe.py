"""Whether opening a profile will decode its files or map its trace from the cache, asked before it
opens: for a caller that plans other work around the load (`tpuscope sql` imports its engine beside
a decode, which releases the GIL, but not beside a cache hit, which is over in milliseconds).

It resolves the path to its run's files as the opener does (`tpuscope.app.opener.open_trace`) and
asks the trace cache for their entry by name alone: nothing is read or decoded.
"""

from __future__ import annotations

from tpuscope.errors import ProfileError
from tpuscope.readers.files import one_format, resolve_profile_files
from tpuscope.urls import is_url


def decodes_first(path: str, run: str | None = None, use_cache: bool = True) -> bool:
    """Whether opening `path` (its `run`) will read the profile's files rather than the trace cache:
    no entry for them, caching off, or a bucket URL (its run downloads and decodes; downloads and
    decoding release the GIL too). A path that does not resolve answers False: the open says why, in
    its own sentence, before any work would overlap it."""
    if not use_cache or is_url(path):
        return True
    from tpuscope.store import traces  # numpy: only once the path is a local profile

    try:
        files, _ = one_format(resolve_profile_files(path, run))
    except (ProfileError, OSError):
        return False
    return not traces.has_entry(files)
