"""Embedding vs the FLOP-bound limit of this CPU: chunks/s of the shipped embedder on 2 threads,
and what the model's arithmetic allows at the GEMM rate this CPU sustains on the same threads.

Run: .venv/bin/python bench/embed_flops.py [--n 192] [--rounds 3] [--threads 2] [--cosine 1000]

- FLOPs per chunk from the model's config (bundled all-MiniLM-L6-v2: 6 layers, hidden 384,
  FFN 1536) and each chunk's REAL token length L (its tokenizer, truncated at 256):
  per layer 8·L·h² (Q, K, V, output projections) + 4·L²·h (scores, weighted values) +
  4·L·h·f (FFN), multiply-add = 2 FLOPs; embeddings, norms, softmax and pooling are left out
  (they are not GEMMs and small), so the limit is generous.
- GEMM rate: fp32 matmul of the FFN's shape (2048×384 · 384×1536, output preallocated), numpy
  (OpenBLAS) and torch (when installed), the faster of the two: on `--threads` threads for the
  wall rate, on one thread for the rate per CPU-second (no thread hand-offs in it), best of
  `--rounds`.
- Embedder: `models.load_embedder()` (shipped backend) with FUNES_THREADS, on the same chunks, best
  of `--rounds`, interleaved with the GEMM measurement: its fp32 ONNX graph (what every batch ran
  before bf16, and what queries run) and, when the CPU has native bf16 and the gate passed, the bf16
  bulk path that `encode` takes for >= MIN_BATCH texts (models/bf16.py). bf16 gets its own limit too:
  the same GEMM in bf16 (torch: AMX/AVX512-BF16 through oneDNN), measured the same way.
- Agreement (`--cosine N`): the bf16 bulk path vs plain sentence-transformers fp32 torch on the first N
  chunks (as bench/embed_bench.py's 1,000) and on short queries, min / p1 / mean cosine.
Both are also given per CPU-second (process time), the load-independent form on a shared box.
Chunks: ../shared/corpus message strings as in bench/embed_bench.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

# as funes's bf16 engine does before it imports torch (models/bf16.py): idle OpenMP workers sleep
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))


def flops(length: int, h: int, f: int, layers: int) -> float:
    return layers * (8 * length * h * h + 4 * length * length * h + 4 * length * h * f)


def _timed(fn) -> tuple[float, float]:
    t, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=192)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cosine", type=int, default=1000, help="chunks for the bf16 agreement (0: skip)")
    args = ap.parse_args()
    os.environ["FUNES_THREADS"] = str(args.threads)
    from threadpoolctl import threadpool_limits
    from tokenizers import Tokenizer

    from embed_bench import corpus_chunks
    from funes import models

    texts = corpus_chunks(args.n)
    emb = models.load_embedder()
    cfg = json.loads((emb.path / "config.json").read_text())
    h, f, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    tok = Tokenizer.from_file(str(emb.path / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(emb.max_seq_length)
    lengths = [len(e.ids) for e in tok.encode_batch(texts)]
    per_chunk = float(np.mean([flops(n, h, f, layers) for n in lengths]))

    import torch

    a = np.random.default_rng(0).standard_normal((2048, h), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((h, f), dtype=np.float32)
    gemm_flops = 2 * a.shape[0] * h * f
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    out32 = np.empty((2048, f), dtype=np.float32)
    c32 = torch.from_numpy(out32)
    a16, b16 = ta.bfloat16(), tb.bfloat16()
    c16 = torch.empty(2048, f, dtype=torch.bfloat16)
    gemms = {
        ("fp32", "numpy"): (20, lambda: np.matmul(a, b, out=out32)),
        ("fp32", "torch"): (20, lambda: torch.matmul(ta, tb, out=c32)),
        ("bf16", "torch"): (100, lambda: torch.matmul(a16, b16, out=c16)),
    }
    engines = {"onnx fp32": lambda: emb._encode(texts, 64)}
    bulk = emb.bulk.get() if emb.bulk is not None else None
    if bulk is not None:
        engines["bf16 bulk"] = lambda: bulk.encode(texts)
    for fn in engines.values():
        fn()  # warm
    rates = {("fp32", "wall"): 0.0, ("fp32", "cpu"): 0.0, ("bf16", "wall"): 0.0, ("bf16", "cpu"): 0.0}
    runs: dict[str, list] = {name: [] for name in engines}
    for _ in range(args.rounds):
        for (prec, _lib), (reps, fn) in gemms.items():
            for threads, key in ((args.threads, "wall"), (1, "cpu")):
                torch.set_num_threads(threads)
                with threadpool_limits(threads):
                    w, c = _timed(lambda: [fn() for _ in range(reps)])  # noqa: B023 (called at once)
                rates[(prec, key)] = max(rates[(prec, key)], reps * gemm_flops / (w if key == "wall" else c))
        torch.set_num_threads(args.threads)
        for name, fn in engines.items():
            w, c = _timed(fn)
            runs[name].append((len(texts) / w, len(texts) / c))
    out = {
        "threads": args.threads,
        "chunks": len(texts),
        "mean_tokens": round(float(np.mean(lengths)), 1),
        "gflop_per_chunk": round(per_chunk / 1e9, 3),
        "gemm_gflops": {f"{p} {k}": round(v / 1e9, 1) for (p, k), v in rates.items()},
        "limit_chunks": {f"{p} {k}": round(v / per_chunk, 1) for (p, k), v in rates.items()},
        "engines": {},
        "load_average": round(os.getloadavg()[0], 1),
    }
    for name, got in runs.items():
        wall, cpu = max(x[0] for x in got), max(x[1] for x in got)
        row = {"chunks_per_s": round(wall, 1), "chunks_per_cpu_s": round(cpu, 2)}
        for prec in ("fp32", "bf16"):
            row[f"vs {prec} limit"] = {
                "wall": round(wall * per_chunk / rates[(prec, "wall")], 3),
                "per_cpu_s": round(cpu * per_chunk / rates[(prec, "cpu")], 3),
            }
        out["engines"][name] = row
    if bulk is not None and args.cosine:
        out["bf16_vs_fp32_torch"] = agreement(bulk, emb.path, corpus_chunks(args.cosine))
    print(json.dumps(out, indent=1))


def agreement(bulk, folder: Path, chunks: list[str]) -> dict:
    """Cosine of the bf16 bulk path vs plain fp32 sentence-transformers, on chunks and on short queries."""
    from sentence_transformers import SentenceTransformer

    from funes.models import probes

    st = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    queries = [*probes.QUERIES, "ok", "db", "why", "lance kmeans", "fix the flaky test", "ユーザー ログイン"]
    out = {}
    for name, texts in (("chunks", chunks), ("queries", queries)):
        ref = st.encode(texts, batch_size=64, normalize_embeddings=True)
        cos = (bulk.encode(texts) * ref).sum(1)
        out[name] = {
            "n": len(texts),
            "min": round(float(cos.min()), 5),
            "p1": round(float(np.percentile(cos, 1)), 5),
            "mean": round(float(cos.mean()), 6),
        }
    return out


if __name__ == "__main__":
    main()
