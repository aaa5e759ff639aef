"""Toy checks of the dev-set tooling: record checks, grading, metrics, the validator, the vector cache and
the window measure (run: .venv/bin/python bench/devset_selftest.py). Kept in bench/: it belongs to the
benchmark, not to funes's test suite.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import devset_cache  # noqa: E402
import devset_eval  # noqa: E402
from devset import validate  # noqa: E402
from devset.questions import Question, is_hit, load, problems  # noqa: E402

GOOD = {
    "id": "t1",
    "question": "why did we pick x?",
    "session_id": "s1",
    "evidence": "we picked  x\nbecause",
    "harness": "codex",
    "kind": "why",
    "long_session": False,
}


def test_records() -> None:
    assert problems(GOOD) == []
    assert "missing field kind" in problems({k: v for k, v in GOOD.items() if k != "kind"})
    assert any("at most 200" in p for p in problems({**GOOD, "evidence": "x" * 201}))
    assert any("kind" in p for p in problems({**GOOD, "kind": "vibes"}))
    assert any("long_session" in p for p in problems({**GOOD, "long_session": "no"}))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "q.jsonl"
        path.write_text(json.dumps(GOOD) + "\n\n" + json.dumps({**GOOD, "question": "again"}) + "\n")
        try:
            load(path)
        except ValueError as e:
            assert "duplicate id t1" in str(e) and ":3:" in str(e), e
        else:
            raise AssertionError("a duplicate id was accepted")


def test_grading() -> None:
    q = Question(**GOOD)
    assert is_hit(q, "s1", "... so we picked x because it was faster")  # whitespace differs, still a hit
    assert not is_hit(q, "s2", "so we picked x because it was faster")  # right text, wrong session
    assert not is_hit(q, "s1", "we picked y because")
    ranks = [{"rank": 1, "deep": 1}, {"rank": 3, "deep": 3}, {"rank": None, "deep": 20}, {"rank": None, "deep": None}]
    m = devset_eval.metrics(ranks)
    assert m == {"n": 4, "hit@1": 25.0, "hit@3": 50.0, "hit@8": 50.0, "mrr": 33.3, "miss@50": 25.0}, m


def test_validator() -> None:
    qs = [Question(**GOOD), Question(**{**GOOD, "id": "t2", "evidence": "nowhere"}), Question(**{**GOOD, "id": "t3"})]
    chunks = {"s1": ["so we picked x because it was faster"], "s9": ["we picked x because"]}
    failures = validate.check(qs[:2], chunks, {"s1": "codex", "s9": "pi"})
    assert len(failures) == 1 and failures[0].startswith("t2: evidence not in any chunk"), failures
    failures = validate.check(qs[2:], chunks, {"s1": "pi", "s9": "pi"})
    assert failures == ["t3: session s1 is pi, not codex"], failures


class _Counting:
    model_id, backend, dim = "toy/model", "onnx", 3

    def __init__(self):
        self.calls = 0

    def encode(self, texts, batch_size=64):
        self.calls += len(texts)
        return np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)


def test_cache() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "v.npz"
        real = _Counting()
        memo = devset_cache.DiskMemoEmbedder(real, path)
        texts = ["a", "bb", "a", *(str(i) for i in range(600))]  # 600 digests: some end in a NUL byte
        first = memo.encode(texts)
        assert real.calls == 602 and first.shape == (603, 3) and first[0, 0] == first[2, 0] == 1.0
        memo.save()
        again = devset_cache.DiskMemoEmbedder(real, path)
        assert again.loaded == 602 and np.array_equal(again.encode(texts[::-1]), first[::-1]) and real.calls == 602
        other = _Counting()
        other.model_id = "toy/other"
        assert devset_cache.DiskMemoEmbedder(other, path).loaded == 0  # another model never reuses vectors


def test_window() -> None:
    import embed_window

    _, tk, max_len = embed_window.model_tokenizer()
    text = " ".join(["word"] * 300)  # 300 pieces: 254 fit beside [CLS]/[SEP], 46 (230 chars) do not
    measured = embed_window.measure([text, "short text"], tk, max_len)
    assert measured == [(302, 300, 1269, 2), (4, 2, 10, 1)], measured  # 1269 = 1499 chars - 230 unread
    rows = [{"session_id": "s1", "text": text + " tail"}, {"session_id": "s1", "text": "short text"}]
    measured = embed_window.measure([r["text"] for r in rows], tk, max_len)
    qs = [
        Question(**{**GOOD, "id": i, "evidence": e}) for i, e in (("a", "word  word"), ("b", "word tail"), ("c", "no"))
    ]
    seen = embed_window.evidence_visibility(rows, measured, qs)
    assert seen == {"visible": ["a"], "partly": [], "beyond": ["b"], "missing": ["c"]}, seen


if __name__ == "__main__":
    for name, fn in list(globals().items()):
        if name.startswith("test_"):
            fn()
            print(f"ok {name}")
