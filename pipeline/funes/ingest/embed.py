"""Embed stage: chunk texts -> unit vectors, longest first so batches pad little; each distinct text once.

`pool` says how a chunk longer than the model's window is read (ingest/windows.py): `first`
(what indexing uses) embeds the text once and the model reads its first window; `mean` embeds
every window and returns their normalised mean. Measured on the dev set, reading every window
did not pay for its ~1.5x embedding work (bench/README.md "Windows and contexts"), so indexing
keeps `first` and `mean` serves the benchmarks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from funes.ingest import windows


def embed_texts(texts: Sequence[str], embedder, batch_size: int = 64, pool: str = "first") -> np.ndarray:
    """float32 (len(texts), embedder.dim) in input order; duplicates are embedded once and copied."""
    texts = list(texts)
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    if pool == "first":
        return _embed_unique(texts, embedder, batch_size)
    cuts = windows.cut(texts, windows.tokenizer_of(embedder), windows.room(embedder))
    flat = _embed_unique([w for ws in cuts for w in ws], embedder, batch_size)
    return windows.pool(flat, [len(ws) for ws in cuts], pool)


def _embed_unique(texts: list[str], embedder, batch_size: int) -> np.ndarray:
    unique = list(dict.fromkeys(texts))
    order = sorted(range(len(unique)), key=lambda i: len(unique[i]), reverse=True)
    vectors = np.asarray(embedder.encode([unique[i] for i in order], batch_size=batch_size), dtype=np.float32)
    by_unique = np.empty_like(vectors)
    by_unique[order] = vectors
    slot = {text: i for i, text in enumerate(unique)}
    return by_unique[[slot[t] for t in texts]]
