"""`funes publish MEMORY`: append the local memory's new embedded chunks to a private Hub dataset.

One publish = one commit guarded by `parent_commit`: new Parquet shards, the extended `funes.json`
manifest and the dataset card. What the remote already holds comes from its manifest (shards this
host has not read yet are read for their ids; receipts remember the rest), so a lost race, a
dropped connection or a killed publish never duplicates a row: the retry simply sees more ids.
"""

from __future__ import annotations

import functools
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from funes import hub, schema
from funes.commands import gate
from funes.errors import FunesError, UsageError
from funes.memory import Memory, card, contexts, curation, mirror, receipts, spec

WINDOW = 4096  # outgoing rows scanned and written per step (bounds memory)
RETRIES = 5


@dataclass
class Options:
    memory: str  # the Hub target: owner/name or hf://datasets/owner/name
    source: str | None = None  # the local memory to publish (default: local)
    create: bool = False
    no_embed: bool = False
    confirm: Callable[[str], bool] | None = None  # asks on a terminal; None = off-terminal


@dataclass
class Report:
    repo_id: str
    published: int = 0
    shards: int = 0
    commit: str = ""
    remote_chunks: int = 0
    created: bool = False
    card_note: str = ""
    pending: int = 0  # chunks still waiting for a vector (not published)
    embedded: int = 0
    held: gate.Held = field(default_factory=gate.Held)
    uploaded_bytes: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    curation: curation.Partition | None = None  # a project memory: which sessions shipped, which wait

    @property
    def exit_code(self) -> int:
        return 2 if self.held.rows else 0


def publish(opts: Options, progress=lambda msg, transient=False: None) -> Report:
    target = spec.parse(opts.memory)
    if target.repo_id is None or target.revision:
        raise UsageError(f"publish sends a memory to a Hub dataset, not to {opts.memory}", "give owner/name")
    repo_id = target.repo_id
    mem = Memory.resolve(opts.source).require()
    report = Report(repo_id)
    if not opts.no_embed and len(mem.pending_rows()):
        from funes.commands.index import embed_pending

        with mem.lock():
            report.embedded = embed_pending(mem, progress)
    report.pending = len(mem.pending_rows())
    gate.require_scanners()
    hub.require_token()
    remote = _target_repo(repo_id, opts, report)
    for attempt in range(RETRIES):
        try:
            return _attempt(mem, target.uri, remote, report, progress)
        except hub.Conflict:
            progress(f"{repo_id} moved during the publish; re-reading it (retry {attempt + 1})")
            remote = hub.repo(repo_id) or remote
    raise hub.HubError(f"{repo_id} kept moving while publishing ({RETRIES} tries)", "run the same command again")


def _target_repo(repo_id: str, opts: Options, report: Report) -> hub.Repo:
    found = hub.repo(repo_id)
    if found is not None:
        return found
    question = f"{repo_id} does not exist on the Hub. Create it as a private dataset?"
    if not (opts.create or (opts.confirm is not None and opts.confirm(question))):
        raise FunesError(
            f"{repo_id} doesn't exist on the Hub (or your token cannot see it); nothing was published",
            "re-run with --create to create it as a private dataset",
        )
    report.created = True
    return hub.create_private(repo_id)


def _attempt(mem: Memory, uri: str, remote: hub.Repo, report: Report, progress) -> Report:
    clock = functools.partial(_timed, report.timings)
    model, dim = _local_model(mem)
    with clock("read remote"):
        man = _remote_manifest(remote, model, dim)
        known = _sync_receipt(uri, remote, man, progress)
    vec_pos, rows = _curated(mem, remote.repo_id, *_outgoing(mem, known.ids), report)
    report.held, report.remote_chunks = gate.Held(), int(man["chunks"])
    if not len(rows):
        report.published, report.commit = 0, remote.sha
        return report
    with tempfile.TemporaryDirectory(prefix="funes-publish-") as tmp:
        writer = mirror.ShardWriter(Path(tmp), mirror.row_schema(dim, model), mirror.next_seq(man))
        facts = _write_shards(mem, vec_pos, rows, writer, report, progress, clock)
        shards = writer.close()
        if not shards:
            return report
        old = int((vec_pos < mem.stale_vectors()).sum())  # vectors.lance keeps its old vectors in front
        man = _extend(man, [s for s, _ in shards], facts, contexts.MIXED if old else contexts.VECTOR_INPUT)
        files: list[tuple[str, Path | bytes]] = [(s.path, p) for s, p in shards]
        files.append((mirror.MANIFEST, mirror.encode_manifest(man)))
        files += _card_file(remote, man, report)
        n = sum(s.rows for s, _ in shards)
        progress(f"uploading {n:,} chunks in {len(shards)} shard(s) to {remote.repo_id}")
        with clock("upload"):
            report.commit = hub.commit(remote.repo_id, files, f"funes publish: +{n} chunks", remote.sha)
        report.uploaded_bytes = sum(s.bytes for s, _ in shards)
    report.published, report.shards, report.remote_chunks = n, len(shards), int(man["chunks"])
    known.ids.update(facts.ids)
    known.shards.update(s.path for s, _ in shards)
    receipts.save(uri, known)
    return report


def _curated(mem: Memory, repo_id: str, vec_pos: np.ndarray, rows: np.ndarray, report: Report):
    """A project memory ships only sessions reviewed and included at their current size."""
    decisions = curation.load(repo_id)
    if decisions.project is None:
        return vec_pos, rows  # a personal memory ships everything
    sids = np.asarray(mem.chunks.scan(["session_id"])["session_id"].to_pylist(), dtype=object)
    counts: dict[str, int] = {}
    for sid in sids:
        counts[sid] = counts.get(sid, 0) + 1
    report.curation = curation.partition(decisions, counts)
    keep = np.isin(sids[rows], list(report.curation.ship)) if len(rows) else np.zeros(0, bool)
    return vec_pos[keep], rows[keep]


