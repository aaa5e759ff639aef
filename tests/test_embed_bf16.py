"""Bulk passage batches in bf16 (models/bf16.py) on the real MiniLM: gated, close to fp32, never for queries."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from funes import models
from funes.models import bf16, embedder, export

pytestmark = pytest.mark.skipif(bool(bf16.cpu_note()), reason=bf16.cpu_note() or "native bf16")

BASE = [
    "why did we change the approach to indexing vectors",
    '[tool_use Bash] {"command": "pytest -q tests/test_index.py"}',
    "Traceback (most recent call last):\n  File \"run.py\", line 3, in <module>\nKeyError: 'vector'",
    "def stitch(a, b):\n    for k in range(min(len(a), len(b), 150), 0, -1):\n        if a[-k:] == b[:k]:\n"
    "            return a + b[k:]\n    return a + b",
    "The memory is an append-only Lance dataset; recall fuses BM25 and vector hits, then reranks them.",
    "ok",
]
BULK = [f"{text} (note {i})" for i in range(bf16.MIN_BATCH // len(BASE) + 1) for text in BASE][: bf16.MIN_BATCH]


def test_bulk_batches_run_in_bf16_behind_a_recorded_gate_and_agree_with_fp32(minilm):
    assert minilm.backend == "onnx" and minilm.bulk is not None and minilm.bulk_note == ""
    small = minilm.encode(BASE)  # under MIN_BATCH, before any bulk batch: the fp32 graph, exactly
    np.testing.assert_array_equal(small, minilm._encode(BASE, 64))
    vectors = minilm.encode(BULK)
    np.testing.assert_array_equal(minilm.encode(BASE), small)  # the call's size decides, not the history
    np.testing.assert_array_equal(minilm.encode_query(BASE[0]), minilm._encode(BASE[:1], 1)[0])  # queries: ONNX
    assert minilm.bulk_backend == "torch-bf16", minilm.bulk_note
    assert vectors.dtype == np.float32 and vectors.shape == (len(BULK), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cos = (vectors * minilm._encode(BULK, 64)).sum(1)
    assert cos.min() >= 0.999  # the bound is 0.99; MiniLM in bf16 keeps ~0.9999
    verdict = export.read_meta(minilm.bulk.export_dir)["bf16_gate"]
    assert verdict["passed"] and verdict["min_cosine"] >= 0.99 and verdict["torch"] == bf16.torch_version()
    assert "bulk passages torch-bf16" in models.embedder_status()  # what `funes status` prints


def test_a_failed_gate_keeps_bulk_on_onnx_until_torch_changes(minilm, tmp_path):
    minilm.encode(BULK)  # the real export has a verdict
    fake = tmp_path / minilm.bulk.export_dir.name
    fake.mkdir()
    shutil.copy(minilm.bulk.export_dir / "meta.json", fake / "meta.json")
    failed = {"min_cosine": 0.5, "threshold": 0.99, "passed": False, "torch": bf16.torch_version()}
    export.record(fake, "bf16_gate", failed)
    bulk = embedder.Bulk(minilm.path, fake)
    assert bulk.get() is None and "failed its agreement gate" in bulk.note
    assert bulk.model is None
    # a verdict measured under another torch is measured again (and this one passes)
    export.record(fake, "bf16_gate", {**failed, "torch": "0.0"})
    again = embedder.Bulk(minilm.path, fake)
    assert again.get() is not None and again.note == ""
    assert json.loads((fake / "meta.json").read_text())["bf16_gate"]["passed"]


def test_explicit_onnx_and_no_bf16_cpu_keep_every_batch_on_fp32(minilm, monkeypatch):
    monkeypatch.setenv("FUNES_EMBED_BACKEND", "onnx")
    exact = models.load_embedder()
    assert exact is not minilm and exact.bulk is None and exact.bulk_backend == ""
    assert models.embedder_status() == "onnx"
    bulk = embedder.Bulk(minilm.path, minilm.bulk.export_dir, note="this CPU has no native bf16 (AVX512-BF16 or AMX)")
    assert bulk.get() is None and "no native bf16" in bulk.note


def test_queries_and_small_batches_never_import_torch(minilm):
    code = (
        "import json, sys, funes.models as m; e = m.load_embedder(); e.encode_query('why'); "
        "e.encode(['a', 'b']); print(json.dumps([k for k in ('torch', 'sentence_transformers') if k in sys.modules]))"
    )
    env = {**os.environ, "FUNES_MODEL_CACHE": str(minilm.bulk.export_dir.parent)}
    env.pop("FUNES_EMBED_BACKEND", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert json.loads(out.stdout) == []
