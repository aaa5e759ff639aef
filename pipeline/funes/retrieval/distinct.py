"""Distinct passages: the k hits of one answer are k different pieces of evidence.

Walking the scored pool best first, a row is dropped when an earlier (better) hit already shows
the same evidence:

- the same text, whitespace-normalised — repeated tool output, a compaction summary or Hermes's
  JSON log mirror copying a message verbatim, the same file read twice;
- an overlapping split of the same block — adjacent splits of one block share `chunk.OVERLAP`
  characters, so the better one stands for both (non-adjacent splits share nothing and stay).

Rows are read from the table in batches of what is still missing, so an answer without duplicates
reads exactly k rows, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

KEY_COLUMNS = ["text", "session_id", "turn_uuid", "block_idx", "split_idx"]


def text_key(text: str) -> str:
    return " ".join((text or "").split())


class Seen:
    """What the hits kept so far show; `admit` says whether a row adds a new piece of evidence."""

    def __init__(self) -> None:
        self._texts: set[str] = set()
        self._splits: set[tuple] = set()

    def admit(self, rec: dict) -> bool:
        text = text_key(rec["text"])
        block = (rec["session_id"], rec["turn_uuid"], rec["block_idx"])
        split = rec["split_idx"]
        if text in self._texts or (*block, split - 1) in self._splits or (*block, split + 1) in self._splits:
            return False
        self._texts.add(text)
        self._splits.add((*block, split))
        return True


def pick(
    order: Sequence[int], k: int, read: Callable[[list[int]], list[dict]], unique: bool = True
) -> list[tuple[int, dict]]:
    """The first k positions of `order` (best first) that add new evidence, with their records.

    `read(positions)` returns the records of those positions (KEY_COLUMNS at least), in order;
    `unique=False` keeps every row (a benchmark's side-by-side baseline).
    """
    if not unique:
        head = list(order[:k])
        return list(zip(head, read(head)))
    seen, pos = Seen(), 0
    kept: list[tuple[int, dict]] = []
    while len(kept) < k and pos < len(order):
        batch = list(order[pos : pos + k - len(kept)])
        pos += len(batch)
        for i, rec in zip(batch, read(batch)):
            if seen.admit(rec):
                kept.append((i, rec))
    return kept
