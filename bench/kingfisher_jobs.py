"""Kingfisher's CPU per run with one scan thread (`--jobs 1`, what funes passes) vs its default two,
interleaved in one process, on a captured day-zero batch (bench/scan_replay.py capture) and on
empty input (its fixed start-up).

Run: nice -n 10 .venv/bin/python bench/kingfisher_jobs.py [--rounds 5] [--batch 001]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import statistics
import subprocess
import time
from pathlib import Path

from funes.scan import gate, kingfisher, scratch
from funes.scan.views import text_views

BATCHES = Path(__file__).resolve().parents[1] / "bench" / "out" / "scan_replay" / "batches"


def _kids() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", default="001")
    args = ap.parse_args()
    texts = pickle.loads((BATCHES / f"{args.batch}.pkl").read_bytes())[2]
    runs = gate.may_hold_b64(texts)
    data = "\n".join(v.text for i, t in enumerate(texts) for v in text_views(t, runs[i])).encode()
    path = kingfisher.binary()[0]
    assert path, "kingfisher is not installed"
    base = [path, "scan", "-", "--no-validate", "--no-update-check", "--format", "jsonl", "--quiet", "--no-dedup"]
    cells = {(j, name): [] for j in ("1", "2") for name in ("batch", "empty")}
    outputs: dict = {}
    tmp = scratch.make("kingfisher")
    try:
        for _ in range(args.rounds):
            for (j, name), got in cells.items():
                k0, w0 = _kids(), time.perf_counter()
                p = subprocess.run(
                    [*base, "--jobs", j],
                    input=data if name == "batch" else b"",
                    capture_output=True,
                    env=kingfisher._env(tmp),
                    check=True,
                )
                got.append((_kids() - k0, time.perf_counter() - w0))
                # findings compared without the audit record (its timings differ run to run)
                outputs.setdefault((j, name), set()).add(
                    b"\n".join(sorted(x for x in p.stdout.splitlines() if b'"audit"' not in x))
                )
    finally:
        scratch.remove(tmp)
    print(
        json.dumps(
            {
                "batch_mb": round(len(data) / 1e6, 1),
                "load_average": round(os.getloadavg()[0], 2),
                "same_findings_j1_j2": len(outputs[("1", "batch")] | outputs[("2", "batch")]) == 1,
                **{
                    f"jobs{j}_{name}": {
                        "cpu_best_s": round(min(c for c, _ in got), 3),
                        "cpu_median_s": round(statistics.median(c for c, _ in got), 3),
                        "wall_median_s": round(statistics.median(w for _, w in got), 3),
                    }
                    for (j, name), got in cells.items()
                },
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
