"""`funes recall`: validate the request, open (or reuse) the memory's Retriever, return the hits."""

from __future__ import annotations

from funes import vocab
from funes.errors import UsageError
from funes.results import RecallResult
from funes.retrieval import rerank
from funes.retrieval.retriever import cached


def recall(
    query: str,
    *,
    memory: str | None = None,
    k: int = 8,
    candidates: int = 30,
    half_life: float = rerank.HALF_LIFE_DAYS,
    recency_floor: float = rerank.RECENCY_FLOOR,
    neighbors: int = 1,
    block_type: str | None = None,
    harness: str | None = None,
) -> RecallResult:
    query = " ".join((query or "").split())
    if not query:
        raise UsageError('empty query — say what to recall, e.g. funes recall "why did we switch parsers"')
    if k < 1 or candidates < 1 or neighbors < 0:
        raise UsageError("-k and --candidates must be at least 1, --neighbors at least 0")
    harness = vocab.parse_harness(harness)
    return cached(memory).recall(
        query,
        k=k,
        candidates=candidates,
        half_life=half_life,
        recency_floor=recency_floor,
        neighbors=neighbors,
        block_type=block_type,
        harness=harness,
    )
