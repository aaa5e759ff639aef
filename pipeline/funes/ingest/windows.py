"""Cut a text into the embedder's token windows, so no part of a long chunk is invisible to the vector leg.

The first window is the text itself: the model reads its first `max_seq_length` word pieces, exactly
what a one-vector embedding reads, so that vector is unchanged (and any cache of it still holds).
Each further window starts OVERLAP pieces before the previous one ends, at a word start (a `##`
continuation would be re-tokenised as another word), and ends where its last piece ends.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

import numpy as np

OVERLAP = 32  # word pieces shared by consecutive windows: a phrase cut by a window edge is read whole once
POOLS = ("first", "mean")  # one vector per chunk: its first window's, or the normalised mean of all windows


@functools.lru_cache(maxsize=4)
def _tokenizer(path: str):
    from tokenizers import Tokenizer

    tk = Tokenizer.from_file(path)
    tk.no_truncation()
    tk.no_padding()
    return tk


def tokenizer_of(embedder):
    """The embedder's own fast tokenizer (its model folder's tokenizer.json), untruncated."""
    return _tokenizer(str(Path(embedder.path) / "tokenizer.json"))


def room(embedder) -> int:
    """Content word pieces one window holds: the model's positions less [CLS]/[SEP] and any passage prefix."""
    prefix = getattr(embedder, "passage_prefix", "") or ""
    used = len(tokenizer_of(embedder).encode(prefix, add_special_tokens=False).ids) if prefix else 0
    return int(embedder.max_seq_length) - 2 - used


def cut(texts: Sequence[str], tokenizer, room: int, overlap: int = OVERLAP) -> list[list[str]]:
    """Per text, its windows (the first is the text itself); a text that fits is one window."""
    step = max(room - overlap, 1)
    out = []
    for text, enc in zip(texts, tokenizer.encode_batch(list(texts), add_special_tokens=False)):
        offsets, tokens = enc.offsets, enc.tokens
        n = len(offsets)
        wins = [text]
        start = 0
        while start + room < n:
            nxt = start + step
            while nxt > start + 1 and tokens[nxt].startswith("##"):
                nxt -= 1  # back to the start of the word
            start = nxt
            end = min(start + room, n)
            wins.append(text[offsets[start][0] : offsets[end - 1][1]])
        out.append(wins)
    return out


def pool(vectors: np.ndarray, counts: Sequence[int], how: str) -> np.ndarray:
    """Window vectors (grouped per text, in order) -> one unit vector per text."""
    if how not in POOLS:
        raise ValueError(f"unknown window pooling {how!r} (expected one of {', '.join(POOLS)})")
    bounds = np.cumsum([0, *counts])
    if how == "first":
        return vectors[bounds[:-1]]
    sums = np.add.reduceat(vectors, bounds[:-1], axis=0) if len(counts) else vectors[:0]
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return (sums / np.maximum(norms, 1e-12)).astype(np.float32)
