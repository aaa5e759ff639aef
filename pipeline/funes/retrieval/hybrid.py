"""Fusion of the vector and BM25 legs into one ranked pool, with a deterministic order.

Three fusions, named by a spec string (`parse`):

- ``rrf`` — equal-weight reciprocal rank fusion (k=60), the original's.
- ``wrrf:W`` — weighted RRF: BM25 weighs W, the vector leg 1 - W.
- ``mm:W`` — the same convex combination with each leg min-max normalised over its own list.
- ``convex:W`` — convex combination of normalised leg scores (Bruch et al. 2023, "TM2C2"):
  each leg's score is mapped to [0, 1] between the score's theoretical minimum (0 for BM25,
  -1 for cosine) and the best score of that leg's list, then ``W * bm25 + (1 - W) * vector``;
  a row one leg did not return gets 0 from it. Unlike RRF it keeps how far ahead a leg's first
  hit is, so a leg that is sure (one passage far above the rest) is not outvoted by a leg that
  is guessing among near-equals — the reason equal-weight RRF ranked below BM25 on LoCoMo.

Every fused score is on [0, 1]: 1.0 = first in both legs. DEFAULT (`mm:0.8`) was chosen by
bench/fusion_choose.py on half A of LoCoMo and LongMemEval and reported on half B (bench/README.md
"Fusion, framing words, distinct passages"): equal-weight RRF put hybrid 12 points of LoCoMo
hit@1 below BM25 alone; no fixed weighting beats the vector leg on LongMemEval at the same time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

RRF_K = 60
METHODS = ("rrf", "wrrf", "convex", "mm")
DEFAULT = "mm:0.8"
_FLOOR = {"bm25": 0.0, "vector": -1.0}  # theoretical minimum score of each leg (BM25 >= 0, cosine >= -1)


@dataclass(frozen=True)
class Fusion:
    method: str = "rrf"
    bm25_weight: float = 0.5  # the vector leg weighs 1 - bm25_weight

    def weight(self, leg: str) -> float:
        return self.bm25_weight if leg == "bm25" else 1.0 - self.bm25_weight

    @property
    def spec(self) -> str:
        return self.method if self.method == "rrf" else f"{self.method}:{self.bm25_weight:g}"


def parse(spec: str) -> Fusion:
    """`rrf`, `wrrf:W`, `convex:W` or `mm:W` (W = BM25's weight in [0, 1]); ValueError names what is wrong."""
    method, _, weight = spec.strip().partition(":")
    if method not in METHODS:
        raise ValueError(f"unknown fusion {spec!r} (one of rrf, wrrf:W, convex:W, mm:W)")
    if method == "rrf":
        if weight:
            raise ValueError("rrf takes no weight (use wrrf:W)")
        return Fusion()
    try:
        w = float(weight)
    except ValueError:
        raise ValueError(f"fusion {spec!r} needs BM25's weight, e.g. {method}:0.7") from None
    if not 0.0 <= w <= 1.0:
        raise ValueError(f"fusion weight {w:g} is outside [0, 1]")
    return Fusion(method, w)


@dataclass
class Fused:
    row: int
    score: float  # rrf: sum over legs of 1 / (RRF_K + rank), rank 0-based; otherwise already on [0, 1]
    best_rank: int
    ranks: dict[str, int] = field(default_factory=dict)  # leg name -> rank in that leg
    scale: float = RRF_K / 2  # score * scale = the normalised score

    @property
    def normalised(self) -> float:
        """The fused score on [0, 1]: 1.0 = first in both legs (RRF: 0.5 = first in one leg only)."""
        return self.score * self.scale


def rrf(legs: dict[str, np.ndarray], limit: int, k: int = RRF_K) -> list[Fused]:
    """Fuse ranked row lists; order by fused score, then best rank in any leg, then row."""
    pool = _pool(legs)
    for rows in legs.values():
        for rank, row in enumerate(np.asarray(rows).tolist()):
            pool[row].score += 1.0 / (k + rank)
    return _ordered(pool, limit)


def fuse(legs: dict[str, tuple[np.ndarray, np.ndarray]], limit: int, fusion: Fusion | None = None) -> list[Fused]:
    """Fuse legs given as (rows best first, their scores) with `fusion` (default: DEFAULT)."""
    fusion = fusion or parse(DEFAULT)
    if fusion.method == "rrf":
        return rrf({name: rows for name, (rows, _) in legs.items()}, limit)
    pool = _pool({name: rows for name, (rows, _) in legs.items()})
    if fusion.method == "wrrf":
        # scaled so that first in both legs is 1.0 whatever the weights
        scale = (RRF_K + 0.0) / sum(fusion.weight(n) for n in legs) if legs else 1.0
        for name, (rows, _) in legs.items():
            for rank, row in enumerate(np.asarray(rows).tolist()):
                pool[row].score += fusion.weight(name) / (RRF_K + rank)
        for f in pool.values():
            f.scale = scale
        return _ordered(pool, limit)
    total = sum(fusion.weight(n) for n in legs) or 1.0  # one leg alone still spans [0, 1]
    for name, (rows, scores) in legs.items():
        s = np.asarray(scores, dtype=np.float64)
        if not len(s):
            continue
        low = float(s.min()) if fusion.method == "mm" else _FLOOR.get(name, float(s.min()))
        span = float(s.max()) - low
        norm = (s - low) / span if span > 0 else np.ones(len(s))
        for row, v in zip(np.asarray(rows).tolist(), norm.tolist()):
            pool[row].score += fusion.weight(name) * max(v, 0.0) / total
    for f in pool.values():
        f.scale = 1.0
    return _ordered(pool, limit)


def _pool(legs: dict[str, np.ndarray]) -> dict[int, Fused]:
    pool: dict[int, Fused] = {}
    for name, rows in legs.items():
        for rank, row in enumerate(np.asarray(rows).tolist()):
            f = pool.get(row)
            if f is None:
                f = pool[row] = Fused(row, 0.0, rank)
            f.best_rank = min(f.best_rank, rank)
            f.ranks[name] = rank
    return pool


def _ordered(pool: dict[int, Fused], limit: int) -> list[Fused]:
    return sorted(pool.values(), key=lambda f: (-f.score, f.best_rank, f.row))[:limit]
