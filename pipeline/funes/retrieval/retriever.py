"""Retriever: one warm object (memory-mapped indexes of one memory) that answers many recalls and gets.

The recall pipeline (upstream-spec 5.2, with the changes of ARCHITECTURE.md 7):
query -> [embed -> faiss] ∥ [tokenise -> BM25] -> fusion (`hybrid`, convex by default) -> fetch the pool's rows ->
cross-encoder (or fused order) x recency x kind prior (tool blocks and thinking weigh less than text) ->
top k -> neighbours. The vector leg runs only over rows that have vectors and is skipped outright when
none do (the embedder is then never loaded), so a memory answers lexically seconds after its first
index, and hybrid as vectors backfill.

It only reads: repairing indexes a crashed indexer left stale is the recall command's decision
(`memory.indexes.refresh_if_stale`), and the request is validated there too. Models come from
`funes.models`, which caches them per process; indexes are reloaded when the index manifest
changes on disk, so a long-lived server sees each refresh.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from funes import models, paths
from funes.errors import FunesError, MemoryIncompatible
from funes.memory import Memory, indexes
from funes.memory.remote import RemoteMemory
from funes.memory.tokenize import lexical_terms, query_terms
from funes.results import GetResult, Hit, RecallResult
from funes.retrieval import bridge, context, distinct, hybrid, rerank

AUTO = "auto"
LEGS = ("vector", "bm25")  # the two legs fused; a benchmark may run one alone
HIT_COLUMNS = ["id", "text", "session_id", "workdir", "turn_uuid", "ts", "block_type", "seq", "harness", "role"]
_RETRIEVERS: dict[str, Retriever] = {}
_LAST_REMOTE: dict[tuple[str, str], Retriever] = {}  # (label, segment folder) -> newest commit's Retriever


def cached(memory: Memory | RemoteMemory, progress=None) -> Retriever:
    """This process's Retriever for a memory (one per location, so its indexes stay warm).

    A remote's key includes the commit its state resolved, so a new publish gets a new Retriever;
    `progress` hears about a remote's downloads and segment builds.
    """
    key = memory.key
    if key not in _RETRIEVERS:
        _RETRIEVERS[key] = Retriever(memory)
        if memory.remote:
            _LAST_REMOTE[memory.label, str(memory.path)] = _RETRIEVERS[key]
    _RETRIEVERS[key].progress = progress
    return _RETRIEVERS[key]


def last_remote(memory: RemoteMemory) -> Retriever | None:
    """The Retriever of the newest commit of this remote this process has read, if any."""
    return _LAST_REMOTE.get((memory.label, str(memory.path)))


@dataclass(frozen=True)
class RecallRequest:
    """One validated recall: what to look for, how many, and how to weigh age."""

    query: str
    k: int = 8
    candidates: int = 30
    half_life: float = rerank.HALF_LIFE_DAYS
    recency_floor: float = rerank.RECENCY_FLOOR
    tool_prior: float = rerank.TOOL_PRIOR  # tool blocks' weight against prose (rerank.kind_prior)
    thinking_prior: float = rerank.THINKING_PRIOR  # thinking's weight against text
    output_cues: bool = True  # a question that names tool output (rerank.asks_for_output) drops the prior
    bridge_weight: float = bridge.WEIGHT  # weight of the other language's words in the lexical leg (0 = none)
    neighbors: int = 1
    block_type: str | None = None  # a vocab.BLOCK_TYPES value
    harness: str | None = None  # a stored facet (vocab.parse_harness)
    now: float | None = None  # epoch seconds recency is measured from (None = now)
    legs: tuple[str, ...] = LEGS
    fusion: str = hybrid.DEFAULT  # a hybrid.parse spec; benchmarks compare others
    distinct: bool = True  # drop hits that repeat a better hit's evidence (retrieval/distinct.py)
    # False: the lexical leg drops the question's framing words (tokenize.SCAFFOLD); measured neutral
    # to slightly harmful (bench/README.md "Fusion, framing words, distinct passages"), so off by default
    scaffold: bool = True

    @property
    def pool(self) -> int:
        return max(self.candidates, self.k)


class Retriever:
    """Holds one memory's indexes; `recall` and `get` are read-only.

    `embedder` / `reranker` default to the configured models (None = no reranker: fused order).
    Not thread-safe: a server serialises calls (as the original's MCP server does).
    """

    def __init__(self, memory: Memory | RemoteMemory, *, embedder=AUTO, reranker=AUTO):
        self.memory = memory
        self._embedder, self._reranker = embedder, reranker
        self._ix: indexes.Indexes | None = None
        self._table: tuple = ()  # chunks.lance's commit stamp when it was last opened
        self.progress = None  # (msg, transient) callback: a remote's downloads and segment builds

    @property
    def label(self) -> str:
        return self.memory.label

    # ---- models and indexes ------------------------------------------------------------------

    def embedder(self):
        return models.load_embedder() if self._embedder == AUTO else self._embedder

    def reranker(self):
        return models.load_reranker() if self._reranker == AUTO else self._reranker

    def indexes(self) -> indexes.Indexes | None:
        """The current indexes (reloaded when a refresh replaced them); the table is reopened after a commit.

        A remote memory's are its snapshot's: fixed for the commit the memory resolved.
        """
        if isinstance(self.memory, RemoteMemory):
            if self._ix is None:
                self._ix = self.memory.snapshot(self.progress).indexes()
            return self._ix
        if self._ix is None or indexes.manifest_stamp(indexes.index_dir(self.memory)) != self._ix.stamp:
            self._ix = indexes.load(self.memory)
            self._table = ()
        table = indexes.table_stamp(paths.chunks_table(self.memory.path))  # a stat, not an open
        if table != self._table:
            self.memory.chunks.reload()
            self._table = table
        return self._ix

    # ---- recall ------------------------------------------------------------------------------

    def recall(self, query: str, **options) -> RecallResult:
        """The best hits for an already validated request (`RecallRequest`'s fields as keywords)."""
        return self.run(RecallRequest(query, **options))

    def run(self, req: RecallRequest) -> RecallResult:
        clock = _Clock()
        ix = self.indexes()
        clock.lap("load")
        result = RecallResult(req.query, self.label, [], timings=clock.laps)
        if ix is None or ix.rows == 0:
            return result
        legs = self.legs(ix, req, clock)
        fused = hybrid.fuse(legs, req.pool, hybrid.parse(req.fusion), ix.facets.session)
        clock.lap("fusion")
        result.pool = len(fused)
        if not fused:
            return result
        hits = self._score(ix, req, fused, clock, result)
        context.attach_neighbors(self.memory.chunks, ix.facets, hits, req.neighbors)
        clock.lap("neighbors")
        result.hits = hits
        return result

    def legs(self, ix, req: RecallRequest, clock=None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Each requested leg's (rows best first, scores), `req.pool` deep: what the fusion sees."""
        clock = clock or _Clock()
        allowed = ix.facets.mask(req.block_type, req.harness)
        legs = {}
        if "vector" in req.legs and ix.vector_rows and ix.faiss:
            legs["vector"] = self._vector_leg(ix, req.query, req.pool, allowed, clock)
        if "bm25" in req.legs:
            terms = query_terms(req.query) if req.scaffold else lexical_terms(req.query)
            extra = bridge.synonyms(req.query, terms, req.bridge_weight) if req.bridge_weight > 0 else []
            legs["bm25"] = ix.lexical(terms, req.pool, allowed, extra)
            clock.lap("bm25")
        return legs

    def _vector_leg(self, ix, query: str, limit: int, allowed, clock) -> tuple[np.ndarray, np.ndarray]:
        emb = self.embedder()
        dim = ix.manifest["vectors"].get("dim")
        if dim and int(dim) != int(emb.dim):
            raise MemoryIncompatible(
                f"memory vectors are {dim}-d ({ix.model}), the embedder {emb.model_id} makes {emb.dim}-d",
                f"set FUNES_EMBED_MODEL={ix.model}, or rebuild the memory with `funes index`",
            )
        q = emb.encode_query(query)
        clock.lap("embed")
        found = ix.vector(q, limit, allowed)
        clock.lap("faiss")
        return found

    def _score(self, ix, req: RecallRequest, fused, clock, result: RecallResult) -> list[Hit]:
        """Best k of the pool by relevance x recency x kind prior; only the rows needed are read from the table."""
        rows = np.array([f.row for f in fused], dtype=np.int64)
        model = self.reranker()
        table = None
        if model is not None:  # the cross-encoder reads every candidate
            table = self.memory.chunks.take(rows, HIT_COLUMNS).to_pylist()
            clock.lap("fetch")
            rel = rerank.relevance(model, req.query, [r["text"] for r in table])
            result.reranker = getattr(model, "model_id", None) or "reranker"
            clock.lap("rerank")
        else:
            rel = np.array([f.normalised for f in fused])
        rec = rerank.recency(np.asarray(ix.facets.ts)[rows], req.half_life, req.recency_floor, req.now)
        tool_prior = 1.0 if req.output_cues and rerank.asks_for_output(req.query) else req.tool_prior
        kinds = np.asarray(ix.facets.block_type)[rows]
        prior = rerank.kind_prior(kinds, ix.facets.block_types, tool_prior, req.thinking_prior)
        score = rel * rec * prior
        order = sorted(range(len(fused)), key=lambda i: (-score[i], i))  # ties keep fused order
        clock.lap("recency")
        if table is None:
            read = lambda batch: self.memory.chunks.take(rows[batch], HIT_COLUMNS).to_pylist()  # noqa: E731
        else:
            read = lambda batch: [table[i] for i in batch]  # noqa: E731
        kept = distinct.pick(order, req.k, read, req.distinct)
        clock.lap("fetch")
        return [
            Hit(
                row=fused[i].row,
                score=float(score[i]),
                relevance=float(rel[i]),
                recency=float(rec[i]),
                ranks=dict(fused[i].ranks),
                **{c: r[c] for c in HIT_COLUMNS},
            )
            for i, r in kept
        ]

    # ---- get ---------------------------------------------------------------------------------

    def get(self, session_id: str, turn_uuid: str, window: int = 3) -> GetResult:
        session_id, turn_uuid = session_id.strip(), turn_uuid.strip()
        try:
            ix = self.indexes()
            table = context.session_rows(
                self.memory.chunks, ix.facets if ix else None, ix.rows if ix else 0, session_id
            )
        except (indexes.IndexDamaged, OSError, ValueError):  # derived data is damaged: the table still answers
            self._ix = None
            table = context.session_rows(self.memory.chunks, None, 0, session_id)
        turns = context.turn_window(table, turn_uuid, max(window, 0))
        if turns is None:
            raise FunesError(
                f"turn {turn_uuid} not found in session {session_id}",
                "copy both ids from a recall hit's `→ get` line, with its --memory",
            )
        return GetResult(session_id, turn_uuid, self.label, window, turns)


class _Clock:
    """Seconds per recall stage (RecallResult.timings)."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = self.laps.get(name, 0.0) + now - self._t
        self._t = now
