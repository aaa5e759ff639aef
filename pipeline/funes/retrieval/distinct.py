"""Distinct passages: the k hits of one answer are k different pieces of evidence.

Walking the scored pool best first, a row is dropped when an earlier (better) hit has the same
text, whitespace-normalised: repeated tool output, a compaction summary or Hermes's JSON log
mirror copying a message verbatim, the same file read twice. The best-scoring copy stays.

Overlapping splits of one block are NOT collapsed: adjacent splits share only `chunk.OVERLAP`
(150) of up to 1,200 characters, and on the dev set collapsing them dropped passages whose
evidence lay in the part the better split does not hold (BM25 hit@8 52.3 -> 49.0,
bench/README.md "Distinct passages").

Rows are read from the table in batches of what is still missing, so an answer without copies
reads exactly k rows, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def text_key(text: str) -> str:
    return " ".join((text or "").split())


def pick(
    order: Sequence[int], k: int, read: Callable[[list[int]], list[dict]], unique: bool = True
) -> list[tuple[int, dict]]:
    """The first k positions of `order` (best first) whose text no better hit has, with their records.

    `read(positions)` returns the records of those positions (with "text"), in order;
    `unique=False` keeps every row (a benchmark's side-by-side baseline).
    """
    if not unique:
        head = list(order[:k])
        return list(zip(head, read(head)))
    seen: set[str] = set()
    kept: list[tuple[int, dict]] = []
    pos = 0
    while len(kept) < k and pos < len(order):
        batch = list(order[pos : pos + k - len(kept)])
        pos += len(batch)
        for i, rec in zip(batch, read(batch)):
            key = text_key(rec["text"])
            if key not in seen:
                seen.add(key)
                kept.append((i, rec))
    return kept
