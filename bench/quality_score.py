"""Scoring of ranked recall hits against gold sessions and gold turns.

Definitions (one question, hits = the recall result list, best first, each a chunk with its
session id and turn seq):
- Session ranking: the hits' session ids, deduplicated keeping the first (best) occurrence. The
  rank of a session is its 1-based position in that list.
- hit@k (session level): 1 if any gold session is among the first k ranked sessions, else 0.
- MRR (session level): 1 / rank of the first gold session in the session ranking; 0 if no gold
  session was returned at all.
- Turn ranking: the hits' (session, seq) pairs mapped to benchmark turns, deduplicated the same way.
- turn recall@k: |gold turns among the first k ranked turns| / |gold turns| (only for questions
  with turn-level gold).
Aggregates are plain means over questions, in percent.
"""

from __future__ import annotations

from collections import defaultdict

SESSION_KS = (1, 5, 10)
TURN_KS = (5, 10)


def _dedupe(items):
    seen, out = set(), []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def score_question(
    hits: list[tuple[str, int]], gold_sessions: set[str], gold_turns: set[str], turn_map: dict[tuple[str, int], str]
) -> dict[str, float]:
    """One question's metrics from its ranked (session_id, seq) hits."""
    sessions = _dedupe(s for s, _ in hits)
    first = next((i for i, s in enumerate(sessions) if s in gold_sessions), None)
    out = {f"hit@{k}": float(first is not None and first < k) for k in SESSION_KS}
    out["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
    if gold_turns:
        turns = _dedupe(turn_map.get(h, f"?{h}") for h in hits)
        for k in TURN_KS:
            out[f"turn_r@{k}"] = len(gold_turns.intersection(turns[:k])) / len(gold_turns)
    return out


def aggregate(rows: list[dict[str, float]]) -> dict[str, float]:
    """Mean of each metric over the rows that have it, in percent; `n` = number of rows."""
    sums, counts = defaultdict(float), defaultdict(int)
    for r in rows:
        for k, v in r.items():
            sums[k] += v
            counts[k] += 1
    out = {k: round(100.0 * sums[k] / counts[k], 1) for k in sums}
    out["n"] = len(rows)
    return out
