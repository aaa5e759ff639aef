"""funes's lexical leg beside a plain bm25s index over the same chunks (issue 10 item 5), on the dev set.

    .venv/bin/python bench/bm25_compare.py [--corpus DIR] [--out FILE]

The corpus is indexed with the real `funes index --no-embed` into a throwaway FUNES_HOME (no
vectors: only the chunk table and the BM25 index are needed). Every lexical variant below ranks
the SAME stored chunks (~1,200-char splits of the raw block text), so only tokenisation and
scoring differ; a hit is graded as in devset_eval.py (right session, evidence text inside), over
each variant's raw top 8 (no fusion, no recency, no distinct pass).

- `funes`: the real leg (`Retriever.legs`, tokenize.query_terms, Lucene BM25 k1 1.2, b 0.75).
- `plain bm25s`: bm25s.tokenize (lowercase, `\\w\\w+`, English stopwords, no stemmer), lucene, k1 1.5, b 0.75.
- the ablations between them, one change each: plain + English stemmer; plain at k1 1.2;
  funes tokens at k1 1.5; funes tokens scored by bm25s at k1 1.2 (checks the two scorers agree).

Prints hit@1/3/8 and MRR per variant (all, per kind), and the questions each of funes / plain finds
in its top 8 that the other does not, with both ranks. `--locomo` ranks LoCoMo's 1,982 questions
with the main variants too (session hit@1/5), since a tokeniser change must hold on both.
The `=word` exact-form variant, funes's copy with Lucene stopwords and the one without stemming
are document-side changes measured here only: funes's own tokenizer is unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from devset.questions import QUESTIONS, is_hit, load  # noqa: E402

CORPUS = HERE.parents[1] / "shared" / "corpus"
DEEP = 50


def bm25s_variant(texts, tokenizer, k1: float, b: float):
    import bm25s

    model = bm25s.BM25(k1=k1, b=b, method="lucene")
    model.index([tokenizer(t) for t in texts], show_progress=False)

    def search(query: str):
        q = [t for t in tokenizer(query) if t in model.vocab_dict]
        if not q:
            return []
        docs, scores = model.retrieve([q], k=DEEP, show_progress=False)
        return [int(d) for d, s in zip(docs[0], scores[0]) if s > 0]

    return search


def plain_tokens(stem: bool):
    import re

    import bm25s.stopwords

    stop = set(bm25s.stopwords.STOPWORDS_EN)
    pattern = re.compile(r"(?u)\b\w\w+\b")
    stemmer = None
    if stem:
        import Stemmer

        stemmer = Stemmer.Stemmer("english")

    def tok(text: str) -> list[str]:
        words = [w for w in pattern.findall((text or "").lower()) if w not in stop]
        return stemmer.stemWords(words) if stemmer else words

    return tok


def funes_variant(stopwords: str = "funes", stem: bool = True, surface: bool = False):
    """funes's tokeniser with one document-side rule changed (a private copy of the module, so the
    real one is untouched): Lucene's stopword list only, no stemming, or plain bm25s's lowercase
    words added as exact-form tokens (`=word`) beside funes's own."""
    import importlib.util

    import bm25s.stopwords

    from funes.memory import tokenize as real

    spec = importlib.util.spec_from_file_location("_tokenize_variant", real.__file__)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if stopwords == "lucene":
        mod.STOPWORDS = frozenset(bm25s.stopwords.STOPWORDS_EN)
    if not stem:
        mod._stem = lambda w: w
    plain = plain_tokens(False)

    def tok(text: str) -> list[str]:
        out = mod.tokenize(text or "")
        return out + ["=" + w for w in plain(text)] if surface else out

    return tok


def rank(q, rows: list[int], sessions: list[str], texts: list[str]) -> int | None:
    for i, r in enumerate(rows[:8], 1):
        if is_hit(q, sessions[r], texts[r]):
            return i
    return None


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = max(len(ranks), 1)
    return {
        "n": len(ranks),
        "hit@1": round(100 * sum(r == 1 for r in ranks) / n, 1),
        "hit@3": round(100 * sum(r is not None and r <= 3 for r in ranks) / n, 1),
        "hit@8": round(100 * sum(r is not None for r in ranks) / n, 1),
        "mrr": round(100 * sum(1 / r for r in ranks if r) / n, 1),
    }


LOCOMO_VARIANTS = ("funes", "plain bm25s", "plain + stemmer", "funes + exact word forms")


