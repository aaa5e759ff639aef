"""The default embedder end to end (bundled MiniLM, ONNX fast path) and the embed stage's batching."""

from __future__ import annotations

import numpy as np
import pytest

from funes import models
from funes.ingest.embed import embed_texts
from funes.models import locate

TEXTS = [
    "why did we change the approach to indexing vectors",
    '[tool_use Bash] {"command": "pytest -q tests/test_index.py"}',
    "Traceback (most recent call last):\n  File \"run.py\", line 3, in <module>\nKeyError: 'vector'",
    "ok",
    "def stitch(a, b):\n    for k in range(min(len(a), len(b), 150), 0, -1):\n        if a[-k:] == b[:k]:\n"
    "            return a + b[k:]\n    return a + b",
    "The memory is an append-only Lance dataset; recall fuses BM25 and vector hits, then reranks them.",
]


def test_default_embedder_is_the_pinned_minilm(minilm):
    assert minilm.model_id == "sentence-transformers/all-MiniLM-L6-v2" and minilm.dim == 384
    assert minilm.backend in ("onnx-int8", "onnx", "torch") and minilm.load_seconds > 0
    assert minilm.max_seq_length == 256
    assert models.load_embedder() is minilm


def test_encode_is_float32_unit_rows_in_input_order(minilm):
    vectors = minilm.encode(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    singles = np.stack([minilm.encode_query(t) for t in TEXTS])
    assert ((vectors @ singles.T).argmax(axis=1) == np.arange(len(TEXTS))).all()
    assert (vectors * singles).sum(1).min() > 0.99
    assert minilm.encode([]).shape == (0, 384)


def test_onnx_agrees_with_plain_sentence_transformers(minilm):
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(locate.wheel_dir(minilm.model_id)), device="cpu", local_files_only=True)
    expected = reference.encode(TEXTS, convert_to_numpy=True, normalize_embeddings=True)
    assert (minilm.encode(TEXTS) * expected).sum(1).min() >= 0.99


def test_long_texts_are_truncated_like_the_model(minilm):
    long = "the parser skips summary records before counting turns " * 100
    np.testing.assert_array_equal(minilm.encode([long]), minilm.encode([long + " and then much more text"]))


def test_embed_texts_restores_order_and_embeds_duplicates_once(minilm):
    texts = TEXTS + [TEXTS[0], TEXTS[3]]
    vectors = embed_texts(texts, minilm)
    assert vectors.shape == (len(texts), 384)
    np.testing.assert_array_equal(vectors[len(TEXTS)], vectors[0])
    assert ((vectors @ minilm.encode(texts).T).argmax(axis=1)[: len(TEXTS)] == np.arange(len(TEXTS))).all()
    assert embed_texts([], minilm).shape == (0, 384)


class _Recorder:
    """A stand-in embedder: a text's vector is its length, so order mistakes show."""

    dim = 2

    def __init__(self):
        self.calls: list[list[str]] = []

    def encode(self, texts, batch_size=64):
        self.calls.append(list(texts))
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


def test_embed_texts_sends_longest_first_and_scatters_back():
    texts = ["bb", "a", "dddd", "ccc", "a"]
    fake = _Recorder()
    vectors = embed_texts(texts, fake)
    assert fake.calls == [["dddd", "ccc", "bb", "a"]]
    assert vectors[:, 0].tolist() == [2, 1, 4, 3, 1] and vectors.dtype == np.float32


# ---- windows (issue 10 item 1): every part of a long chunk reaches the vector leg ------------------

LONG = (
    "The parser keeps a streaming buffer of records and flushes it every few hundred lines. " * 30
    + "Finally the deploy failed because the kubernetes ingress certificate expired on the staging cluster."
)


def test_windows_cover_every_word_piece_and_fit_the_model(minilm):
    from funes.ingest import windows

    tk, room = windows.tokenizer_of(minilm), windows.room(minilm)
    assert room == minilm.max_seq_length - 2  # MiniLM has no passage prefix
    [cut], [short] = windows.cut([LONG], tk, room), windows.cut(["ok"], tk, room)
    assert short == ["ok"] and cut[0] == LONG  # the first window is the text: its vector is today's
    assert len(cut) >= 3
    for w in cut[1:]:
        assert len(tk.encode(w, add_special_tokens=False).ids) <= room and w in LONG
    assert LONG.endswith(cut[-1])  # the tail is read
    # consecutive windows overlap: each later window starts inside the one before
    firsts = [len(tk.encode(w, add_special_tokens=False).ids) for w in cut]
    assert firsts[0] > room and all(n <= room for n in firsts[1:])
    assert all(cut[i + 1][:20] in (LONG if i == 0 else cut[i]) for i in range(len(cut) - 1))


def test_mean_pooling_reads_the_tail_first_window_does_not(minilm):
    tail = minilm.encode_query("why did the deploy fail: expired kubernetes ingress certificate")
    first = embed_texts([LONG], minilm, pool="first")[0]
    mean = embed_texts([LONG], minilm, pool="mean")[0]
    np.testing.assert_allclose(first, minilm.encode([LONG])[0], atol=1e-6)  # "first" is the old path
    assert abs(float(np.linalg.norm(mean)) - 1.0) < 1e-5
    assert float(mean @ tail) > float(first @ tail) + 0.05
    # a short text has one window: both poolings give its one vector
    both = embed_texts(["ok", LONG], minilm, pool="mean")
    np.testing.assert_allclose(both, np.stack([minilm.encode(["ok"])[0], mean]), atol=1e-5)
    with pytest.raises(ValueError, match="unknown window pooling"):
        embed_texts([LONG], minilm, pool="max")
