"""Where a day-zero round's parent spends its CPU once the scanner is off it: cProfile, scan patched out.

Run: .venv/bin/python bench/parent_profile.py [--sessions 3000] [--top 40] [--sort tottime]

Over the first N day-zero transcripts (bench/out/dayzero/home, hard-linked into a tree of their
own), one `funes index --auto --no-embed` text pass with no budget stop and flushes every 20k blocks, under cProfile, after an untimed
warm-up run (imports, rule caches). `funes.scan.start` is replaced in this process only by a scan
that finds nothing and starts no child, so what is left is parse, chunk, store, the lexical
refresh, discovery and the ledger (the scanner is another branch's, and leaves the parent).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"


class _NoScan:
    waited = 0.0

    def __init__(self, texts, *a, **kw):
        self.texts = texts

    def result(self):
        return [[] for _ in self.texts]

    def done(self):
        return True

    def close(self):
        pass


CPU: dict[str, float] = {}
_stack: list[str] = []


def _timed(owner, name: str, phase: str) -> None:
    fn = getattr(owner, name)

    def wrapper(*a, **kw):
        _stack.append(phase)
        c0 = time.process_time()
        try:
            return fn(*a, **kw)
        finally:
            dc = time.process_time() - c0
            _stack.pop()
            CPU[phase] = CPU.get(phase, 0.0) + dc
            if _stack:  # the enclosing phase reports its own time only
                CPU[_stack[-1]] = CPU.get(_stack[-1], 0.0) - dc

    setattr(owner, name, wrapper)


def _phases() -> None:
    from funes.commands import index, prepare
    from funes.ingest import blocks, run
    from funes.memory import contexts, indexes, ledger, tokenize
    from funes.memory.tables import ChunkTable
    from funes.traces import source

    _timed(source.FilesSource, "units", "discover")
    _timed(prepare, "read_unit", "parse")
    _timed(blocks, "concat", "parse")
    _timed(run, "chunk_blocks", "chunk")
    _timed(ChunkTable, "append_new", "store")
    _timed(ledger, "save_state", "ledger")
    _timed(indexes, "refresh", "index")
    _timed(tokenize, "document_ids", "tokenise")
    _timed(contexts, "stored_lines", "lines")
    _timed(index._Run, "_note", "note")


def tree(sessions: int) -> Path:
    src = OUT / "dayzero" / "home"
    if not src.exists():
        sys.exit("bench/out/dayzero/home is missing: run bench/dayzero_bench.py first (it writes the transcripts)")
    home = OUT / f"parent_profile-{sessions}" / "home"
    if not home.exists():
        for f in sorted(src.rglob("*.jsonl"))[:sessions]:
            dst = home / f.relative_to(src)
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.link(f, dst)
    return home


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=3000)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--sort", default="tottime")
    ap.add_argument("--dump", help="write the raw profile here")
    ap.add_argument(
        "--phases", action="store_true", help="CPU per phase (functions wrapped, nested subtracted), no cProfile"
    )
    ap.add_argument(
        "--all-tiers", action="store_true", help="all three passes (default: the text pass, as a 30 s round)"
    )
    args = ap.parse_args()
    home = tree(args.sessions)
    os.environ.update(HOME=str(home), FUNES_INDEX_WORKERS="1")
    # no budget stop (an unset budget is 60 s, which a loaded box can reach), and flush points by
    # size only (FUNES_FLUSH_BLOCKS, 20k), never by seconds of reading: every run flushes at the same rows
    os.environ["FUNES_INDEX_BUDGET"] = "100000"
    from funes import cli, scan

    cli.index_imports(True)
    scan.start = _NoScan  # type: ignore[assignment]
    from funes.commands import budget, index

    if not args.all_tiers:
        index.TIER_PASSES = (("text",),)  # type: ignore[misc]
    index.FLUSH_S = budget.PROBE_S = 1e9  # type: ignore[misc]
    warm = OUT / f"parent_profile-{args.sessions}" / "warm"
    shutil.rmtree(warm, ignore_errors=True)
    os.environ["FUNES_HOME"] = str(warm)
    index.index(index.Options(auto=True, no_embed=True, limit=50))
    fh = OUT / f"parent_profile-{args.sessions}" / "funes"
    shutil.rmtree(fh, ignore_errors=True)
    os.environ["FUNES_HOME"] = str(fh)
    prof = cProfile.Profile()
    if args.phases:
        _phases()
    c0, t0 = time.process_time(), time.perf_counter()
    if not args.phases:
        prof.enable()
    rep = index.index(index.Options(auto=True, no_embed=True))
    prof.disable()
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    n = max(rep.chunks_added, 1)
    print(
        f"chunks {rep.chunks_added} cpu {cpu:.2f} s wall {wall:.2f} s  per chunk {cpu / n * 1e3:.4f} ms  load {os.getloadavg()[0]:.2f}"
    )
    if args.phases:
        rest = cpu - sum(CPU.values())
        for k, v in sorted({**CPU, "rest": rest}.items(), key=lambda kv: -kv[1]):
            print(f"  {k:10s} {v:6.2f} s  {v / n * 1e3:.4f} ms/chunk")
        return
    if args.dump:
        prof.dump_stats(args.dump)
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats(args.sort).print_stats(args.top)
    print(s.getvalue())


if __name__ == "__main__":
    main()
