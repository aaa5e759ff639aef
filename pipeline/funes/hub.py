"""Hub transport only: tokens, repo ids, head revisions, file reads at a revision, guarded commits.

Every call goes through huggingface_hub (imported lazily) and every failure leaves as a
FunesError that names the fix; `Conflict` is the one callers catch (the branch head moved, so
re-read and retry). Nothing here decides what to publish.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from funes.errors import FunesError

TOKEN_HINT = "set HF_TOKEN to a token with write access (https://huggingface.co/settings/tokens)"


class HubError(FunesError):
    """A Hub call failed in a way the user can fix (token, rights, network)."""


class Conflict(HubError):
    """The branch moved between reading its head and committing (another publisher won the race)."""


@dataclass(frozen=True)
class Repo:
    repo_id: str
    sha: str  # head commit of main
    private: bool


def endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def token() -> str | None:
    """HF_TOKEN, then the token file huggingface_hub keeps (`hf auth login`)."""
    from huggingface_hub import get_token

    return get_token()


def require_token() -> str:
    tok = token()
    if not tok:
        raise HubError("no Hugging Face token — publishing needs one", TOKEN_HINT)
    return tok


def _api():
    from huggingface_hub import HfApi

    return HfApi()


@contextmanager
def _translated(repo_id: str, action: str) -> Iterator[None]:
    """huggingface_hub / transport exceptions -> one FunesError sentence (never a traceback)."""
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    try:
        yield
    except HubError:
        raise
    except OfflineModeIsEnabled:
        raise HubError(f"cannot {action} {repo_id}: HF_HUB_OFFLINE is set", "unset HF_HUB_OFFLINE to publish") from None
    except HfHubHTTPError as e:
        raise _http_error(repo_id, action, e) from None
    except (httpx2.HTTPError, ConnectionError, TimeoutError) as e:
        raise HubError(
            f"cannot reach the Hub at {endpoint()} to {action} {repo_id} ({type(e).__name__})",
            "check the network (or HF_ENDPOINT) and run the same command again",
        ) from None


def _http_error(repo_id: str, action: str, e) -> HubError:
    status = e.response.status_code if e.response is not None else 0
    if status in (409, 412):
        return Conflict(f"{repo_id} moved while publishing", "run the same command again")
    if status == 401:
        return HubError("the Hugging Face token was rejected (401: invalid credentials)", TOKEN_HINT)
    if status == 403:
        return HubError(f"{repo_id} is read-only for your token — publishing needs write access", TOKEN_HINT)
    detail = (e.server_message or str(e)).splitlines()[0][:200]
    return HubError(f"the Hub refused to {action} {repo_id} ({status}: {detail})")


def repo(repo_id: str) -> Repo | None:
    """The dataset repo's head and visibility, or None when it does not exist (or is hidden from us)."""
    from huggingface_hub.errors import RepositoryNotFoundError

    with _translated(repo_id, "read"):
        try:
            info = _api().dataset_info(repo_id)
        except RepositoryNotFoundError:
            return None
    return Repo(repo_id, info.sha, bool(info.private))


def create_private(repo_id: str) -> Repo:
    """Create the dataset repo, private; an existing one is left as it is (visibility included)."""
    with _translated(repo_id, "create"):
        _api().create_repo(repo_id, repo_type="dataset", private=True, exist_ok=True)
    found = repo(repo_id)
    if found is None:
        raise HubError(f"{repo_id} was created but cannot be read back", TOKEN_HINT)
    return found


def read_file(repo_id: str, path: str, revision: str) -> bytes | None:
    """One file at a commit (through the standard HF cache), or None when the commit lacks it."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    with _translated(repo_id, "read"):
        try:
            local = hf_hub_download(repo_id, path, repo_type="dataset", revision=revision)
        except EntryNotFoundError:
            return None
    return Path(local).read_bytes()


@contextmanager
def open_at(repo_id: str, path: str, revision: str) -> Iterator:
    """A file at a commit as a seekable file object read by HTTP ranges (a Parquet reader fetches
    only the footer and the columns it needs, not the whole shard)."""
    from huggingface_hub import HfFileSystem

    with _translated(repo_id, "read"):
        fs = HfFileSystem(skip_instance_cache=True)
        with fs.open(f"datasets/{repo_id}@{revision}/{path}", "rb") as f:
            yield f


def commit(repo_id: str, files: list[tuple[str, Path | bytes]], message: str, parent: str) -> str:
    """One atomic commit on main adding `files` (path in repo, local file or bytes), only if main is
    still at `parent`; returns the new commit sha. Raises Conflict when main moved."""
    from huggingface_hub import CommitOperationAdd

    ops = [CommitOperationAdd(path, str(src) if isinstance(src, Path) else src) for path, src in files]
    with _translated(repo_id, "publish to"):
        info = _api().create_commit(
            repo_id, operations=ops, commit_message=message, repo_type="dataset", parent_commit=parent
        )
    return info.oid
