"""`funes recall`: validate the request, repair stale indexes if nobody else is writing, return the hits."""

from __future__ import annotations

from funes import vocab
from funes.errors import UsageError
from funes.memory import Memory, indexes
from funes.results import RecallResult
from funes.retrieval import rerank
from funes.retrieval.retriever import RecallRequest, cached


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
    req = request(query, k, candidates, half_life, recency_floor, neighbors, block_type, harness)
    mem = Memory.resolve(memory).require()
    # the one write a read may make: index rows a crashed or older indexer stored but never indexed
    indexes.refresh_if_stale(mem)
    return cached(mem).run(req)


def request(
    query: str,
    k: int,
    candidates: int,
    half_life: float,
    recency_floor: float,
    neighbors: int,
    block_type: str | None,
    harness: str | None,
) -> RecallRequest:
    """The validated request; every refusal of a bad recall argument is worded here."""
    query = " ".join((query or "").split())
    if not query:
        raise UsageError('empty query — say what to recall, e.g. funes recall "why did we switch parsers"')
    if k < 1 or candidates < 1 or neighbors < 0:
        raise UsageError("-k and --candidates must be at least 1, --neighbors at least 0")
    return RecallRequest(
        query,
        k=k,
        candidates=candidates,
        half_life=half_life,
        recency_floor=recency_floor,
        neighbors=neighbors,
        block_type=vocab.parse_block_type(block_type),
        harness=vocab.parse_harness(harness),
    )