@contextmanager
def _timed(into: dict[str, float], name: str) -> Iterator[None]:
    """Adds the wall time of a phase to `into` (the benchmark's scan / write / upload shares)."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        into[name] = into.get(name, 0.0) + time.perf_counter() - t0


def _local_model(mem: Memory) -> tuple[str, int]:
    m = mem.manifest()
    vec = mem.vectors.dataset()
    if vec is None or not m.get("embedding_model"):
        raise FunesError("the local memory has no embedded chunks yet; nothing to publish", "run `funes index`")
    return m["embedding_model"], int(m.get("dim") or vec.schema.field("vector").type.list_size)


def _remote_manifest(remote: hub.Repo, model: str, dim: int) -> dict:
    try:
        man = mirror.parse_manifest(hub.read_file(remote.repo_id, mirror.MANIFEST, remote.sha))
    except ValueError as e:
        raise FunesError(f"{remote.repo_id}: {e}; refusing to publish into it", "publish to a new repo") from None
    if man is None:
        return mirror.empty_manifest(model, dim)
    if man.get("embedding_model") != model or int(man.get("dim", 0)) != dim:
        raise FunesError(
            f'{remote.repo_id} holds vectors of "{man.get("embedding_model")}" ({man.get("dim")} dims), '
            f'this memory "{model}" ({dim} dims); nothing was published',
            "publish to another repo, or rebuild the local memory with that model (FUNES_EMBED_MODEL)",
        )
    return man


def _sync_receipt(uri: str, remote: hub.Repo, man: dict, progress) -> receipts.Receipt:
    """The receipt extended with the ids of every remote shard this host has not read yet."""
    known = receipts.load(uri)
    unread = [s["path"] for s in man["shards"] if s["path"] not in known.shards]
    for i, path in enumerate(unread, 1):
        progress(f"reading ids of {path} ({i}/{len(unread)})", True)
        with hub.open_at(remote.repo_id, path, remote.sha) as f:
            known.ids.update(mirror.read_ids(f))
        known.shards.add(path)
    if unread:
        receipts.save(uri, known)
    return known


def _outgoing(mem: Memory, known: set[str]) -> tuple[np.ndarray, np.ndarray]:
    """(vector row, chunk row) of every embedded chunk the remote lacks, in chunk order."""
    import pyarrow.compute as pc

    t = mem.vectors.scan(["id", "row"])
    fresh = pc.invert(pc.is_in(t["id"], value_set=pa.array(list(known), pa.string())))
    idx = np.flatnonzero(fresh.to_numpy(zero_copy_only=False))
    ids, rows = t["id"].to_numpy(zero_copy_only=False)[idx], t["row"].to_numpy()[idx]
    _, first = np.unique(ids, return_index=True)  # a chunk embedded twice is published once
    keep = np.sort(first)
    order = np.argsort(rows[keep], kind="stable")
    return idx[keep][order], rows[keep][order]


@dataclass
class _Facts:
    ids: set[str] = field(default_factory=set)
    sessions: dict[str, set[str]] = field(default_factory=dict)
    first: str = ""
    last: str = ""


def _write_shards(mem, vec_pos, rows, writer, report: Report, progress, clock) -> _Facts:
    facts = _Facts()
    for lo in range(0, len(rows), WINDOW):
        with clock("read"):
            part = mem.chunks.take(rows[lo : lo + WINDOW], schema.CHUNK_COLUMNS)
            vectors = mem.vectors.take(vec_pos[lo : lo + WINDOW], ["vector"])["vector"]
        with clock("scan"):
            ok = gate.check(mem.chunks, part, report.held)
        clean = part.append_column("vector", vectors).filter(pa.array(ok, pa.bool_()))
        with clock("write"):
            writer.write(clean)
        _note(facts, clean)
        progress(f"scanned {min(lo + WINDOW, len(rows)):,}/{len(rows):,} chunks for secrets", True)
    return facts


def _note(facts: _Facts, t: pa.Table) -> None:
    facts.ids.update(t["id"].to_pylist())
    for h, s in zip(t["harness"].to_pylist(), t["session_id"].to_pylist()):
        facts.sessions.setdefault(h, set()).add(s)
    days = sorted(ts[:10] for ts in t["ts"].to_pylist() if ts)
    if days:
        facts.first = min(facts.first or days[0], days[0])
        facts.last = max(facts.last, days[-1])


def _extend(man: dict, shards: list[mirror.Shard], facts: _Facts, vector_input: str) -> dict:
    now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    out = mirror.extend_manifest(man, shards, now, vector_input)
    sessions = {h: set(v) for h, v in man.get("sessions", {}).items()}
    for h, v in facts.sessions.items():
        sessions.setdefault(h, set()).update(v)
    out["sessions"] = {h: sorted(v) for h, v in sorted(sessions.items())}
    out["first_day"] = min(filter(None, [man.get("first_day", ""), facts.first]), default="")
    out["last_day"] = max(man.get("last_day", ""), facts.last)
    return out


def _card_file(remote: hub.Repo, man: dict, report: Report) -> list[tuple[str, bytes]]:
    current = hub.read_file(remote.repo_id, "README.md", remote.sha)
    stats = card.Stats(
        chunks=int(man["chunks"]),
        sessions={h: len(v) for h, v in man["sessions"].items()},
        first=man["first_day"],
        last=man["last_day"],
        embedding_model=man["embedding_model"],
        published=man["updated"],
    )
    text, report.card_note = card.plan(current.decode("utf-8", "replace") if current else None, remote.repo_id, stats)
    return [("README.md", text.encode())] if text else []
