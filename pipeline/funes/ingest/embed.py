"""Embed stage: chunk texts -> unit vectors, longest first so batches pad little; each distinct text once."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def embed_texts(texts: Sequence[str], embedder, batch_size: int = 64) -> np.ndarray:
    """float32 (len(texts), embedder.dim) in input order; duplicates are embedded once and copied."""
    texts = list(texts)
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    unique = list(dict.fromkeys(texts))
    order = sorted(range(len(unique)), key=lambda i: len(unique[i]), reverse=True)
    vectors = np.asarray(embedder.encode([unique[i] for i in order], batch_size=batch_size), dtype=np.float32)
    by_unique = np.empty_like(vectors)
    by_unique[order] = vectors
    slot = {text: i for i, text in enumerate(unique)}
    return by_unique[[slot[t] for t in texts]]
