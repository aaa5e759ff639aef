"""The lexical index refresh, old code beside new: CPU seconds per chunk, one run, interleaved.

Run: .venv/bin/python bench/refresh_parts.py [--memory DIR] [--rounds 3] [--old /tmp/old-h13t/pipeline]

Over a day-zero memory as `dayzero_bench.py --keep` leaves it (`--memory`, its chunk table's Lance
versions are the flushes of a budgeted round), each worker is a fresh process that replays the
round's text-side refreshes (`indexes._index_text` per version: read rows + facets + context
lines + tokenise + postings + save + merges) and reports its CPU time (process_time; the figure
holds on a loaded box) and wall. Old (`--old`, a `git archive` of the base commit's pipeline/)
and new alternate, best of `--rounds` each. The final segments of both are compared file by file
(vocabulary JSON, hashes, postings arrays): the refresh's output is unchanged byte for byte.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def worker(memory: Path, out: Path) -> None:
    import bm25s  # noqa: F401  (imports are paid once per process, not a rate of the refresh)
    import lance
    import polars  # noqa: F401
    import scipy.sparse  # noqa: F401

    from funes.memory import indexes

    path = memory / "memory" / "chunks.lance"
    versions = [v["version"] for v in lance.dataset(str(path)).versions()]
    man = indexes._empty_manifest(1, 0)
    c0, t0 = time.process_time(), time.perf_counter()
    for v in versions:
        ds = lance.dataset(str(path), version=v)
        indexes._index_text(ds, man, out, ds.count_rows(), lambda *a: None)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    out = {"cpu": cpu, "wall": wall, "rows": man["chunks"]["rows"], "refreshes": len(versions), "segments": man["bm25"]}
    print(json.dumps(out))


def digest(folder: Path, segments: list[dict]) -> dict[str, str]:
    out = {}
    for s in segments:
        for f in sorted((folder / s["dir"]).rglob("*")):
            if f.is_file():
                out[f"{s['start']}-{s['end']}/{f.relative_to(folder / s['dir'])}"] = hashlib.sha256(
                    f.read_bytes()
                ).hexdigest()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memory", type=Path, default=REPO / "bench" / "out" / "dayzero" / "funes-ref")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--old", type=Path, default=Path("/tmp/old-h13t/pipeline"))
    ap.add_argument("--worker", type=Path)
    args = ap.parse_args()
    if args.worker:
        return worker(args.memory, args.worker)
    codes = {"old": str(args.old), "new": str(REPO / "pipeline")}
    res: dict[str, list[dict]] = {"old": [], "new": []}
    digests = {}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for tag in ("new", "old") if r % 2 else ("old", "new"):
                out = Path(tmp) / f"{tag}{r}"
                out.mkdir()
                env = {**os.environ, "PYTHONPATH": codes[tag]}
                cmd = [sys.executable, __file__, "--memory", str(args.memory), "--worker", str(out)]
                got = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout)
                res[tag].append(got)
                digests.setdefault(tag, digest(out, got["segments"]))
                load.append(os.getloadavg()[0])
    best = {t: min(res[t], key=lambda g: g["cpu"]) for t in res}
    rows = best["new"]["rows"]
    report = {
        "chunks": rows,
        "refreshes": best["new"]["refreshes"],
        "segments": len(best["new"]["segments"]),
        **{f"{t}_cpu_s": round(best[t]["cpu"], 2) for t in ("old", "new")},
        **{f"{t}_wall_s": round(best[t]["wall"], 2) for t in ("old", "new")},
        "old_cpu_us_per_chunk": round(best["old"]["cpu"] / rows * 1e6, 1),
        "new_cpu_us_per_chunk": round(best["new"]["cpu"] / rows * 1e6, 1),
        "cpu_ratio": round(best["old"]["cpu"] / best["new"]["cpu"], 2),
        "all_cpu_s": {t: [round(g["cpu"], 2) for g in res[t]] for t in res},
        "identical_files": digests["old"] == digests["new"] and bool(digests["new"]),
        "load_avg_1m": [round(x, 2) for x in load],
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
