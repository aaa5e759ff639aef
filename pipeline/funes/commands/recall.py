"""`funes recall`: validate the request, repair stale indexes if nobody else is writing, return the hits."""

from __future__ import annotations

import math
import os
from dataclasses import replace

from funes import vocab
from funes.commands.reading import answer, memory_list
from funes.errors import FunesError, MemoryOffline, UsageError
from funes.memory import Memory, indexes
from funes.results import RecallResult
from funes.retrieval import bridge, multi, rerank
from funes.retrieval.retriever import RecallRequest, Retriever

# how long a recall waits for a writer that is building or repairing the indexes right now
WAIT_S = float(os.environ.get("FUNES_RECALL_WAIT", "10"))


def recall(query: str, *, memory: str | None = None, progress=None, **options) -> RecallResult:
    """Recall from one or several memories; `options` are `request`'s keywords (k, candidates,
    half_life, recency_floor, neighbors, block_type, harness, tool_prior, thinking_prior,
    bridge_weight), validated there."""
    req = request(query, **options)
    specs = memory_list(memory)

    def work(r: Retriever) -> RecallResult:
        run, note = req, None
        mem = r.memory
        if isinstance(mem, Memory):  # trust the local indexes only as far as they cover the tables
            why = indexes.unresolved(mem)
            if why is not None:
                run, note = _degraded(mem, req, why)
        result = r.run(run)
        result.note = note or result.note
        return result

    if len(specs) == 1:
        return answer(specs[0], work, progress, repair=True, wait=WAIT_S)
    results, notes = [], []
    for s in specs:
        try:
            results.append(answer(s, work, progress, repair=True, wait=WAIT_S))
        except MemoryOffline as e:  # one unreachable remote of several: the others still answer
            notes.append(f"{e.message.split(' — ')[0]} — recalling from the other memories")
    if not results:
        raise MemoryOffline(f"none of {memory} can be read offline", "connect once so funes can fetch them")
    merged = multi.merge(results, req.k)
    merged.note = "\n".join(filter(None, [*notes, merged.note])) or None
    return merged


def _degraded(mem: Memory, req: RecallRequest, why: str) -> tuple[RecallRequest, str | None]:
    """Answer as far as the indexes can be trusted, and say so; refuse when they cannot answer at
    all — never a silent `no results`."""
    stored = mem.chunks.count()
    fix = "retry in a moment, or run `funes index`"
    if why == "not built yet":
        raise FunesError(f"the search index is not built yet ({stored} chunks stored, none searchable)", fix)
    if why.startswith("built from other rows"):
        raise FunesError(f"the search index was {why}", fix)
    if why.startswith("covers ") and " chunks" in why:
        indexed, _, total = why.removeprefix("covers ").removesuffix(" chunks").partition(" of ")
        if int(indexed) > int(total):
            raise FunesError(f"the search index is ahead of the memory ({why}): it was built from rows now lost", fix)
        return req, f"note: search index {why} (being built); the rest are not searchable yet"
    if "vectors point at other chunks" in why:
        return replace(req, legs=("bm25",)), f"note: {why}; answering by keyword only until `funes index` re-maps them"
    if why.startswith("covers "):  # vectors not all indexed: the vector leg sees fewer rows
        return req, None
    raise FunesError(f"the search index cannot be used: {why}", "run `funes index` to rebuild it")


def request(
    query: str,
    k: int = 8,
    candidates: int = 30,
    half_life: float = rerank.HALF_LIFE_DAYS,
    recency_floor: float = rerank.RECENCY_FLOOR,
    neighbors: int = 1,
    block_type: str | None = None,
    harness: str | None = None,
    **weights: float,
) -> RecallRequest:
    """The validated request; every refusal of a bad recall argument is worded here. `weights`:
    tool_prior, thinking_prior and bridge_weight (`_WEIGHTS`)."""
    query = " ".join((query or "").split())
    if not query:
        raise UsageError('empty query — say what to recall, e.g. funes recall "why did we switch parsers"')
    if k < 1 or candidates < 1 or neighbors < 0:
        raise UsageError("-k and --candidates must be at least 1, --neighbors at least 0")
    if math.isnan(half_life):  # <= 0 turns recency off; nan would make every score nan
        raise UsageError("--half-life must be a number of days (got nan)")
    if not math.isfinite(recency_floor) or not 0 <= recency_floor <= 1:
        raise UsageError(f"--recency-floor must be between 0 and 1 (got {recency_floor})")
    for flag, value in (("--harness", harness), ("--type", block_type)):
        if value is not None and not value.strip():
            raise UsageError(f"{flag} needs a value (leave the flag out for no filter)")
    w = _weights(weights)
    return RecallRequest(
        query,
        k=k,
        candidates=candidates,
        half_life=half_life,
        recency_floor=recency_floor,
        neighbors=neighbors,
        block_type=vocab.parse_block_type(block_type),
        harness=vocab.parse_harness(harness),
        tool_prior=w["tool_prior"],
        thinking_prior=w["thinking_prior"],
        bridge_weight=w["bridge_weight"],
    )


# recall's weights in [0, 1]: (flag, default, whether 0 is allowed)
_WEIGHTS = {
    "tool_prior": ("--tool-prior", rerank.TOOL_PRIOR, False),
    "thinking_prior": ("--thinking-prior", rerank.THINKING_PRIOR, False),
    "bridge_weight": ("--bridge", bridge.WEIGHT, True),
}


def _weights(given: dict[str, float]) -> dict[str, float]:
    unknown = sorted(set(given) - set(_WEIGHTS))
    if unknown:
        raise TypeError(f"request() got unknown keyword(s): {', '.join(unknown)}")
    out = {}
    for name, (flag, default, zero) in _WEIGHTS.items():
        value = given.get(name, default)
        if not math.isfinite(value) or not (0 <= value <= 1 if zero else 0 < value <= 1):
            raise UsageError(f"{flag} must be {'between 0 and 1' if zero else 'above 0 and at most 1'} (got {value})")
        out[name] = value
    return out
