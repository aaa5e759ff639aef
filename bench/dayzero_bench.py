"""Day zero: a budgeted first `funes index --auto` over 20k LongMemEval-S sessions (Claude Code + Codex).

Run: .venv/bin/python bench/dayzero_bench.py [--sessions 20000] [--budget 30] [--rounds 2]

The transcripts are written by bench/dayzero_data.py under bench/out/dayzero/home (gitignored).
Round r is one budgeted `index --auto --no-embed` run (FUNES_INDEX_BUDGET=budget), continuing the
previous one, so round 1 is "after 30 s" and round 2 "after 60 s". Each round reports the time
per phase (functions wrapped in-process, so nested phases are subtracted: chunk excludes redact,
index excludes tokenise), peak RSS, and the session-level hit@1/hit@5 of the 36 s_subset questions
asked against everything stored so far (a hit is a chunk of a replica of a gold session). The
lexical reference is a plain bm25s index over the same turn texts, built in the same process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
sys.path.insert(0, str(REPO / "bench"))
import dayzero_data  # noqa: E402

PHASES: dict[str, float] = defaultdict(float)
CPU: dict[str, float] = defaultdict(float)  # the same phases in CPU seconds of this process (load-independent)
_stack: list[str] = []


def _timed(owner, name: str, phase: str) -> None:
    fn = getattr(owner, name)

    def wrapper(*a, **kw):
        _stack.append(phase)
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return fn(*a, **kw)
        finally:
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            _stack.pop()
            PHASES[phase] += dt
            CPU[phase] += dc
            if _stack:  # the enclosing phase reports its own time only
                PHASES[_stack[-1]] -= dt
                CPU[_stack[-1]] -= dc

    setattr(owner, name, wrapper)


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def instrument() -> None:
    from funes.commands import index, prepare
    from funes.ingest import blocks, redact, run
    from funes.memory import indexes, ledger, tokenize
    from funes.memory.tables import ChunkTable
    from funes.scan import kingfisher
    from funes.traces import source

    _timed(index, "pick_sources", "discover")
    _timed(source.FilesSource, "units", "discover")
    _timed(prepare, "read_unit", "parse")
    if hasattr(blocks, "concat"):  # a flush's block rows built into Arrow once: the rest of parsing
        _timed(blocks, "concat", "parse")
    _timed(run, "chunk_blocks", "chunk")
    _timed(redact, "redact_texts", "redact")
    if hasattr(redact, "start"):  # the flush begun early (its Kingfisher scan overlaps the next reads)
        _timed(redact, "start", "redact")
        _timed(redact.Redaction, "result", "redact")
    # the parent's wall inside Kingfisher's findings: waiting for the scan (plus reading its records)
    _timed(kingfisher.Job, "findings", "scan-wait")
    _count_kingfisher(kingfisher)
    _timed(ChunkTable, "append_new", "store")
    _timed(ledger, "save_state", "ledger")
    _timed(indexes, "refresh", "index")
    if hasattr(tokenize, "document_ids"):  # the refresh's documents: line and text tokenised apart
        _timed(tokenize, "document_ids", "tokenise")
    if hasattr(tokenize, "token_ids"):  # the column tokeniser of older code, else the per-text one
        _timed(tokenize, "token_ids", "tokenise")
    elif not hasattr(tokenize, "document_ids"):
        _timed(indexes, "tokenize_many", "tokenise")


KINGFISHER = {"calls": 0, "texts": 0}


def _count_kingfisher(kingfisher) -> None:
    init = kingfisher.Job.__init__

    def counted(job, path, texts, timeout):
        KINGFISHER["calls"] += 1
        KINGFISHER["texts"] += len(texts)
        init(job, path, texts, timeout)

    kingfisher.Job.__init__ = counted


def ask(qs: list[dict]) -> dict:
    from funes.memory import Memory
    from funes.retrieval.retriever import RecallRequest, Retriever

    r = Retriever(Memory.resolve(None), embedder=None, reranker=None)
    hit1 = hit5 = 0
    asked = [q for q in qs if not q["question_id"].endswith("_abs")]
    for q in asked:
        gold = set(q["answer_session_ids"])
        res = r.run(RecallRequest(q["question"], k=5, neighbors=0, half_life=0, legs=("bm25",)))
        got = [h.session_id.split("~")[0] for h in res.hits]
        hit1 += bool(got[:1] and got[0] in gold)
        hit5 += any(g in gold for g in got[:5])
    return {"questions": len(asked), "hit@1": hit1, "hit@5": hit5}


def sessions_stored(home: Path) -> int:
    """Distinct sessions with a stored chunk (after a text-first round: sessions whose text is searchable)."""
    import lance
    import pyarrow.compute as pc

    path = home / "memory" / "chunks.lance"
    if not path.exists():
        return 0
    return pc.count_distinct(lance.dataset(str(path)).to_table(columns=["session_id"])["session_id"]).as_py()


def lexical_reference(home: Path) -> dict:
    """A plain bm25s index over the same stored texts: what the lexical index itself costs."""
    import bm25s
    import lance

    texts = lance.dataset(str(home / "memory" / "chunks.lance")).to_table(columns=["text"])["text"].to_pylist()
    t0 = time.perf_counter()
    tok = bm25s.tokenize(texts, stopwords="en", show_progress=False)
    bm25s.BM25().index(tok, show_progress=False)
    return {"chunks": len(texts), "bm25s_s": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=20000)
    ap.add_argument("--budget", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="FUNES_INDEX_WORKERS settings, side by side")
    ap.add_argument("--keep", action="store_true", help="reuse bench/out/dayzero/home if present")
    ap.add_argument(
        "--tag",
        default="",
        help="names this run's memories and results (e.g. `old` for a run of older code on PYTHONPATH)",
    )
    ap.add_argument(
        "--resume", action="store_true", help="continue this tag's memory (rounds of two codes interleaved by a script)"
    )
    ap.add_argument("--no-reference", action="store_true", help="skip the plain bm25s index over the stored texts")
    ap.add_argument(
        "--trace",
        action="store_true",
        help="each round's timeline (bench/round_trace.py) into bench/out/trace-TAG-rN.json",
    )
    args = ap.parse_args()
    root = OUT / "dayzero"
    home = root / "home"
    if not (args.keep and home.exists()):
        shutil.rmtree(root, ignore_errors=True)
        t0 = time.perf_counter()
        gen = dayzero_data.write(home, args.sessions)
        gen["write_s"] = time.perf_counter() - t0
        print(json.dumps(gen), flush=True)
    os.environ.update(HOME=str(home), FUNES_INDEX_BUDGET=str(args.budget))
    from funes import cli

    if hasattr(cli, "index_imports"):  # what `funes index --no-embed` does first (older code: nothing)
        cli.index_imports(True)
    instrument()
    if args.trace:
        import round_trace

        round_trace.instrument()
    from funes.commands import index

    qs = dayzero_data.questions()
    results = []
    for workers in args.workers:
        funes_home = root / f"funes-{args.tag}w{workers}"
        if not args.resume:
            shutil.rmtree(funes_home, ignore_errors=True)
        os.environ.update(FUNES_HOME=str(funes_home), FUNES_INDEX_WORKERS=str(workers))
        for rnd in range(1, args.rounds + 1):
            PHASES.clear()
            CPU.clear()
            KINGFISHER.update(calls=0, texts=0)
            if args.trace:
                round_trace.begin_round()
            t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
            rep = index.index(index.Options(auto=True, no_embed=True))
            wall = time.perf_counter() - t0
            if args.trace:
                trace = {"summary": round_trace.summary(wall), "events": round_trace.timeline()}
                (
                    OUT / f"trace-{args.tag or 'run'}-w{workers}-r{rnd}{'-resumed' if args.resume else ''}.json"
                ).write_text(json.dumps(trace, indent=1))
                print(json.dumps({"trace": trace["summary"]}), flush=True)
            cpu, kids = time.process_time() - c0, _children_cpu() - k0
            out = {
                "workers": workers,
                "round": rnd,
                "wall_s": round(wall, 2),
                "searchable_at_s": rep.searchable_at and round(rep.searchable_at, 2),
                "tier_done_s": {k: round(v, 2) for k, v in rep.tier_done.items()},
                "budget_stopped": rep.budget_stopped,
                "units": rep.units_total,
                "chunks_added": rep.chunks_added,
                # with workers, parse/redact/chunk run in the worker processes and are not seen here
                "phases_s": {k: round(v, 2) for k, v in sorted(PHASES.items(), key=lambda kv: -kv[1])},
                "unaccounted_s": round(wall - sum(PHASES.values()), 2),
                "phases_cpu_s": {k: round(v, 2) for k, v in sorted(CPU.items(), key=lambda kv: -kv[1])},
                # workers and the Kingfisher scanner are child processes: their CPU is counted once they exit
                "cpu_s": {"parent": round(cpu, 1), "children": round(kids, 1)},
                "kingfisher_calls": KINGFISHER["calls"],
                "kingfisher_texts_per_call": KINGFISHER["calls"] and round(KINGFISHER["texts"] / KINGFISHER["calls"]),
                "load_average": round(os.getloadavg()[0], 1),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                "children_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
                "sessions_stored": sessions_stored(funes_home),
                "quality": ask(qs),
            }
            print(json.dumps(out), flush=True)
            results.append(out)
    ref = {} if args.no_reference else lexical_reference(root / f"funes-{args.tag}w{args.workers[0]}")
    print(json.dumps(ref), flush=True)
    (OUT / f"dayzero{args.tag and '-' + args.tag}.json").write_text(
        json.dumps({"rounds": results, "lexical_reference": ref}, indent=1)
    )


if __name__ == "__main__":
    main()
