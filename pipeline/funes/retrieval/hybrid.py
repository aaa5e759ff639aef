"""Reciprocal rank fusion of the vector and BM25 legs, with a deterministic order."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

RRF_K = 60


@dataclass
class Fused:
    row: int
    score: float  # sum over legs of 1 / (RRF_K + rank), rank 0-based
    best_rank: int
    ranks: dict[str, int] = field(default_factory=dict)  # leg name -> rank in that leg

    @property
    def normalised(self) -> float:
        """The fused score on [0, 1]: 1.0 = first in both legs, 0.5 = first in one leg only."""
        return self.score * RRF_K / 2


def rrf(legs: dict[str, np.ndarray], limit: int, k: int = RRF_K) -> list[Fused]:
    """Fuse ranked row lists; order by fused score, then best rank in any leg, then row."""
    pool: dict[int, Fused] = {}
    for name, rows in legs.items():
        for rank, row in enumerate(np.asarray(rows).tolist()):
            f = pool.get(row)
            if f is None:
                f = pool[row] = Fused(row, 0.0, rank)
            f.score += 1.0 / (k + rank)
            f.best_rank = min(f.best_rank, rank)
            f.ranks[name] = rank
    return sorted(pool.values(), key=lambda f: (-f.score, f.best_rank, f.row))[:limit]
