"""One ranking over several memories' recalls (`--memory local,acme/mem`): by score, one hit per chunk id.

Each memory's recall already scores its hits as relevance x recency x kind prior on the same scale (the same
cross-encoder, or the normalised fused rank when there is none), so the answers merge by score.
A chunk published from this host is in both memories under the same id: the first memory named
keeps it (local first means a turn is read where it is freshest). Every hit keeps the label of the
memory it came from, so its `→ get` line reopens the turn there.
"""

from __future__ import annotations

from funes.results import Hit, RecallResult
from funes.retrieval.distinct import text_key


def merge(results: list[RecallResult], k: int) -> RecallResult:
    ranked: list[tuple[float, int, int, Hit]] = []
    for m, res in enumerate(results):
        for rank, hit in enumerate(res.hits):
            hit.memory = res.label
            ranked.append((-hit.score, m, rank, hit))
    ranked.sort(key=lambda t: t[:3])
    seen: set[str] = set()
    texts: set[str] = set()  # distinct passages across memories too (retrieval/distinct.py)
    hits: list[Hit] = []
    for *_, hit in ranked:
        text = text_key(hit.text)
        if hit.id in seen or text in texts:
            continue
        seen.add(hit.id)
        texts.add(text)
        hits.append(hit)
    notes = [r.note for r in results if r.note]
    rerankers = {r.reranker for r in results if r.reranker}
    return RecallResult(
        query=results[0].query if results else "",
        label=",".join(r.label for r in results),
        hits=hits[:k],
        note="\n".join(notes) or None,
        reranker=rerankers.pop() if len(rerankers) == 1 else None,
        pool=sum(r.pool for r in results),
    )
