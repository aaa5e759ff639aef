"""Ray Data engine vs one process on the same synthetic Parquet trace dataset: per stage, and the driver's memory ceiling.

Run: .venv/bin/python bench/ray_bench.py [--sessions 25] [--shards 4] [--cpus 2]
Each measured run is its own process (a fresh `funes index`, so peak RSS is that run's): the
prepare stage (parse -> chunk -> redact -> commit, `--no-embed`) then the embed stage (a second
run that only embeds the pending rows), for `--engine local` and `--engine ray`; then the prepare
stage again on 10x the shards for both engines, for the driver's peak RSS. Temporary FUNES_HOMEs
only. Needs `pip install 'funes[ray]'`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("FUNES_MODEL_CACHE", str(Path.home() / ".cache" / "funes" / "models"))

_WORDS = [
    "parser",
    "stream",
    "buffer",
    "index",
    "memory",
    "recall",
    "shard",
    "commit",
    "vector",
    "chunk",
    "session",
    "token",
    "retry",
    "worker",
    "cluster",
    "driver",
    "actor",
    "fragment",
    "lance",
    "arrow",
    "parquet",
    "schema",
    "ledger",
    "embed",
    "redact",
    "scanner",
    "budget",
]

_RUN = r"""
import json, resource, sys, time
from funes.commands import index
t = time.monotonic()
r = index.index(index.Options(path=sys.argv[1], yes=True, engine=sys.argv[2], no_embed=sys.argv[3] == "1",
                               num_cpus=int(sys.argv[4])))
print(json.dumps({"s": time.monotonic() - t, "chunks": r.chunks_added, "vectors": r.vectors_added,
                  "sessions": sum(len(x.sessions) for x in r.tallies.values()),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _text(rng: random.Random) -> str:
    n = rng.choice([12, 40, 120, 400])  # words: most messages short, some split into several chunks
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def write_dataset(folder: Path, shards: int, sessions: int, start: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    for k in range(start, start + shards):
        rng = random.Random(k)
        rows = []
        for s in range(sessions):
            msgs = []
            for m in range(8):
                role = "user" if m % 2 == 0 else "assistant"
                msgs.append(json.dumps({"role": role, "content": _text(rng)}))
            meta = json.dumps({"cwd": f"/home/dev/proj{k % 7}"})
            rows.append({"session_id": f"bench-{k}-{s}", "sent_at": "2026-11-01T10:00:00Z", "harness": "codex",
                         "file_path": None, "metadata": meta, "messages": msgs})  # fmt: skip
        pq.write_table(pa.Table.from_pylist(rows), folder / f"train-{k:05d}.parquet")


def run(data: Path, home: Path, engine: str, no_embed: bool, cpus: int) -> dict:
    env = dict(os.environ, FUNES_HOME=str(home), HOME=str(home.parent), HF_HUB_OFFLINE="1")
    out = subprocess.run(
        [sys.executable, "-c", _RUN, str(data), engine, "1" if no_embed else "0", str(cpus)],
        env=env, capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    if out.returncode:
        sys.exit(f"bench: {engine} run failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=25, help="sessions per shard")
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--no-10x", action="store_true", help="only the side-by-side 1x table")
    args = ap.parse_args()
    # build the embedder's ONNX export (once per machine) before anything is timed
    subprocess.run([sys.executable, "-c", "from funes import models; models.load_embedder()"], check=True, cwd=REPO)
    root = Path(tempfile.mkdtemp(prefix="funes-ray-bench-"))
    try:
        small, big = root / "x1", root / "x10"
        write_dataset(small, args.shards, args.sessions)
        if not args.no_10x:
            write_dataset(big, args.shards * 10, args.sessions)
        rows = []
        for engine in ("local", "ray"):
            home = root / engine / ".funes"
            prep = run(small, home, engine, True, args.cpus)
            emb = run(small, home, engine, False, args.cpus)
            rows.append((engine, prep, emb))
        print(f"1x: {args.shards} shards x {args.sessions} sessions, {args.cpus} CPUs")
        print("| engine | prepare s | sessions/s | chunks/s | embed s | chunks/s | driver peak RSS (prepare) |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for engine, p, e in rows:
            print(
                f"| {engine} | {p['s']:.1f} | {p['sessions'] / p['s']:.0f} | {p['chunks'] / p['s']:.0f} | "
                f"{e['s']:.1f} | {e['vectors'] / e['s']:.0f} | {p['rss_mb']:.0f} MB |"
            )
        if args.no_10x:
            return
        print(f"\n10x: {args.shards * 10} shards (prepare only)")
        print("| engine | chunks | prepare s | chunks/s | driver peak RSS 1x -> 10x |")
        print("| --- | --- | --- | --- | --- |")
        for engine, p, _e in rows:
            ten = run(big, root / f"{engine}-10" / ".funes", engine, True, args.cpus)
            print(
                f"| {engine} | {ten['chunks']} | {ten['s']:.1f} | {ten['chunks'] / ten['s']:.0f} | "
                f"{p['rss_mb']:.0f} -> {ten['rss_mb']:.0f} MB |"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
