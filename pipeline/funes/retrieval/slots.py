"""Session-aware reordering of a fused list: reserved slots (`held`) and session agreement (`agree`).

Both read a row's session through `groups` (recall passes `facets.session`; None = each row its
own), because the unit a question is answered by is a session's passage, and a leg's strong
session can be buried under the other leg's many near-equal rows of a few sessions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from funes.retrieval.hybrid import Fused


def group_of(groups):
    """row -> its session (a code, an id, or the row itself without groups)."""
    if groups is None:
        return lambda row: row
    if isinstance(groups, np.ndarray):
        return lambda row: int(groups[row])
    return lambda row: groups[row]


def first_groups(rows: np.ndarray, n: int, group) -> list[int]:
    """The best row of each of the first `n` sessions of a leg's list, best first."""
    seen: set = set()
    out: list[int] = []
    for row in np.asarray(rows).tolist():
        g = group(row)
        if g not in seen:
            seen.add(g)
            out.append(row)
            if len(out) == n:
                break
    return out


def agree(pool: dict[int, Fused], legs, depth: int, boost: float, groups) -> None:
    """Lift every row of a session both legs rank among their first `depth` sessions:
    (score + boost) / (1 + boost), the others score / (1 + boost), so scores stay on [0, 1]."""
    group = group_of(groups)
    tops = [{group(r) for r in first_groups(rows, depth, group)} for rows, _ in legs.values()]
    both = set.intersection(*tops) if len(tops) == 2 else set()
    for f in pool.values():
        f.score = (f.score + (boost if group(f.row) in both else 0.0)) / (1.0 + boost)


def held(ordered: list[Fused], legs, r: int, k: int, groups) -> list[Fused]:
    """Reserved slots: each leg's best row of each of its first `r` sessions is in the first `k` rows.

    The rows the fusion left out of that head (their session has no row there) take its last places,
    interleaved by leg rank (each leg's first session, then each one's second, ...; BM25 before
    the vector leg), at most k - 1 of them so the fused first row stays first; the rows they push
    out follow in fused order. A placed row takes the score of the row after it, so scores stay
    non-increasing. With `k` rows graded, hybrid session hit@k is at least each leg's hit@r.
    """
    group = group_of(groups)
    by_row = {f.row: f for f in ordered}
    firsts = [first_groups(legs[name][0], r, group) for name in sorted(legs)]  # bm25, then vector
    wanted = list(dict.fromkeys(row for rank in zip(*firsts) for row in rank if row in by_row))
    wanted += [row for rows in firsts for row in rows if row in by_row and row not in wanted]  # a shorter leg's tail
    placed: list[int] = []
    while len(placed) < k - 1:  # placing rows pushes others out of the head, which can leave a session without one
        chosen = set(placed)
        head = [f for f in ordered if f.row not in chosen][: k - len(placed)]
        present = {group(f.row) for f in head} | {group(row) for row in placed}
        more = [row for row in wanted if row not in chosen and group(row) not in present]
        if not more:
            break
        placed.append(more[0])
    chosen = set(placed)
    rest = [f for f in ordered if f.row not in chosen]
    placed.sort(key=wanted.index)
    n = k - len(placed)
    out = rest[:n] + [by_row[row] for row in placed] + rest[n:]
    for i in range(len(out) - 2, -1, -1):
        out[i].score = max(out[i].score, out[i + 1].score)
    return out
