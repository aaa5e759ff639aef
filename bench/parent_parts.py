"""The parent's own CPU on a day-zero text pass, old code beside new: fresh processes, interleaved, best of N.

Run: .venv/bin/python bench/parent_parts.py [--sessions 9000] [--rounds 3] [--old /tmp/old-h14p/pipeline] [--scan]

Each worker is a fresh process running `bench/parent_profile.py`'s flow without cProfile: the
first N day-zero transcripts, one untimed warm-up run, then one `funes index --auto --no-embed`
text pass with no budget stop and flushes every 20k blocks (none by time, so every run flushes at the same rows) into a fresh memory, the scanner patched out (what is left once it
leaves the parent) unless `--scan`. It reports its CPU (process_time), wall, the collector's
collections and their CPU (gc.callbacks), peak RSS and the CPU per phase. Old (`--old`, a `git
archive` of the base commit's pipeline/ on PYTHONPATH) and new alternate (ABBA...). After the
runs every memory is compared with the first old one: every column of every chunk row in table
order, every index file but the manifest (BM25 segments, facets) byte for byte, the manifest
without its timestamp, and state.json (the ledger) byte for byte.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def worker(sessions: int, home: Path, scan: bool) -> None:
    import gc
    import resource
    import time

    sys.path.insert(0, str(REPO / "bench"))
    import parent_profile

    gcs = {"collections": [0, 0, 0], "cpu": 0.0}
    began = [0.0]

    def note(phase, info):
        if phase == "start":
            began[0] = time.process_time()
        else:
            gcs["collections"][info["generation"]] += 1
            gcs["cpu"] += time.process_time() - began[0]

    tree = parent_profile.tree(sessions)
    os.environ.update(HOME=str(tree), FUNES_INDEX_WORKERS="1")
    # no budget stop (an unset budget is 60 s, which a loaded box can reach), and flush points by
    # size only (FUNES_FLUSH_BLOCKS, 20k), never by seconds of reading: every run flushes at the same rows
    os.environ["FUNES_INDEX_BUDGET"] = "100000"
    from funes import cli
    from funes import scan as scanner

    cli.index_imports(True)
    if not scan:
        scanner.start = parent_profile._NoScan  # type: ignore[assignment]
    from funes.commands import budget, index

    index.TIER_PASSES = (("text",),)  # type: ignore[misc]
    index.FLUSH_S = budget.PROBE_S = 1e9  # type: ignore[misc]
    os.environ["FUNES_HOME"] = str(home.parent / (home.name + "-warm"))
    index.index(index.Options(auto=True, no_embed=True, limit=50))
    parent_profile._phases()
    parent_profile.CPU.clear()
    os.environ["FUNES_HOME"] = str(home)
    gc.callbacks.append(note)
    c0, t0 = time.process_time(), time.perf_counter()
    rep = index.index(index.Options(auto=True, no_embed=True))
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    gc.callbacks.remove(note)
    out = {
        "cpu": cpu,
        "wall": wall,
        "chunks": rep.chunks_added,
        "gc": gcs,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "phases_cpu": {k: round(v, 3) for k, v in parent_profile.CPU.items()},
        "load": os.getloadavg()[0],
    }
    print(json.dumps(out))


def digest(home: Path) -> dict[str, str]:
    """What a run leaves: rows (every column, table order), index files, manifest (less its timestamp), ledger."""
    import lance
    import pyarrow as pa

    out = {}
    t = lance.dataset(str(home / "memory" / "chunks.lance")).to_table()
    for name in t.column_names:
        col = t.select([name]).combine_chunks()
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, col.schema) as w:
            w.write_table(col)
        out[f"rows/{name}"] = hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()
    idx = home / "memory" / "index"
    for f in sorted(idx.rglob("*")):
        if f.is_file() and f.name != "manifest.json":
            out[str(f.relative_to(idx))] = hashlib.sha256(f.read_bytes()).hexdigest()
    man = json.loads((idx / "manifest.json").read_text())
    man.pop("refreshed_at", None)
    out["manifest"] = hashlib.sha256(json.dumps(man, sort_keys=True).encode()).hexdigest()
    out["state.json"] = hashlib.sha256((home / "state.json").read_bytes()).hexdigest()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=9000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--old", type=Path, default=Path("/tmp/old-h14p/pipeline"))
    ap.add_argument("--scan", action="store_true", help="keep the scanner in the parent (as today's day zero)")
    ap.add_argument("--worker", type=Path)
    args = ap.parse_args()
    if args.worker:
        return worker(args.sessions, args.worker, args.scan)
    codes = {"old": str(args.old), "new": str(REPO / "pipeline")}
    res: dict[str, list[dict]] = {"old": [], "new": []}
    homes: dict[str, list[Path]] = {"old": [], "new": []}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(dir=REPO / "bench" / "out") as tmp:
        for r in range(args.rounds):
            for tag in ("new", "old") if r % 2 else ("old", "new"):
                home = Path(tmp) / f"{tag}{r}"
                env = {**os.environ, "PYTHONPATH": codes[tag]}
                cmd = [sys.executable, __file__, "--sessions", str(args.sessions), "--worker", str(home)]
                cmd += ["--scan"] if args.scan else []
                got = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout)
                print(json.dumps({"code": tag, "round": r + 1, **got}), flush=True)
                res[tag].append(got)
                homes[tag].append(home)
                load.append(os.getloadavg()[0])
        ref = digest(homes["old"][0])
        same = {f"{t}{i}": digest(h) == ref for t in homes for i, h in enumerate(homes[t])}
    best = {t: min(res[t], key=lambda g: g["cpu"]) for t in res}
    n = best["new"]["chunks"]
    report = {
        "sessions": args.sessions,
        "scan": args.scan,
        "chunks": n,
        **{f"{t}_cpu_s": round(best[t]["cpu"], 2) for t in ("old", "new")},
        **{f"{t}_wall_s": round(best[t]["wall"], 2) for t in ("old", "new")},
        "old_cpu_us_per_chunk": round(best["old"]["cpu"] / n * 1e6, 1),
        "new_cpu_us_per_chunk": round(best["new"]["cpu"] / n * 1e6, 1),
        "cpu_ratio": round(best["old"]["cpu"] / best["new"]["cpu"], 3),
        "all_cpu_s": {t: [round(g["cpu"], 2) for g in res[t]] for t in res},
        "gc_cpu_s": {t: [round(g["gc"]["cpu"], 2) for g in res[t]] for t in res},
        "gc_collections_best": {t: best[t]["gc"]["collections"] for t in res},
        "peak_rss_mb": {t: [g["peak_rss_mb"] for g in res[t]] for t in res},
        "phases_cpu_best": {t: best[t]["phases_cpu"] for t in res},
        "identical_outputs": same,
        "load_avg_1m": [round(x, 2) for x in load],
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
