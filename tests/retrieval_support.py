"""Builders shared by the recall tests: chunk rows, unit vectors, fake models, small real memories."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

DIM = 16


def model_id() -> str:
    from funes import models

    return models.embedder_id()


def chunk_rows(rows: list[dict]) -> pa.Table:
    """Chunk rows of schemas/chunks.json; each dict needs session_id, turn_uuid, seq, text (rest defaulted)."""
    from funes import schema
    from funes.ingest.chunk import chunk_id

    cols = {c: [] for c in schema.CHUNK_COLUMNS}
    for r in rows:
        full = {
            "workdir": "-home-u-proj",
            "parent_uuid": None,
            "ts": "2026-06-19T01:29:59.000Z",
            "role": "assistant",
            "block_type": "text",
            "tool_name": None,
            "source_path": "/t.jsonl",
            "block_idx": 0,
            "split_idx": 0,
            "harness": "claude_code",
            "repo": "",
            **r,
        }
        full["id"] = chunk_id(full["session_id"], full["turn_uuid"], full["block_idx"], full["split_idx"])
        for c in cols:
            cols[c].append(full[c])
    return pa.table(cols, schema=schema.arrow_schema("chunks"))


def unit_vectors(n: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def add_vectors(mem, rows, vectors: np.ndarray) -> None:
    rows = np.asarray(rows, dtype=np.int64)
    ids = mem.chunks.take(rows, ["id"])["id"].to_pylist()
    mem.append_vectors(rows, ids, vectors, model_id())


class FakeEmbedder:
    """Maps known queries to given vectors (mechanics tests, not semantics)."""

    def __init__(self, queries: dict[str, np.ndarray] | None = None, dim: int = DIM):
        self.queries, self.dim, self.calls = dict(queries or {}), dim, 0
        self.model_id = model_id()

    def encode_query(self, text: str) -> np.ndarray:
        self.calls += 1
        if text in self.queries:
            return np.asarray(self.queries[text], dtype=np.float32)
        return unit_vectors(1, self.dim, seed=sum(map(ord, text)))[0]

    def encode(self, texts):
        return np.stack([self.encode_query(t) for t in texts])


class ExplodingEmbedder(FakeEmbedder):
    def encode_query(self, text: str) -> np.ndarray:
        raise AssertionError("the embedder must not be used")


class FakeReranker:
    """Scores a passage by how many query words it contains (raw logits, like a cross-encoder)."""

    model_id = "test/fake-cross-encoder"
    backend = "test"

    def __init__(self):
        self.seen: list[list[str]] = []

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        self.seen.append(list(passages))
        words = query.lower().split()
        return np.array([1.0 * sum(w in p.lower() for w in words) - 2.0 for p in passages], dtype=np.float32)


def memory_with(rows: list[dict], vectors: dict[int, np.ndarray] | None = None, refresh: bool = True):
    """The default local memory holding `rows` (+ vectors by row), indexes refreshed."""
    from funes.memory import Memory, indexes

    mem = Memory.resolve(None)
    mem.chunks.append(chunk_rows(rows))
    if vectors:
        order = sorted(vectors)
        add_vectors(mem, order, np.stack([vectors[r] for r in order]))
    if refresh:
        indexes.refresh(mem)
    return mem


def session(sid: str, texts: list[str], **kw) -> list[dict]:
    """One row per turn: seq i, turn `<sid>-t<i>`, alternating user/assistant."""
    return [
        {
            "session_id": sid,
            "turn_uuid": f"{sid}-t{i}",
            "seq": i,
            "text": t,
            "role": "user" if i % 2 == 0 else "assistant",
            **kw,
        }
        for i, t in enumerate(texts)
    ]
