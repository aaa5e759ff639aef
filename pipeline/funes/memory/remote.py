"""A published memory on the Hub read through the HF cache: its state, and its snapshot at the head commit.

One call = one head resolution (`hubcache.head`, a single request; none offline). The manifest
(`funes.json`) and every shard are then read at that commit: files already in the HF cache cost no
request, a new shard costs one download, and each shard's index segment is built once into
`$FUNES_HOME/remote/<owner>/<name>/<sha256>/` (memory/shards.py). A shard is checked against the
sha256 the manifest records when it is downloaded and whenever its cached file changed since the
last check (size, mtime, inode in `verified.json`); a mismatch drops the cached copy and downloads
it again, and a second mismatch is an error: a wrong shard is never read.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from funes import hubcache, models, paths
from funes.errors import MemoryUnreadable
from funes.memory import State
from funes.memory import shards as sh

MANIFEST = "funes.json"
VERIFIED = "verified.json"


@dataclass
class Snapshot:
    """What a reader holds of a remote at one commit: shards in the cache, their indexes, one table."""

    commit: str
    offline: bool
    manifest: dict
    shards: list[sh.Shard]
    folders: list[Path]
    metas: list[dict]
    downloaded: list[str] = field(default_factory=list)  # shard paths fetched by this open
    built: list[str] = field(default_factory=list)  # shard paths whose segment this open built
    seconds: dict[str, float] = field(default_factory=dict)  # fetch (download + verify), index (segment builds)
    _ix: object = None
    _table: object = None

    def indexes(self):
        if self._ix is None:
            self._ix = sh.load_indexes(self.shards, self.folders, self.metas, (self.commit,))
        return self._ix

    def table(self):
        if self._table is None:
            self._table = sh.ShardTable(self.shards)
        return self._table


@dataclass
class RemoteMemory:
    repo: str  # owner/name
    revision: str | None = None
    default: bool = False
    remote: bool = True
    commit: str | None = None
    offline: bool = False
    manifest: dict | None = None
    _snapshot: Snapshot | None = None

    @property
    def label(self) -> str:
        return f"hf://datasets/{self.repo}" + (f"@{self.revision}" if self.revision else "")

    @property
    def path(self) -> Path:
        return paths.remote_dir(self.repo)

    @property
    def chunks(self) -> sh.ShardTable:
        """The snapshot's rows (the same reads as a local memory's ChunkTable)."""
        return self.snapshot().table()

    @property
    def key(self) -> str:
        return f"{self.label}|{self.commit}|{self.path}"

    # ---- state -------------------------------------------------------------------------------

    def state(self) -> tuple[State, str]:
        """Ask the Hub (once) and the cache; the state plus the sentence a refusal should print."""
        try:
            self.commit, self.offline = hubcache.head(self.repo, self.revision, probe=MANIFEST)
            self.manifest = _read_manifest(self.repo, self.commit)
        except hubcache.HubOffline:
            return State.OFFLINE, (
                f"{self.label} is unreachable (offline) and nothing of it is cached yet — "
                "connect once (and unset HF_HUB_OFFLINE) so funes can fetch it"
            )
        except hubcache.HubMissing:
            return State.MISSING, (
                f"{self.label} doesn't exist on the Hub — check the name (owner/name[@revision]); "
                "funes never creates a memory on read"
            )
        except hubcache.HubUnauthorized:
            return State.UNAUTHORIZED, (
                f"not authorized to read {self.label} — set HF_TOKEN or run `hf auth login` with a token "
                "that can read it (a private repo you cannot see looks the same)"
            )
        except hubcache.HubEntryMissing:
            return State.EMPTY, (
                f"{self.label} exists on the Hub but holds no funes memory yet — publish first: "
                f"`funes publish {self.repo}`"
            )
        model, want = manifest_model(self.manifest), models.embedder_id()
        if model and model != want:
            return State.INCOMPATIBLE, (
                f'{self.label} was published with embedding model "{model}", not "{want}" — '
                f"set FUNES_EMBED_MODEL={model} to read it"
            )
        if not manifest_shards(self.manifest):
            return State.EMPTY, f"{self.label} holds no chunks yet — publish first: `funes publish {self.repo}`"
        if self.offline and not all(self._cached(s) for s in manifest_shards(self.manifest)):
            return State.OFFLINE, (
                f"{self.label} is unreachable (offline) and commit {self.commit[:12]} is not fully cached — "
                "connect once (and unset HF_HUB_OFFLINE) so funes can fetch it"
            )
        return State.READY, ""

    def require(self) -> RemoteMemory:
        """Raise the memory's own refusal unless it is ready to read."""
        from funes.memory import refusal

        st, msg = self.state()
        if st is not State.READY:
            raise refusal(st, msg)
        return self

    def _cached(self, entry: dict) -> bool:
        return hubcache.cached_blob(self.repo, entry["sha256"]) is not None

    # ---- the snapshot ------------------------------------------------------------------------

    def snapshot(self, progress=None) -> Snapshot:
        """Shards fetched (only missing ones) and verified, a segment built per new shard; memoised."""
        if self._snapshot is not None:
            return self._snapshot
        say = progress or (lambda msg, transient=False: None)
        entries = manifest_shards(self.manifest or {})
        checks = _Verified(self.path / VERIFIED)
        snap = Snapshot(self.commit or "", self.offline, self.manifest or {}, [], [], [])
        clock = {"fetch": 0.0, "index": 0.0}
        key = ""
        for i, e in enumerate(entries, 1):
            t0 = time.perf_counter()
            local, fetched = self._fetch(e, checks, say, f"[{i}/{len(entries)}]")
            if fetched:
                snap.downloaded.append(e["path"])
            shard = sh.Shard(e["path"], e["sha256"], int(e["rows"]), local)
            key = sh.segment_key(key, e["sha256"])
            folder = self.path / key
            t1 = time.perf_counter()
            meta, built = sh.ensure_segment(shard, folder, say, snap.shards)
            clock["fetch"] += t1 - t0
            clock["index"] += time.perf_counter() - t1
            if built:
                snap.built.append(e["path"])
            if meta["rows"] != shard.rows:
                raise MemoryUnreadable(
                    f"{self.label}: {e['path']} holds {meta['rows']} rows, its manifest says {shard.rows}"
                )
            snap.shards.append(shard)
            snap.folders.append(folder)
            snap.metas.append(meta)
        checks.save()
        snap.seconds = clock
        if snap.downloaded or snap.built:
            say("", True)  # a terminal's progress line is cleared again
        self._snapshot = snap
        return snap

    def _fetch(self, entry: dict, checks: _Verified, say, where: str) -> tuple[Path, bool]:
        """The shard's verified file in the HF cache, and whether it had to be downloaded."""
        sha, path = entry["sha256"], entry["path"]
        local = hubcache.cached_blob(self.repo, sha)
        if local is not None and checks.ok(local, sha):
            return local, False
        fetched = False
        for attempt in range(2):
            if local is None or attempt:
                say(f"downloading {path} {where}", True)
                local = hubcache.download(self.repo, path, self.commit or "", force=attempt > 0)
                fetched = True
            if checks.verify(local, sha):
                return local, fetched
            hubcache.forget(local)
            local = None
        raise MemoryUnreadable(
            f"{self.label}: {path} does not match the sha256 its manifest records, even freshly downloaded",
            "the remote is damaged: publish it again from the machine that owns it",
        )


