"""The recall configurations the quality benchmark compares, over the real in-process Retriever.

`funes.retrieval.retriever.Retriever.recall` exposes k, candidates, half_life, recency_floor, `now`
and `legs` (BM25-only and vectors-only run one leg through the same fusion, scoring, recency and
ordering); the reranker is a constructor argument (None = fused order).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

import devset_contexts

DEFAULT_K = 50  # chunks per recall: enough distinct sessions for session hit@10 (legs go max(30, k) deep)
HEADLINE = "hybrid"
NO_RERANKER = "n/a (no cross-encoder in HF cache)"


@dataclass(frozen=True)
class Config:
    name: str
    legs: tuple[str, ...] = ("vector", "bm25")
    rerank: bool = False
    half_life: float = 0.0  # days; 0 = recency off
    floor: float = 0.0  # recency floor (funes default 0.9; the original had 0)
    fusion: str | None = None  # a funes.retrieval.hybrid.parse spec; None = the shipped default
    scaffold: bool = True  # False: BM25 drops the question's framing words (tokenize.SCAFFOLD)
    distinct: bool = True  # False: keep copies of one passage (retrieval/distinct.py off)
    contexts: tuple[tuple[str, str], ...] = ()  # (leg, variant) swapped in (bench/devset_contexts.py)

    def describe(self) -> dict:
        return {
            "name": self.name,
            "legs": list(self.legs),
            "rerank": self.rerank,
            "half_life_days": self.half_life,
            "recency_floor": self.floor,
            "fusion": self.fusion,
            "scaffold": self.scaffold,
            "distinct": self.distinct,
            **({"contexts": dict(self.contexts)} if self.contexts else {}),
        }


BASE = [
    Config("bm25", legs=("bm25",)),
    Config("vector", legs=("vector",)),
    Config("hybrid"),
]
# the fusions compared side by side (`--fusions`); each is chosen on one half and reported on the other
FUSIONS = ["rrf", "wrrf:0.6", "wrrf:0.7", "wrrf:0.8", "convex:0.5", "convex:0.6", "convex:0.7", "convex:0.8"]
ABLATIONS = [  # each change switched alone, side by side with the shipped hybrid
    Config("bm25 w/o framing words", legs=("bm25",), scaffold=False),
    Config("hybrid w/o framing words", scaffold=False),
    Config("hybrid, all copies", distinct=False),
]


def _swapped(table: dict) -> list[Config]:
    legs = {"bm25": ("bm25",), "vector": ("vector",), "hybrid": ("vector", "bm25")}
    return [Config(name, legs=legs[leg], contexts=tuple(on.items())) for name, (leg, on) in table.items()]


# `--contexts` / `--context-vectors` (issue 10 item 2): legs with and without each chunk's context line
CONTEXTS = _swapped(devset_contexts.CONFIGS)
CONTEXT_VECTORS = _swapped(devset_contexts.VECTOR_CONFIGS)
RERANK = Config("hybrid+rerank", rerank=True)
RECENCY = [
    Config("hybrid+rec30d (orig)", half_life=30.0, floor=0.0),
    Config("hybrid+rec30d f0.9", half_life=30.0, floor=0.9),
    Config("hybrid+rec30d f0.98", half_life=30.0, floor=0.98),  # a tie-breaker: ~1 RRF rank step
]


def reranker_available() -> bool:
    from funes import models

    try:
        return models.load_reranker() is not None
    except Exception:
        return False


def configs(fusions: list[str] | None = None, extra=()) -> tuple[list[Config], list[dict]]:
    """(configs to run, placeholders for those that cannot run here); `fusions` adds one hybrid per spec."""
    from funes.retrieval import rerank

    recency = RECENCY
    if rerank.RECENCY_FLOOR not in {c.floor for c in RECENCY}:  # track the shipped default floor
        recency = [
            *RECENCY,
            Config(f"hybrid+rec30d f{rerank.RECENCY_FLOOR}", half_life=30.0, floor=rerank.RECENCY_FLOOR),
        ]
    base = [*BASE, *(Config(f"hybrid {f}", fusion=f) for f in fusions or []), *ABLATIONS, *extra]
    if reranker_available():
        return [*base, RERANK, *recency], []
    return [*base, *recency], [{"name": RERANK.name, "na": NO_RERANKER}]


class Searcher:
    """One memory, opened once; `search` runs one question under one config."""

    def __init__(self, funes_home: Path):
        from funes import models
        from funes.memory import Memory, indexes
        from funes.retrieval.retriever import AUTO, Retriever

        memory = Memory.resolve(str(funes_home / "memory")).require()
        indexes.refresh_if_stale(memory)  # as the recall command does
        embedder = self._embedder = models.load_embedder()  # the memo when memoize_embedder() ran first
        self._plain = Retriever(memory, embedder=embedder, reranker=None)
        self._rerank = Retriever(memory, embedder=embedder, reranker=AUTO)
        self._memory, self._contexts = memory, None

    def embed(self, question: str) -> None:
        self._embedder.encode_query(" ".join(question.split()))

    def search(self, question: str, cfg: Config, k: int, now: datetime | None) -> list[tuple[str, int, int, int]]:
        """Ranked (session_id, seq, chunk length in chars, legs that found it) of the hits."""
        r = self._rerank if cfg.rerank else self._plain
        if cfg.contexts:
            return self._with_contexts(question, cfg, k, now)
        res = r.recall(
            question,
            k=k,
            half_life=cfg.half_life,
            recency_floor=cfg.floor,
            neighbors=0,
            legs=cfg.legs,
            **({"fusion": cfg.fusion} if cfg.fusion else {}),
            scaffold=cfg.scaffold,
            distinct=cfg.distinct,
            now=now.timestamp() if now is not None else None,
        )
        return [(h.session_id, h.seq, len(h.text), len(h.ranks)) for h in res.hits]

    def _with_contexts(self, question: str, cfg: Config, k: int, now: datetime | None):
        want_vectors = "vector" in dict(cfg.contexts)
        if self._contexts is None or (want_vectors and self._contexts.vectors is None):
            self._contexts = devset_contexts.ContextLegs(self._memory, self._embedder if want_vectors else None)
        devset_contexts.install(self._contexts)
        self._contexts.on = dict(cfg.contexts)
        try:
            return self.search(question, dataclasses.replace(cfg, contexts=()), k, now)
        finally:
            self._contexts.on = {}

    def close(self) -> None:
        self._plain = self._rerank = None


class _MemoEmbedder:
    """The real embedder behind a per-run memo: each distinct text is embedded once per run."""

    def __init__(self, real):
        self._real, self._memo = real, {}
        self.embedded = self.reused = 0
        self.seconds = 0.0

    def __getattr__(self, name):
        return getattr(self._real, name)

    def encode(self, texts, batch_size: int = 64):
        import time

        texts = list(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self._memo))
        self.reused += len(texts) - len(missing)
        if missing:
            t0 = time.perf_counter()
            vecs = self._real.encode(missing, batch_size=batch_size)
            self.seconds += time.perf_counter() - t0
            self.embedded += len(missing)
            self._memo.update(zip(missing, vecs))
        if not texts:
            return self._real.encode([], batch_size=batch_size)
        return np.stack([self._memo[t] for t in texts]).astype(np.float32, copy=False)

    def encode_query(self, text: str):
        return self.encode([text])[0]

    def describe(self) -> dict:
        return {
            "model_id": self._real.model_id,
            "backend": getattr(self._real, "backend", "?"),
            "embedded": self.embedded,
            "reused": self.reused,
            "embed_s": round(self.seconds, 1),
        }


def memoize_embedder() -> _MemoEmbedder:
    """Route funes.models.load_embedder (used by index and recall) through one memo for this process."""
    from funes import models

    orig = models.load_embedder
    real = orig()
    memo = _MemoEmbedder(real)
    models.load_embedder = lambda model_id=None: memo if model_id in (None, real.model_id) else orig(model_id)
    return memo


def open_memory(funes_home: Path) -> Searcher:
    return Searcher(funes_home)
