"""bf16 passage encoding for CPUs with native bf16 (AMX / AVX512-BF16): torch, behind a probe gate.

Why torch and bf16: on this project's 2-core box (AMX) a bf16 GEMM runs ~10x the fp32 rate, and the
fp32 ONNX graph spends most of its time in fp32 MatMul/Attention (bench/README.md "Embedder",
2026-12-01 "bf16 bulk passages"). ONNX Runtime's CPU provider has no x86 bf16 GEMM, so the bulk path
runs the sentence-transformers pipeline itself with bf16 weights. Only bulk passage batches use it
(`MIN_BATCH`): queries and hook-sized batches stay on the fp32 ONNX graph, so recall never imports
torch. The gate compares bf16 with fp32 torch on the fixed probe passages and queries (every cosine
>= 0.99) once per export, and is remembered in the export's meta.json as `bf16_gate`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from funes.models import probes

if TYPE_CHECKING:
    import numpy as np

# fewer texts than this in one call are left to the ONNX graph: importing torch and loading the model
# costs a few CPU-seconds, which bf16 earns back only over ~100 chunks (and embed_rows calls with 256)
MIN_BATCH = 128
BATCH = 32  # measured best on 2 cores: 16-32 beat 64 (bench/README.md)
MIN_COSINE = 0.99  # bf16 vs fp32 torch, every probe passage and query
_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_note() -> str:
    """ "" when this CPU computes bf16 natively, else why the bulk path stays fp32 (no ML import)."""
    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "bf16 needs a CPU with AVX512-BF16 or AMX (no /proc/cpuinfo here)"
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    return "" if any(f in flags for f in _FLAGS) else "this CPU has no native bf16 (AVX512-BF16 or AMX)"


def torch_version() -> str:
    """The installed torch's version, read from its metadata (no import)."""
    from importlib import metadata

    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return ""


class Bf16Model:
    """The model folder's sentence-transformers pipeline with bf16 weights, on this process's threads."""

    def __init__(self, folder: Path, threads: int | None):
        if "torch" not in sys.modules:  # idle OpenMP workers must sleep, not spin: spinning burns CPU-seconds
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # no "Loading weights" bar in the middle of `funes index` output
        if threads:
            torch.set_num_threads(threads)
        self.torch = torch
        self.st = SentenceTransformer(
            str(folder), device="cpu", local_files_only=True, model_kwargs={"dtype": torch.bfloat16}
        )

    def encode(self, texts: list[str], batch_size: int = BATCH) -> np.ndarray:
        with self.torch.inference_mode():
            out = self.st.encode(
                texts, batch_size=batch_size, convert_to_numpy=False, convert_to_tensor=True, show_progress_bar=False
            )
            # normalised in fp32: a bf16 norm would cost the vector its last digits
            return self.torch.nn.functional.normalize(out.float(), dim=1).numpy()


def gate(model: Bf16Model, folder: Path) -> dict:
    """bf16 vs fp32 torch of the same folder on the probe texts; passes when every cosine >= MIN_COSINE."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    texts = probes.PASSAGES + probes.QUERIES
    fp32 = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    ref = np.asarray(fp32.encode(texts, batch_size=8, normalize_embeddings=True), dtype=np.float32)
    got = model.encode(texts, batch_size=8)
    cos = (ref * got).sum(1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(got, axis=1))
    return {
        "min_cosine": round(float(cos.min()), 5),
        "mean_cosine": round(float(cos.mean()), 5),
        "threshold": MIN_COSINE,
        "passed": bool(cos.min() >= MIN_COSINE),
    }
