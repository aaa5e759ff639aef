"""`funes scrub`: secrets redacted in place, vectors and indexes rebuilt, no byte of a secret left under FUNES_HOME."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_support import FakeEmbedder, memory_with, session, unit_vectors

GITHUB = "ghp_Zq8Xv3Lm9Tb2Wc7Yd4Pk1Rf6Hs0Ja5NeQu8V"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ7mPl2Xk9"


class _Embedder(FakeEmbedder):
    def encode(self, texts, batch_size=64):
        return super().encode(texts)


@pytest.fixture
def fake_embedder(monkeypatch):
    from funes import models

    monkeypatch.setattr(models, "load_embedder", lambda: _Embedder())


def _leaky_rows() -> list[dict]:
    split = {"session_id": "leaky", "turn_uuid": "leaky-t1", "seq": 1, "block_idx": 0}
    return [
        *session("clean", ["we moved off the streaming parser", "because it dropped events"]),
        {"session_id": "leaky", "turn_uuid": "leaky-t0", "seq": 0, "text": f"my token is {GITHUB} keep it"},
        {**split, "split_idx": 0, "text": "export AWS_SECRET_ACCESS_KEY=" + AWS_SECRET[:3]},
        {**split, "split_idx": 1, "text": AWS_SECRET[3:] + " then we deployed"},
    ]


def _every_byte(root) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_scrub_leaves_no_copy_of_a_secret_under_funes_home(funes_home, fake_embedder):
    from funes.commands.scrub import scrub
    from funes.commands.status import status

    rows = _leaky_rows()
    mem = memory_with(rows, dict(enumerate(unit_vectors(len(rows)))))  # indexes built: they hold the text too
    before = mem.chunks.scan(["id", "text"]).to_pylist()
    assert GITHUB.encode() in _every_byte(funes_home)
    assert status().held_back == 3
    r = scrub()
    assert (r.rows, r.rewritten, r.blocks, r.reembedded) == (5, 3, 2, 3) and set(r.kinds) == {"GitHub", "AWS"}
    data = _every_byte(funes_home)
    for needle in (GITHUB, AWS_SECRET, AWS_SECRET[3:]):
        assert needle.encode() not in data
    mem.chunks.reload()  # this object pinned the version scrub deleted
    mem.vectors.reload()
    after = mem.chunks.scan(["id", "text"]).to_pylist()
    assert [a["id"] for a in after] == [b["id"] for b in before]  # same rows, same positions
    assert after[:2] == before[:2]  # untouched rows are untouched
    assert "[REDACTED:" in after[2]["text"] and after[2]["text"].startswith("my token is ")
    assert after[4]["text"].endswith(" then we deployed")
    assert mem.vectors.count() == 5 and status().held_back == 0
    assert scrub().rewritten == 0


def test_scrubbed_memory_still_recalls(funes_home, fake_embedder, monkeypatch):
    from funes.commands.recall import recall
    from funes.commands.scrub import scrub

    monkeypatch.setenv("FUNES_RERANK", "off")  # fused order; the query embedder is the fake one
    rows = _leaky_rows()
    memory_with(rows, dict(enumerate(unit_vectors(len(rows)))))
    scrub()
    hits = recall("streaming parser", k=3, half_life=0)
    assert hits.hits and "streaming parser" in hits.hits[0].text
    assert np is not None


def test_scrub_of_a_missing_memory_says_so(funes_home):
    from funes.commands.scrub import scrub
    from funes.render.scrub import scrub_summary

    assert scrub_summary(scrub()) == "no local memory to scrub\n"


def test_scrub_redacts_a_secret_in_a_provenance_value(funes_home, fake_embedder):
    from funes.commands.scrub import scrub
    from funes.commands.status import status

    rows = session("p", ["clean text"], source_path=f"/tmp/{GITHUB}/t.jsonl")
    mem = memory_with(rows, dict(enumerate(unit_vectors(1))))
    assert status().held_back == 1
    assert scrub().rewritten == 1
    mem.chunks.reload()
    assert mem.chunks.scan(["source_path"])["source_path"].to_pylist() == ["/tmp/[REDACTED:GitHub]/t.jsonl"]
    assert GITHUB.encode() not in _every_byte(funes_home) and status().held_back == 0


def test_a_scrub_killed_before_the_text_rewrite_is_finished_by_the_next(funes_home, fake_embedder, monkeypatch):
    from funes.commands.scrub import scrub
    from funes.memory.tables import ChunkTable

    rows = _leaky_rows()
    memory_with(rows, dict(enumerate(unit_vectors(len(rows)))))
    real = ChunkTable.rewrite

    def killed(self, table):
        raise KeyboardInterrupt

    monkeypatch.setattr(ChunkTable, "rewrite", killed)
    with pytest.raises(KeyboardInterrupt):
        scrub()
    monkeypatch.setattr(ChunkTable, "rewrite", real)
    r = scrub()
    assert r.rewritten == 3 and r.reembedded == 3
    assert not any(n.encode() in _every_byte(funes_home) for n in (GITHUB, AWS_SECRET[3:]))
    assert scrub().rewritten == 0
