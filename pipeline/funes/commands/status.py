"""`funes status`: what the memory holds, how fresh its indexes are, which models recall would use."""

from __future__ import annotations

import time
from collections import Counter

from funes.errors import FunesError
from funes.memory import Memory, State, contexts, indexes
from funes.results import Status


def status(memory: str | None = None, progress=None) -> Status:
    mem = Memory.open(memory)
    if not isinstance(mem, Memory):
        return _remote(mem, progress)
    state, message = mem.state()
    from funes.commands.sync import last_run

    st = Status(label=mem.label, state=state.value, message=message, now=time.time(), last_hook=last_run())
    if state in (State.MISSING, State.EMPTY):
        return st
    if state is not State.READY:
        mem.require()  # raises the memory's own refusal (incompatible, unreadable)
    from funes import models

    st.chunks = mem.chunks.count()
    st.last_indexed = mem.chunks.head_time()
    st.vectors = mem.vectors.count()
    st.pending_vectors = len(mem.pending_rows())
    st.index = indexes.freshness(mem)
    st.index_problem = indexes.problem(mem, lag=False) if st.index.get("built") else None
    st.sessions, st.by_harness, st.by_type = _counts(mem, st.chunks, st.index_problem is None)
    st.embedder, st.embedder_note = models.embedder_id(), models.embedder_status()
    st.vector_input, st.stale_vectors = mem.vector_input() or contexts.VECTOR_INPUT, mem.stale_vectors()
    st.reranker, st.reranker_note = models.reranker_status()
    _gate(mem, st)
    st.review = _waiting_for_review(mem)
    from funes import scan

    st.scanners = scan.engines()
    return st


def _remote(mem, progress) -> Status:
    """A published memory at the commit this call resolved: counts from its snapshot's facets."""
    from funes import models

    mem.require()
    snap = mem.snapshot(progress)
    ix = snap.indexes()
    st = Status(label=mem.label, state="ready", now=time.time(), chunks=ix.rows, vectors=ix.vector_rows)
    st.sessions, st.by_harness, st.by_type = _facet_counts(ix.facets)
    st.pending_vectors = ix.rows - ix.vector_rows
    st.last_indexed = _epoch(snap.manifest.get("updated"))
    st.embedder, st.embedder_note = models.embedder_id(), models.embedder_status()
    from funes.memory.remote import manifest_shards

    st.vector_input, st.stale_vectors = _shard_inputs(manifest_shards(snap.manifest), ix.vector_rows)
    st.reranker, st.reranker_note = models.reranker_status()
    shard_bytes, index_bytes = sum(s.local.stat().st_size for s in snap.shards), _tree_bytes(mem.path)
    st.remote = {
        "commit": snap.commit,
        "offline": snap.offline,
        "shards": len(snap.shards),
        "published_bytes": shard_bytes,
        "index_bytes": index_bytes,
        "cache_bytes": shard_bytes + index_bytes,
    }
    return st


def _shard_inputs(shards: list[dict], vectors: int) -> tuple[str, int]:
    """A remote's vector input from its shards' stamps: rows of shards published before the stamp
    (or `mixed`) count as bare text, at most the vectors it holds."""
    current = [s.get("vector_input") == contexts.VECTOR_INPUT for s in shards]
    old = sum(int(s["rows"]) for s, ok in zip(shards, current) if not ok)
    if all(current):
        return contexts.VECTOR_INPUT, 0
    if not any(current) and not any(s.get("vector_input") == contexts.MIXED for s in shards):
        return contexts.BARE_TEXT, 0
    return contexts.MIXED, min(old, vectors)


def _epoch(stamp) -> float | None:
    from funes.memory import facets

    text = stamp.removesuffix(" UTC") if isinstance(stamp, str) else None  # publish writes `YYYY-MM-DD HH:MM UTC`
    value = facets.epoch(text)
    return None if value != value else value  # NaN: no stamp


def _tree_bytes(folder) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def _gate(mem: Memory, st: Status) -> None:
    from funes.commands import gate

    try:
        st.held_back, st.held_kinds = gate.holdback(mem)
    except FunesError as e:  # a missing scanner blocks publishing; status says so instead of failing
        st.gate = e.message


def _facet_counts(fac) -> tuple[int, dict[str, int], dict[str, int]]:
    import numpy as np

    harness = _named(np.bincount(np.asarray(fac.harness), minlength=len(fac.harnesses)), fac.harnesses)
    kinds = _named(np.bincount(np.asarray(fac.block_type), minlength=len(fac.block_types)), fac.block_types)
    return fac.n_sessions, harness, kinds


def _counts(mem: Memory, chunks: int, index_ok: bool) -> tuple[int, dict[str, int], dict[str, int]]:
    """Sessions, chunks per harness and per block type: from the index facets when they cover every
    row and load, else from the table."""
    ix = indexes.load(mem) if index_ok else None
    if ix is not None and ix.rows == chunks:
        return _facet_counts(ix.facets)
    table = mem.chunks.scan(["session_id", "harness", "block_type"])
    sessions = len(set(table["session_id"].to_pylist()))
    harness = dict(Counter(table["harness"].to_pylist())) if "harness" in table.column_names else {}
    kinds = dict(Counter(table["block_type"].to_pylist()))
    return sessions, _sorted(harness), _sorted(kinds)


def _named(counts, names: list[str]) -> dict[str, int]:
    return _sorted({names[i] or "(none)": int(c) for i, c in enumerate(counts) if c})


def _sorted(d: dict) -> dict[str, int]:
    return dict(sorted(((k or "(none)"), v) for k, v in d.items()))


def _waiting_for_review(mem) -> dict[str, int]:
    """Per project memory this host curates: sessions undecided or grown since their review."""
    from funes import paths
    from funes.commands.curate import chunks_per_session
    from funes.memory import curation

    files = sorted((paths.home() / "curation").glob("*--*.txt"))
    if not files or not mem.default:
        return {}
    counts = chunks_per_session(mem)
    out = {}
    for f in files:
        repo_id = f.stem.replace("--", "/", 1)
        decisions = curation.load(repo_id)
        if decisions.project is not None:
            p = curation.partition(decisions, counts)
            out[repo_id] = len(p.undecided) + len(p.grown)
    return out
