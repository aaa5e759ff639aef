"""Retriever: one warm object (models + memory-mapped indexes) that answers many recalls and gets.

The recall pipeline (upstream-spec 5.2, with the changes of ARCHITECTURE.md 7):
query -> [embed -> faiss] ∥ [tokenise -> BM25] -> RRF (k=60) -> fetch the pool's rows ->
cross-encoder (or fused order) x recency -> top k -> neighbours. The vector leg runs only over rows
that have vectors and is skipped outright when none do (the embedder is then never loaded), so a
memory answers lexically seconds after its first index, and hybrid as vectors backfill.

Models are cached per process (every Retriever shares them); indexes are reloaded when the index
manifest changes on disk, so a long-lived server sees each refresh the indexer makes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np

from funes import paths, vocab
from funes.errors import FunesError, MemoryIncompatible, UsageError
from funes.memory import Memory, indexes, lock
from funes.memory.tokenize import query_terms
from funes.results import GetResult, Hit, RecallResult
from funes.retrieval import context, hybrid, rerank

AUTO = "auto"
HIT_COLUMNS = ["id", "text", "session_id", "workdir", "turn_uuid", "ts", "block_type", "seq", "harness", "role"]
_MODELS: dict[str, object] = {}
_RETRIEVERS: dict[str, Retriever] = {}
_LAST_REMOTE: dict[tuple[str, str], Retriever] = {}  # (label, segment folder) -> newest commit's Retriever
T = TypeVar("T")


def shared_embedder():
    if "embedder" not in _MODELS:
        from funes import models

        _MODELS["embedder"] = models.load_embedder()
    return _MODELS["embedder"]


def shared_reranker():
    if "reranker" not in _MODELS:
        from funes import models

        _MODELS["reranker"] = models.load_reranker()
    return _MODELS["reranker"]


def cached(spec: str | None = None, progress=None) -> Retriever:
    """This process's Retriever for a memory spec (the memory's state is checked on every call).

    A remote's key includes the commit its state resolved, so a new publish gets a new Retriever.
    """
    return _for(Memory.resolve(spec).require(), progress)


def _for(memory, progress) -> Retriever:
    key = memory.key
    if key not in _RETRIEVERS:
        _RETRIEVERS[key] = Retriever(memory)
        if memory.remote:
            _LAST_REMOTE[memory.label, str(memory.path)] = _RETRIEVERS[key]
    _RETRIEVERS[key].progress = progress
    return _RETRIEVERS[key]


def answer(spec: str | None, work: Callable[[Retriever], T], progress=None) -> T:
    """`work(retriever)` on the memory's current state, the same as `work(cached(spec))`.

    For a remote this process has read before, the head lookup (a network round trip) runs on a
    thread while `work` runs on the snapshot of the last commit seen; when the head turns out to
    have moved, `work` runs again on the new commit. A warm call then costs the longer of the two,
    not their sum, and never answers from a stale commit.
    """
    memory = Memory.resolve(spec)
    last = _LAST_REMOTE.get((memory.label, str(memory.path))) if memory.remote else None
    if last is None:
        return work(_for(memory.require(), progress))
    with ThreadPoolExecutor(1) as pool:
        fresh = pool.submit(memory.require)
        try:
            guess = work(last)
        except FunesError:
            guess = None  # decided below, on the fresh state
        memory = fresh.result()
    if guess is not None and memory.key == last.memory.key:
        return guess
    return work(_for(memory, progress))


class Retriever:
    """Holds one memory's indexes and the process's models; `recall` and `get` are read-only.

    Not thread-safe: a server serialises calls (as the original's MCP server does).
    """

    def __init__(self, memory: Memory, *, embedder=AUTO, reranker=AUTO, heal: bool = True):
        self.memory = memory
        self._embedder, self._reranker, self.heal = embedder, reranker, heal
        self._ix: indexes.Indexes | None = None
        self._seen: tuple | None = None  # table + manifest stamps at the last staleness check
        self.progress = None  # (msg, transient) callback: a remote's downloads and segment builds

    @classmethod
    def open(cls, spec: str | None = None, **kw) -> Retriever:
        """The Retriever of a memory spec (`local`, None or a path); raises the memory's refusal."""
        return cls(Memory.resolve(spec).require(), **kw)

    @property
    def label(self) -> str:
        return self.memory.label

    # ---- models and indexes ------------------------------------------------------------------

    def embedder(self):
        if self._embedder == AUTO:
            self._embedder = shared_embedder()
        return self._embedder

    def reranker(self):
        if self._reranker == AUTO:
            self._reranker = shared_reranker()
        return self._reranker

    def indexes(self) -> indexes.Indexes | None:
        """The current indexes (reloaded when a refresh replaced the manifest; healed when stale).

        A remote memory's are its snapshot's: fixed for the commit the memory resolved.
        """
        if self.memory.remote:
            if self._ix is None:
                self._ix = self.memory.snapshot(self.progress).indexes()
            return self._ix
        folder = indexes.index_dir(self.memory)
        if self._ix is None or indexes.manifest_stamp(folder) != self._ix.stamp:
            self._ix = indexes.load(self.memory)
            self.memory.chunks.reload()
        if self.heal and self._stale() and self._try_refresh():
            self._ix = indexes.load(self.memory)
            self.memory.chunks.reload()
        return self._ix

    def chunks(self):
        if self.memory.remote:
            self.indexes()  # the snapshot (and so its table) is opened with the indexes
        return self.memory.chunks

    def _stale(self) -> bool:
        """Rows stored but not indexed? Tables are reopened only when a commit touched them (a stat)."""
        stamp = (
            indexes.table_stamp(paths.chunks_table(self.memory.path)),
            indexes.table_stamp(paths.vectors_table(self.memory.path)),
            self._ix.stamp if self._ix else None,
        )
        if stamp == self._seen:
            return False
        self._seen = stamp
        self.memory.chunks.reload()
        self.memory.vectors.reload()
        if not self.memory.chunks.count():
            return False
        if self._ix is None:
            return True
        return self._ix.rows < self.memory.chunks.count() or self._ix.vector_rows < self.memory.vectors.count()

    def _try_refresh(self) -> bool:
        """Index rows a crashed or older indexer left unindexed, unless a writer is busy right now."""
        try:
            with lock.try_writer_lock(paths.lock_file_for(self.memory.path)) as held:
                if held:
                    indexes.refresh(self.memory)
                return held
        except OSError:
            return False

    # ---- recall ------------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        k: int = 8,
        candidates: int = 30,
        half_life: float = rerank.HALF_LIFE_DAYS,
        recency_floor: float = rerank.RECENCY_FLOOR,
        neighbors: int = 1,
        block_type: str | None = None,
        harness: str | None = None,
        now: float | None = None,
    ) -> RecallResult:
        query = " ".join((query or "").split())
        if not query:
            raise UsageError('empty query — say what to recall, e.g. funes recall "why did we switch parsers"')
        block_type, harness = vocab.parse_block_type(block_type), vocab.parse_harness(harness)
        clock = _Clock()
        ix = self.indexes()
        clock.lap("load")
        result = RecallResult(query, self.label, [], timings=clock.laps)
        if ix is None or ix.rows == 0:
            return result
        allowed = ix.facets.mask(block_type, harness)
        legs = {}
        if ix.vector_rows and ix.faiss:
            legs["vector"] = self._vector_leg(ix, query, max(candidates, k), allowed, clock)
        legs["bm25"] = ix.lexical(query_terms(query), max(candidates, k), allowed)[0]
        clock.lap("bm25")
        fused = hybrid.rrf(legs, max(candidates, k))
        clock.lap("fusion")
        result.pool = len(fused)
        if not fused:
            return result
        hits = self._score(ix, query, fused, k, half_life, recency_floor, now, clock, result)
        context.attach_neighbors(self.chunks(), ix.facets, hits, neighbors)
        clock.lap("neighbors")
        result.hits = hits
        return result

    def _vector_leg(self, ix, query: str, limit: int, allowed, clock) -> np.ndarray:
        emb = self.embedder()
        dim = ix.manifest["vectors"].get("dim")
        if dim and int(dim) != int(emb.dim):
            raise MemoryIncompatible(
                f"memory vectors are {dim}-d ({ix.model}), the embedder {emb.model_id} makes {emb.dim}-d",
                f"set FUNES_EMBED_MODEL={ix.model}, or rebuild the memory with `funes index`",
            )
        q = emb.encode_query(query)
        clock.lap("embed")
        rows = ix.vector(q, limit, allowed)[0]
        clock.lap("faiss")
        return rows

    def _score(self, ix, query, fused, k, half_life, floor, now, clock, result) -> list[Hit]:
        """Best k of the pool by relevance x recency; only the rows needed are read from the table."""
        rows = np.array([f.row for f in fused], dtype=np.int64)
        model = self.reranker()
        table = None
        if model is not None:  # the cross-encoder reads every candidate
            table = self.chunks().take(rows, HIT_COLUMNS).to_pylist()
            clock.lap("fetch")
            rel = rerank.relevance(model, query, [r["text"] for r in table])
            result.reranker = getattr(model, "model_id", None) or "reranker"
            clock.lap("rerank")
        else:
            rel = np.array([f.normalised for f in fused])
        rec = rerank.recency(np.asarray(ix.facets.ts)[rows], half_life, floor, now)
        score = rel * rec
        order = sorted(range(len(fused)), key=lambda i: (-score[i], i))[:k]  # ties keep fused order
        clock.lap("recency")
        if table is None:
            picked = self.chunks().take(rows[order], HIT_COLUMNS).to_pylist()
            table = dict(zip(order, picked))
            clock.lap("fetch")
        return [
            Hit(
                row=fused[i].row,
                score=float(score[i]),
                relevance=float(rel[i]),
                recency=float(rec[i]),
                ranks=dict(fused[i].ranks),
                **{c: table[i][c] for c in HIT_COLUMNS},
            )
            for i in order
        ]

    # ---- get ---------------------------------------------------------------------------------

    def get(self, session_id: str, turn_uuid: str, window: int = 3) -> GetResult:
        session_id, turn_uuid = session_id.strip(), turn_uuid.strip()
        ix = self.indexes()
        table = context.session_rows(self.chunks(), ix.facets if ix else None, ix.rows if ix else 0, session_id)
        turns = context.turn_window(table, turn_uuid, max(window, 0))
        if turns is None:
            raise FunesError(
                f"turn {turn_uuid} not found in session {session_id}",
                "copy both ids from a recall hit's `→ get` line, with its --memory",
            )
        return GetResult(session_id, turn_uuid, self.label, window, turns)


class _Clock:
    def __init__(self):
        self.laps: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = self.laps.get(name, 0.0) + now - self._t
        self._t = now
