"""The serial path's flush with its Kingfisher scan overlapped (shipped) vs waited for, side by side.

Run: .venv/bin/python bench/flush_overlap.py [--sessions 3000] [--rounds 3] [--flush-blocks 20000 40000]

Over the first N day-zero transcripts (bench/out/dayzero/home, written by bench/dayzero_data.py),
the day-zero flow of `funes index --auto --no-embed` with a budget too large to stop it (text tier
first, the probe flush, flushes every 20k blocks or 5 s), interleaved rounds of each mode, each
into a fresh memory. "wait" is the flush as it was: `prepare.Flush` begins nothing, so the scan
starts at the finish and the parent waits for Kingfisher; "overlap" is the shipped path. Per mode,
best round by wall: wall, CPU of this process and of its children (Kingfisher), the parent's wall
inside `kingfisher.Job.findings` (waiting for the scan), Kingfisher calls and blocks per call, and
whether both modes stored the same rows (ids + texts).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class _Probe:
    """Kingfisher calls and their sizes, and the parent's wall inside Job.findings."""

    def __init__(self):
        from funes.scan import kingfisher

        self.calls, self.texts, self.wait_s = 0, 0, 0.0
        init, findings, probe = kingfisher.Job.__init__, kingfisher.Job.findings, self

        def counted(job, path, texts, timeout):
            probe.calls += 1
            probe.texts += len(texts)
            init(job, path, texts, timeout)

        def timed(job):
            t0 = time.perf_counter()
            try:
                return findings(job)
            finally:
                probe.wait_s += time.perf_counter() - t0

        kingfisher.Job.__init__ = counted  # type: ignore[method-assign]
        kingfisher.Job.findings = timed  # type: ignore[method-assign]

    def reset(self):
        self.calls, self.texts, self.wait_s = 0, 0, 0.0


def _waiting_flush():
    """prepare.Flush as the flush was before the overlap: nothing begun, the scan run at finish."""
    from funes.commands import prepare
    from funes.commands.budget import FLUSH_FIXED_S

    class Waiting(prepare.Flush):
        def __init__(self, tables):
            import pyarrow as pa

            self.blocks = pa.concat_tables(tables).combine_chunks()
            self.rows = self.blocks.num_rows
            self.inputs = self.redaction = None
            self.waited = FLUSH_FIXED_S  # as the clock counted every flush before

    return Waiting


def _stored(home: Path) -> tuple[int, int]:
    import lance

    t = lance.dataset(str(home / "memory" / "chunks.lance")).to_table(columns=["id", "text"])
    pairs = sorted(zip(t["id"].to_pylist(), t["text"].to_pylist()))
    return len(pairs), hash(tuple(pairs))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--flush-blocks", type=int, nargs="+", default=[20000], help="FUNES_FLUSH_BLOCKS settings")
    args = ap.parse_args()
    src = OUT / "dayzero" / "home"
    if not src.exists():
        sys.exit("bench/out/dayzero/home is missing: run bench/dayzero_bench.py first (it writes the transcripts)")
    # the first N transcripts, hard-linked into a tree of their own (the --auto discovery of day zero)
    home = OUT / "flush_overlap" / "home"
    if not home.exists():
        files = sorted(src.rglob("*.jsonl"))[: args.sessions]
        for f in files:
            dst = home / f.relative_to(src)
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.link(f, dst)
    n_files = sum(1 for _ in home.rglob("*.jsonl"))
    os.environ.update(HOME=str(home), FUNES_INDEX_BUDGET="100000", FUNES_INDEX_WORKERS="1")
    from funes.commands import index, prepare

    probe = _Probe()
    shipped, waiting = prepare.Flush, _waiting_flush()
    modes = [(m, fb) for fb in args.flush_blocks for m in ("wait", "overlap")]
    best: dict = {}
    warm = OUT / "flush_overlap" / "warm"
    os.environ["FUNES_HOME"] = str(warm)  # one untimed run: imports and the rule cache are warm for all
    shutil.rmtree(warm, ignore_errors=True)
    index.index(index.Options(auto=True, no_embed=True, limit=50))
    for rnd in range(args.rounds):
        for mode, fb in modes:
            prepare.Flush = shipped if mode == "overlap" else waiting  # type: ignore[misc]
            fh = OUT / "flush_overlap" / f"funes-{mode}-{fb}"
            shutil.rmtree(fh, ignore_errors=True)
            os.environ.update(FUNES_HOME=str(fh), FUNES_FLUSH_BLOCKS=str(fb))
            probe.reset()
            t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
            rep = index.index(index.Options(auto=True, no_embed=True))
            wall = time.perf_counter() - t0
            out = {
                "mode": mode,
                "flush_blocks": fb,
                "round": rnd + 1,
                "wall_s": round(wall, 2),
                "cpu_parent_s": round(time.process_time() - c0, 2),
                "cpu_kingfisher_s": round(_children_cpu() - k0, 2),
                "scan_wait_s": round(probe.wait_s, 2),
                "kingfisher_calls": probe.calls,
                "texts_per_call": probe.calls and round(probe.texts / probe.calls),
                "chunks": rep.chunks_added,
                "rows_hash": _stored(fh)[1],
                "load_average": round(os.getloadavg()[0], 2),
            }
            print(json.dumps(out), flush=True)
            key = f"{mode}-{fb}"
            if key not in best or out["wall_s"] < best[key]["wall_s"]:
                best[key] = out
    prepare.Flush = shipped  # type: ignore[misc]
    same = len({b["rows_hash"] for b in best.values()}) == 1
    summary = {"files": n_files, "best_by_wall": best, "same_rows": same}
    print(json.dumps(summary), flush=True)
    (OUT / "flush_overlap.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
