"""Replay fusions offline over dumped legs (bench/fusion_dump.py) and choose one on half A of every suite.

    .venv/bin/python bench/fusion_tune.py bench/out/dump_quality.jsonl bench/out/dump_devset.jsonl

For each candidate spec, every question's two legs go through the real `funes.retrieval.hybrid.fuse`,
then distinct passages (first copy of a text key kept) and the grading: session hit@1/5/10 and MRR
on the public suites (k = 50 chunks, recency off, as bench/quality.py), passage hit@1/3/8 and MRR on
the dev set (pool 30, k = 8, recency not replayed: the shipped 0.98 floor only breaks near-ties).

Rule (half B is never read for the choice): a candidate's score is the number of half-A questions
it gains or loses against the better single leg of each suite, summed over suites and over
hit@1 and hit@5 (dev set: hit@1 and hit@8); the largest wins (ties: the simpler spec, listed first).
Also printed: each candidate's worst shortfall against the better leg in points over suites and
those metrics (the issue's "never below a leg"), and the candidate with the smallest one; and,
over all questions (both halves), whether it keeps hybrid >= the better leg at hit@1 and hit@5 on
every suite (dev set: hit@1, hit@5 and hit@8) — the condition for making a chosen spec the default.
`--markdown=FILE` writes one table row per spec for bench/README.md.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CHOICE = {"devset": ("hit@1", "hit@8")}
CHOICE_DEFAULT = ("hit@1", "hit@5")


def load(paths: list[str]) -> list[dict]:
    out = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            out.extend(json.loads(line) for line in f)
    return out


def legs_of(q: dict, which: tuple[str, ...], pool: int) -> dict:
    return {
        n: (np.array([r for r, _ in pairs[:pool]], dtype=np.int64), np.array([s for _, s in pairs[:pool]]))
        for n, pairs in q["legs"].items()
        if n in which
    }


def grade(q: dict, spec: str) -> dict[str, float]:
    from funes.retrieval import hybrid

    dev = q["suite"] == "devset"
    pool, k = (30, 8) if dev else (50, 50)
    which = {"bm25": ("bm25",), "vector": ("vector",)}.get(spec, ("bm25", "vector"))
    fusion = hybrid.parse("mm:0.8" if spec in ("bm25", "vector") else spec)
    groups = {int(r): info[0] for r, info in q["rows"].items()}  # sessions, as recall passes facets.session
    fused = hybrid.fuse(legs_of(q, which, pool), pool, fusion, groups)
    seen, kept = set(), []
    for f in fused:
        info = q["rows"][str(f.row)]
        if info[2] not in seen:
            seen.add(info[2])
            kept.append(info)
        if len(kept) == k:
            break
    if dev:
        rank = next((i for i, info in enumerate(kept, 1) if info[3]), None)
        return {
            "hit@1": float(rank == 1),
            "hit@3": float(rank is not None and rank <= 3),
            "hit@8": float(rank is not None),
            "hit@5": float(rank is not None and rank <= 5),
            "mrr": 1.0 / rank if rank else 0.0,
        }
    sessions = list(dict.fromkeys(info[0] for info in kept))
    gold = {info[0] for info in q["rows"].values() if info[3] & 1}
    first = next((i for i, s in enumerate(sessions) if s in gold), None)
    out = {f"hit@{n}": float(first is not None and first < n) for n in (1, 5, 10)}
    out["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
    return out


def table(questions: list[dict], specs: list[str]) -> dict:
    """suite -> half -> spec -> metric -> sum over questions (and 'n')."""
    out: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(float))))
    for q in questions:
        for spec in specs:
            cell = out[q["suite"]][q["half"]][spec]
            for m, v in grade(q, spec).items():
                cell[m] += v
            cell["n"] += 1
    return out


def margin(t: dict, suite: str, half: str, spec: str) -> float:
    """Questions gained (+) or lost (-) against the better single leg on one half of one suite."""
    cells = t[suite][half]
    return sum(cells[spec][m] - max(cells["bm25"][m], cells["vector"][m]) for m in CHOICE.get(suite, CHOICE_DEFAULT))


def worst(t: dict, half: str, spec: str) -> float:
    """The largest shortfall against the better single leg, in points, over suites and the two metrics."""
    out = []
    for suite, halves in t.items():
        cells = halves[half]
        for m in CHOICE.get(suite, CHOICE_DEFAULT):
            n = max(cells[spec]["n"], 1)
            out.append(100 * (cells[spec][m] - max(cells["bm25"][m], cells["vector"][m])) / n)
    return min(out)


QUALIFY = {"devset": ("hit@1", "hit@5", "hit@8")}


def whole(t: dict, suite: str, spec: str) -> dict[str, float]:
    """Both halves of one suite added up: metric -> questions (and 'n')."""
    out: dict[str, float] = defaultdict(float)
    for half in t[suite].values():
        for m, v in half[spec].items():
            out[m] += v
    return out


def shortfalls(t: dict, spec: str) -> list[str]:
    """Where the spec is below the better leg over all questions: 'suite metric -n' for each."""
    out = []
    for suite in t:
        h, b, v = (whole(t, suite, x) for x in (spec, "bm25", "vector"))
        for m in QUALIFY.get(suite, CHOICE_DEFAULT):
            if h[m] < max(b[m], v[m]):
                out.append(f"{suite} {m} {h[m] - max(b[m], v[m]):+.0f}")
    return out


def markdown(t: dict, specs: list[str]) -> str:
    suites = list(t)
    head = "| spec | vs better leg A | B | A + B | below the better leg, all questions | " + " | ".join(
        f"{s} hit@1/5" + ("/8" if s == "devset" else "") for s in suites
    )
    lines = [head + " |", "|" + "---|" * (5 + len(suites))]
    for spec in specs:
        legs = spec in ("bm25", "vector")
        a, b = (0.0, 0.0) if legs else (sum(margin(t, s, h, spec) for s in t) for h in "AB")
        cells = []
        for s in suites:
            w = whole(t, s, spec)
            ms = ("hit@1", "hit@5", "hit@8") if s == "devset" else ("hit@1", "hit@5")
            cells.append("/".join(f"{100 * w[m] / max(w['n'], 1):.1f}" for m in ms))
        short = "" if legs else ("; ".join(shortfalls(t, spec)) or "**none**")
        margins = ("", "", "") if legs else (f"{a:+.0f}", f"{b:+.0f}", f"{a + b:+.0f}")
        lines.append(f"| {spec} | " + " | ".join([*margins, short, *cells]) + " |")
    return "\n".join(lines) + "\n"


def pct(cell: dict, m: str) -> str:
    return f"{100 * cell[m] / max(cell['n'], 1):5.1f}"


def report(t: dict, specs: list[str]) -> str:
    lines = []
    for spec in specs:
        a = sum(margin(t, s, "A", spec) for s in t) if spec not in ("bm25", "vector") else 0.0
        b = sum(margin(t, s, "B", spec) for s in t) if spec not in ("bm25", "vector") else 0.0
        cells = []
        for s in t:
            ms = ("hit@1", "hit@3", "hit@8") if s == "devset" else ("hit@1", "hit@5", "mrr")
            cells.append(
                f"{s} " + " | ".join("/".join(pct(t[s][h][spec], m) for m in ms).replace(" ", "") for h in "AB")
            )
        wa, wb = (worst(t, h, spec) for h in "AB") if spec not in ("bm25", "vector") else (0.0, 0.0)
        short = "" if spec in ("bm25", "vector") else (", ".join(shortfalls(t, spec)) or "none")
        lines.append(
            f"{spec:<18} vs better leg: questions A {a:+5.0f} B {b:+5.0f}, worst suite A {wa:+5.1f} B {wb:+5.1f}   "
            + "   ".join(cells)
            + f"   below the better leg, all questions: {short}"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    paths = [a for a in argv if not a.startswith("--")]
    specs_arg = next((a.split("=", 1)[1] for a in argv if a.startswith("--specs=")), None)
    md = next((a.split("=", 1)[1] for a in argv if a.startswith("--markdown=")), None)
    questions = load(paths)
    specs = list(dict.fromkeys(["bm25", "vector", "mm:0.8", "rrf"] + (specs_arg.split(",") if specs_arg else [])))
    t = table(questions, specs)
    print(report(t, specs))
    cands = [s for s in specs if s not in ("bm25", "vector")]
    best = max(cands, key=lambda s: (sum(margin(t, x, "A", s) for x in t), -cands.index(s)))
    print(f"chosen on half A: {best}")
    safest = max(cands, key=lambda s: (worst(t, "A", s), sum(margin(t, x, "A", s) for x in t), -cands.index(s)))
    print(f"smallest worst-suite shortfall on half A: {safest}")
    print(f"{best}: below the better leg over all questions: {', '.join(shortfalls(t, best)) or 'nowhere'}")
    if md:
        Path(md).write_text(markdown(t, specs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
