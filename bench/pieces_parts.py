"""A day-zero round's refreshes with a piece cache each (as at 38a17c3) or one shared (shipped), in one process.

Run: .venv/bin/python bench/pieces_parts.py [--memory DIR] [--rows 150789] [--rounds 5]

A budgeted round refreshes the lexical index after its first flush (the probe) and once at its
end. Over a day-zero memory (`--memory`, e.g. a `dayzero_bench.py --keep` memory; only read), the
text side of those refreshes is replayed (`indexes._index_text` at the chunk table's first
version, then at the first version holding `--rows` rows) into a fresh folder, interleaved, best
of N by CPU: "own" is a Numbering per refresh (the code before), "shared" runs both inside
`indexes.shared_pieces()` (what `funes index` does now). Reported: CPU (process_time) and wall of
the two refreshes, the CPU inside `tokenize.document_ids`, pieces tokenised, peak RSS, and
whether the two wrote the same files, byte for byte.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def replay(path: Path, versions: list[int], out: Path, shared: bool) -> dict:
    import lance

    from funes.memory import indexes, tokenize

    stats = {"pieces": 0, "tokenise_cpu": 0.0}
    of, ids = tokenize.Numbering.of, tokenize.document_ids

    def counted(self, text):
        stats["pieces"] += 1
        return of(self, text)

    def timed(*a, **kw):
        c0 = time.process_time()
        try:
            return ids(*a, **kw)
        finally:
            stats["tokenise_cpu"] += time.process_time() - c0

    tokenize.Numbering.of, tokenize.document_ids = counted, timed  # type: ignore[method-assign]
    man = indexes._empty_manifest(1, 0)
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        with indexes.shared_pieces() if shared else contextlib.nullcontext():
            for v in versions:
                ds = lance.dataset(str(path), version=v)
                indexes._index_text(ds, man, out, ds.count_rows(), lambda *a: None)
        stats.update(cpu=time.process_time() - c0, wall=time.perf_counter() - t0, rows=man["chunks"]["rows"])
    finally:
        tokenize.Numbering.of, tokenize.document_ids = of, ids  # type: ignore[method-assign]
    stats["files"] = {
        str(f.relative_to(out)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(out.rglob("*"))
        if f.is_file()
    }
    return stats


def main() -> None:
    import lance

    ap = argparse.ArgumentParser()
    ap.add_argument("--memory", type=Path, default=REPO / "bench" / "out" / "dayzero" / "funes-w1")
    ap.add_argument("--rows", type=int, default=150789, help="the round's last version is the first holding this many")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import bm25s  # noqa: F401  (imports paid once, before any timing)

    path = args.memory / "memory" / "chunks.lance"
    vs = [
        (v["version"], lance.dataset(str(path), version=v["version"]).count_rows())
        for v in lance.dataset(str(path)).versions()
    ]
    vs = [(v, n) for v, n in vs if n > 0]
    last = next(v for v, n in vs if n >= args.rows)
    versions = [vs[0][0], last]
    res: dict[str, list[dict]] = {"own": [], "shared": []}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        replay(path, versions[:1], Path(tmp) / "warm", False)  # lance, numpy and the stemmer warm
        for r in range(args.rounds):
            for mode in ("shared", "own") if r % 2 else ("own", "shared"):
                out = Path(tmp) / f"{mode}{r}"
                res[mode].append(replay(path, versions, out, mode == "shared"))
                shutil.rmtree(out)
                load.append(os.getloadavg()[0])
    best = {m: min(res[m], key=lambda g: g["cpu"]) for m in res}
    rows = best["own"]["rows"]
    report = {
        "memory": str(args.memory),
        "refreshes_at_rows": [n for v, n in vs if v in versions],
        **{f"{m}_cpu_s": round(best[m]["cpu"], 3) for m in res},
        **{f"{m}_tokenise_cpu_s": round(best[m]["tokenise_cpu"], 3) for m in res},
        **{f"{m}_wall_s": round(best[m]["wall"], 3) for m in res},
        **{f"{m}_pieces_tokenised": best[m]["pieces"] for m in res},
        "own_cpu_us_per_chunk": round(best["own"]["cpu"] / rows * 1e6, 1),
        "shared_cpu_us_per_chunk": round(best["shared"]["cpu"] / rows * 1e6, 1),
        "cpu_ratio": round(best["own"]["cpu"] / best["shared"]["cpu"], 3),
        "all_cpu_s": {m: [round(g["cpu"], 2) for g in res[m]] for m in res},
        "identical_files": all(g["files"] == res["own"][0]["files"] for m in res for g in res[m]),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "load_avg_1m": [round(x, 2) for x in load],
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
