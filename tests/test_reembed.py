"""The context line in the vector leg on real Lance memories: what a vector embeds, the manifest's
stamp, and an older memory's bare-text vectors replaced by the vector tier (resumable, budgeted,
never touching stored rows, every chunk keeping a vector throughout)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from retrieval_support import DIM, add_vectors, memory_with, session
from transcripts import prose, write_claude_session


class _Embedder:
    """A deterministic vector per distinct text (a hash seed), so a test can tell inputs apart."""

    def __init__(self):
        from funes import models

        self.dim, self.model_id, self.seen = DIM, models.embedder_id(), []

    def encode(self, texts, batch_size: int = 64):
        self.seen += list(texts)
        return np.stack([_vec(t) for t in texts])

    def encode_query(self, text: str):
        return _vec(text)


def _vec(text: str) -> np.ndarray:
    x = np.random.default_rng(int.from_bytes(hashlib.sha1(text.encode()).digest()[:8])).standard_normal(DIM)
    return (x / np.linalg.norm(x)).astype(np.float32)


@pytest.fixture
def embedder(monkeypatch):
    from funes import models

    emb = _Embedder()
    monkeypatch.setattr(models, "load_embedder", lambda *a, **k: emb)
    return emb


def _rows() -> list[dict]:
    return [
        *session("s1", ["why did the cache redesign drop redis", "we kept sqlite", "and the ttl?", "one hour"]),
        *session("s2", ["migrate the CI to github actions", "done, see ci.yml"], workdir="-home-u-infra"),
    ]


def _old_memory():
    """A memory as funes stored it before the stamp: vectors of the bare text, no vector_input."""
    from funes.memory import MANIFEST, Memory
    from funes.memory.atomic import write_json

    mem = memory_with(_rows(), refresh=False)
    texts = mem.chunks.scan(["text"])["text"].to_pylist()
    add_vectors(mem, list(range(len(texts))), np.stack([_vec(t) for t in texts]))
    man = {k: v for k, v in mem.manifest().items() if k not in ("vector_input", "stale_vectors")}
    write_json(mem.path / MANIFEST, man)
    return Memory.resolve(None)


def _by_row(mem) -> dict[int, np.ndarray]:
    t = mem.vectors.scan(["row", "vector"])
    return dict(zip(t["row"].to_pylist(), np.asarray(t["vector"].to_pylist(), dtype=np.float32)))


def _documents(mem) -> list[str]:
    return mem.chunks.vector_inputs(range(mem.chunks.count()))[1]


def test_new_vectors_embed_the_context_line_and_the_memory_says_so(funes_home, embedder):
    from funes.commands.index import embed_pending
    from funes.commands.status import status
    from funes.memory import contexts

    mem = memory_with(_rows(), refresh=False)
    assert embed_pending(mem, lambda *a: None) == 6
    docs = _documents(mem)
    assert docs[1] == "project: proj | asked: why did the cache redesign drop redis\nwe kept sqlite"
    assert docs[5].startswith("project: infra | asked: migrate the CI") and docs[5].endswith("\ndone, see ci.yml")
    vecs = _by_row(mem)
    assert all(np.array_equal(vecs[i], _vec(d)) for i, d in enumerate(docs))
    assert mem.manifest()["vector_input"] == contexts.VECTOR_INPUT and mem.stale_vectors() == 0
    assert mem.chunks.scan(["text"])["text"].to_pylist()[1] == "we kept sqlite"  # stored text unchanged
    st = status()
    assert (st.vector_input, st.stale_vectors) == ("context-line-1", 0)


def test_old_vectors_are_replaced_step_by_step_and_recall_keeps_working(funes_home, embedder):
    from funes import render
    from funes.commands.reembed import reembed_stale
    from funes.commands.status import status
    from funes.memory import indexes

    mem = _old_memory()
    indexes.refresh(mem)
    before = mem.chunks.scan(["id", "text", "session_id", "seq"])
    assert (mem.vector_input(), mem.stale_vectors()) == ("text", 6)
    assert "6 still of the bare text — the next `funes index` re-embeds them" in render.status_text(status())

    assert reembed_stale(mem, lambda *a: None, lambda: True, step=2) == 0  # the budget was spent before it began
    steps = iter([False, False, True])  # asked before the first step and after each: it ends after the second
    assert reembed_stale(mem, lambda *a: None, lambda: next(steps), step=2) == 4
    assert mem.manifest()["vector_input"] == "context-line-1" and mem.stale_vectors() == 2
    assert mem.vectors.count() == 6 and not len(mem.pending_rows())  # every chunk kept a vector
    assert indexes.problem(mem) is None  # recall reads the index it had, no repair needed
    docs, vecs = _documents(mem), _by_row(mem)
    texts = before["text"].to_pylist()
    new = [i for i in range(6) if np.array_equal(vecs[i], _vec(docs[i]))]
    old = [i for i in range(6) if np.array_equal(vecs[i], _vec(texts[i]))]
    assert len(new) == 4 and len(old) == 2 and not set(new) & set(old)

    assert reembed_stale(mem, lambda *a: None) == 2
    vecs = _by_row(mem)
    assert all(np.array_equal(vecs[i], _vec(d)) for i, d in enumerate(docs)) and mem.stale_vectors() == 0
    assert mem.chunks.scan(["id", "text", "session_id", "seq"]).equals(before)  # stored rows untouched
    stats = indexes.refresh(mem)
    assert stats["vector_rows"] == 6 and "vectors" in stats["rebuilt"]  # the faiss side now holds the new ones
    assert reembed_stale(mem, lambda *a: None) == 0


def test_a_kill_between_replace_and_count_loses_nothing(funes_home, embedder, monkeypatch):
    from funes.commands.reembed import reembed_stale
    from funes.memory import Memory

    mem = _old_memory()

    def killed(self, n, replaced=0):
        raise KeyboardInterrupt

    with monkeypatch.context() as m, pytest.raises(KeyboardInterrupt):
        m.setattr(Memory, "set_stale_vectors", killed)
        reembed_stale(mem, lambda *a: None, step=4)
    mem = Memory.resolve(None)
    assert mem.vectors.count() == 6 and mem.stale_vectors() == 6  # the count ran behind: those 4 are done again
    assert reembed_stale(mem, lambda *a: None, step=4) == 6  # 2 never done + 4 done again
    docs, vecs = _documents(mem), _by_row(mem)
    assert all(np.array_equal(vecs[i], _vec(d)) for i, d in enumerate(docs))
    assert mem.vectors.count() == 6


def test_funes_index_re_embeds_an_older_memory(funes_home, embedder, tmp_path):
    from funes.commands import index
    from funes.memory import MANIFEST, Memory
    from funes.memory.atomic import write_json
    from funes.memory.tables import vector_rows

    root = tmp_path / "projects"
    write_claude_session(root, "sess-0", [prose(t, 30) for t in range(4)])
    first = index.index(index.Options(path=str(root), yes=True))
    mem = Memory.resolve(None)
    n = mem.chunks.count()
    assert first.vectors_added == n and first.vectors_reembedded == 0
    # make it an older memory: bare-text vectors, no stamp
    texts = mem.chunks.scan(["id", "text"])
    bare = vector_rows(
        np.arange(n), texts["id"].to_pylist(), np.stack([_vec(t) for t in texts["text"].to_pylist()]), embedder.model_id
    )
    mem.vectors.rewrite(bare)
    write_json(
        mem.path / MANIFEST, {k: v for k, v in mem.manifest().items() if k not in ("vector_input", "stale_vectors")}
    )
    again = index.index(index.Options(path=str(root), yes=True))
    assert (again.chunks_added, again.vectors_added, again.vectors_reembedded, again.vectors_stale) == (0, 0, n, 0)
    mem = Memory.resolve(None)
    docs, vecs = _documents(mem), _by_row(mem)
    assert all(np.array_equal(vecs[i], _vec(d)) for i, d in enumerate(docs)) and mem.stale_vectors() == 0


def test_a_remote_says_what_its_shards_vectors_embed():
    from funes import render
    from funes.commands.status import _shard_inputs
    from funes.results import Status

    before, now = {"rows": 10}, {"rows": 5, "vector_input": "context-line-1"}
    assert _shard_inputs([before, before], 20) == ("text", 0)  # published before the stamp: bare text
    assert _shard_inputs([now], 5) == ("context-line-1", 0)
    assert _shard_inputs([{"rows": 4, "vector_input": "mixed"}], 4) == ("mixed", 4)  # partly re-embedded
    assert _shard_inputs([before, now, {"rows": 3, "vector_input": "mixed"}], 18) == ("mixed", 13)
    st = Status(label="hf://datasets/acme/mem", state="ready", embedder="m", vector_input="mixed", stale_vectors=13)
    st.remote = {
        "commit": "c" * 40,
        "offline": False,
        "shards": 3,
        "published_bytes": 1,
        "index_bytes": 1,
        "cache_bytes": 2,
    }
    line = next(ln for ln in render.status_text(st).splitlines() if ln.startswith("embedder:"))
    assert line == "embedder: m (vectors of context line + text, in part; 13 of the bare text, published before)"
