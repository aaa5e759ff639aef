"""Embedder benchmark: chunks/s per backend on the same real chunks, speed-ups vs plain fp32, cosine agreement.

    .venv/bin/python bench/embed_bench.py [--n 1000] [--speed-n 192] [--rounds 3] [--threads 2]
        [--reranker cross-encoder/ms-marco-MiniLM-L6-v2 | --proxy-reranker | --tiny-reranker]

Chunks come from ../shared/corpus or $FUNES_BENCH_CORPUS (every message string, split by
funes.ingest.chunk.split, kept when 200-1200 chars, shuffled with a fixed seed). The reference is plain sentence-transformers fp32 torch.
Speed is the best of --rounds interleaved passes over the first --speed-n chunks (the machine may be
shared: interleaving keeps the ratios fair); cosine agreement is over all --n chunks. The ONNX exports
are built with funes.models.export into a temporary cache, exactly as funes builds them.
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
import time
from pathlib import Path
from unittest import mock

import numpy as np

REPO = Path(__file__).resolve().parents[1]
# a worktree's parent has no shared/ beside it: FUNES_BENCH_CORPUS names the corpus there
CORPUS = Path(os.environ.get("FUNES_BENCH_CORPUS") or REPO.parent / "shared" / "corpus")


def corpus_chunks(n: int, seed: int = 1, lo: int = 200, hi: int = 1200) -> list[str]:
    from funes.ingest.chunk import split

    out: list[str] = []
    for path in sorted(CORPUS.glob("*/*.jsonl")):
        for line in path.open(encoding="utf-8", errors="replace"):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            for text in _strings(record.get("message") or record.get("payload") or {}):
                out.extend(p for p in split(text) if lo <= len(p) <= hi)
    random.Random(seed).shuffle(out)
    if len(out) < n:
        sys.exit(f"only {len(out)} chunks of {lo}-{hi} chars in {CORPUS}")
    return out[:n]


def _strings(obj):
    """Every string in a transcript record, skipping opaque blobs (signatures, encrypted reasoning, images)."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if key not in ("signature", "encrypted_content", "data", "id"):
                yield from _strings(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _strings(value)


def timed(fn, chunks):
    """(result, wall seconds, CPU seconds of this process): CPU time is what a shared box cannot inflate."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(chunks)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def embedder_backends(cache: Path, batch: int):
    """name -> encode(list[str]) for each backend, all on the bundled MiniLM."""
    import torch
    from sentence_transformers import SentenceTransformer

    from funes.models import export, locate, weights
    from funes.models.runtime import OnnxModel

    folder = locate.wheel_dir(locate.DEFAULT_EMBED_MODEL)
    sha = weights.file_sha256(weights.weights_file(folder))
    meta = export.artifacts("embed", folder, sha, int8=False)
    fused = Path(meta["dir"])
    plain = cache / "plain"
    plain.mkdir()
    with mock.patch.object(export, "_FUSABLE", set()):  # the same export, without ONNX Runtime's fusions
        export._export_embedder(folder, plain)
    export._quantize(fused / "model.onnx", cache / "int8.onnx")
    export._quantize(plain / "model.onnx", cache / "int8-plain.onnx")
    st = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    tok = fused / "tokenizer.json"
    args = (meta["inputs"], meta["max_length"])
    models = {
        "onnx fp32": OnnxModel(plain / "model.onnx", tok, *args),
        "onnx fp32 fused": OnnxModel(fused / "model.onnx", tok, *args),
        "onnx int8": OnnxModel(cache / "int8-plain.onnx", tok, *args),
        "onnx int8 fused": OnnxModel(cache / "int8.onnx", tok, *args),
    }

    def torch_plain(chunks):  # input order, one call per batch: no global length sort
        return np.concatenate(
            [
                st.encode(chunks[i : i + batch], batch_size=batch, normalize_embeddings=True)
                for i in range(0, len(chunks), batch)
            ]
        )

    def torch_sorted(chunks):
        return st.encode(chunks, batch_size=batch, normalize_embeddings=True)

    backends = {"torch fp32 (plain)": torch_plain, "torch fp32 sorted": torch_sorted}
    backends.update({name: (lambda m: lambda chunks: m.run(chunks, batch))(m) for name, m in models.items()})  # noqa: B023 (bound by the outer lambda)
    return backends, torch


def bench_embedder(args) -> dict:
    chunks = corpus_chunks(args.n)
    with tempfile.TemporaryDirectory() as tmp:
        backends, torch = embedder_backends(Path(tmp), args.batch)
    torch.set_num_threads(args.threads)
    reference = backends["torch fp32 (plain)"](chunks)
    results = {}
    for name, fn in backends.items():
        vectors = reference if name == "torch fp32 (plain)" else fn(chunks)
        cos = (vectors * reference).sum(1)
        results[name] = {
            "min_cos": float(cos.min()),
            "p1_cos": float(np.percentile(cos, 1)),
            "mean_cos": float(cos.mean()),
            "best_s": float("inf"),
            "best_cpu_s": float("inf"),
        }
    speed = chunks[: args.speed_n]
    for _ in range(args.rounds):
        for name, fn in backends.items():
            _, seconds, cpu = timed(fn, speed)
            results[name]["best_s"] = min(results[name]["best_s"], seconds)
            results[name]["best_cpu_s"] = min(results[name]["best_cpu_s"], cpu)
    plain = results["torch fp32 (plain)"]
    base, base_cpu = len(speed) / plain["best_s"], len(speed) / plain["best_cpu_s"]
    for row in results.values():
        row["chunks_per_s"] = len(speed) / row.pop("best_s")
        row["chunks_per_cpu_s"] = len(speed) / row.pop("best_cpu_s")
        row["speedup"] = row["chunks_per_s"] / base
        row["cpu_speedup"] = row["chunks_per_cpu_s"] / base_cpu
    return {
        "chunks": len(chunks),
        "speed_chunks": len(speed),
        "rounds": args.rounds,
        "threads": args.threads,
        "mean_chars": float(np.mean([len(c) for c in chunks])),
        "load_average": os.getloadavg(),
        "backends": results,
    }


def load_times(threads: int) -> dict:
    """Fresh-process load_embedder() per backend (export cache warm), and the weights hash it skips."""
    from funes.models import locate, weights

    out = {}
    code = (
        "import time; t=time.perf_counter(); import funes.models as m; e=m.load_embedder(); "
        "print(time.perf_counter()-t, e.load_seconds, e.backend)"
    )
    for backend in ("onnx", "torch"):
        env = dict(os.environ, FUNES_EMBED_BACKEND=backend, FUNES_THREADS=str(threads))
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True)  # warm caches
        line = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        total, load, used = line.stdout.split()
        out[used] = {"process_s": float(total), "load_embedder_s": float(load)}
    path = weights.weights_file(locate.wheel_dir(locate.DEFAULT_EMBED_MODEL))
    start = time.perf_counter()
    weights.sha256_file(path)
    out["sha256_full_s"] = time.perf_counter() - start
    start = time.perf_counter()
    weights.known_sha256(path)
    out["sha256_cached_s"] = time.perf_counter() - start
    return out


def bench_reranker(model: str, args, lists: int = 10, per_list: int = 30) -> dict:
    """Torch CrossEncoder fp32 vs the ONNX exports on 30-candidate lists: speed, Spearman, top-1."""
    from funes.models import export, locate, weights
    from funes.models.runtime import OnnxModel

    chunks = corpus_chunks(lists * per_list, seed=7)
    rng = random.Random(3)
    work = []
    for i in range(lists):
        candidates = chunks[i * per_list : (i + 1) * per_list]
        words = rng.choice(candidates).split()
        work.append((" ".join(words[:8]), candidates))
    folder = locate.resolve(locate.normalise(model), "--reranker")
    sha = weights.file_sha256(weights.weights_file(folder))
    meta = export.artifacts("rerank", folder, sha, int8=True)
    import torch
    from sentence_transformers import CrossEncoder

    torch.set_num_threads(args.threads)
    ce = CrossEncoder(str(folder), device="cpu", max_length=256, local_files_only=True)
    runs = {
        "torch fp32": lambda q, c: ce.predict(
            [(q, p) for p in c], batch_size=32, activation_fn=torch.nn.Identity(), show_progress_bar=False
        )
    }
    int8_file = Path(meta["dir"]) / (meta["int8"] or "")
    if not meta["int8"]:  # failed its gate: measure it anyway, and say so
        int8_file = Path(meta["dir"]) / "bench-int8.onnx"
        export._quantize(Path(meta["dir"]) / "model.onnx", int8_file)
    for name, file in (("onnx fp32", Path(meta["dir"]) / "model.onnx"), ("onnx int8", int8_file)):
        m = OnnxModel(file, Path(meta["dir"]) / "tokenizer.json", meta["inputs"], 256)
        runs[name] = (lambda m: lambda q, c: m.run([(q, p) for p in c], 32)[:, 0])(m)  # noqa: B023 (bound by the outer lambda)
    ref = [np.asarray(runs["torch fp32"](q, c)) for q, c in work]
    out = {"model": model, "int8_gate": meta.get("int8_gate"), "lists": lists, "per_list": per_list}
    for name, fn in runs.items():
        best, scores = float("inf"), None
        for _ in range(args.rounds):
            start = time.perf_counter()
            scores = [np.asarray(fn(q, c)) for q, c in work]
            best = min(best, time.perf_counter() - start)
        rhos = [export.spearman(r, s) for r, s in zip(ref, scores)]
        out[name] = {
            "ms_per_list": 1000 * best / lists,
            "min_spearman": min(rhos),
            "mean_spearman": float(np.mean(rhos)),
            "top1": float(np.mean([r.argmax() == s.argmax() for r, s in zip(ref, scores)])),
        }
    base = out["torch fp32"]["ms_per_list"]
    for name in runs:
        out[name]["speedup"] = base / out[name]["ms_per_list"]
    return out


def build_proxy_cross_encoder(path: Path) -> Path:
    """A stand-in with the real ms-marco-MiniLM-L6-v2's shapes (BERT, 6 layers, 384 wide, 12 heads): the
    bundled all-MiniLM-L6-v2 encoder under a seeded one-logit head. Its latency stands in for the real
    cross-encoder's; its scores rank nothing, so its agreement figures only bound quantisation noise."""
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    from funes.models import locate

    source = str(locate.wheel_dir(locate.DEFAULT_EMBED_MODEL))
    torch.manual_seed(0)
    BertForSequenceClassification.from_pretrained(source, num_labels=1).save_pretrained(str(path))
    AutoTokenizer.from_pretrained(source).save_pretrained(str(path))
    return path


def print_embedder(res: dict) -> None:
    print(
        f"embedder: all-MiniLM-L6-v2, {res['chunks']} chunks (mean {res['mean_chars']:.0f} chars) for cosine, "
        f"speed = best of {res['rounds']} on {res['speed_chunks']}, {res['threads']} threads"
    )
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in res['load_average'])}")
    print(
        f"{'backend':22s} {'chunks/s':>9s} {'vs plain':>9s} {'per CPU-s':>10s} {'vs plain':>9s} {'min cos':>8s} "
        f"{'p1 cos':>8s} {'mean cos':>9s}"
    )
    for name, r in res["backends"].items():
        print(
            f"{name:22s} {r['chunks_per_s']:9.1f} {r['speedup']:8.2f}x {r['chunks_per_cpu_s']:10.2f} "
            f"{r['cpu_speedup']:8.2f}x {r['min_cos']:8.4f} {r['p1_cos']:8.4f} {r['mean_cos']:9.5f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--speed-n", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--reranker", help="cross-encoder id (HF cache) or folder to measure as well")
    ap.add_argument(
        "--proxy-reranker",
        action="store_true",
        help="measure a cross-encoder with the default reranker's shapes built from the bundled MiniLM",
    )
    ap.add_argument("--tiny-reranker", action="store_true", help="measure the tests' tiny cross-encoder")
    ap.add_argument("--skip-embedder", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    os.environ["FUNES_THREADS"] = str(args.threads)
    os.environ["FUNES_MODEL_CACHE"] = tempfile.mkdtemp(prefix="funes-bench-")  # exports built as funes builds them
    report = {}
    if not args.skip_embedder:
        report["embedder"] = bench_embedder(args)
        print_embedder(report["embedder"])
        report["load"] = load_times(args.threads)
        print("load:", json.dumps(report["load"], indent=None))
    model = args.reranker
    if args.tiny_reranker:
        sys.path.insert(0, str(REPO / "tests"))
        from tiny_models import build_tiny_cross_encoder

        model = str(build_tiny_cross_encoder(Path(tempfile.mkdtemp()) / "tiny-ce"))
    if args.proxy_reranker:
        model = str(build_proxy_cross_encoder(Path(tempfile.mkdtemp()) / "proxy-ce"))
    if model:
        report["reranker"] = bench_reranker(model, args)
        print("reranker:", json.dumps(report["reranker"], indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    shutil.rmtree(os.environ["FUNES_MODEL_CACHE"], ignore_errors=True)


if __name__ == "__main__":
    main()