def _read_manifest(repo: str, commit: str) -> dict:
    path = hubcache.download(repo, MANIFEST, commit)
    try:
        man = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise MemoryUnreadable(f"hf://datasets/{repo}: {MANIFEST} cannot be read ({e})") from None
    if not isinstance(man, dict):
        raise MemoryUnreadable(f"hf://datasets/{repo}: {MANIFEST} is not a JSON object")
    return man


def manifest_model(man: dict) -> str | None:
    emb = man.get("embedding")
    return (emb.get("model") if isinstance(emb, dict) else None) or man.get("embedding_model")


def manifest_shards(man: dict) -> list[dict]:
    return [s for s in man.get("shards") or [] if isinstance(s, dict) and s.get("path") and s.get("sha256")]


class _Verified:
    """sha256 checks already done, keyed by the cached file's (size, mtime, inode): a changed file is re-hashed."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.seen: dict = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.seen = {}
        self.dirty = False

    @staticmethod
    def _stamp(local: Path) -> list:
        st = local.stat()
        return [st.st_size, st.st_mtime_ns, st.st_ino]

    def ok(self, local: Path, sha: str) -> bool:
        try:
            return self.seen.get(sha) == self._stamp(local)
        except OSError:
            return False

    def verify(self, local: Path, sha: str) -> bool:
        h = hashlib.sha256()
        with open(local, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        good = h.hexdigest() == sha
        if good:
            self.seen[sha] = self._stamp(local)
        else:
            self.seen.pop(sha, None)
        self.dirty = True
        return good

    def save(self) -> None:
        if not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.seen), encoding="utf-8")
        os.replace(tmp, self.path)
