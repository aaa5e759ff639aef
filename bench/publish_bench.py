"""Publish benchmark: full publishes of N chunks and a one-turn incremental publish into 1k vs 100k, to the local test Hub.

Run: .venv/bin/python bench/publish_bench.py [--sizes 10000 100000] [--corpus ../shared/corpus]
Memories are built by replicating corpus text pieces under fresh session ids with random unit
vectors (384 dims, the default model's id stamped), not by embedding. Each publish runs in a child
process (its peak RSS is the publisher's alone); the server runs as `tests/hubserver.py` in its own
process. Everything lives in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
TOKEN = "hf_bench_write"
DIM = 384


def corpus_pieces(corpus: Path, want: int) -> list[str]:
    """Long string values from the corpus transcripts, cut to <=1200 chars (chunk-sized text)."""
    out: list[str] = []

    def walk(v):
        if isinstance(v, str) and len(v) >= 200:
            out.extend(v[i : i + 1200] for i in range(0, min(len(v), 6000), 1050))
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for f in sorted(corpus.rglob("*.jsonl")):
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                walk(json.loads(line))
            except ValueError:
                continue
        if len(out) >= want:
            break
    return out[:want]


def build_memory(home: Path, n: int, pieces: list[str], seed: int = 0) -> None:
    os.environ["FUNES_HOME"] = str(home)
    sys.path.insert(0, str(REPO / "tests"))
    from funes import models
    from funes.memory import Memory
    from retrieval_support import chunk_rows

    mem = Memory.resolve(None)
    rng = np.random.default_rng(seed)
    for lo in range(0, n, 10_000):
        rows = [
            {"session_id": f"bench-{i // 20:06d}", "turn_uuid": f"t{i}", "seq": i % 20, "text": pieces[i % len(pieces)]}
            for i in range(lo, min(lo + 10_000, n))
        ]
        start = mem.chunks.append(chunk_rows(rows))
        vec = rng.standard_normal((len(rows), DIM)).astype(np.float32)
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        ids = mem.chunks.take(range(start, start + len(rows)), ["id"])["id"].to_pylist()
        mem.append_vectors(np.arange(start, start + len(rows)), ids, vec, models.embedder_id())


def add_turn(home: Path, seq: int) -> None:
    code = (
        "import sys, numpy as np; sys.path.insert(0, 'tests'); from retrieval_support import chunk_rows; "
        "from funes import models; from funes.memory import Memory; m = Memory.resolve(None); "
        f"s = m.chunks.append(chunk_rows([{{'session_id': 'new', 'turn_uuid': 'n{seq}-' + str(i), 'seq': {seq}, "
        "'block_idx': i, 'text': 'one more turn about the streaming parser decision'} for i in range(3)])); "
        f"v = np.random.default_rng({seq}).standard_normal((3, {DIM})).astype(np.float32); "
        "m.append_vectors(np.arange(s, s + 3), m.chunks.take(range(s, s + 3), ['id'])['id'].to_pylist(), "
        "v / np.linalg.norm(v, axis=1, keepdims=True), models.embedder_id())"
    )
    subprocess.run([sys.executable, "-c", code], env={**os.environ, "FUNES_HOME": str(home)}, cwd=REPO, check=True)


def child(repo: str) -> None:
    from funes.commands import publish

    t0 = time.perf_counter()
    r = publish.publish(publish.Options(memory=repo, create=True))
    out = {
        "seconds": time.perf_counter() - t0,
        "published": r.published,
        "held": r.held.rows,
        "bytes": r.uploaded_bytes,
        "timings": r.timings,
        "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    print("RESULT " + json.dumps(out))


def run_child(home: Path, env: dict, repo: str) -> dict:
    p = subprocess.run(
        [sys.executable, __file__, "--child", repo],
        env={**env, "FUNES_HOME": str(home)},
        capture_output=True,
        text=True,
        check=False,
    )
    line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"publish failed:\n{p.stderr[-3000:]}")
    return json.loads(line[7:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    tmp = Path(tempfile.mkdtemp(prefix="funes-publish-bench-"))
    srv = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "tests" / "hubserver.py"),
            "--port",
            "0",
            "--root",
            str(tmp / "hub"),
            "--token",
            f"acme:{TOKEN}",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    url = srv.stdout.readline().split()[1]
    env = dict(os.environ, HF_ENDPOINT=url, HF_TOKEN=TOKEN, HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_TELEMETRY="1")
    env.update(HF_HOME=str(tmp / "hf"), HF_HUB_DISABLE_PROGRESS_BARS="1", NO_PROXY="127.0.0.1")
    try:
        pieces = corpus_pieces(args.corpus, 20_000)
        print(f"{len(pieces)} corpus pieces, mean {np.mean([len(p) for p in pieces]):.0f} chars")
        sizes = sorted(set(args.sizes) | {1_000})
        for n in sizes:
            home = tmp / f"home-{n}"
            t0 = time.perf_counter()
            build_memory(home, n, pieces)
            built = time.perf_counter() - t0
            r = run_child(home, env, f"acme/mem{n}")
            t = r["timings"]
            total = sum(t.values()) or 1
            shares = ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(t.items()))
            print(
                f"full  {n:>7,}: built in {built:.1f}s; publish {r['seconds']:.1f}s = {r['published'] / r['seconds']:,.0f} rows/s, "
                f"{r['bytes'] / 1e6 / max(r['published'], 1) * 1000:.2f} MB per 1k chunks, peak RSS {r['maxrss_mb']:.0f} MB, "
                f"held {r['held']}; {shares}"
            )
        inc = {}
        for n in (min(sizes), max(sizes)):
            home = tmp / f"home-{n}"
            best = []
            for k in range(2):
                add_turn(home, 1000 + k)
                best.append(run_child(home, env, f"acme/mem{n}"))
            r = min(best, key=lambda x: x["seconds"])
            inc[n] = r["seconds"]
            print(
                f"incr  {n:>7,}: one turn ({r['published']} chunks) in {r['seconds']:.2f}s, peak RSS {r['maxrss_mb']:.0f} MB"
            )
        print(f"incremental ratio {max(sizes):,} / {min(sizes):,}: {inc[max(sizes)] / inc[min(sizes)]:.2f}")
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()