def locomo(log) -> dict:
    """The same variants on LoCoMo (session hit@1/5 over each variant's top 50 chunks, per conversation)."""
    import quality_data
    from funes.commands import index as ix
    from funes.memory import Memory
    from funes.retrieval.retriever import RecallRequest, Retriever
    from quality_writers import claude_root, codex_root, write_haystack

    rows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for hs in quality_data.locomo_haystacks():
        with tempfile.TemporaryDirectory(prefix="funes-bm25cmp-locomo-") as tmp:
            home = Path(tmp) / "home"
            write_haystack(home, hs.sessions, cwd="/home/bench/locomo")
            os.environ["FUNES_HOME"] = str(Path(tmp) / "funes")
            for root, harness in ((claude_root(home), "claude"), (codex_root(home), "codex")):
                if root.is_dir():
                    ix.index(ix.Options(path=str(root), harness=harness, yes=True, no_embed=True))
            memory = Memory.resolve(None).require()
            table = memory.chunks.scan(["text", "session_id"])
            texts, sessions = table["text"].to_pylist(), table["session_id"].to_pylist()
            retriever = Retriever(memory, embedder=None, reranker=None)
            lx = retriever.indexes()

            def funes_leg(query: str, retriever=retriever, lx=lx):
                legs = retriever.legs(lx, RecallRequest(query, k=DEEP, candidates=DEEP, legs=("bm25",)))
                return [int(r) for r in legs["bm25"][0]]

            search = {
                "funes": funes_leg,
                "plain bm25s": bm25s_variant(texts, plain_tokens(False), 1.5, 0.75),
                "plain + stemmer": bm25s_variant(texts, plain_tokens(True), 1.5, 0.75),
                "funes + exact word forms": bm25s_variant(texts, funes_variant(surface=True), 1.2, 0.75),
            }
            for q in hs.questions:
                for name, fn in search.items():
                    ranked = list(dict.fromkeys(sessions[r] for r in fn(q.text)))
                    first = next((i for i, sid in enumerate(ranked) if sid in q.gold_sessions), None)
                    rows[name].append((float(first == 0), float(first is not None and first < 5)))
        log(f"  locomo {hs.name}: {len(hs.questions)} questions")
    return {
        n: {
            "n": len(v),
            "hit@1": round(100 * sum(a for a, _ in v) / len(v), 1),
            "hit@5": round(100 * sum(b for _, b in v) / len(v), 1),
        }
        for n, v in rows.items()
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    ap.add_argument("--out", type=Path, default=HERE / "out" / "bm25_compare.json")
    ap.add_argument("--locomo", action="store_true", help="also rank LoCoMo (session hit@1/5) with the main variants")
    args = ap.parse_args(argv)
    questions = load(args.questions)
    with tempfile.TemporaryDirectory(prefix="funes-bm25cmp-") as tmp:
        os.environ["FUNES_HOME"] = tmp
        from funes.commands import index as ix
        from funes.memory import Memory
        from funes.memory.tokenize import tokenize
        from funes.retrieval.retriever import RecallRequest, Retriever

        t0 = time.monotonic()
        ix.index(ix.Options(path=str(args.corpus), yes=True, no_embed=True))
        memory = Memory.resolve(None).require()
        table = memory.chunks.scan(["text", "session_id"])  # row order = the legs' row ids
        texts, sessions = table["text"].to_pylist(), table["session_id"].to_pylist()
        print(f"indexed {len(texts)} chunks in {time.monotonic() - t0:.0f}s", file=sys.stderr)
        retriever = Retriever(memory, embedder=None, reranker=None)
        lx = retriever.indexes()

        def funes_leg(query: str):
            legs = retriever.legs(lx, RecallRequest(query, k=DEEP, candidates=DEEP, legs=("bm25",)))
            return [int(r) for r in legs["bm25"][0]]

        t0 = time.monotonic()
        variants = {
            "funes": funes_leg,
            "plain bm25s": bm25s_variant(texts, plain_tokens(False), 1.5, 0.75),
            "plain + stemmer": bm25s_variant(texts, plain_tokens(True), 1.5, 0.75),
            "plain, k1 1.2": bm25s_variant(texts, plain_tokens(False), 1.2, 0.75),
            "funes tokens, k1 1.5": bm25s_variant(texts, tokenize, 1.5, 0.75),
            "funes tokens via bm25s, k1 1.2": bm25s_variant(texts, tokenize, 1.2, 0.75),
            "funes, Lucene stopwords only": bm25s_variant(texts, funes_variant("lucene"), 1.2, 0.75),
            "funes, no stemming": bm25s_variant(texts, funes_variant(stem=False), 1.2, 0.75),
            "funes + exact word forms": bm25s_variant(texts, funes_variant(surface=True), 1.2, 0.75),
            "funes + exact forms, Lucene stopwords": bm25s_variant(
                texts, funes_variant("lucene", surface=True), 1.2, 0.75
            ),
        }
        print(f"built variants in {time.monotonic() - t0:.0f}s", file=sys.stderr)
        ranks = {
            name: {q.id: rank(q, search(q.question), sessions, texts) for q in questions}
            for name, search in variants.items()
        }
    slices: dict[str, list] = defaultdict(list)
    for q in questions:
        slices["all"].append(q)
        slices[f"kind={q.kind}"].append(q)
        if q.kind != "multilingual":
            slices["all but multilingual"].append(q)
    lines = ["| slice | n | variant | hit@1 | hit@3 | hit@8 | MRR |", "|---|---|---|---|---|---|---|"]
    summary: dict = {}
    for s, qs in slices.items():
        for i, name in enumerate(ranks):
            m = metrics([ranks[name][q.id] for q in qs])
            summary.setdefault(s, {})[name] = m
            lines.append(
                f"| {s if i == 0 else ''} | {m['n'] if i == 0 else ''} | {name} | "
                f"{m['hit@1']} | {m['hit@3']} | {m['hit@8']} | {m['mrr']} |"
            )
    print("\n".join(lines))
    only = {}
    for a, b in (("plain bm25s", "funes"), ("funes", "plain bm25s")):
        ids = [q.id for q in questions if ranks[a][q.id] and not ranks[b][q.id]]
        only[f"{a} only"] = ids
        print(f"\nin {a}'s top 8, not in {b}'s ({len(ids)}):")
        for q in questions:
            if q.id in ids:
                print(f"  {q.id} {q.kind:<12} {a} #{ranks[a][q.id]}  {q.question[:90]}")
    report = {"summary": summary, "ranks": ranks, "only": only}
    if args.locomo:
        report["locomo"] = locomo(lambda m: print(m, file=sys.stderr, flush=True))
        print("\nLoCoMo (1,982 questions, session level over each variant's top 50 chunks):")
        for name, m in report["locomo"].items():
            print(f"  {name:<28} hit@1 {m['hit@1']:5.1f}  hit@5 {m['hit@5']:5.1f}  (n {m['n']})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
