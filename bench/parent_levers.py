"""This branch's levers on the parent's CPU, all off ("before") vs all on ("after"), in one process, interleaved.

Run: .venv/bin/python bench/parent_levers.py [--sessions 9000] [--rounds 5] [--scan]

`bench/parent_parts.py` compares the old code in its own processes; this toggles the levers inside
one process, so both configurations share the process's imports, memory layout and warm caches:
the collector settings (`commands/collector.bulk`), one piece cache per store pass
(`indexes.shared_pieces`). "before" patches each back to what 38a17c3 did. Each round is one day-zero text pass as
`parent_parts.py` runs it (first N transcripts, no budget stop, flushes every 20k blocks, the
scanner patched out unless `--scan`) into a fresh memory; configurations alternate (ABBA...).
Reported per configuration: best and median CPU (process_time), the collector's CPU, pieces
tokenised, CPU in the tokenise and facet phases, and whether every run left the same
rows, index files and ledger (`parent_parts.digest`).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
sys.path.insert(0, str(REPO / "bench"))
import parent_parts  # noqa: E402
import parent_profile  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=9000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scan", action="store_true")
    args = ap.parse_args()
    tree = parent_profile.tree(args.sessions)
    os.environ.update(HOME=str(tree), FUNES_INDEX_WORKERS="1", FUNES_INDEX_BUDGET="100000")
    from funes import cli
    from funes import scan as scanner

    cli.index_imports(True)
    if not args.scan:
        scanner.start = parent_profile._NoScan  # type: ignore[assignment]
    from funes.commands import budget, collector, index
    from funes.memory import facets, indexes, tokenize

    index.TIER_PASSES = (("text",),)  # type: ignore[misc]
    index.FLUSH_S = budget.PROBE_S = 1e9  # type: ignore[misc]
    after = {
        "bulk": collector.bulk,
        "shared": indexes.shared_pieces,
    }
    before = {
        "bulk": contextlib.nullcontext,
        "shared": contextlib.nullcontext,
    }

    def use(levers: dict) -> None:
        collector.bulk = levers["bulk"]  # type: ignore[assignment]
        indexes.shared_pieces = levers["shared"]  # type: ignore[assignment]

    base = OUT / f"parent_levers-{args.sessions}"
    shutil.rmtree(base, ignore_errors=True)
    os.environ["FUNES_HOME"] = str(base / "warm")
    index.index(index.Options(auto=True, no_embed=True, limit=50))
    parent_profile._phases()
    parent_profile._timed(facets, "append", "facets")
    gcs = {"cpu": 0.0}
    began = [0.0]

    def note(phase, info):
        if phase == "start":
            began[0] = time.process_time()
        else:
            gcs["cpu"] += time.process_time() - began[0]

    pieces = [0]
    of = tokenize.Numbering.of

    def counted(self, text):
        pieces[0] += 1
        return of(self, text)

    tokenize.Numbering.of = counted  # type: ignore[method-assign]
    gc.callbacks.append(note)
    res: dict[str, list[dict]] = {"before": [], "after": []}
    digests, load = {}, [os.getloadavg()[0]]
    for r in range(args.rounds):
        for name in ("after", "before") if r % 2 else ("before", "after"):
            levers = after if name == "after" else before
            use(levers)
            home = base / f"{name}{r}"
            os.environ["FUNES_HOME"] = str(home)
            parent_profile.CPU.clear()
            gc.collect()  # the last run's garbage is not this one's to collect
            gcs["cpu"], pieces[0] = 0.0, 0
            c0 = time.process_time()
            rep = index.index(index.Options(auto=True, no_embed=True))
            cpu = time.process_time() - c0
            got = {
                "cpu": cpu,
                "chunks": rep.chunks_added,
                "gc_cpu": gcs["cpu"],
                "pieces": pieces[0],
                "phases": {k: round(v, 3) for k, v in parent_profile.CPU.items()},
                "load": os.getloadavg()[0],
            }
            print(json.dumps({"config": name, "round": r + 1, **got}), flush=True)
            res[name].append(got)
            digests[f"{name}{r}"] = parent_parts.digest(home)
            shutil.rmtree(home)
            load.append(os.getloadavg()[0])
    use(after)
    ref = next(iter(digests.values()))
    n = res["after"][0]["chunks"]

    def summary(runs: list[dict]) -> dict:
        cpus = [g["cpu"] for g in runs]
        ph = lambda k: statistics.median(g["phases"].get(k, 0.0) for g in runs)  # noqa: E731
        return {
            "best_cpu_s": round(min(cpus), 2),
            "median_cpu_s": round(statistics.median(cpus), 2),
            "all_cpu_s": [round(c, 2) for c in cpus],
            "median_us_per_chunk": round(statistics.median(cpus) / n * 1e6, 1),
            "median_gc_cpu_s": round(statistics.median(g["gc_cpu"] for g in runs), 3),
            "pieces_tokenised": runs[0]["pieces"],
            "median_phase_cpu_s": {k: round(ph(k), 3) for k in runs[0]["phases"]},
        }

    report = {
        "sessions": args.sessions,
        "scan": args.scan,
        "chunks": n,
        "before": summary(res["before"]),
        "after": summary(res["after"]),
        "best_ratio": round(min(g["cpu"] for g in res["before"]) / min(g["cpu"] for g in res["after"]), 3),
        "median_ratio": round(
            statistics.median(g["cpu"] for g in res["before"]) / statistics.median(g["cpu"] for g in res["after"]), 3
        ),
        "identical_outputs": all(d == ref for d in digests.values()),
        "load_avg_1m": [round(x, 2) for x in load],
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
