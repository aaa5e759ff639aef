"""Choose an inference backend for a model: the ONNX export the policy asks for, else torch."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from funes.errors import FunesError

BACKENDS = ("auto", "onnx-int8", "onnx", "torch")
# what "auto" means, per model kind (bench/README.md "## Embedder" has the figures behind it): dynamic int8
# embeddings fell below 0.99 cosine of fp32 on real chunks, so embedders default to fp32 ONNX; a
# cross-encoder only has to keep the ranking, which its int8 gate checks on every export. An "auto"
# embedder on a CPU with native bf16 also runs bulk passage batches in bf16 behind its own gate
# (models/bf16.py, models/embedder.py Bulk); FUNES_EMBED_BACKEND=onnx keeps every batch on fp32 ONNX
AUTO = {"embed": "onnx", "rerank": "onnx-int8"}
log = logging.getLogger("funes.models")


@dataclass(frozen=True)
class Choice:
    backend: str  # "onnx-int8" | "onnx" | "torch"
    onnx_file: Path | None  # None for torch
    meta: dict | None  # the export's meta.json, None for torch
    note: str  # why this is not the backend that was asked for ("" when it is)


def unloaded(*_args: object) -> Any:
    """The run function of a model object built without a model (a programming error, said loudly)."""
    raise RuntimeError("this model object was built without a loaded model")


def requested(env_var: str) -> str:
    want = os.environ.get(env_var, "").strip().lower() or "auto"
    if want not in BACKENDS:
        raise FunesError(f"{env_var}={want} is not a backend", hint=f"use one of: {', '.join(BACKENDS)}")
    return want


def choose(kind: str, folder: Path, sha: str, want: str, label: str) -> Choice:
    """Build the export if needed (once); any failure on the ONNX side falls back to torch, with a note."""
    want = AUTO[kind] if want == "auto" else want
    if want == "torch":
        return Choice("torch", None, None, "")
    from funes.models import export

    int8 = want == "onnx-int8"
    meta = export.read_meta(export.export_dir(kind, sha))
    try:
        if meta is None or (int8 and "int8_gate" not in meta):
            # a one-time notice on stderr (logging's last-resort handler prints the bare message)
            log.warning(
                "funes: exporting %s to ONNX for fast CPU inference (%s; once per model, ~10-30 s)…", label, want
            )
            meta = export.artifacts(kind, folder, sha, int8=int8)
    except (export.ExportFailed, ImportError, OSError) as exc:
        log.warning("falling back to torch for %s: %s", label, exc)
        return Choice("torch", None, None, f"ONNX unavailable ({exc})")
    return pick(meta, want)


def pick(meta: dict, want: str) -> Choice:
    """int8 when asked for and it passed its gate; else the fp32 export."""
    out = Path(meta["dir"])
    if want == "onnx-int8" and meta.get("int8"):
        return Choice("onnx-int8", out / meta["int8"], meta, "")
    note = f"int8 failed its agreement gate ({meta.get('int8_gate')})" if want == "onnx-int8" else ""
    return Choice("onnx", out / meta["fp32"], meta, note)
