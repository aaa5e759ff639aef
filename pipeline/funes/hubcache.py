"""Reading a Hub dataset through the standard HF cache: the head commit, files at a commit, offline answers.

Every read is pinned to a commit sha: `head` resolves a revision once per call (one request), and
`download` at that sha is answered from `HF_HUB_CACHE` without any request once the file is there
(huggingface_hub's own cache layout: `datasets--<owner>--<name>/{refs,snapshots,blobs}`). LFS
files are stored in the cache under their sha256, which is what the funes manifest records for a
shard, so a shard already fetched at an older commit is found by `cached_blob` with no request.
Offline (`HF_HUB_OFFLINE=1`, no network, a timeout, a 5xx) the head is the commit the cache last
recorded for the revision. Tokens come from huggingface_hub's own resolution (`HF_TOKEN`, then
`hf auth login`'s file) and are never read, printed or stored here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

PROBE_TIMEOUT_S = 5.0
_SHA = re.compile(r"^[0-9a-f]{40}$")


class HubOffline(Exception):
    """The Hub cannot be reached (offline mode, no network, timeout, server error)."""


class HubMissing(Exception):
    """The repo (or the revision) does not exist, as far as this token can see."""


class HubUnauthorized(Exception):
    """The Hub refused the request: no token for a private repo, or a token without read access."""


class HubEntryMissing(Exception):
    """The repo exists but holds no such file at that commit."""


def offline_mode() -> bool:
    """huggingface_hub's own answer (HF_HUB_OFFLINE as it read it), so funes and the client agree."""
    from huggingface_hub import constants

    return bool(constants.is_offline_mode())


def cache_root() -> Path:
    from huggingface_hub import constants

    return Path(os.environ.get("HF_HUB_CACHE") or constants.HF_HUB_CACHE)


def repo_cache(repo: str) -> Path:
    return cache_root() / ("datasets--" + repo.replace("/", "--"))


def head(repo: str, revision: str | None = None, probe: str | None = None) -> tuple[str, bool]:
    """(commit sha, answered offline) for a revision (default `main`): one request, or the cache's ref.

    With `probe`, the request is a HEAD of that file at the revision (the Hub's cheapest call, the
    one every cached download makes; its X-Repo-Commit names the commit) and a repo without that
    file raises HubEntryMissing; without it, the dataset's info.
    """
    rev = revision or "main"
    if _SHA.match(rev):
        return rev, offline_mode()
    if offline_mode():
        return _cached_ref(repo, rev), True
    try:
        sha = _classified(lambda: _probe(repo, rev, probe) if probe else _info_sha(repo, rev))
    except HubOffline:
        return _cached_ref(repo, rev), True
    _record_ref(repo, rev, sha)
    return sha, False


def _probe(repo: str, rev: str, path: str) -> str:
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    meta = get_hf_file_metadata(hf_hub_url(repo, path, repo_type="dataset", revision=rev), timeout=PROBE_TIMEOUT_S)
    if not meta.commit_hash:
        raise HubOffline(f"{repo}: no commit in the Hub's answer")
    return meta.commit_hash


def _info_sha(repo: str, rev: str) -> str:
    from huggingface_hub import HfApi

    sha = HfApi().dataset_info(repo, revision=rev, timeout=PROBE_TIMEOUT_S).sha
    if not sha:
        raise HubOffline(f"{repo}: no commit in the Hub's answer")
    return sha


def _cached_ref(repo: str, rev: str) -> str:
    try:
        sha = (repo_cache(repo) / "refs" / rev).read_text(encoding="utf-8").strip()
    except OSError:
        raise HubOffline(repo) from None
    if not _SHA.match(sha):
        raise HubOffline(repo)
    return sha


def _record_ref(repo: str, rev: str, sha: str) -> None:
    """Remember the head for offline calls, as hf_hub_download does for the files it fetches."""
    ref = repo_cache(repo) / "refs" / rev
    try:
        if ref.read_text(encoding="utf-8").strip() == sha:
            return  # a warm call writes nothing
    except OSError:
        pass
    ref.parent.mkdir(parents=True, exist_ok=True)
    tmp = ref.with_name(f".{ref.name}.{os.getpid()}.tmp")
    tmp.write_text(sha, encoding="utf-8")
    os.replace(tmp, ref)


def download(repo: str, path: str, commit: str, force: bool = False) -> Path:
    """The file at that commit in the HF cache (no request when it is already there, unless `force`)."""
    from huggingface_hub import hf_hub_download, try_to_load_from_cache

    if not force:
        hit = try_to_load_from_cache(repo, path, revision=commit, repo_type="dataset")
        if isinstance(hit, str):
            return Path(hit)
        if hit is not None:  # the cache recorded that the file does not exist at this commit
            raise HubEntryMissing(path)
    if offline_mode():
        raise HubOffline(repo)
    fetch = lambda: hf_hub_download(repo, path, repo_type="dataset", revision=commit, force_download=force)  # noqa: E731
    return Path(_classified(fetch))


def cached_blob(repo: str, sha256: str) -> Path | None:
    """An LFS file already in the cache, found by its sha256 whatever commit fetched it."""
    blob = repo_cache(repo) / "blobs" / sha256
    return blob if blob.is_file() else None


def forget(path: Path) -> None:
    """Drop a cached file (the snapshot link and the blob behind it), e.g. one that fails its hash."""
    real = path.resolve()
    for p in {path, real}:
        p.unlink(missing_ok=True)


def list_files(repo: str, commit: str) -> list[tuple[str, str]]:
    """(path, content id) of every file of the repo at a commit: the LFS sha256, else the git blob id."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    def listing():
        tree = HfApi().list_repo_tree(repo, repo_type="dataset", revision=commit, recursive=True)
        return [(f.path, f.lfs.sha256 if f.lfs else f.blob_id) for f in tree if isinstance(f, RepoFile)]

    return _classified(listing)


def parquet_convert(repo: str) -> str | None:
    """The commit of the Hub's auto-converted Parquet ref (`refs/convert/parquet`), when it has one."""
    from huggingface_hub import HfApi

    refs = _classified(lambda: HfApi().list_repo_refs(repo, repo_type="dataset"))
    for ref in refs.converts:
        if ref.name == "parquet" or ref.ref.endswith("convert/parquet"):
            return ref.target_commit
    return None


def _classified(call):
    """Run a Hub call; huggingface_hub's and the network's failures become this module's four kinds."""
    import httpx2
    from huggingface_hub import errors

    try:
        return call()
    except (errors.OfflineModeIsEnabled, errors.LocalEntryNotFoundError) as e:
        raise HubOffline(str(e)) from None
    except (errors.RepositoryNotFoundError, errors.RevisionNotFoundError) as e:
        status = getattr(getattr(e, "response", None), "status_code", None)
        if status in (401, 403) and isinstance(e, errors.RepositoryNotFoundError):
            raise HubUnauthorized(str(status)) from None  # the Hub hides a private repo behind a 401
        raise HubMissing(type(e).__name__) from None
    except errors.EntryNotFoundError as e:
        raise HubEntryMissing(str(e)) from None
    except errors.HfHubHTTPError as e:
        status = getattr(getattr(e, "response", None), "status_code", None)
        if status in (401, 403):
            raise HubUnauthorized(str(status)) from None
        if status is None or status >= 500:
            raise HubOffline(str(status)) from None
        raise
    except (httpx2.TransportError, ConnectionError, TimeoutError) as e:
        raise HubOffline(type(e).__name__) from None
