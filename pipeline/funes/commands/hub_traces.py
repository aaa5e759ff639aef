"""Which shards a Hub trace import reads (`funes index owner/name`): upstream-spec 1.7, Hub side.

The Hub's auto-converted Parquet (`refs/convert/parquet`) when the dataset has one, else the
revision's own `*.parquet` files; one unit per shard, keyed by its URI and signed by its content
id, so a re-run imports only shards it has not seen. Shards are downloaded into the HF cache one
at a time, when the indexer reaches them. A funes memory is refused: it is recalled, not imported.
"""

from __future__ import annotations

from funes import hubcache
from funes.errors import FunesError, MemoryMissing, MemoryOffline, MemoryUnauthorized, UsageError
from funes.memory.spec import Spec
from funes.traces.parquet import ShardsSource


def source(target: Spec) -> ShardsSource:
    uri, repo = target.uri, target.repo_id or ""
    try:
        commit, offline = hubcache.head(repo, target.revision)
        if offline:
            raise hubcache.HubOffline(repo)
        commit = (None if target.revision else hubcache.parquet_convert(repo)) or commit
        files = hubcache.list_files(repo, commit)
    except hubcache.HubOffline:
        raise MemoryOffline(f"{uri} is unreachable (offline) — a Hub import needs the network") from None
    except hubcache.HubMissing:
        raise MemoryMissing(f"{uri} doesn't exist on the Hub — check the name (owner/name[@revision])") from None
    except hubcache.HubUnauthorized:
        raise MemoryUnauthorized(
            f"not authorized to read {uri} — set HF_TOKEN or run `hf auth login` with a token that can read it"
        ) from None
    if any(path == "funes.json" for path, _ in files):
        raise UsageError(
            f"{uri} is a funes memory, not an agent-traces dataset",
            f"recall it instead: funes recall … --memory {repo}",
        )
    shards = sorted((p, oid) for p, oid in files if p.endswith(".parquet"))
    if not shards:
        raise FunesError(f"{uri} holds no .parquet files — not an agent-traces dataset?")
    return ShardsSource(uri, shards, lambda path: _fetch(repo, path, commit))


def _fetch(repo: str, path: str, commit: str):
    try:
        return hubcache.download(repo, path, commit)
    except (hubcache.HubOffline, hubcache.HubMissing, hubcache.HubUnauthorized, hubcache.HubEntryMissing) as e:
        from funes.errors import SourceError

        raise SourceError(f"cannot download {path} of hf://datasets/{repo} ({type(e).__name__})") from None
