"""Recall latency: warm p50/p95 by stage at 10k and 100k chunks, rerank on/off, cold CLI; faiss switch point.

Run: .venv/bin/python bench/recall_latency.py [--corpus ../shared/corpus] [--sizes 10000,100000]

How the memories are made: the corpus is indexed once, text only, by the real `funes index`
(parsers, chunking, redaction); E of its chunks are embedded by the real embedder (cached in
bench/out/recall_cache/). A memory of N chunks replicates those rows under fresh session ids and
chunk ids, and gives row j the vector of base row (j mod E) plus small noise (cosine ~0.94 to
its source), so faiss sees N distinct vectors with a realistic spread. Queries are 6-10 word spans
of random corpus chunks plus a few natural questions. Everything happens in temporary
FUNES_HOMEs. Pin cores with `taskset -c 0,1` to reproduce the 2-core goal.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / "bench" / "out" / "recall_cache"
QUESTIONS = [
    "why did we change the approach",
    "ENOENT no such file or directory",
    "git commit --no-verify",
    "how do we run the tests",
    "which model did we pick for embeddings",
    "fix the flaky test",
]
STAGES = ("embed", "faiss", "bm25", "fusion", "fetch", "rerank", "recency", "neighbors")


def _home(root: Path, name: str) -> Path:
    h = root / name
    (h / "home").mkdir(parents=True, exist_ok=True)
    os.environ["FUNES_HOME"] = str(h / "funes")
    os.environ["HOME"] = str(h / "home")
    return h / "funes"


def base_rows(corpus: Path, tmp: Path):
    """The corpus's chunk rows (text only), cached as Parquet."""
    import pyarrow.parquet as pq

    path = CACHE / "base_chunks.parquet"
    if path.exists():
        return pq.read_table(path)
    _home(tmp, "base")
    from funes.commands import index
    from funes.memory import Memory

    index.index(index.Options(path=str(corpus), yes=True, no_embed=True))
    table = Memory.resolve(None).chunks.dataset().to_table()
    CACHE.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return table


def base_vectors(table, n: int) -> tuple[np.ndarray, str, float]:
    """Real embeddings of the first n distinct chunks (cached); returns (vectors, model id, chunks/s)."""
    from funes import models

    model = models.embedder_id()
    path = CACHE / f"base_vectors_{n}_{model.replace('/', '_')}.npy"
    if path.exists():
        return np.load(path), model, float("nan")
    texts = table["text"].to_pylist()[:n]
    emb = models.load_embedder()
    t0 = time.perf_counter()
    vecs = np.asarray(emb.encode(texts), dtype=np.float32)
    rate = len(texts) / (time.perf_counter() - t0)
    np.save(path, vecs)
    return vecs, model, rate


