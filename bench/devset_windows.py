"""Dev-set variants of the vector leg over every token window of each stored chunk (issue 10 item 1).

After the real index is built, every stored chunk is cut into the embedder's windows by the same
function indexing uses (funes.ingest.windows.cut) and every window is embedded through the dev-set
cache. `Indexes.vector` is then swapped, for one config at a time, for an exact search over:
`first` the chunk's first window (what is stored today: must rank exactly as the real leg does,
a check of the swap), `mean` one normalised mean of its windows per chunk (no storage change,
ingest.windows.pool), `max` every window as its own row, hits mapped back to their chunk and the
chunk scored by its best window (several vector rows per chunk).
"""

from __future__ import annotations

import time

import numpy as np

MODES = ("first", "mean", "max")
CONFIGS = {f"{leg}, windows {m}": (leg, m) for m in MODES for leg in ("vector", "hybrid")}


class WindowLeg:
    def __init__(self, memory, embedder):
        from funes.ingest import windows
        from funes.ingest.embed import _embed_unique

        texts = memory.chunks.scan(["text"])["text"].to_pylist()
        t0 = time.perf_counter()
        cuts = windows.cut(texts, windows.tokenizer_of(embedder), windows.room(embedder))
        self.cut_s = time.perf_counter() - t0
        counts = [len(c) for c in cuts]
        self.owner = np.repeat(np.arange(len(texts), dtype=np.int64), counts)
        flat = [w for c in cuts for w in c]
        unique = list(dict.fromkeys(flat))
        for lo in range(0, len(unique), 2000):  # the cache is saved as it fills: a long run can be resumed
            embedder.encode(unique[lo : lo + 2000])
            if hasattr(embedder, "save"):
                embedder.save()
        self.win = _embed_unique(flat, embedder, 64)
        self.first = windows.pool(self.win, counts, "first")
        self.mean = windows.pool(self.win, counts, "mean")
        self.stats = {"chunks": len(texts), "windows": len(self.win), "windows_per_chunk": len(self.win) / len(texts)}
        self.mode: str | None = None

    def search(self, query: np.ndarray, limit: int, allowed):
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if self.mode == "max":
            best = np.full(len(self.first), -np.inf, dtype=np.float32)
            np.maximum.at(best, self.owner, self.win @ q)
        else:
            best = (self.mean if self.mode == "mean" else self.first) @ q
        if allowed is not None:
            best = np.where(allowed[: len(best)], best, -np.inf)
        order = np.lexsort((np.arange(len(best)), -best))[:limit]
        order = order[np.isfinite(best[order])]
        return order.astype(np.int64), best[order].astype(np.float32)


def install(leg: WindowLeg) -> None:
    """Route Indexes.vector through `leg` whenever leg.mode is set (None = the real faiss leg)."""
    from funes.memory import indexes

    real = indexes.Indexes.vector

    def vector(self, query, limit, allowed=None):
        return real(self, query, limit, allowed) if leg.mode is None else leg.search(query, limit, allowed)

    indexes.Indexes.vector = vector  # type: ignore[method-assign]
