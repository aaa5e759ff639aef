"""Where the fp32 ONNX embedder's time goes: ONNX Runtime's per-node profile, summed per op type.

Run: .venv/bin/python bench/embed_profile.py [--n 64] [--threads 1 2]

The shipped export (the user's model cache; built on first use) runs the first --n corpus chunks
(bench/embed_bench.py's selection) in batches of 16 with `SessionOptions.enable_profiling`, spinning
off as funes runs it; kernel time per op type, and chunks per CPU-second and per second beside it.
The fused graph's `Attention` node holds the Q/K/V projection as well as the attention products;
`MatMul` is the output projection and the FFN.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    import onnxruntime as ort

    from embed_bench import corpus_chunks
    from funes import models
    from funes.models import export, weights
    from funes.models.runtime import OnnxModel

    emb = models.load_embedder()
    meta = export.artifacts("embed", emb.path, weights.file_sha256(weights.weights_file(emb.path)), False)
    folder = Path(meta["dir"])
    texts = corpus_chunks(args.n)
    model = OnnxModel(folder / "model.onnx", folder / "tokenizer.json", meta["inputs"], meta["max_length"])
    lengths = [len(e.ids) for e in model.tokenizer.encode_batch(texts)]
    print(f"{len(texts)} chunks, mean {np.mean(lengths):.1f} tokens (max {max(lengths)})")
    for threads in args.threads:
        opts = ort.SessionOptions()
        opts.enable_profiling = True
        opts.intra_op_num_threads = threads
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.profile_file_prefix = str(Path(tempfile.mkdtemp()) / "ort")
        model.session = ort.InferenceSession(str(folder / "model.onnx"), opts, providers=["CPUExecutionProvider"])
        model.run(texts[:16], 16)  # warm
        wall, cpu = time.perf_counter(), time.process_time()
        model.run(texts, 16)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        events = json.loads(Path(model.session.end_profiling()).read_text())
        per_op: collections.Counter = collections.Counter()
        for e in events:
            if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
                per_op[e["args"]["op_name"]] += e["dur"]
        total = sum(per_op.values())
        print(f"threads {threads}: {len(texts) / cpu:.2f} chunks per CPU-second, {len(texts) / wall:.2f}/s wall")
        for op, us in per_op.most_common(6):
            print(f"  {op:26s} {us / 1e6:7.3f} s  {100 * us / total:5.1f}%")


if __name__ == "__main__":
    main()
