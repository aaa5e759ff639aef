"""Dev-set variants of the legs with each chunk's context line (funes.ingest.context, issue 10 item 2).

After the real index is built, every stored chunk gets its context line from the chunk table's own
columns (whole sessions, as `context.lines` needs). The lexical leg is swapped, for one config at
a time, for a BM25 index built by funes' own tokenizer and segment code over `context + text`;
with `--context-vectors` the vector leg is swapped too, for an exact search over embeddings of
`context + "\\n" + text` (every chunk re-embedded once through the dev-set cache). The stored text,
chunk ids and hits are unchanged: only what the legs score differs.
"""

from __future__ import annotations

import time

import numpy as np

CONFIGS = {
    "bm25, contexts": ("bm25", {"bm25"}),
    "hybrid, contexts in bm25": ("hybrid", {"bm25"}),
}
VECTOR_CONFIGS = {
    "vector, contexts": ("vector", {"vector"}),
    "hybrid, contexts in vectors": ("hybrid", {"vector"}),
    "hybrid, contexts in both": ("hybrid", {"bm25", "vector"}),
}


class ContextLegs:
    def __init__(self, memory, embedder=None):
        from funes.ingest import context
        from funes.memory import bm25
        from funes.memory.tokenize import tokenize_many

        rows = memory.chunks.scan(context.COLUMNS).to_pylist()
        t0 = time.perf_counter()
        self.lines = context.lines(rows)
        docs = [f"{c}\n{r['text']}" for c, r in zip(self.lines, rows)]
        self.segment = bm25.build(tokenize_many(docs), 0)
        self.stats = {
            "lines_s": round(time.perf_counter() - t0, 1),
            "mean_line_chars": np.mean([len(c) for c in self.lines]),
        }
        self.vectors = None
        if embedder is not None:
            from funes.ingest.embed import _embed_unique

            unique = list(dict.fromkeys(docs))
            for lo in range(0, len(unique), 2000):  # saved as it fills: a long run can be resumed
                embedder.encode(unique[lo : lo + 2000])
                if hasattr(embedder, "save"):
                    embedder.save()
            self.vectors = _embed_unique(docs, embedder, 64)
        self.on: set[str] = set()

    def search(self, query: np.ndarray, limit: int, allowed):
        best = self.vectors @ np.asarray(query, dtype=np.float32).reshape(-1)
        if allowed is not None:
            best = np.where(allowed[: len(best)], best, -np.inf)
        order = np.lexsort((np.arange(len(best)), -best))[:limit]
        order = order[np.isfinite(best[order])]
        return order.astype(np.int64), best[order].astype(np.float32)


ACTIVE: ContextLegs | None = None  # the legs a swapped Indexes method reads (one memory at a time)


def install(legs: ContextLegs) -> None:
    """Route Indexes.lexical / .vector through `legs` while their name is in legs.on (patched once)."""
    global ACTIVE
    from funes.memory import bm25, indexes

    first, ACTIVE = ACTIVE is None, legs
    if not first:
        return
    lexical, vector = indexes.Indexes.lexical, indexes.Indexes.vector

    def lex(self, terms, limit, allowed=None):
        if ACTIVE is None or "bm25" not in ACTIVE.on:
            return lexical(self, terms, limit, allowed)
        return bm25.search([ACTIVE.segment], terms, limit, allowed)

    def vec(self, query, limit, allowed=None):
        if ACTIVE is None or "vector" not in ACTIVE.on:
            return vector(self, query, limit, allowed)
        return ACTIVE.search(query, limit, allowed)

    indexes.Indexes.lexical = lex  # type: ignore[method-assign]
    indexes.Indexes.vector = vec  # type: ignore[method-assign]