def grow(table, vecs: np.ndarray, size: int, model: str) -> None:
    """Fill the current FUNES_HOME's memory with `size` replicated rows and noisy vectors."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from funes.memory import Memory

    mem = Memory.resolve(None)
    rng = np.random.default_rng(0)
    copy = 0
    while mem.chunks.count() < size:
        take = min(table.num_rows, size - mem.chunks.count())
        t = table.slice(0, take)
        t = t.set_column(0, "id", pc.binary_join_element_wise(t["id"], pa.scalar(f"r{copy}"), ""))
        t = t.set_column(2, "session_id", pc.binary_join_element_wise(t["session_id"], pa.scalar(f"-r{copy}"), ""))
        start = mem.chunks.append(t)
        src = vecs[np.arange(start, start + take) % len(vecs)]
        noisy = src + 0.35 / np.sqrt(src.shape[1]) * rng.standard_normal(src.shape).astype(np.float32)
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        mem.append_vectors(np.arange(start, start + take), t["id"].to_pylist(), noisy, model)
        copy += 1


def queries(table, n: int) -> list[str]:
    rng = np.random.default_rng(1)
    texts = table["text"].to_pylist()
    out = list(QUESTIONS)
    while len(out) < n:
        words = texts[int(rng.integers(len(texts)))].split()
        if len(words) >= 12:
            i = int(rng.integers(len(words) - 10))
            out.append(" ".join(words[i : i + int(rng.integers(6, 11))]))
    return out


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000, p)) if xs else float("nan")


def warm(retriever, qs: list[str], rounds: int = 2, **opts) -> dict:
    """p50/p95 ms of the whole recall and of each stage (first pass over the queries is warm-up);
    `opts`: RecallRequest fields to change."""
    for q in qs[:3]:
        retriever.recall(q, **opts)
    total, stages = [], {s: [] for s in STAGES}
    for _ in range(rounds):
        for q in qs:
            t0 = time.perf_counter()
            res = retriever.recall(q, **opts)
            total.append(time.perf_counter() - t0)
            for s in STAGES:
                stages[s].append(res.timings.get(s, 0.0))
    out = {"p50_ms": pct(total, 50), "p95_ms": pct(total, 95), "n": len(total)}
    out["stages_p50_ms"] = {s: round(pct(v, 50), 2) for s, v in stages.items()}
    return out


class CachedQueryVectors:
    """Stands in for the embedder with stored corpus vectors: isolates the index stages from the model."""

    def __init__(self, vecs: np.ndarray, model: str):
        self.vecs, self.model_id, self.dim = vecs, model, vecs.shape[1]

    def encode_query(self, text: str) -> np.ndarray:
        return self.vecs[sum(map(ord, text)) % len(self.vecs)]


def tiny_reranker(tmp: Path):
    """The tests' tiny cross-encoder (exercises the path only: its latency is NOT a real model's)."""
    sys.path.insert(0, str(REPO / "tests"))
    try:
        from tiny_models import build_tiny_cross_encoder
    except ImportError:
        return None
    path = tmp / "tiny-ce"
    build_tiny_cross_encoder(path)
    from funes import models

    loader = models.load_reranker
    try:
        return loader(str(path))  # the model id is a string (a local folder is one too)
    except TypeError:
        return None


def cold_cli(home: Path, q: str, runs: int = 3) -> dict:
    env = {**os.environ, "FUNES_HOME": str(home), "HOME": str(home.parent / "home")}
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "funes.cli", "recall", q], env=env, capture_output=True, text=True)
        walls.append(time.perf_counter() - t0)
        assert out.returncode == 0, out.stderr
    code = (
        "import time; t=time.perf_counter(); import funes.cli, numpy, lance, faiss; a=time.perf_counter()-t;"
        "from funes import models; t=time.perf_counter(); models.load_embedder(); b=time.perf_counter()-t;"
        "print(a, b)"
    )
    imports, embedder = map(
        float,
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.split(),
    )
    return {"p50_s": statistics.median(walls), "max_s": max(walls), "imports_s": imports, "embedder_load_s": embedder}


def refresh_costs(table, vecs, model) -> dict:
    """One turn (20 rows + vectors) appended to the current memory: incremental refresh time."""
    from funes.memory import Memory, indexes

    mem = Memory.resolve(None)
    t = table.slice(0, 20)
    import pyarrow as pa
    import pyarrow.compute as pc

    t = t.set_column(0, "id", pc.binary_join_element_wise(t["id"], pa.scalar("turn"), ""))
    t = t.set_column(2, "session_id", pc.binary_join_element_wise(t["session_id"], pa.scalar("-turn"), ""))
    start = mem.chunks.append(t)
    mem.append_vectors(np.arange(start, start + 20), t["id"].to_pylist(), vecs[:20], model)
    t0 = time.perf_counter()
    stats = indexes.refresh(mem)
    one = time.perf_counter() - t0
    t0 = time.perf_counter()
    indexes.refresh(mem)
    noop = time.perf_counter() - t0
    return {
        "one_turn_refresh_s": one,
        "noop_refresh_s": noop,
        "segments": [stats["bm25_segments"], stats["faiss_segments"]],
    }


def switch_point(vecs: np.ndarray, sizes=(10_000, 25_000, 50_000, 100_000), nq: int = 200) -> list[dict]:
    """Flat vs IVF search time (1 thread, k=30) and IVF recall@30 against exact search."""
    import faiss

    from funes.memory import vecindex

    rng = np.random.default_rng(2)
    top = max(sizes)
    src = vecs[np.arange(top) % len(vecs)]
    data = src + 0.35 / np.sqrt(src.shape[1]) * rng.standard_normal(src.shape).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    qs = vecs[rng.integers(len(vecs), size=nq)]
    out = []
    for n in sizes:
        x, ids = data[:n], np.arange(n, dtype=np.int64)
        flat = faiss.IndexFlatIP(x.shape[1])
        flat.add(x)
        faiss.omp_set_num_threads(1)
        t0 = time.perf_counter()
        exact = np.stack([flat.search(q[None], 30)[1][0] for q in qs])
        flat_ms = (time.perf_counter() - t0) / nq * 1000
        saved = vecindex.IVF_MIN
        vecindex.IVF_MIN = 0
        t0 = time.perf_counter()
        ivf = vecindex.build(x, ids)
        build_s = time.perf_counter() - t0
        vecindex.IVF_MIN = saved
        faiss.omp_set_num_threads(1)
        row = {"n": n, "flat_ms": round(flat_ms, 2), "ivf_build_s": round(build_s, 1), "nlist": ivf.nlist}
        for nprobe in sorted({8, 16, ivf.nprobe, 64}):
            ivf.nprobe = nprobe
            t0 = time.perf_counter()
            got = np.stack([ivf.search(q[None], 30)[1][0] for q in qs])
            ms = (time.perf_counter() - t0) / nq * 1000
            rec = float(np.mean([len(set(a) & set(b)) / 30 for a, b in zip(got, exact)]))
            row[f"nprobe{nprobe}"] = {"ms": round(ms, 2), "recall30": round(rec, 3)}
        out.append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--embed", type=int, default=2000, help="corpus chunks embedded for real (cached)")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument("--skip-switch", action="store_true")
    ap.add_argument("--skip-rerank", action="store_true", help="no pass with the tests' tiny cross-encoder")
    ap.add_argument("--workdir", help="keep (and reuse) the built memories here instead of a temp dir")
    ap.add_argument("--fusions", help="comma list of fusion specs: warm recall without rerank under each")
    ap.add_argument("--without-bridge", action="store_true", help="warm recall without the bridge too")
    ap.add_argument("--vector-cache", help="a bench/devset_cache.py file the real embedder reads through")
    args = ap.parse_args()
    if args.vector_cache:  # the corpus's chunks were embedded before: only queries are embedded now
        sys.path.insert(0, str(REPO / "bench"))
        import devset_cache

        devset_cache.install(Path(args.vector_cache))
    report: dict = {"cpus": len(os.sched_getaffinity(0))}
    with tempfile.TemporaryDirectory(prefix="funes-recall-bench-") as d:
        tmp = Path(args.workdir or d)
        table = base_rows(Path(args.corpus), tmp)
        vecs, model, rate = base_vectors(table, args.embed)
        report.update(base_chunks=table.num_rows, embedded=len(vecs), model=model, embed_chunks_per_s=rate)
        qs = queries(table, args.queries)
        from funes.memory import Memory, indexes
        from funes.retrieval.retriever import Retriever

        for size in [int(s) for s in args.sizes.split(",")]:
            home = _home(tmp, f"m{size}")
            mem = Memory.resolve(None)
            if mem.chunks.count() < size:
                grow(table, vecs, size, model)
            t0 = time.perf_counter()
            built = indexes.refresh(mem)
            row = {"build_s": time.perf_counter() - t0, "faiss": built["faiss_kinds"]}
            row["load_avg"] = os.getloadavg()
            row["warm_index_only"] = warm(Retriever(mem, embedder=CachedQueryVectors(vecs, model), reranker=None), qs)
            row["warm_no_rerank"] = warm(Retriever(mem, reranker=None), qs)
            for spec in args.fusions.split(",") if args.fusions else []:  # side by side, same memory
                row[f"warm_no_rerank {spec}"] = warm(Retriever(mem, reranker=None), qs, fusion=spec)
            if args.without_bridge:
                row["warm_no_rerank bridge=0"] = warm(Retriever(mem, reranker=None), qs, bridge_weight=0.0)
            ce = None if args.skip_rerank else tiny_reranker(tmp)
            if ce is not None:
                row["warm_tiny_rerank"] = warm(Retriever(mem, reranker=ce), qs)
            row.update(refresh_costs(table, vecs, model))
            if not args.skip_cold:
                row["cold_cli"] = cold_cli(home, "why did we change the parser")
            report[f"n{size}"] = row
            print(json.dumps({f"n{size}": row}, indent=1), flush=True)
        if not args.skip_switch:
            report["switch"] = switch_point(vecs)
            print(json.dumps({"switch": report["switch"]}, indent=1), flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE.parent / "recall_latency.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
