"""The reranker: a cross-encoder (pinned default, from the HF cache) scoring (query, passage) pairs as raw logits."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from funes.errors import FunesError
from funes.models import backend as backends
from funes.models import locate, weights

if TYPE_CHECKING:
    import numpy as np

DEFAULT_MAX_LENGTH = 256  # tokens per (query, passage) pair; the passage side is cut first


@dataclass
class Reranker:
    model_id: str
    backend: str  # "onnx-int8" | "onnx" | "torch"
    path: Path
    max_length: int
    load_seconds: float
    note: str = ""
    _score: Callable[[list[tuple[str, str]], int], np.ndarray] = field(default=backends.unloaded, repr=False)

    def score(self, query: str, passages: list[str], batch_size: int = 32) -> np.ndarray:
        """One raw logit per passage (float32, input order); higher means more relevant."""
        import numpy as np

        if len(passages) == 0:
            return np.zeros(0, dtype=np.float32)
        pairs = [(query, p) for p in passages]
        return np.asarray(self._score(pairs, batch_size), dtype=np.float32).reshape(-1)


_LOADED: dict[tuple[str, str, int], Reranker | None] = {}
_BROKEN: dict[str, str] = {}  # model id -> why it was found but would not load


def max_length() -> int:
    raw = os.environ.get("FUNES_RERANK_MAX_LENGTH", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_LENGTH


def load_reranker(model_id: str | None = None) -> Reranker | None:
    """The configured (or given) cross-encoder, once per process; None when off, absent or broken."""
    mid = locate.normalise(model_id) if model_id else locate.reranker_id()
    if mid is None:
        return None
    key = (mid, backends.requested("FUNES_RERANK_BACKEND"), max_length())
    if key not in _LOADED:
        try:
            folder = locate.resolve(mid, "FUNES_RERANK_MODEL")
        except FunesError:
            return None  # not cached yet: not remembered, so a later download is picked up
        try:
            _LOADED[key] = _load(mid, folder, key[1], key[2])
        except Exception as exc:  # recall works without a reranker; status says why
            backends.log.warning("cross-encoder %s failed to load: %s", mid, exc)
            _BROKEN[mid] = f"{type(exc).__name__}: {exc}"
            _LOADED[key] = None
    return _LOADED[key]


def _load(model_id: str, folder: Path, want: str, length: int) -> Reranker:
    start = time.perf_counter()
    sha = weights.file_sha256(weights.weights_file(folder))
    choice = backends.choose("rerank", folder, sha, want, model_id)
    from funes.models.runtime import OnnxModel

    if choice.onnx_file is not None and choice.meta is not None:
        try:
            meta = choice.meta
            model = OnnxModel(choice.onnx_file, Path(meta["dir"]) / "tokenizer.json", meta["inputs"], length)
            return Reranker(
                model_id,
                choice.backend,
                folder,
                length,
                time.perf_counter() - start,
                choice.note,
                lambda pairs, bs: model.run(pairs, bs)[:, 0],
            )
        except Exception as exc:
            backends.log.warning("ONNX Runtime failed for %s, using torch: %s", model_id, exc)
            choice = backends.Choice("torch", None, None, f"ONNX Runtime failed ({exc})")
    return _torch(model_id, folder, length, choice.note, start)


def _torch(model_id: str, folder: Path, length: int, note: str, start: float) -> Reranker:
    import torch
    from sentence_transformers import CrossEncoder

    from funes.models.runtime import threads

    if n := threads():
        torch.set_num_threads(n)
    ce = CrossEncoder(str(folder), device="cpu", max_length=length, local_files_only=True)

    def score(pairs: list[tuple[str, str]], batch_size: int) -> np.ndarray:
        return ce.predict(
            pairs,
            batch_size=batch_size,
            activation_fn=torch.nn.Identity(),
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    return Reranker(model_id, "torch", folder, length, time.perf_counter() - start, note, score)


def reranker_status() -> tuple[str | None, str]:
    """(model id or None, one line saying what recall will do); imports no ML library."""
    mid = locate.reranker_id()
    if mid is None:
        return None, "none: reranking is off (FUNES_RERANK=off); recall uses the fused order"
    loaded = next((r for (m, _, _), r in _LOADED.items() if m == mid and r is not None), None)
    if loaded is not None:
        return mid, f"{mid} ({loaded.backend})"
    if mid in _BROKEN:
        return None, f"none: {mid} failed to load ({_BROKEN[mid]}); recall uses the fused order"
    folder = Path(mid) if not locate.is_hf_id(mid) else locate.cached_snapshot(mid)
    if folder is None:
        return None, (
            f"none: {mid} is not in the HF cache ({locate.hf_cache_dir()}); recall uses the fused "
            f"order — run `hf download {mid}` to enable"
        )
    if not (folder / "config.json").is_file():
        return None, (
            f"none: {mid} is not a model folder; recall uses the fused order — point "
            "FUNES_RERANK_MODEL at a saved cross-encoder"
        )
    return mid, f"{mid} ({_expected_backend(folder)})"


def _expected_backend(folder: Path) -> str:
    """The backend a load would pick, from the export cache alone (never hashes, never imports ML)."""
    from funes.models import export

    want = backends.requested("FUNES_RERANK_BACKEND")
    want = backends.AUTO["rerank"] if want == "auto" else want
    try:
        sha = weights.known_sha256(weights.weights_file(folder))
    except (FunesError, OSError):
        sha = None
    meta = export.read_meta(export.export_dir("rerank", sha)) if sha else None
    if want == "torch" or meta is None or (want == "onnx-int8" and "int8_gate" not in meta):
        return "torch" if want == "torch" else "not loaded yet"
    return backends.pick(meta, want).backend
