"""The day-zero flush with the secret scan in this process (as before) vs in the scan worker, side by side.

Run: nice -n 10 .venv/bin/python bench/scan_worker.py [--sessions 3000] [--rounds 3] [--budget S --tag T]

Over the first N day-zero transcripts (bench/out/dayzero/home, hard-linked into a tree of their
own as bench/flush_overlap.py does), the flow of `funes index --auto --no-embed` with a budget too
large to stop it, interleaved rounds of FUNES_SCAN_WORKER=off ("in-process": the flush as shipped
before the worker, Kingfisher overlapped) and =on ("worker"), each into a fresh memory. Per mode,
the best round by parent CPU and the median: wall; CPU of this process, of its children (the
worker with its Kingfisher runs, or Kingfisher alone) and of this process's main thread inside
the redaction (scan inputs, starting the scan: views + Kingfisher start, or pickling + sending;
the result: in-process engines + merge, or decoding; applying the markers); the wall the main
thread waited for findings; flushes; chunks; whether both modes stored the same rows (every
column; with `--budget` each round is a budgeted one and `chunks`/`sessions` are what it stored
in it). Also the worker's start-up: wall to its first answer and its CPU for an empty batch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class _Probe:
    """Main-thread CPU inside the redaction path, the wall waited for findings, flushes."""

    def __init__(self):
        from funes.commands import prepare
        from funes.ingest import redact, stages

        self.reset()
        probe = self
        init, result, inputs, begin = (
            redact.Redaction.__init__,
            redact.Redaction.result,
            stages.scan_inputs,
            prepare.Flush.__init__,
        )

        def timed(fn, field):
            def wrapper(*a, **kw):
                c0 = time.thread_time()
                try:
                    return fn(*a, **kw)
                finally:
                    setattr(probe, field, getattr(probe, field) + time.thread_time() - c0)

            return wrapper

        def result_waited(self):
            try:
                return result(self)
            finally:
                probe.wait_s += self.waited

        def counted(self, *a, **kw):
            probe.flushes += 1
            begin(self, *a, **kw)

        redact.Redaction.__init__ = timed(init, "start_cpu")  # type: ignore[method-assign]
        redact.Redaction.result = timed(result_waited, "result_cpu")  # type: ignore[method-assign]
        stages.scan_inputs = timed(inputs, "inputs_cpu")
        prepare.Flush.__init__ = counted  # type: ignore[method-assign]

    def reset(self):
        self.start_cpu = self.result_cpu = self.inputs_cpu = self.wait_s = 0.0
        self.flushes = 0


def _rows_digest(home: Path) -> tuple[int, str]:
    import lance

    t = lance.dataset(str(home / "memory" / "chunks.lance")).to_table()
    t = t.sort_by("id")
    h = hashlib.sha256()
    for name in sorted(t.column_names):
        h.update(name.encode())
        h.update(repr(t[name].to_pylist()).encode())
    return t.num_rows, h.hexdigest()[:16]


def _startup() -> dict:
    """The worker's start-up: wall to its first answer (an empty batch), and its CPU once closed."""
    from funes.scan import remote

    c0, t0 = _children_cpu(), time.perf_counter()
    s = remote.Scanner()
    s.start([""]).result()
    first = time.perf_counter() - t0
    s.close()
    return {"first_answer_wall_s": round(first, 3), "cpu_s": round(_children_cpu() - c0, 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--budget", type=float, default=100000, help="FUNES_INDEX_BUDGET: a budgeted round, chunks stored in it"
    )
    ap.add_argument("--tag", default="", help="suffix of the summary file (bench/out/scan_worker<tag>.json)")
    args = ap.parse_args()
    src = OUT / "dayzero" / "home"
    if not src.exists():
        sys.exit("bench/out/dayzero/home is missing: run bench/dayzero_bench.py first (it writes the transcripts)")
    home = OUT / "scan_worker" / f"home-{args.sessions}"
    if not home.exists():
        files = sorted(src.rglob("*.jsonl"))[: args.sessions]
        for f in files:
            dst = home / f.relative_to(src)
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.link(f, dst)
    n_files = sum(1 for _ in home.rglob("*.jsonl"))
    os.environ.update(HOME=str(home), FUNES_INDEX_BUDGET=str(args.budget), FUNES_INDEX_WORKERS="1")
    os.environ.pop("FUNES_FLUSH_BLOCKS", None)
    from funes.commands import index

    probe = _Probe()
    warm = OUT / "scan_worker" / "warm"
    os.environ.update(FUNES_HOME=str(warm), FUNES_SCAN_WORKER="off")  # imports and the rule cache warm for all
    shutil.rmtree(warm, ignore_errors=True)
    index.index(index.Options(auto=True, no_embed=True, limit=50))
    startup = [_startup() for _ in range(3)]
    runs: dict[str, list] = {"in-process": [], "worker": []}
    for rnd in range(args.rounds):
        for mode in runs:
            fh = OUT / "scan_worker" / f"funes-{mode}"
            shutil.rmtree(fh, ignore_errors=True)
            os.environ.update(FUNES_HOME=str(fh), FUNES_SCAN_WORKER="on" if mode == "worker" else "off")
            probe.reset()
            t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
            rep = index.index(index.Options(auto=True, no_embed=True))
            wall, cpu, kids = time.perf_counter() - t0, time.process_time() - c0, _children_cpu() - k0
            redaction = probe.inputs_cpu + probe.start_cpu + probe.result_cpu
            n = rep.chunks_added or 1
            out = {
                "mode": mode,
                "round": rnd + 1,
                "wall_s": round(wall, 2),
                "cpu_parent_s": round(cpu, 2),
                "cpu_children_s": round(kids, 2),
                "parent_ms_per_chunk": round(cpu / n * 1e3, 4),
                "parent_ms_per_flush": round(cpu / max(probe.flushes, 1) * 1e3, 1),
                "redaction_parent_cpu_s": round(redaction, 3),
                "redaction_ms_per_chunk": round(redaction / n * 1e3, 4),
                "redaction_parts_s": {
                    "scan_inputs": round(probe.inputs_cpu, 3),
                    "start": round(probe.start_cpu, 3),
                    "result_and_apply": round(probe.result_cpu, 3),
                },
                "waited_s": round(probe.wait_s, 2),
                "flushes": probe.flushes,
                "chunks": rep.chunks_added,
                "sessions": sum(len(t.sessions) for t in rep.tallies.values()),
                "budget_stopped": rep.budget_stopped,
                "rows": _rows_digest(fh),
                "load_average": round(os.getloadavg()[0], 2),
            }
            print(json.dumps(out), flush=True)
            runs[mode].append(out)
    summary: dict = {
        "files": n_files,
        "worker_startup": startup,
        "same_rows": len({tuple(r["rows"]) for v in runs.values() for r in v}) == 1,
    }
    for mode, rs in runs.items():
        best = min(rs, key=lambda r: r["cpu_parent_s"])
        summary[mode] = {
            "best_by_parent_cpu": best,
            "median": {
                k: statistics.median(r[k] for r in rs)
                for k in ("wall_s", "cpu_parent_s", "cpu_children_s", "redaction_parent_cpu_s")
            },
        }
    a, b = summary["in-process"]["median"], summary["worker"]["median"]
    summary["ratio_parent_cpu_worker_vs_in_process"] = round(b["cpu_parent_s"] / a["cpu_parent_s"], 3)
    summary["ratio_wall_worker_vs_in_process"] = round(b["wall_s"] / a["wall_s"], 3)
    print(json.dumps(summary), flush=True)
    (OUT / f"scan_worker{args.tag}.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
