"""Fusion of the vector and BM25 legs into one ranked pool, with a deterministic order.

Fusions, named by a spec string (`parse`):

- ``rrf`` — equal-weight reciprocal rank fusion (k=60), the original's.
- ``wrrf:W`` — weighted RRF: BM25 weighs W, the vector leg 1 - W.
- ``mm:W`` — the same convex combination with each leg min-max normalised over its own list.
- ``convex:W`` — convex combination of normalised leg scores (Bruch et al. 2023, "TM2C2"):
  each leg's score is mapped to [0, 1] between the score's theoretical minimum (0 for BM25,
  -1 for cosine) and the best score of that leg's list, then ``W * bm25 + (1 - W) * vector``;
  a row one leg did not return gets 0 from it. Unlike RRF it keeps how far ahead a leg's first
  hit is, so a leg that is sure (one passage far above the rest) is not outvoted by a leg that
  is guessing among near-equals — the reason equal-weight RRF ranked below BM25 on LoCoMo.
- ``conf:W:G:C`` — ``mm`` with BM25's weight set per query from how sure each leg is
  (`confident_weights`); ``conf:W`` = ``mm:W``.
- ``z:W`` — each leg's scores as standard deviations above its own list's mean, then weighted.
- ``+N`` after ``mm``, ``conf`` or ``z`` — the lighter leg's first N rows take places 2, 4, ….
- ``mnz:W`` — CombMNZ: ``mm:W``'s sum times the share of legs that returned the row.
- ``rbf:W:P`` — rank-biased fusion: ``W * P**rank_bm25 + (1 - W) * P**rank_vector`` (rank 0-based),
  a row a leg did not return gets 0 from it; geometric where RRF's 1 / (60 + rank) is nearly flat.
- ``agree:W:M:B`` — session agreement: ``mm:W``, then a row whose session (group) both legs rank
  among their first M sessions gets ``(score + B) / (1 + B)``, the others ``score / (1 + B)``.
- ``@R:K`` after any fusion but ``rrf`` / ``wrrf`` — reserved slots (`slots.held`): each leg's best
  row of each of its first R sessions is in the first K rows; the ones the fusion left out take the
  last places of those K, in order of their legs' ranks, so no leg's strong sessions are buried.

Every fused score is on [0, 1]: 1.0 = first in both legs. DEFAULT (`mm:0.8`) was chosen on half A
of LoCoMo, LongMemEval and the dev set and reported on half B (bench/README.md "Fusion, framing
words, distinct passages"); every other fusion here was measured the same way and is reachable by
spec only: none beat it on half A while keeping the hybrid at least as good as the better leg on
every suite (bench/README.md "Fusions that cannot bury a leg").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from funes.retrieval import slots

RRF_K = 60
METHODS = ("rrf", "wrrf", "convex", "mm", "conf", "z", "mnz", "rbf", "agree")
ARGS = {"conf": 3, "rbf": 2, "agree": 3}  # numbers after the method (the others take W alone)
DEFAULT = "mm:0.8"
_FLOOR = {"bm25": 0.0, "vector": -1.0}  # theoretical minimum score of each leg (BM25 >= 0, cosine >= -1)


@dataclass(frozen=True)
class Fusion:
    method: str = "rrf"
    bm25_weight: float = 0.5  # the vector leg weighs 1 - bm25_weight
    gap_gain: float = 0.0  # conf: log-odds BM25 gains per unit of its first hit's lead (confident_weights)
    cos_gain: float = 0.0  # conf: log-odds BM25 loses per unit of the vector leg's best cosine
    lift: int = 0  # mm / conf: the lighter leg's first `lift` rows take places 2, 4, ... (`_lift`)
    decay: float = 0.0  # rbf: a leg's rank r counts decay ** r
    agree_depth: int = 0  # agree: a session both legs rank among their first agree_depth sessions ...
    agree_boost: float = 0.0  # ... gets this much (score + B) / (1 + B)
    reserve: int = 0  # @R:K: each leg's first `reserve` sessions ...
    head: int = 0  # ... are held in the first `head` rows (`slots.held`)

    def weight(self, leg: str) -> float:
        return self.bm25_weight if leg == "bm25" else 1.0 - self.bm25_weight

    @property
    def spec(self) -> str:
        tail = (f"+{self.lift}" if self.lift else "") + (f"@{self.reserve}:{self.head}" if self.head else "")
        args = {
            "conf": (self.gap_gain, self.cos_gain),
            "rbf": (self.decay,),
            "agree": (self.agree_depth, self.agree_boost),
        }.get(self.method, ())
        if self.method == "rrf":
            return "rrf"
        return ":".join([self.method, *(f"{x:g}" for x in (self.bm25_weight, *args))]) + tail


def parse(spec: str) -> Fusion:
    """`rrf`, `wrrf:W`, `convex:W`, `mm:W`, `z:W`, `mnz:W`, `rbf:W:P`, `agree:W:M:B` or `conf:W[:G:C]`
    (W = BM25's weight in [0, 1]); `mm`, `conf` and `z` take an optional `+N`, every one but `rrf`
    and `wrrf` an optional `@R:K`; ValueError names what is wrong."""
    spec, at, reserved = spec.strip().partition("@")
    spec, plus, lift = spec.partition("+")
    method, _, weight = spec.partition(":")
    if plus and (method not in ("mm", "conf", "z") or not lift.isdigit()):
        raise ValueError(f"fusion {spec}+{lift}: only mm, conf and z take +N (a whole number of lifted rows)")
    if method not in METHODS:
        raise ValueError(
            f"unknown fusion {spec!r} (one of rrf, wrrf:W, convex:W, mm:W, z:W, mnz:W, rbf:W:P, agree:W:M:B, conf:W:G:C)"
        )
    reserve, head = _reserved(spec, reserved) if at else (0, 0)
    if at and (method in ("rrf", "wrrf") or plus):
        raise ValueError(f"fusion {spec}@{reserved}: @R:K goes on a score fusion without +N (mm, z, conf, ...)")
    if method == "rrf":
        if weight:
            raise ValueError("rrf takes no weight (use wrrf:W)")
        return Fusion()
    weight, *more = weight.split(":")
    if (more and len(more) != ARGS.get(method, 1) - 1) or (method in ("rbf", "agree") and not more):
        example = {"conf": "conf:0.8:4:8", "rbf": "rbf:0.8:0.9", "agree": "agree:0.8:3:0.2"}.get(
            method, f"{method}:0.8"
        )
        raise ValueError(f"fusion {spec!r}: {method} takes {ARGS.get(method, 1)} numbers, e.g. {example}")
    try:
        w = float(weight)
    except ValueError:
        raise ValueError(f"fusion {spec!r} needs BM25's weight, e.g. {method}:0.7") from None
    args: list[float] = []
    for x in more:
        try:
            args.append(float(x))
        except ValueError:
            raise ValueError(f"fusion {spec!r}: {x!r} is not a number") from None
    if not 0.0 <= w <= 1.0:
        raise ValueError(f"fusion weight {w:g} is outside [0, 1]")
    return Fusion(method, w, lift=int(lift or 0), reserve=reserve, head=head, **_method_args(spec, method, args))


def _method_args(spec: str, method: str, args: list[float]) -> dict:
    """The Fusion fields of the numbers after W (conf's gains, rbf's decay, agree's depth and boost)."""
    if method == "conf" and args:
        return {"gap_gain": args[0], "cos_gain": args[1]}
    if method == "rbf":
        if not 0.0 < args[0] < 1.0:
            raise ValueError(f"fusion {spec!r}: rbf's decay P is in (0, 1), e.g. rbf:0.8:0.9")
        return {"decay": args[0]}
    if method == "agree":
        if args[0] < 1 or args[0] != int(args[0]) or args[1] < 0:
            raise ValueError(f"fusion {spec!r}: agree takes M sessions (a whole number >= 1) and a boost B >= 0")
        return {"agree_depth": int(args[0]), "agree_boost": args[1]}
    return {}


def _reserved(spec: str, text: str) -> tuple[int, int]:
    r, _, k = text.partition(":")
    if not (r.isdigit() and k.isdigit()) or not int(r) >= 1 or int(k) < 2:
        raise ValueError(f"fusion {spec}@{text}: @R:K takes R >= 1 sessions per leg and K >= 2 rows, e.g. @3:5")
    return int(r), int(k)


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


def fuse(
    legs: dict[str, tuple[np.ndarray, np.ndarray]], limit: int, fusion: Fusion | None = None, groups=None
) -> list[Fused]:
    """Fuse legs given as (rows best first, their scores) with `fusion` (default: DEFAULT).

    `groups[row]` is the row's session (any hashable; None: each row its own), read by `agree` and
    `@R:K` only.
    """
    fusion = fusion or parse(DEFAULT)
    if fusion.method == "rrf":
        return rrf({name: rows for name, (rows, _) in legs.items()}, limit)
    pool = _pool({name: rows for name, (rows, _) in legs.items()})
    if fusion.method == "wrrf":
        return _wrrf(pool, legs, fusion, limit)
    weights = confident_weights(legs, fusion) if fusion.method == "conf" else {n: fusion.weight(n) for n in legs}
    if fusion.method == "z":
        return _zfuse(pool, legs, weights, fusion, limit, groups)
    found = [name for name, (rows, _) in legs.items() if len(rows)]  # a leg that returned nothing is absent
    total = sum(weights[n] for n in found) or 1.0  # one leg alone still spans [0, 1]
    for name, (rows, scores) in legs.items():
        for row, v in zip(np.asarray(rows).tolist(), _normalised(name, scores, fusion).tolist()):
            pool[row].score += weights[name] * max(v, 0.0) / total
    for f in pool.values():
        f.scale = 1.0
        if fusion.method == "mnz":
            f.score *= len(f.ranks) / len(found)  # CombMNZ: a row every leg found keeps its sum
    if fusion.method == "agree":
        slots.agree(pool, legs, fusion.agree_depth, fusion.agree_boost, groups)
    return _lifted(pool, legs, weights, fusion, limit, groups)


def _normalised(name: str, scores: np.ndarray, fusion: Fusion) -> np.ndarray:
    """One leg's scores on [0, 1] (best = 1): min-max, TM2C2 (`convex`) or rank-biased (`rbf`)."""
    s = np.asarray(scores, dtype=np.float64)
    if fusion.method == "rbf":
        return fusion.decay ** np.arange(len(s), dtype=np.float64)
    if not len(s):
        return s
    low = _FLOOR.get(name, float(s.min())) if fusion.method == "convex" else float(s.min())
    span = float(s.max()) - low
    return (s - low) / span if span > 0 else np.ones(len(s))


def _wrrf(pool: dict[int, Fused], legs, fusion: Fusion, limit: int) -> list[Fused]:
    # scaled so that first in both legs is 1.0 whatever the weights
    scale = (RRF_K + 0.0) / sum(fusion.weight(n) for n in legs) if legs else 1.0
    for name, (rows, _) in legs.items():
        for rank, row in enumerate(np.asarray(rows).tolist()):
            pool[row].score += fusion.weight(name) / (RRF_K + rank)
    for f in pool.values():
        f.scale = scale
    return _ordered(pool, limit)


def _zfuse(pool: dict[int, Fused], legs, weights: dict[str, float], fusion: Fusion, limit: int, groups) -> list[Fused]:
    """z-score fusion: each leg's scores as standard deviations above its list's mean, so a leg
    whose first hit stands far out of its list outweighs one whose list is flat; a row a leg did
    not return gets that leg's lowest z. The sum is then min-max mapped onto [0, 1]."""
    total = sum(weights.values()) or 1.0
    for name, (rows, scores) in legs.items():
        s = np.asarray(scores, dtype=np.float64)
        if not len(s):
            continue
        sd = float(s.std())
        z = (s - s.mean()) / sd if sd > 0 else np.zeros(len(s))
        seen = set()
        for row, v in zip(np.asarray(rows).tolist(), z.tolist()):
            pool[row].score += weights[name] * v / total
            seen.add(row)
        low = float(z.min())
        for row, f in pool.items():
            if row not in seen:
                f.score += weights[name] * low / total
    vals = [f.score for f in pool.values()]
    lo, hi = min(vals, default=0.0), max(vals, default=0.0)
    for f in pool.values():
        f.score = (f.score - lo) / (hi - lo) if hi > lo else 1.0
        f.scale = 1.0
    return _lifted(pool, legs, weights, fusion, limit, groups)


def _lifted(pool: dict[int, Fused], legs, weights: dict[str, float], fusion: Fusion, limit: int, groups) -> list[Fused]:
    """The pool in order, with `+N`'s lift or `@R:K`'s reserved slots applied, cut to `limit`."""
    ordered = _ordered(pool, len(pool))
    if fusion.lift and len(legs) == 2:
        ordered = _lift(ordered, legs[min(weights, key=lambda n: (weights[n], n))][0], fusion.lift)
    if fusion.head and legs:
        ordered = slots.held(ordered, legs, fusion.reserve, fusion.head, groups)
    return ordered[:limit]


def _lift(ordered: list[Fused], lighter: np.ndarray, n: int) -> list[Fused]:
    """Give the lighter leg's first `n` rows the 2nd, 4th, ... places (unless already above them), so
    the list's head always holds both legs' best; each lifted row takes the score of the row it
    precedes, which keeps scores non-increasing (and ties keep this order downstream)."""
    by_row = {f.row: f for f in ordered}
    queue = [by_row[r] for r in np.asarray(lighter).tolist()[:n] if r in by_row]
    out: list[Fused] = []
    placed: set[int] = set()
    rest = iter(ordered)
    while len(out) < len(ordered):
        if len(out) % 2 == 1 and queue:
            f = queue.pop(0)
            if f.row not in placed:
                out.append(f)
                placed.add(f.row)
            continue
        f = next(rest)
        if f.row not in placed:
            out.append(f)
            placed.add(f.row)
            queue = [q for q in queue if q.row not in placed]
    for i in range(len(out) - 2, -1, -1):
        out[i].score = max(out[i].score, out[i + 1].score)
    return out


CONF_TAIL = 3  # BM25's first score is compared with the one at this rank
CONF_CENTRE = (0.3, 0.55)  # typical BM25 gap and top cosine (MiniLM), so W alone is the usual weight


def confident_weights(legs: dict[str, tuple[np.ndarray, np.ndarray]], fusion: Fusion) -> dict[str, float]:
    """Per-query leg weights from how sure each leg is, as log-odds of BM25's weight:

        logit(W) + gap_gain * (gap - 0.3) - cos_gain * (cos - 0.55)

    gap = (s[0] - s[3]) / s[0] of the BM25 list (its first hit stands out: a rare term matched),
    cos = the vector leg's best cosine (a passage close to the question in meaning). Both were the
    only per-query signs of the better leg in the legs' own scores (bench/README.md "Fusion").
    """
    if len(legs) < 2 or not all(len(scores) for _, scores in legs.values()):
        return dict.fromkeys(legs, 1.0)
    w = min(max(fusion.bm25_weight, 1e-6), 1 - 1e-6)
    b = np.asarray(legs["bm25"][1], dtype=np.float64)
    gap = (b[0] - b[min(CONF_TAIL, len(b) - 1)]) / b[0] if b[0] > 0 else 0.0
    cos = float(legs["vector"][1][0])
    log_odds = np.log(w / (1 - w)) + fusion.gap_gain * (gap - CONF_CENTRE[0]) - fusion.cos_gain * (cos - CONF_CENTRE[1])
    wb = float(1.0 / (1.0 + np.exp(-log_odds)))
    return {"bm25": wb, "vector": 1.0 - wb}


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
