"""The embedder: a pinned or configured sentence-transformers model that turns texts into unit vectors."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from funes.models import backend as backends
from funes.models import bf16, locate, prompts, weights

if TYPE_CHECKING:
    import numpy as np


@dataclass
class Embedder:
    model_id: str
    dim: int
    backend: str  # "onnx-int8" | "onnx" | "torch"
    path: Path  # the model folder the weights came from
    max_seq_length: int  # tokens; longer texts are truncated, as the model itself does
    load_seconds: float
    note: str = ""  # why the backend is not the one asked for ("" when it is)
    _encode: Callable[[list[str], int], np.ndarray] = field(default=backends.unloaded, repr=False)
    query_prefix: str = ""  # models/prompts.py: what an asymmetric model expects before a query
    passage_prefix: str = ""  # ... and before a stored text (chunks are stored without it)
    bulk: Bulk | None = field(default=None, repr=False)  # bf16 for bulk passage batches, when offered

    @property
    def bulk_backend(self) -> str:
        """ "torch-bf16" once bulk batches run in bf16 (models/bf16.py), else "" (all on `backend`)."""
        return "torch-bf16" if self.bulk is not None and self.bulk.model is not None else ""

    @property
    def bulk_note(self) -> str:
        """Why bulk batches stay on `backend` ("" when bf16 runs them or has not been tried yet)."""
        return self.bulk.note if self.bulk is not None else ""

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """Passages: float32 (n, dim), L2-normalised, in input order."""
        texts = [self.passage_prefix + t for t in texts] if self.passage_prefix else list(texts)
        return self._run(texts, batch_size, passages=True)

    def encode_query(self, text: str) -> np.ndarray:
        return self._run([self.query_prefix + text], 1)[0]

    def _run(self, texts: list[str], batch_size: int, passages: bool = False) -> np.ndarray:
        import numpy as np

        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        # by the call's size alone, so a text's vector never depends on what this process embedded before
        model = self.bulk.get() if passages and self.bulk is not None and len(texts) >= bf16.MIN_BATCH else None
        if model is not None:
            return np.ascontiguousarray(model.encode(texts, min(batch_size, bf16.BATCH)), dtype=np.float32)
        return np.ascontiguousarray(self._encode(texts, batch_size), dtype=np.float32)


class Bulk:
    """The bf16 engine for bulk passage batches: loaded, and gated once per export, on first use."""

    def __init__(self, folder: Path, export_dir: Path, note: str = ""):
        self.folder, self.export_dir = folder, export_dir
        self.model: bf16.Bf16Model | None = None
        self.note = note  # set: bf16 is not used, and this says why
        self.tried = bool(note)

    def get(self) -> bf16.Bf16Model | None:
        if not self.tried:
            self.tried = True
            try:
                self.model, self.note = self._load()
            except Exception as exc:  # a broken torch must not stop indexing: the ONNX graph still works
                self.note = f"bf16 failed to load ({type(exc).__name__}: {exc})"
            if self.note:
                backends.log.warning("funes: embedding passages in fp32: %s", self.note)
        return self.model

    def _load(self) -> tuple[bf16.Bf16Model | None, str]:
        from funes.models import export
        from funes.models.runtime import threads

        version = bf16.torch_version()  # a verdict holds for the kernels it was measured with
        verdict = (export.read_meta(self.export_dir) or {}).get("bf16_gate")
        if verdict is None or verdict.get("torch") != version:
            verdict = None
        elif not verdict.get("passed"):
            return None, f"bf16 failed its agreement gate ({verdict})"  # known: torch is not even imported
        model = bf16.Bf16Model(self.folder, threads())
        if verdict is None:
            verdict = {**bf16.gate(model, self.folder), "torch": version}
            export.record(self.export_dir, "bf16_gate", verdict)
        return (model, "") if verdict["passed"] else (None, f"bf16 failed its agreement gate ({verdict})")


_LOADED: dict[tuple[str, str], Embedder] = {}


def load_embedder(model_id: str | None = None) -> Embedder:
    """The configured (or given) embedder, loaded once per process; weights checked before use."""
    mid = locate.normalise(model_id) if model_id else locate.embedder_id()
    want = backends.requested("FUNES_EMBED_BACKEND")
    if (mid, want) not in _LOADED:
        _LOADED[(mid, want)] = _load(mid, want)
    return _LOADED[(mid, want)]


def _load(model_id: str, want: str) -> Embedder:
    start = time.perf_counter()
    folder = locate.resolve(model_id, "FUNES_EMBED_MODEL")
    if model_id in locate.PINNED_SHA256:
        sha = weights.verify(folder, locate.PINNED_SHA256[model_id], model_id, locate.reinstall_hint(model_id))
    else:
        sha = weights.file_sha256(weights.weights_file(folder))
    choice = backends.choose("embed", folder, sha, want, model_id)
    emb = None
    if choice.onnx_file is not None:
        try:
            emb = _onnx(model_id, folder, choice, start)
        except Exception as exc:  # a broken runtime must not stop indexing: torch still works
            backends.log.warning("ONNX Runtime failed for %s, using torch: %s", model_id, exc)
            choice = backends.Choice("torch", None, None, f"ONNX Runtime failed ({exc})")
    emb = emb or _torch(model_id, folder, choice.note, start)
    if want == "auto" and emb.backend == "onnx" and choice.meta is not None:
        emb.bulk = Bulk(folder, Path(choice.meta["dir"]), bf16.cpu_note())
    emb.query_prefix, emb.passage_prefix = prompts.prompts(folder, model_id)
    return emb


def _onnx(model_id: str, folder: Path, choice: backends.Choice, start: float) -> Embedder:
    from funes.models.runtime import OnnxModel

    meta, onnx_file = choice.meta, choice.onnx_file
    if meta is None or onnx_file is None:
        raise ValueError(f"no ONNX export was chosen for {model_id}")
    model = OnnxModel(onnx_file, Path(meta["dir"]) / "tokenizer.json", meta["inputs"], meta["max_length"])
    return Embedder(
        model_id,
        meta["dim"],
        choice.backend,
        folder,
        meta["max_length"],
        time.perf_counter() - start,
        choice.note,
        model.run,
    )


def _torch(model_id: str, folder: Path, note: str, start: float) -> Embedder:
    import torch
    from sentence_transformers import SentenceTransformer

    from funes.models.runtime import threads

    if n := threads():
        torch.set_num_threads(n)
    st = SentenceTransformer(str(folder), device="cpu", local_files_only=True)

    def encode(texts: list[str], batch_size: int) -> np.ndarray:
        return st.encode(
            texts, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
        )

    dim = int(encode(["dimension probe"], 1).shape[1])
    return Embedder(
        model_id, dim, "torch", folder, int(st.max_seq_length or 0), time.perf_counter() - start, note, encode
    )


def embedder_status() -> str:
    """How the configured embedder runs, from the export cache alone (never hashes, never imports ML)."""
    from funes.errors import FunesError
    from funes.models import export

    want = backends.requested("FUNES_EMBED_BACKEND")
    if want == "torch":
        return "torch fp32"
    try:
        folder = locate.resolve(locate.embedder_id(), "FUNES_EMBED_MODEL")
        sha = weights.known_sha256(weights.weights_file(folder))
    except (FunesError, OSError):
        sha = None
    meta = export.read_meta(export.export_dir("embed", sha)) if sha else None
    if meta is None:
        return "not loaded yet"
    if want != "auto":
        return backends.pick(meta, want).backend
    if note := bf16.cpu_note():
        return f"onnx; passages stay fp32: {note}"
    verdict = meta.get("bf16_gate")
    if verdict is None or verdict.get("torch") != bf16.torch_version():
        return "onnx; bulk passages bf16 once its gate passes (checked on the first bulk batch)"
    if verdict.get("passed"):
        return f"onnx; bulk passages torch-bf16 (gate: min cosine {verdict.get('min_cosine')})"
    return f"onnx; passages stay fp32: bf16 failed its agreement gate (min cosine {verdict.get('min_cosine')})"
