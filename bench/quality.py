"""Retrieval quality of funes on LoCoMo and LongMemEval, through the real index and recall paths.

Every benchmark session is written to a temporary fake home as a real Claude Code or Codex
transcript (alternating), indexed with `funes index <root> --yes` semantics (in-process
`funes.commands.index.index`, FUNES_HOME = a temp dir per haystack), and every question is asked
through the in-process recall API with several retrieval configurations side by side.

One shortcut, which changes no result: a text embedded once in this run is not embedded again (an
in-memory memo in front of the real embedder, same model, same vectors), so the pooled LongMemEval-S
haystack costs no embedding after the per-question ones. Nothing is written outside temp dirs
(and funes's own model-export cache) except bench/out/quality.json.

    python bench/quality.py            # default sample, sized for <= 15 min on 2 CPU cores
    python bench/quality.py --full     # every LongMemEval-S question in s_subset/, pooled over all
    python bench/quality.py --quick    # smoke run (minutes)
    python bench/quality.py --fusions rrf,convex:0.7 --cache bench/out/quality/vectors.npz
                                       # one hybrid per fusion; vectors kept on disk between runs

Every aggregate is also given for two fixed halves of each suite's questions (`half A` / `half B`,
by crc32 of the question id): fusion parameters are chosen on half A and reported on half B.

Results: a table on stdout and the same in bench/out/quality.json. Nothing is cached across runs.
Metric definitions: see quality_score.py.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import quality_data as data  # noqa: E402
import quality_recall as recall  # noqa: E402
from fusion_dump import half  # noqa: E402  (the fixed halves every suite shares)
from quality_score import aggregate, score_question  # noqa: E402
from quality_writers import claude_root, codex_root, write_haystack  # noqa: E402

PUBLISHED = {
    "locomo": "deja-vu: session hit@1 69.6, hit@5 85.7 (LoCoMo, per conversation)",
    "lme-s": "deja-vu: session hit@1 85.3, hit@5 95.5; MemPalace: R@5 96.6 (LongMemEval-S, per question)",
    "lme-s-pooled": "original funes, day-zero pooled LongMemEval: hit@1 3-19 of 100",
    "lme-oracle": "(no published figure; oracle sessions pooled, 940 sessions)",
}
SHORT_CHARS = 80
METRICS = ("hit@1", "hit@5", "hit@10", "mrr", "turn_r@5", "turn_r@10")


# ---- one haystack: write, index, ask ----------------------------------------------------------


def index_haystack(hs: data.Haystack, tmp: Path) -> tuple[dict, dict]:
    """Write the transcripts and run the real index on both roots; returns (turn_map, stats)."""
    from funes.commands import index as ix

    home = tmp / "home"
    t0 = time.monotonic()
    turn_map, counts = write_haystack(home, hs.sessions, cwd=f"/home/bench/{hs.name.split('/')[0]}")
    os.environ["FUNES_HOME"] = str(tmp / "funes")
    chunks = vectors = 0
    for root, harness in ((claude_root(home), "claude"), (codex_root(home), "codex")):
        if root.is_dir():
            rep = ix.index(ix.Options(path=str(root), harness=harness, yes=True))
            if rep.failed:
                raise RuntimeError(f"{hs.name}: index failed for {rep.failed[:3]}")
            chunks += rep.chunks_added
            vectors += rep.vectors_added
    short = sum(1 for s in hs.sessions for t in s.turns if 0 < len(t.text.strip()) < SHORT_CHARS)
    stats = {
        "sessions": len(hs.sessions),
        "files": counts,
        "chunks": chunks,
        "vectors": vectors,
        "short_turns": short,
        "index_s": round(time.monotonic() - t0, 1),
    }
    if vectors < chunks:
        raise RuntimeError(f"{hs.name}: only {vectors}/{chunks} chunks embedded")
    return turn_map, stats


def ask_haystack(
    hs: data.Haystack, turn_map: dict, configs: list[recall.Config], k: int, rows: dict, timing: dict, dump=None
) -> None:
    """Ask every question under every config; append per-question metric rows to rows[config]."""
    searcher = recall.open_memory(Path(os.environ["FUNES_HOME"]))
    try:
        for q in hs.questions:
            if dump is not None:
                dump_question(searcher, hs, q, turn_map, max(k, 30), dump)
            t0 = time.monotonic()
            searcher.embed(q.text)  # once per question; every config reuses it (timed apart)
            timing["query embed"] = timing.get("query embed", 0.0) + time.monotonic() - t0
            for cfg in configs:
                t0 = time.monotonic()
                hits = searcher.search(q.text, cfg, k=k, now=q.now)
                timing[cfg.name] = timing.get(cfg.name, 0.0) + time.monotonic() - t0
                m = score_question([h[:2] for h in hits], q.gold_sessions, q.gold_turns, turn_map)
                m["_top1_chars"] = hits[0][2] if hits else None
                m["_top1_legs"] = hits[0][3] if hits else None
                m["_category"] = q.category
                m["_qid"] = q.qid
                rows.setdefault(cfg.name, []).append(m)
    finally:
        searcher.close()


def dump_question(searcher, hs: data.Haystack, q: data.Question, turn_map: dict, pool: int, dump) -> None:
    """One line of what the fusion sees for q (bench/fusion_dump.py): gold = 1 gold session, +2 gold turn."""
    import fusion_dump

    legs, row_ids = fusion_dump.legs_of(searcher._plain, q.text, pool)
    recs = fusion_dump.row_records(searcher._plain, row_ids)

    def gold(rec) -> int:
        turn = turn_map.get((rec["session_id"], rec["seq"]))
        return (rec["session_id"] in q.gold_sessions) + 2 * (turn in q.gold_turns)

    suite = "lme-s-pooled" if hs.name == "lme-s/pooled" else hs.name.split("/")[0]  # the suite it is graded in
    dump.write(fusion_dump.line(suite, q.qid, half(q.qid), q.text, legs, row_ids, recs, gold) + "\n")


class NotCached(Exception):
    """--cached-only: a haystack asked for a text the vector cache does not hold."""


def cached_only(memo) -> None:
    """Make the disk memo refuse to embed document texts (queries still embed): such haystacks are skipped."""
    real = memo.encode

    def encode(texts, batch_size: int = 64):
        texts = list(texts)
        if any(devset_key(t) not in memo._memo for t in texts):
            raise NotCached
        return real(texts, batch_size=batch_size)

    from devset_cache import _key as devset_key

    memo.encode = encode


def run_suite(name: str, haystacks: list[data.Haystack], configs, k: int, log, dump=None) -> dict:
    rows: dict[str, list] = {}
    timing: dict[str, float] = {}
    index_stats = []
    t0 = time.monotonic()
    for i, hs in enumerate(haystacks, 1):
        with tempfile.TemporaryDirectory(prefix="funes-quality-") as tmp:
            try:
                turn_map, stats = index_haystack(hs, Path(tmp))
            except NotCached:
                log(f"  {name} [{i}/{len(haystacks)}] {hs.name}: skipped (--cached-only: texts not in the cache)")
                continue
            index_stats.append(stats)
            ask_haystack(hs, turn_map, configs, k, rows, timing, dump)
        log(
            f"  {name} [{i}/{len(haystacks)}] {hs.name}: {stats['sessions']} sessions, {stats['chunks']} chunks, "
            f"indexed in {stats['index_s']}s, {len(hs.questions)} questions"
        )
    return summarize(name, rows, timing, index_stats, time.monotonic() - t0)


def summarize(name: str, rows: dict, timing: dict, index_stats: list, elapsed: float) -> dict:
    out = {
        "suite": name,
        "published": PUBLISHED.get(name, ""),
        "elapsed_s": round(elapsed, 1),
        "haystacks": len(index_stats),
        "sessions": sum(s["sessions"] for s in index_stats),
        "chunks": sum(s["chunks"] for s in index_stats),
        "index_s": round(sum(s["index_s"] for s in index_stats), 1),
        "short_turn_share": round(
            100.0 * sum(s["short_turns"] for s in index_stats) / max(sum(s["chunks"] for s in index_stats), 1), 1
        ),
        "query_embed_ms_per_q": round(
            1000 * timing.get("query embed", 0.0) / max(len(next(iter(rows.values()), [])), 1), 1
        ),
        "configs": {},
    }
    for cfg_name, qrows in rows.items():
        clean = [{k: v for k, v in r.items() if not k.startswith("_")} for r in qrows]
        cats = sorted({r["_category"] for r in qrows})
        halves = [half(r["_qid"]) for r in qrows]
        out["configs"][cfg_name] = {
            "all": aggregate(clean),
            "halves": {h: aggregate([x for x, y in zip(clean, halves) if y == h]) for h in ("A", "B")},
            "by_category": {c: aggregate([x for x, r in zip(clean, qrows) if r["_category"] == c]) for c in cats},
            "recall_ms_per_q": round(1000 * timing[cfg_name] / max(len(qrows), 1), 1),
            "misses_at_10": [r["_qid"] for r in qrows if r["hit@10"] == 0.0][:50],
            "top1_chars": _length_profile([r["_top1_chars"] for r in qrows if r["_top1_chars"] is not None]),
            "top1_in_both_legs": round(100.0 * sum(r["_top1_legs"] == 2 for r in qrows) / max(len(qrows), 1), 1),
        }
    out["hit1_flips_vs_hybrid"] = _flips(rows)
    return out


def _flips(rows: dict) -> dict:
    """Per config: questions it gets at hit@1 and hybrid does not, and the reverse (same question order)."""
    base = rows.get("hybrid")
    if not base:
        return {}
    out = {}
    for name, qrows in rows.items():
        if name != "hybrid":
            won = sum(a["hit@1"] > b["hit@1"] for a, b in zip(qrows, base))
            lost = sum(a["hit@1"] < b["hit@1"] for a, b in zip(qrows, base))
            out[name] = {"only_this": won, "only_hybrid": lost}
    return out


def _length_profile(lengths: list[int]) -> dict:
    """How long the top-1 chunks are: a leg that favours short, contentless turns shows here."""
    if not lengths:
        return {}
    ordered = sorted(lengths)
    return {
        "median": ordered[len(ordered) // 2],
        "share_under_80": round(100.0 * sum(x < SHORT_CHARS for x in lengths) / len(lengths), 1),
    }


# ---- the run ----------------------------------------------------------------------------------


def suites(args) -> list[tuple[str, list[data.Haystack]]]:
    out = []
    want = set(args.only.split(",")) if args.only else {"locomo", "lme-oracle", "lme-s", "lme-s-pooled"}
    if "locomo" in want:
        hs = data.locomo_haystacks()
        out.append(("locomo", hs[: args.locomo_convs] if args.locomo_convs else hs))
    if "lme-oracle" in want:
        files = data.lme_sample(data.lme_files("oracle"), None if args.full else args.oracle_per_type)
        out.append(("lme-oracle", [data.lme_pooled(files, "lme-oracle/pooled")]))
    s_files = data.lme_sample(data.lme_files("s_subset"), None if args.full else args.per_type)
    if "lme-s" in want:
        out.append(("lme-s", data.lme_per_question(s_files)))
    if "lme-s-pooled" in want:
        out.append(("lme-s-pooled", [data.lme_pooled(s_files, "lme-s/pooled")]))
    return out


def render(results: dict) -> str:
    lines = []
    head = f"{'suite':<14} {'config':<22} {'n':>5} " + " ".join(f"{m:>9}" for m in METRICS) + f" {'ms/q':>7}"
    for suite in results["suites"]:
        lines.append("")
        lines.append(
            f"{suite['suite']}: {suite['haystacks']} haystack(s), {suite['sessions']} sessions, "
            f"{suite['chunks']} chunks, index {suite['index_s']}s, query embed {suite['query_embed_ms_per_q']} ms/q, "
            f"total {suite['elapsed_s']}s"
        )
        lines.append(head)
        for cfg in results["configs"]:
            r = suite["configs"].get(cfg["name"])
            if r is None:
                lines.append(f"{suite['suite']:<14} {cfg['name']:<22} {cfg.get('na', 'n/a')}")
                continue
            a = r["all"]
            cells = " ".join(f"{a[m]:>9.1f}" if m in a else f"{'-':>9}" for m in METRICS)
            lines.append(f"{suite['suite']:<14} {cfg['name']:<22} {a['n']:>5} {cells} {r['recall_ms_per_q']:>7.1f}")
        lines.append(f"{'':<14} published: {suite['published']}")
    return "\n".join(lines)


def render_halves(results: dict) -> str:
    """hit@1 / hit@5 / MRR per config on each fixed half (parameters chosen on A, reported on B)."""
    lines = ["\nhalves: hit@1 / hit@5 / MRR on half A | half B (n A / n B)"]
    for suite in results["suites"]:
        for name, r in suite["configs"].items():
            a, b = r["halves"]["A"], r["halves"]["B"]
            cell = " | ".join(
                f"{h.get('hit@1', 0):5.1f} {h.get('hit@5', 0):5.1f} {h.get('mrr', 0):5.1f}" for h in (a, b)
            )
            lines.append(f"  {suite['suite']:<14} {name:<22} {cell}  ({a['n']}/{b['n']})")
    return "\n".join(lines)


def render_categories(results: dict, config: str) -> str:
    lines = [f"\nper category ({config}): hit@1 / hit@5 / hit@10 / turn_r@10 (n)"]
    for suite in results["suites"]:
        r = suite["configs"].get(config)
        if not r:
            continue
        cells = []
        for c, a in r["by_category"].items():
            cells.append(
                f"{c} {a['hit@1']:.0f}/{a['hit@5']:.0f}/{a['hit@10']:.0f}/{a.get('turn_r@10', 0):.0f} ({a['n']})"
            )
        lines.append(f"  {suite['suite']}: " + "; ".join(cells))
    return "\n".join(lines)


def _commit() -> str:
    import subprocess

    try:
        out = subprocess.run(
            ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def render_short(results: dict) -> str:
    lines = [
        f"\ndiagnostics: top-1 chunks under {SHORT_CHARS} chars (share of questions; haystack = such turns), "
        "hit@1 won by one leg alone vs by hybrid, hybrid top-1s that both legs found"
    ]
    for suite in results["suites"]:
        cells = [
            f"{name} {r['top1_chars'].get('share_under_80', 0):.0f}%"
            for name, r in suite["configs"].items()
            if name in ("bm25", "vector", "hybrid")
        ]
        flips = suite.get("hit1_flips_vs_hybrid", {})
        for leg in ("bm25", "vector"):
            if leg in flips:
                cells.append(f"hit@1 {leg}-only/hybrid-only {flips[leg]['only_this']}/{flips[leg]['only_hybrid']}")
        both = suite["configs"].get("hybrid", {}).get("top1_in_both_legs")
        lines.append(
            f"  {suite['suite']}: "
            + ", ".join(cells)
            + f" (haystack {suite['short_turn_share']:.0f}%)"
            + (f"; hybrid top-1 found by both legs: {both:.0f}%" if both is not None else "")
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--full",
        action="store_true",
        help="all 470 answerable oracle questions pooled, all 36 LongMemEval-S questions (about an hour)",
    )
    p.add_argument(
        "--quick", action="store_true", help="smoke run: 2 LoCoMo conversations, 3 oracle and 1 S question per type"
    )
    p.add_argument("--per-type", type=int, default=1, help="LongMemEval-S questions per type (default 1)")
    p.add_argument("--oracle-per-type", type=int, default=10, help="oracle questions per type in the pool (default 10)")
    p.add_argument("--only", help="comma list of suites: locomo,lme-oracle,lme-s,lme-s-pooled")
    p.add_argument("--k", type=int, default=recall.DEFAULT_K, help="chunks asked per recall")
    p.add_argument("--fusions", help="comma list of fusion specs, one hybrid config each (e.g. rrf,convex:0.7)")
    p.add_argument("--cache", help="text -> vector cache file kept between runs (bench/devset_cache.py)")
    # issue 10 item 2 (contexts), one block
    p.add_argument("--contexts", action="store_true", help="also run BM25 over each chunk's context line + text")
    p.add_argument(
        "--context-vectors",
        action="store_true",
        help="the vector leg of the text alone (before) beside the shipped one",
    )
    p.add_argument("--save-every", type=float, default=0.0, help="with --cache: also save it every N seconds")
    p.add_argument("--cached-only", action="store_true", help="with --cache: skip haystacks it does not fully hold")
    p.add_argument("--dump", help="write what the fusion sees per question to this JSON-lines file")
    p.add_argument("--locomo-convs", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=str(HERE / "out" / "quality.json"))
    args = p.parse_args(argv)
    if args.quick:
        args.locomo_convs, args.oracle_per_type, args.per_type = args.locomo_convs or 2, 3, 1

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    started = time.monotonic()
    if args.cache:
        import devset_cache

        memo = devset_cache.install(Path(args.cache), args.save_every)
        if args.cached_only:
            cached_only(memo)
    else:
        memo = recall.memoize_embedder()
    extra = [*(recall.CONTEXTS if args.contexts else []), *(recall.CONTEXT_VECTORS if args.context_vectors else [])]
    configs, missing = recall.configs(args.fusions.split(",") if args.fusions else None, extra)
    results = {
        "command": "python bench/quality.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU",
        "commit": _commit(),
        "k": args.k,
        "configs": [c.describe() for c in configs] + missing,
        "suites": [],
    }
    saved = os.environ.get("FUNES_HOME")
    dump = open(args.dump, "w", encoding="utf-8") if args.dump else None  # noqa: SIM115 (closed below)
    try:
        for name, haystacks in suites(args):
            log(f"{name}: {len(haystacks)} haystack(s), {sum(len(h.questions) for h in haystacks)} questions")
            results["suites"].append(run_suite(name, haystacks, configs, args.k, log, dump))
            log(
                render({**results, "suites": results["suites"][-1:]})
                + render_halves({"suites": results["suites"][-1:]})
            )
    finally:
        if saved is None:
            os.environ.pop("FUNES_HOME", None)
        else:
            os.environ["FUNES_HOME"] = saved
        if args.cache:
            memo.save()
        if dump is not None:
            dump.close()
    results["elapsed_s"] = round(time.monotonic() - started, 1)
    results["embedder"] = memo.describe()
    text = (
        render(results) + render_halves(results) + render_categories(results, recall.HEADLINE) + render_short(results)
    )
    print(text)
    e = results["embedder"]
    print(
        f"\nembedder {e['model_id']} ({e['backend']}): {e.get('embedded', e.get('embedded_now'))} texts embedded "
        f"in {e['embed_s']}s, {e['reused']} reused"
    )
    print(f"total {results['elapsed_s']}s at commit {results['commit']}, {results['date']}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
