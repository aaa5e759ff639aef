"""The scan worker's own CPU on the batches a real day-zero round sends it, old code beside new.

Run:
  nice -n 10 .venv/bin/python bench/scan_replay.py capture [--budget 30]
  nice -n 10 .venv/bin/python bench/scan_replay.py replay --old /tmp/old-h15k/pipeline [--rounds 3]
  nice -n 10 .venv/bin/python bench/scan_replay.py profile   # cProfile of this code over the batches

`capture`: one budgeted `funes index --auto --no-embed` round over the 20,000 day-zero sessions
(bench/out/dayzero/home) with the scan worker on, saving every batch the redaction is handed
(`redact.Redaction`: the probe flush scanned in-process included) as the worker would receive it
(the frame's pickle) under bench/out/scan_replay/batches/. `replay`: a fresh process per code
(this tree, or --old on PYTHONPATH), rounds interleaved (new, old, new, old...), each doing what
the worker does per batch: unpickle the frame, `scan.start` (views, Kingfisher started), `result()`
(in-process engines, Kingfisher's findings, merge), pickle the sparse reply. Per code: CPU of the
process + its Kingfisher children per batch and per chunk row, best and median over rounds, wall,
Kingfisher invocations, and a digest of every finding (old and new must agree). Load average beside it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out" / "scan_replay"
BATCHES = OUT / "batches"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def capture(budget: float) -> None:
    import shutil

    home = REPO / "bench" / "out" / "dayzero" / "home"
    if not home.exists():
        sys.exit("bench/out/dayzero/home is missing (cp -al /work/main/bench/out/dayzero/home there)")
    shutil.rmtree(BATCHES, ignore_errors=True)
    BATCHES.mkdir(parents=True)
    fh = OUT / "funes-capture"
    shutil.rmtree(fh, ignore_errors=True)
    os.environ.update(HOME=str(home), FUNES_HOME=str(fh), FUNES_INDEX_BUDGET=str(budget), FUNES_SCAN_WORKER="on")
    from funes.commands import index
    from funes.ingest import redact

    init = redact.Redaction.__init__
    n = [0]

    def saving(self, texts, commands, scanner=None):
        (BATCHES / f"{n[0]:03d}.pkl").write_bytes(
            pickle.dumps(("scan", n[0], [t or "" for t in texts], commands, None), protocol=5)
        )
        n[0] += 1
        init(self, texts, commands, scanner)

    redact.Redaction.__init__ = saving  # type: ignore[method-assign]
    t0 = time.perf_counter()
    rep = index.index(index.Options(auto=True, no_embed=True))
    print(json.dumps({"batches": n[0], "chunks": rep.chunks_added, "wall_s": round(time.perf_counter() - t0, 2)}))
    shutil.rmtree(fh, ignore_errors=True)


def _batches() -> list[Path]:
    files = sorted(BATCHES.glob("*.pkl"))
    if not files:
        sys.exit("no captured batches: run `bench/scan_replay.py capture` first")
    return files


def run_one() -> None:
    """One code's pass over every batch (run in a fresh process by `replay`)."""
    from funes import scan
    from funes.scan import worker

    worker._Worker.__init__(worker._Worker.__new__(worker._Worker), None, None)  # its warm-up, as the worker pays
    per, digest, kf = [], hashlib.sha256(), 0
    w0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
    for f in _batches():
        blob = f.read_bytes()
        b0, bc, bk = time.perf_counter(), time.process_time(), _children_cpu()
        _, rid, texts, commands, only = pickle.loads(blob)
        job = scan.start(texts, only=only, commands=commands)
        kf += getattr(job, "kingfisher_runs", int(job.job is not None))
        try:
            reply = pickle.dumps((rid, "ok", worker._sparse(job.result())), protocol=5)
        finally:
            job.close()
        digest.update(reply)
        per.append(
            {
                "texts": len(texts),
                "mb": round(sum(map(len, texts)) / 1e6, 2),
                "cpu_s": round(time.process_time() - bc, 3),
                "kingfisher_cpu_s": round(_children_cpu() - bk, 3),
                "wall_s": round(time.perf_counter() - b0, 3),
            }
        )
    print(
        json.dumps(
            {
                "wall_s": round(time.perf_counter() - w0, 2),
                "cpu_s": round(time.process_time() - c0, 2),
                "kingfisher_cpu_s": round(_children_cpu() - k0, 2),
                "kingfisher_runs": kf,
                "findings": digest.hexdigest()[:16],
                "batches": per,
            }
        )
    )


