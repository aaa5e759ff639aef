"""Choose the shipped fusion from a quality.py run: on half A of every suite, report on half B.

    .venv/bin/python bench/fusion_choose.py bench/out/quality_fusion1.json

Rule (half B is never read for the choice): for each `hybrid SPEC` config, sum over suites and over
hit@1 and hit@5 the number of half-A questions it gains or loses against the better single leg of
that suite; take the largest sum (ties: higher mean half-A MRR). Counting questions, not points,
keeps a 6-question half (LongMemEval-S, 1 question = 16.7 points) from outvoting LoCoMo's 993.
Prints both halves for every candidate, so the choice can be checked on half B.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

METRICS = ("hit@1", "hit@5", "mrr")


def margins(suite: dict, name: str, half: str) -> float:
    """Questions gained (+) or lost (-) against the better leg, hit@1 plus hit@5, on one half of one suite."""
    cfg = suite["configs"]
    h = cfg[name]["halves"][half]
    legs = [cfg[leg]["halves"][half] for leg in ("bm25", "vector")]
    return sum(h["n"] * (h[m] - max(x[m] for x in legs)) / 100 for m in ("hit@1", "hit@5"))


def main(argv: list[str]) -> int:
    run = json.loads(Path(argv[0]).read_text())
    suites = [s for s in run["suites"] if s["configs"].get("bm25")]
    names = [n for n in suites[0]["configs"] if (n.startswith("hybrid ") and ":" in n) or n == "hybrid rrf"]
    rows = []
    for n in names:
        gain = sum(margins(s, n, "A") for s in suites)
        mrr = sum(s["configs"][n]["halves"]["A"]["mrr"] for s in suites) / len(suites)
        rows.append((round(gain, 1), mrr, n))
        cells = "  ".join(
            f"{s['suite']} A {'/'.join(str(s['configs'][n]['halves']['A'][m]) for m in METRICS)}"
            f" B {'/'.join(str(s['configs'][n]['halves']['B'][m]) for m in METRICS)}"
            for s in suites
        )
        print(f"{n:<20} questions vs better leg, A {gain:+6.1f}  mean MRR A {mrr:5.1f}  {cells}")
    for leg in ("bm25", "vector"):
        cells = "  ".join(
            f"{s['suite']} A {'/'.join(str(s['configs'][leg]['halves']['A'][m]) for m in METRICS)}"
            f" B {'/'.join(str(s['configs'][leg]['halves']['B'][m]) for m in METRICS)}"
            for s in suites
        )
        print(f"{leg:<20} {'':<47}{cells}")
    best = max(rows)
    print(f"chosen on half A: {best[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
