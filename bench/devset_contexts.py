"""Dev-set and LoCoMo variants of the legs with and without each chunk's context line (issue 10 item 2).

funes' BM25 documents are `context line + text` (funes.memory.contexts, memory/indexes.py). After
the real index is built, the lexical leg can be swapped, for one config at a time, for a BM25
index built by funes' own tokenizer and segment code over the text alone (what shipped before) or
over `context + text` (must rank as the real leg does: a check of the swap); with
`--context-vectors` the vector leg can be swapped for an exact search over embeddings of the text
alone (what shipped before the line reached the vector leg) or of `context + "\\n" + text` (what
funes embeds now: a check of the swap), each chunk embedded once through the vector cache. Stored text,
chunk ids and hits are unchanged: only what the legs score differs.
"""

from __future__ import annotations

import re
import time

import numpy as np

_LABELS = re.compile(r"\b(?:project|task|asked|tool): ")

# config -> (the legs it runs, {leg: swapped-in variant})
CONFIGS = {
    "bm25, text only (before)": ("bm25", {"bm25": "text"}),
    "hybrid, text only (before)": ("hybrid", {"bm25": "text"}),
    "bm25, contexts (swap check)": ("bm25", {"bm25": "context"}),
    "bm25, context terms not in the text": ("bm25", {"bm25": "novel"}),
    "hybrid, context terms not in the text": ("hybrid", {"bm25": "novel"}),
    "bm25, line with task": ("bm25", {"bm25": "with-task"}),
    "hybrid, line with task": ("hybrid", {"bm25": "with-task"}),
    "bm25, line without asked": ("bm25", {"bm25": "no-asked"}),
    "bm25, shipped line without its labels": ("bm25", {"bm25": "no-labels"}),
    "hybrid, shipped line without its labels": ("hybrid", {"bm25": "no-labels"}),
    "hybrid, line without asked": ("hybrid", {"bm25": "no-asked"}),
}
VECTOR_CONFIGS = {  # funes embeds the line too (contexts.VECTOR_INPUT): "text" is what it embedded before
    "vector, contexts (swap check)": ("vector", {"vector": "context"}),
    "vector, text only (before)": ("vector", {"vector": "text"}),
    "hybrid, text-only vectors (line in BM25 only, before)": ("hybrid", {"vector": "text"}),
    "hybrid, text only in both legs": ("hybrid", {"bm25": "text", "vector": "text"}),
    "hybrid, contexts in vectors only": ("hybrid", {"bm25": "text"}),
}


class ContextLegs:
    def __init__(self, memory, embedder=None):
        from funes.memory import bm25, contexts
        from funes.memory.tokenize import tokenize_many

        rows = memory.chunks.scan(contexts.COLUMNS).to_pylist()
        t0 = time.perf_counter()
        self.lines = contexts.lines(rows)
        docs = [f"{c}\n{r['text']}" for c, r in zip(self.lines, rows)]
        text_tokens = tokenize_many([r["text"] for r in rows])
        novel = [
            toks + [t for t in dict.fromkeys(line) if t not in set(toks)]
            for toks, line in zip(text_tokens, tokenize_many(self.lines))
        ]

        def docs_of(parts: tuple[str, ...]) -> list[str]:
            return [f"{c}\n{r['text']}" for c, r in zip(contexts.lines(rows, parts), rows)]

        self.segments = {
            "text": bm25.build(text_tokens, 0),
            "context": bm25.build(tokenize_many(docs), 0),  # the shipped line (contexts.DEFAULT)
            "novel": bm25.build(novel, 0),
            "with-task": bm25.build(tokenize_many(docs_of(contexts.PARTS)), 0),
            "no-asked": bm25.build(tokenize_many(docs_of(("project", "tool"))), 0),
            # the words "project", "asked", "tool" are in most documents: do they cost anything?
            "no-labels": bm25.build(tokenize_many([_LABELS.sub("", d) for d in docs]), 0),
        }
        self.stats = {
            "lines_s": round(time.perf_counter() - t0, 1),
            "mean_line_chars": float(np.mean([len(c) for c in self.lines])) if rows else 0.0,
        }
        self.vectors = None
        if embedder is not None:
            from funes.ingest.embed import _embed_unique

            texts = [r["text"] for r in rows]
            unique = list(dict.fromkeys([*docs, *texts]))
            for lo in range(0, len(unique), 2000):  # saved as it fills: a long run can be resumed
                embedder.encode(unique[lo : lo + 2000])
                if hasattr(embedder, "save"):
                    embedder.save()
            self.vectors = {"context": _embed_unique(docs, embedder, 64), "text": _embed_unique(texts, embedder, 64)}
        self.on: dict[str, str] = {}

    def search(self, query: np.ndarray, limit: int, allowed):
        best = self.vectors[self.on["vector"]] @ np.asarray(query, dtype=np.float32).reshape(-1)
        if allowed is not None:
            best = np.where(allowed[: len(best)], best, -np.inf)
        order = np.lexsort((np.arange(len(best)), -best))[:limit]
        order = order[np.isfinite(best[order])]
        return order.astype(np.int64), best[order].astype(np.float32)


ACTIVE: ContextLegs | None = None  # the legs a swapped Indexes method reads (one memory at a time)


def install(legs: ContextLegs) -> None:
    """Route Indexes.lexical / .vector through `legs` while legs.on names the leg (patched once)."""
    global ACTIVE
    from funes.memory import bm25, indexes

    first, ACTIVE = ACTIVE is None, legs
    if not first:
        return
    lexical, vector = indexes.Indexes.lexical, indexes.Indexes.vector

    def lex(self, terms, limit, allowed=None):
        if ACTIVE is None or "bm25" not in ACTIVE.on:
            return lexical(self, terms, limit, allowed)
        return bm25.search([ACTIVE.segments[ACTIVE.on["bm25"]]], terms, limit, allowed)

    def vec(self, query, limit, allowed=None):
        if ACTIVE is None or "vector" not in ACTIVE.on:
            return vector(self, query, limit, allowed)
        return ACTIVE.search(query, limit, allowed)

    indexes.Indexes.lexical = lex  # type: ignore[method-assign]
    indexes.Indexes.vector = vec  # type: ignore[method-assign]
