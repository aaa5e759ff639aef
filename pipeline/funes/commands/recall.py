"""`funes recall`: validate the request, repair stale indexes if nobody else is writing, return the hits."""

from __future__ import annotations

from funes import vocab
from funes.commands.reading import answer, memory_list
from funes.errors import MemoryOffline, UsageError
from funes.results import RecallResult
from funes.retrieval import multi, rerank
from funes.retrieval.retriever import RecallRequest


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
    progress=None,
) -> RecallResult:
    req = request(query, k, candidates, half_life, recency_floor, neighbors, block_type, harness)
    specs = memory_list(memory)
    if len(specs) == 1:
        return answer(specs[0], lambda r: r.run(req), progress, repair=True)
    results, notes = [], []
    for s in specs:
        try:
            results.append(answer(s, lambda r: r.run(req), progress, repair=True))
        except MemoryOffline as e:  # one unreachable remote of several: the others still answer
            notes.append(f"{e.message.split(' — ')[0]} — recalling from the other memories")
    if not results:
        raise MemoryOffline(f"none of {memory} can be read offline", "connect once so funes can fetch them")
    merged = multi.merge(results, k)
    merged.note = "\n".join(filter(None, [*notes, merged.note])) or None
    return merged


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