def replay(old: str | None, rounds: int) -> None:
    files = _batches()
    texts = sum(len(pickle.loads(f.read_bytes())[2]) for f in files)
    codes = {"new": None} | ({"old": old} if old else {})
    runs: dict[str, list] = {k: [] for k in codes}
    for rnd in range(rounds):
        for tag, path in codes.items():
            env = dict(os.environ)
            env.pop("PYTHONPATH", None)
            if path:
                env["PYTHONPATH"] = path
            p = subprocess.run([sys.executable, __file__, "_run"], env=env, capture_output=True, text=True, check=False)
            if p.returncode:
                sys.exit(p.stderr[-3000:])
            r = json.loads(p.stdout.strip().splitlines()[-1])
            r.update(round=rnd + 1, code=tag, load_average=round(os.getloadavg()[0], 2))
            both = r["cpu_s"] + r["kingfisher_cpu_s"]
            r["cpu_ms_per_text"] = round(both / texts * 1e3, 4)
            print(json.dumps({k: v for k, v in r.items() if k != "batches"}), flush=True)
            runs[tag].append(r)
    summary: dict = {
        "batches": len(files),
        "texts": texts,
        "same_findings": len({r["findings"] for v in runs.values() for r in v}) == 1,
    }
    for tag, rs in runs.items():
        tot = [r["cpu_s"] + r["kingfisher_cpu_s"] for r in rs]
        summary[tag] = {
            "cpu_total_best_s": round(min(tot), 2),
            "cpu_total_median_s": round(statistics.median(tot), 2),
            "worker_cpu_median_s": round(statistics.median(r["cpu_s"] for r in rs), 2),
            "kingfisher_cpu_median_s": round(statistics.median(r["kingfisher_cpu_s"] for r in rs), 2),
            "wall_median_s": round(statistics.median(r["wall_s"] for r in rs), 2),
            "ms_per_text_best": round(min(tot) / texts * 1e3, 4),
            "kingfisher_runs": rs[0]["kingfisher_runs"],
            "per_batch_best": min(rs, key=lambda r: r["cpu_s"] + r["kingfisher_cpu_s"])["batches"],
        }
    if "old" in summary:
        summary["ratio_cpu_total_best_new_vs_old"] = round(
            summary["new"]["cpu_total_best_s"] / summary["old"]["cpu_total_best_s"], 3
        )
    print(json.dumps(summary, indent=1), flush=True)
    (OUT / "replay.json").write_text(json.dumps(summary, indent=1))


def profile() -> None:
    import cProfile
    import pstats

    from funes import scan

    scan.find(["warm password=hunter2xyz"], only=("detect-secrets", "funes-rules"))
    prof = cProfile.Profile()
    for f in _batches():
        _, _, texts, commands, only = pickle.loads(f.read_bytes())
        prof.enable()
        job = scan.start(texts, only=only, commands=commands)
        job.waited = 0.0
        try:
            job.result()
        finally:
            job.close()
        prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(35)
    pstats.Stats(prof).sort_stats("cumtime").print_stats(35)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("capture", "replay", "profile", "_run"))
    ap.add_argument("--budget", type=float, default=30.0)
    ap.add_argument("--old", help="PYTHONPATH of the old code's pipeline/ (git archive f557ece)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if args.what == "capture":
        capture(args.budget)
    elif args.what == "replay":
        replay(args.old, args.rounds)
    elif args.what == "profile":
        profile()
    else:
        run_one()


if __name__ == "__main__":
    main()
