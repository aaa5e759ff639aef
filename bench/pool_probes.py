"""Probes, not shipped: can recall's own 30-candidate pool be reordered better without a cross-encoder?

    .venv/bin/python bench/pool_probes.py --home DIR [--questions FILE]

For each dev question, `funes recall -k 30` (the shipped pool: 30 candidates, fused, recency and kind
prior applied, distinct passages) is read once; each candidate keeps its score, its text's length,
whether it is the graded passage, and the best cosine between the question and one of its sentences
(sentences split at . ! ? 。！？ and newlines, merged to >= 60 characters, cut at 400; MiniLM, the
shipped embedder). Then the first 8 of the pool are graded under:

- `length L0 G`: score x min(1, chars / L0) ** G: short narration ("Let me check the manifests.")
  weighs less than a passage with content.
- `sentence A`: score x (1 - A + A x s), s the candidate's best sentence cosine min-max scaled over
  the pool: the embedder reads one sentence at a time, so a paraphrased sentence is not diluted by
  the rest of a 1,200-character chunk.

Passage hit@1/3/8 for all questions, all but the multilingual ones, and the fixed halves A / B
(devset_eval.py's slices and metrics).
bench/README.md "Issue 10 at stop 27" has the figures; neither is shipped.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from devset.questions import QUESTIONS, is_hit, load  # noqa: E402
from devset_eval import groups, metrics  # noqa: E402

POOL, K = 30, 8
SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def sentences(text: str, least: int = 60, most: int = 400) -> list[str]:
    parts = [p.strip() for p in SENTENCE_END.split(text) if p.strip()]
    out, cur = [], ""
    for p in parts:
        cur = f"{cur} {p}" if cur else p
        if len(cur) >= least:
            out.append(cur[:most])
            cur = ""
    if cur:
        out.append(cur[:most])
    return out or [text[:most]]


def pools(questions) -> dict[str, list[tuple[float, int, bool, float]]]:
    """question id -> the pool as (score, chars, graded hit, best sentence cosine), recall's order."""
    from funes.commands import recall as rc
    from funes.models.embedder import load_embedder

    emb = load_embedder()
    out = {}
    for q in questions:
        qv = emb.encode_query(q.question)
        out[q.id] = [
            (h.score, len(h.text), is_hit(q, h.session_id, h.text), float(np.max(emb.encode(sentences(h.text)) @ qv)))
            for h in rc.recall(q.question, k=POOL).hits
        ]
    return out


def length_prior(pool, l0: float, g: float) -> list[float]:
    return [s * min(1.0, n / l0) ** g for s, n, _, _ in pool]


def sentence_weight(pool, a: float) -> list[float]:
    sims = [c for *_, c in pool]
    lo, hi = (min(sims), max(sims)) if sims else (0.0, 0.0)
    return [s * (1 - a + a * ((c - lo) / (hi - lo) if hi > lo else 1.0)) for s, _, _, c in pool]


def rank(pool, scores) -> int | None:
    order = sorted(range(len(pool)), key=lambda i: (-scores[i], i))[:K]
    return next((r for r, i in enumerate(order, 1) if pool[i][2]), None)


SLICES = ("all", "all but multilingual", "half A", "half B")


def grade(questions, ranks: dict[str, int | None]) -> str:
    """hit@1/3/8 per slice, as devset_eval.py reports them (its slices and its metrics)."""
    graded = {i: {"rank": r, "deep": r} for i, r in ranks.items()}
    out = []
    for name, ids in groups(questions).items():
        if name in SLICES:
            m = metrics([graded[i] for i in ids])
            out.append(f"{name} {m['hit@1']:.1f}/{m['hit@3']:.1f}/{m['hit@8']:.1f}")
    return "  ".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--home", type=Path, required=True, help="FUNES_HOME holding the dev-set corpus (devset_eval.py --home)"
    )
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    args = ap.parse_args(argv)
    os.environ["FUNES_HOME"] = str(args.home)
    questions = load(args.questions)
    t0 = time.perf_counter()
    got = pools(questions)
    print(f"{len(questions)} questions, pools read in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    print("passage hit@1/3/8")
    print(f"{'shipped order':<22}" + grade(questions, {i: rank(p, [s for s, *_ in p]) for i, p in got.items()}))
    for l0 in (200, 300, 400):
        for g in (0.25, 0.5, 1.0):
            ranks = {i: rank(p, length_prior(p, l0, g)) for i, p in got.items()}
            print(f"{f'length {l0} {g}':<22}" + grade(questions, ranks))
    for a in (0.1, 0.2, 0.3, 0.5, 0.7):
        print(f"{f'sentence {a}':<22}" + grade(questions, {i: rank(p, sentence_weight(p, a)) for i, p in got.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
