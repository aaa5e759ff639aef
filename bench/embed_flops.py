"""Embedding vs the FLOP-bound limit of this CPU: chunks/s of the shipped embedder on 2 threads,
and what the model's arithmetic allows at the GEMM rate this CPU sustains on the same threads.

Run: .venv/bin/python bench/embed_flops.py [--n 192] [--rounds 3] [--threads 2]

- FLOPs per chunk from the model's config (bundled all-MiniLM-L6-v2: 6 layers, hidden 384,
  FFN 1536) and each chunk's REAL token length L (its tokenizer, truncated at 256):
  per layer 8·L·h² (Q, K, V, output projections) + 4·L²·h (scores, weighted values) +
  4·L·h·f (FFN), multiply-add = 2 FLOPs; embeddings, norms, softmax and pooling are left out
  (they are not GEMMs and small), so the limit is generous.
- GEMM rate: fp32 matmul of the FFN's shape (2048×384 · 384×1536, output preallocated), numpy
  (OpenBLAS) and torch (when installed), the faster of the two: on `--threads` threads for the
  wall rate, on one thread for the rate per CPU-second (no thread hand-offs in it), best of
  `--rounds`.
- Embedder: `models.load_embedder()` (shipped backend) with FUNES_THREADS, `encode` of the same
  chunks, best of `--rounds`, interleaved with the GEMM measurement.
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

    a = np.random.default_rng(0).standard_normal((2048, h), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((h, f), dtype=np.float32)
    out_ = np.empty((2048, f), dtype=np.float32)
    gemm_flops = 20 * 2 * a.shape[0] * h * f
    gemms = {"numpy": lambda: [np.matmul(a, b, out=out_) for _ in range(20)]}
    try:
        import torch

        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(out_)
        gemms["torch"] = lambda: [torch.matmul(ta, tb, out=tc) for _ in range(20)]
    except ImportError:
        torch = None
    emb.encode(texts[:16])  # warm
    wall_rate, cpu_rate, run = 0.0, 0.0, []
    for _ in range(args.rounds):
        for name, fn in gemms.items():
            for threads, per_cpu in ((args.threads, False), (1, True)):
                if torch is not None and name == "torch":
                    torch.set_num_threads(threads)
                with threadpool_limits(threads):
                    w, c = _timed(fn)
                if per_cpu:
                    cpu_rate = max(cpu_rate, gemm_flops / c)
                else:
                    wall_rate = max(wall_rate, gemm_flops / w)
        w, c = _timed(lambda: emb.encode(texts))
        run.append((len(texts) / w, len(texts) / c))
    g_wall, g_cpu = wall_rate, cpu_rate
    r_wall, r_cpu = max(x[0] for x in run), max(x[1] for x in run)
    out = {
        "backend": emb.backend,
        "threads": args.threads,
        "chunks": len(texts),
        "mean_tokens": round(float(np.mean(lengths)), 1),
        "gflop_per_chunk": round(per_chunk / 1e9, 3),
        "gemm_gflops": {"wall": round(g_wall / 1e9, 1), "per_cpu_s": round(g_cpu / 1e9, 1)},
        "limit_chunks_per_s": {"wall": round(g_wall / per_chunk, 1), "per_cpu_s": round(g_cpu / per_chunk, 2)},
        "measured_chunks_per_s": {"wall": round(r_wall, 1), "per_cpu_s": round(r_cpu, 2)},
        "ratio": {"wall": round(r_wall * per_chunk / g_wall, 3), "per_cpu_s": round(r_cpu * per_chunk / g_cpu, 3)},
        "load_average": round(os.getloadavg()[0], 1),
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
