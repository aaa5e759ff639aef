"""Passage-level retrieval quality of funes on the dev set (bench/devset/questions.jsonl) over ../shared/corpus.

    .venv/bin/python bench/devset_eval.py [--corpus DIR] [--questions FILE] [--cache FILE] [--seed-cache HOME]

The corpus is indexed with the real `funes index` (in process, `--yes`) into a throwaway FUNES_HOME;
embedding goes through a text -> vector cache on disk (bench/devset_cache.py, default
bench/out/devset/vectors.npz), so the corpus is embedded once and later runs only parse, chunk,
store and build indexes. `--seed-cache HOME` fills the cache from a memory that is already embedded.

Every question is asked three ways (plus one hybrid per `--fusions` spec, e.g. `hybrid rrf`), all through the real Retriever with `funes recall`'s defaults:
hybrid is `funes.commands.recall.recall(q, k=8)` itself; BM25-only and vectors-only are the same
validated request (`funes.commands.recall.request` with recall's defaults) run by the same cached
Retriever with `legs` narrowed to one (`RecallRequest.legs`). A hit counts when it comes from the
question's session and its text contains the evidence, both whitespace-normalised. Reported per config: passage
hit@1/3/8 and MRR over the k=8 list, and the share whose passage is not among the top 50 (a second
recall with k=50), for all questions, per kind, and for long / other sessions; a last row per slice
takes the better single leg for each question: what always picking the right leg would reach (a
target for fusion, not a ceiling: fusion can lift a passage above its rank in both legs).

`--oracle` asks every evidence snippet itself instead of its question: a check of the grading (a
snippet that BM25 cannot find from its own words points at a grading or snippet problem).

Output: a markdown table on stdout and every per-question rank in bench/out/devset_eval.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import devset_cache  # noqa: E402
import devset_contexts  # noqa: E402
import devset_windows  # noqa: E402
from devset.questions import QUESTIONS, is_hit, load  # noqa: E402

CORPUS = HERE.parents[1] / "shared" / "corpus"
CACHE = HERE / "out" / "devset" / "vectors.npz"
OUT = HERE / "out" / "devset_eval.json"
CONFIGS = ("bm25", "vector", "hybrid")
BEST = "better leg per question"
SCAFFOLD = "bm25 w/o framing words"  # `--scaffold`: the lexical leg through tokenize.lexical_terms
ALL_COPIES = "hybrid, all copies"  # `--all-copies`: distinct passages off (retrieval/distinct.py)
K, DEEP = 8, 50
METRICS = ("hit@1", "hit@3", "hit@8", "mrr", "miss@50")


def index_corpus(corpus: Path, kept: bool = False) -> dict:
    """The real `funes index CORPUS --yes` into $FUNES_HOME; fails unless every chunk got a vector."""
    from funes.commands import index as ix

    t0 = time.monotonic()
    rep = ix.index(ix.Options(path=str(corpus), yes=True))
    stats = {"chunks": rep.chunks_added, "vectors": rep.vectors_added, "index_s": round(time.monotonic() - t0, 1)}
    if (
        (rep.chunks_added == 0 and not kept)
        or rep.failed
        or rep.vectors_pending
        or rep.vectors_added < rep.chunks_added
    ):
        raise RuntimeError(f"index incomplete: {stats}, failed {rep.failed[:3]}, pending {rep.vectors_pending}")
    return stats


class Asker:
    """Asks one question under one config and returns the 1-based rank of the first graded hit (or None)."""

    def __init__(self):
        from funes.commands import recall as rc
        from funes.memory import Memory

        self.memory = Memory.resolve(None).require()
        # recall()'s own defaults (its request's), so a one-leg request differs from `funes recall` only in its legs
        params = inspect.signature(rc.request).parameters
        self._defaults = [params[n].default for n in ("candidates", "half_life", "recency_floor", "neighbors")]
        self.windows = None  # a devset_windows.WindowLeg when --windows asked for one
        self.contexts = None  # a devset_contexts.ContextLegs when --contexts asked for one

    def hits(self, config: str, question: str, k: int):
        from funes.commands import recall as rc
        from funes.retrieval.retriever import cached

        if config in devset_windows.CONFIGS:  # issue 10 items 1-2: the swapped vector leg (devset_windows.py)
            leg, self.windows.mode = devset_windows.CONFIGS[config]
            try:
                return self.hits(leg, question, k)
            finally:
                self.windows.mode = None
        if config in devset_contexts.CONFIGS or config in devset_contexts.VECTOR_CONFIGS:
            leg, on = {**devset_contexts.CONFIGS, **devset_contexts.VECTOR_CONFIGS}[config]
            self.contexts.on = on
            try:
                return self.hits(leg, question, k)
            finally:
                self.contexts.on = {}
        if config == "hybrid":  # exactly what `funes recall -k K` runs
            return rc.recall(question, k=k).hits
        req = rc.request(question, k, *self._defaults, None, None)
        if config == ALL_COPIES:  # the shipped hybrid without dropping repeated evidence
            return cached(self.memory).run(dataclasses.replace(req, distinct=False)).hits
        if config == SCAFFOLD:  # BM25 alone, without the question's framing words
            return cached(self.memory).run(dataclasses.replace(req, legs=("bm25",), scaffold=False)).hits
        if config.startswith("hybrid ") and "=" in config:  # `hybrid tool=P pool=N`: recall's request, changed
            return cached(self.memory).run(dataclasses.replace(req, **request_changes(config))).hits
        if config.startswith("hybrid "):  # `hybrid SPEC`: both legs under another fusion
            return cached(self.memory).run(dataclasses.replace(req, fusion=config.split(" ", 1)[1])).hits
        return cached(self.memory).run(dataclasses.replace(req, legs=(config,))).hits

    def rank(self, config: str, q, k: int, oracle: bool = False) -> int | None:
        for i, h in enumerate(self.hits(config, q.evidence if oracle else q.question, k), 1):
            if is_hit(q, h.session_id, h.text):
                return i
        return None


FIELDS = {
    "tool": ("tool_prior", float),
    "thinking": ("thinking_prior", float),
    "pool": ("candidates", int),
    "fusion": ("fusion", str),
    "cues": ("output_cues", lambda v: v == "1"),
    "bridge": ("bridge_weight", float),
}


def request_changes(config: str) -> dict:
    """`hybrid tool=0.8 pool=50` -> {tool_prior: 0.8, candidates: 50} (RecallRequest fields)."""
    out = {}
    for pair in config.split()[1:]:
        key, _, value = pair.partition("=")
        field, kind = FIELDS[key]
        out[field] = kind(value)
    return out


def grade(questions, asker: Asker, oracle: bool = False, configs=CONFIGS) -> dict[str, dict[str, dict]]:
    """config -> question id -> {rank (k=8), deep (rank within k=50)}; oracle asks the evidence itself."""
    out: dict[str, dict[str, dict]] = {}
    for config in configs:
        t0 = time.perf_counter()
        out[config] = {
            q.id: {"rank": asker.rank(config, q, K, oracle), "deep": asker.rank(config, q, DEEP, oracle)}
            for q in questions
        }
        ms = 1000 * (time.perf_counter() - t0) / (2 * max(len(questions), 1))
        print(f"  {config}: {len(questions)} questions, {ms:.0f} ms per recall", file=sys.stderr)
    return out


def dump_legs(questions, asker: Asker, path: Path) -> None:
    import fusion_dump
    from funes.retrieval.retriever import cached

    r = cached(asker.memory)
    with path.open("w", encoding="utf-8") as f:
        for q in questions:
            legs, rows = fusion_dump.legs_of(r, q.question, DEEP)
            recs = fusion_dump.row_records(r, rows)
            half = fusion_dump.half(q.id)  # the same fixed halves as bench/quality.py
            grade = lambda rec, q=q: is_hit(q, rec["session_id"], rec["text"])  # noqa: E731
            f.write(fusion_dump.line("devset", q.id, half, q.question, legs, rows, recs, grade) + "\n")


def metrics(ranks: list[dict]) -> dict[str, float]:
    n = max(len(ranks), 1)

    def share(pred) -> float:
        return round(100 * sum(1 for r in ranks if pred(r)) / n, 1)

    return {
        "n": len(ranks),
        "hit@1": share(lambda r: r["rank"] == 1),
        "hit@3": share(lambda r: r["rank"] is not None and r["rank"] <= 3),
        "hit@8": share(lambda r: r["rank"] is not None),
        "mrr": round(100 * sum(1 / r["rank"] for r in ranks if r["rank"]) / n, 1),
        "miss@50": share(lambda r: r["deep"] is None),
    }


def evidence_kinds(memory, questions) -> dict[str, str]:
    """Question id -> "prose" or "tool blocks": the block type of the stored chunk holding its evidence."""
    rows = memory.chunks.sessions_rows(sorted({q.session_id for q in questions}), ["session_id", "text", "block_type"])
    by_session: dict[str, list[dict]] = defaultdict(list)
    for r in rows.to_pylist():
        by_session[r["session_id"]].append(r)
    out = {}
    for q in questions:
        kinds = {r["block_type"] for r in by_session[q.session_id] if is_hit(q, r["session_id"], r["text"])}
        out[q.id] = "tool blocks" if kinds and kinds <= {"tool_use", "tool_result"} else "prose"
    return out


def groups(questions, evidence: dict[str, str] | None = None) -> dict[str, list[str]]:
    """Reported slices: all, all but multilingual, each kind, long sessions and the rest, and the
    fixed halves A / B a parameter is chosen on and reported on (fusion_dump.half, as the dumps)."""
    from fusion_dump import half

    out: dict[str, list[str]] = defaultdict(list)
    for q in questions:
        out["all"].append(q.id)
        out["half " + half(q.id)].append(q.id)
        if evidence:
            out[f"evidence in {evidence[q.id]}"].append(q.id)
        out[f"kind={q.kind}"].append(q.id)
        out["long sessions" if q.long_session else "other sessions"].append(q.id)
        if q.kind != "multilingual":  # the slice closest to an English-only question set
            out["all but multilingual"].append(q.id)
    return dict(sorted(out.items(), key=lambda kv: (kv[0] != "all", not kv[0].startswith("all"), kv[0])))


def best_leg(graded) -> dict[str, dict]:
    """Per question, the better of the two single legs (what choosing the right leg every time would reach)."""

    def better(a, b):
        return a if b is None or (a is not None and a <= b) else b

    bm25, vec = graded["bm25"], graded["vector"]
    return {
        i: {"rank": better(bm25[i]["rank"], vec[i]["rank"]), "deep": better(bm25[i]["deep"], vec[i]["deep"])}
        for i in bm25
    }


def table(questions, graded, configs=CONFIGS, evidence=None) -> tuple[str, dict]:
    lines = [
        "| slice | n | config | hit@1 | hit@3 | hit@8 | MRR | not in top 50 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    summary: dict[str, dict] = {}
    graded = {**graded, BEST: best_leg(graded)}
    for name, ids in groups(questions, evidence).items():
        for config in (*configs, BEST):
            m = metrics([graded[config][i] for i in ids])
            summary.setdefault(name, {})[config] = m
            label = (name, str(m["n"])) if config == configs[0] else ("", "")
            cells = [*label, config, *(f"{m[x]:.1f}" for x in METRICS)]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines), summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    ap.add_argument("--cache", type=Path, default=CACHE, help="text -> vector cache (created when missing)")
    ap.add_argument("--seed-cache", type=Path, metavar="HOME", help="fill the cache from HOME/memory first")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--home", type=Path, help="keep the memory in this FUNES_HOME (default: a throwaway one)")
    ap.add_argument("--oracle", action="store_true", help="ask each evidence snippet itself (a check of the grader)")
    ap.add_argument("--fusions", help="comma list of fusion specs, one more hybrid config each (e.g. rrf,convex:0.7)")
    ap.add_argument("--scaffold", action="store_true", help="also run BM25 without the questions' framing words")
    ap.add_argument("--all-copies", action="store_true", help="also run hybrid with distinct passages off")
    # issue 10 items 1-2 (windows and contexts), one block
    ap.add_argument("--windows", action="store_true", help="also run the vector leg over every token window")
    ap.add_argument(
        "--contexts", action="store_true", help="also run BM25 over the text alone (before) and the swap check"
    )
    ap.add_argument(
        "--context-vectors",
        action="store_true",
        help="the vector leg of the text alone (before) beside the shipped one",
    )
    ap.add_argument(
        "--variants",
        help="comma list of request changes, one more hybrid config each (e.g. 'tool=0.9,tool=0.8 pool=50')",
    )
    ap.add_argument("--dump", type=Path, help="write both legs per question (bench/fusion_dump.py) to this file")
    args = ap.parse_args(argv)
    configs = (*CONFIGS, *(f"hybrid {f}" for f in args.fusions.split(","))) if args.fusions else CONFIGS
    configs = (*configs, *(f"hybrid {v}" for v in args.variants.split(","))) if args.variants else configs
    configs = (*configs, ALL_COPIES) if args.all_copies else configs
    configs = (*configs, SCAFFOLD) if args.scaffold else configs
    configs = (*configs, *devset_windows.CONFIGS) if args.windows else configs
    configs = (*configs, *devset_contexts.CONFIGS) if args.contexts else configs
    configs = (*configs, *devset_contexts.VECTOR_CONFIGS) if args.context_vectors else configs
    if not args.corpus.is_dir():
        print(f"devset: no corpus at {args.corpus}", file=sys.stderr)
        return 2
    try:
        questions = load(args.questions)
    except (OSError, ValueError) as e:
        print(f"devset: {e}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="funes-devset-") as tmp:
        os.environ["FUNES_HOME"] = str(args.home or tmp)
        memo = devset_cache.install(args.cache)
        if args.seed_cache:
            print(f"seeded {devset_cache.seed_from_memory(memo, args.seed_cache / 'memory')} vectors", file=sys.stderr)
        stats = index_corpus(args.corpus, kept=bool(args.home and (args.home / "memory").exists()))
        memo.save()
        print(f"indexed {stats}; embedder {memo.describe()}", file=sys.stderr)
        asker = Asker()
        if args.windows:
            asker.windows = devset_windows.WindowLeg(asker.memory, memo)
            devset_windows.install(asker.windows)
            memo.save()
            stats["windows"] = asker.windows.stats
            print(f"windows {asker.windows.stats}; embedder {memo.describe()}", file=sys.stderr)
        if args.contexts or args.context_vectors:
            asker.contexts = devset_contexts.ContextLegs(asker.memory, memo if args.context_vectors else None)
            devset_contexts.install(asker.contexts)
            memo.save()
            stats["contexts"] = asker.contexts.stats
            print(f"contexts {asker.contexts.stats}; embedder {memo.describe()}", file=sys.stderr)
        evidence = evidence_kinds(asker.memory, questions)
        graded = grade(questions, asker, args.oracle, configs)
        if args.dump:  # what the fusion sees per question, for bench/fusion_tune.py
            dump_legs(questions, asker, args.dump)
    text, summary = table(questions, graded, configs, evidence)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "oracle": args.oracle,
        "index": stats,
        "embedder": memo.describe(),
        "k": K,
        "deep": DEEP,
        "summary": summary,
        "ranks": graded,
        "evidence": evidence,
    }
    args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
