"""Remote memories end to end: publish from one FUNES_HOME, recall/get/status from another through the HF cache.

Real pieces only: the local test Hub (tests/hubserver.py) with the real huggingface_hub client,
real Parquet shards in h8's layout, real faiss/bm25 segments; requests are counted at the server.
"""

from __future__ import annotations

import numpy as np
import pytest

import remote_support
from remote_support import publish
from test_retrieval_support import FakeEmbedder, add_vectors, memory_with, session, unit_vectors

REPO = "alice/mem"


@pytest.fixture
def remote_hub(tmp_path, monkeypatch, funes_home):
    yield from remote_support.serve(tmp_path, monkeypatch)


@pytest.fixture
def models(monkeypatch):
    """No cross-encoder (fused order) and a fake embedder, shared by every Retriever of the process."""
    from funes.retrieval import retriever

    emb = FakeEmbedder({"why streaming parser": unit_vectors(1, seed=7)[0]})
    monkeypatch.setattr(retriever, "_MODELS", {"reranker": None, "embedder": emb})
    monkeypatch.setattr(retriever, "_RETRIEVERS", {})
    return emb


def _rows(n_sessions: int = 6, turns: int = 5) -> list[dict]:
    words = ["streaming parser", "redis cache", "eviction storms", "tokenizer", "lance fragments", "faiss ivf"]
    rows = []
    for s in range(n_sessions):
        texts = [f"turn {t} of session {s}: we discussed the {words[(s + t) % len(words)]}" for t in range(turns)]
        rows += session(f"sess-{s:04d}", texts, ts=f"2026-06-{10 + s:02d}T01:29:59.000Z")
    return rows


def _publisher(n_sessions: int = 6):
    rows = _rows(n_sessions)
    vecs = unit_vectors(len(rows), seed=3)
    return memory_with(rows, {i: vecs[i] for i in range(len(rows))})


def _reader(hub, monkeypatch, tmp_path, name: str = "reader"):
    """Another machine: its own FUNES_HOME and an empty HF cache; nothing of this process's Retrievers."""
    from funes.retrieval import retriever

    monkeypatch.setenv("FUNES_HOME", str(tmp_path / name / ".funes"))
    monkeypatch.setattr(retriever, "_RETRIEVERS", {})
    return hub.new_cache(name + "-hf")


def _ids(result):
    return [(h.id, h.session_id, h.turn_uuid) for h in result.hits]


def test_remote_recall_equals_publishers_local_recall_and_warm_calls_download_nothing(
    remote_hub, models, monkeypatch, tmp_path
):
    from funes.commands.recall import recall

    mem = _publisher()
    publish(mem, REPO, max_rows=12)  # several shards
    queries = ["streaming parser", "why streaming parser", "redis eviction"]
    local = [recall(q, half_life=0, k=5) for q in queries]
    _reader(remote_hub, monkeypatch, tmp_path)
    before = len(remote_hub.requests)
    remote = [recall(q, memory=REPO, half_life=0, k=5) for q in queries]
    for a, b in zip(local, remote):
        assert _ids(a) == _ids(b) and _ids(a)
        assert [round(h.score, 6) for h in a.hits] == [round(h.score, 6) for h in b.hits]
    assert remote[0].label == f"hf://datasets/{REPO}"
    assert len(remote_hub.resolve_gets(before)) == 3  # 30 rows / 12 per shard

    # a new process at the same head: one head lookup, no file request at all
    from funes.retrieval import retriever

    monkeypatch.setattr(retriever, "_RETRIEVERS", {})
    before = len(remote_hub.requests)
    again = recall("streaming parser", memory=REPO, half_life=0, k=5)
    assert _ids(again) == _ids(remote[0])
    assert [(m, p) for m, p, _ in remote_hub.requests[before:]] == [("GET", f"/api/datasets/{REPO}/revision/main")]


def test_a_new_publish_costs_the_reader_exactly_the_new_shard(remote_hub, models, monkeypatch, tmp_path):
    from funes.commands.recall import recall
    from funes.memory import Memory

    publisher_home = tmp_path / "home" / ".funes"
    mem = _publisher()
    publish(mem, REPO, max_rows=12)
    _reader(remote_hub, monkeypatch, tmp_path)
    assert "late-t0" not in [h.turn_uuid for h in recall("zeppelin", memory=REPO).hits]
    segments = sorted(p.name for p in (tmp_path / "reader" / ".funes" / "remote" / "alice" / "mem").iterdir())

    monkeypatch.setenv("FUNES_HOME", str(publisher_home))
    hub_cache = remote_hub.new_cache("publisher-hf")
    pub = Memory.resolve(None)
    row = pub.append_chunks(_new_turn())
    add_vectors(pub, [row], unit_vectors(1, seed=99))  # publish embeds pending rows first
    publish(pub, REPO, max_rows=12)
    assert hub_cache.exists()

    _reader(remote_hub, monkeypatch, tmp_path)
    before = len(remote_hub.requests)
    found = recall("zeppelin", memory=REPO, half_life=0)
    gets = remote_hub.resolve_gets(before)
    assert len(gets) == 1 and gets[0].endswith(".parquet") and "/data/000003-" in gets[0]
    assert "late-t0" in [h.turn_uuid for h in found.hits]
    now = sorted(p.name for p in (tmp_path / "reader" / ".funes" / "remote" / "alice" / "mem").iterdir())
    assert set(segments) < set(now) and len(set(now) - set(segments)) == 1 + 0  # one new segment folder


def _new_turn():
    from test_retrieval_support import chunk_rows

    return chunk_rows(session("late", ["the zeppelin decision, finally"], ts="2026-06-30T00:00:00.000Z"))


def test_offline_warm_cache_answers_and_cold_cache_says_offline(remote_hub, models, monkeypatch, tmp_path):
    from funes.commands.recall import recall
    from funes.commands.status import status
    from funes.errors import MemoryOffline

    mem = _publisher()
    head = publish(mem, REPO)
    _reader(remote_hub, monkeypatch, tmp_path)
    online = recall("redis cache", memory=REPO, half_life=0)
    remote_hub.offline()
    from funes.retrieval import retriever

    monkeypatch.setattr(retriever, "_RETRIEVERS", {})
    before = len(remote_hub.requests)
    offline = recall("redis cache", memory=REPO, half_life=0)
    assert _ids(offline) == _ids(online) and len(remote_hub.requests) == before
    st = status(REPO)
    assert st.state == "ready" and st.remote["offline"] and st.remote["commit"] == head

    _reader(remote_hub, monkeypatch, tmp_path, "cold")
    with pytest.raises(MemoryOffline, match="offline"):
        recall("redis cache", memory=REPO)


def test_unauthorized_missing_and_empty_remotes_name_the_fix(remote_hub, models, monkeypatch, tmp_path):
    from funes import hub
    from funes.commands.recall import recall
    from funes.errors import MemoryMissing, MemoryUnauthorized

    publish(_publisher(1), REPO)
    hub.create_private("alice/bare")
    _reader(remote_hub, monkeypatch, tmp_path)
    with pytest.raises(MemoryMissing, match="doesn't exist on the Hub"):
        recall("x", memory="alice/nope")
    with pytest.raises(MemoryMissing, match=r"no funes memory yet.*funes publish"):
        recall("x", memory="hf://datasets/alice/bare")
    remote_hub.token(None)
    with pytest.raises(MemoryUnauthorized, match=r"HF_TOKEN.*hf auth login"):
        recall("x", memory=REPO)


def test_corrupted_cached_shard_is_detected_and_fetched_again(remote_hub, models, monkeypatch, tmp_path):
    from funes.commands.recall import recall
    from funes.retrieval import retriever

    publish(_publisher(), REPO, max_rows=12)
    cache = _reader(remote_hub, monkeypatch, tmp_path)
    first = recall("tokenizer", memory=REPO, half_life=0)
    blobs = sorted((cache / "datasets--alice--mem" / "blobs").iterdir(), key=lambda p: -p.stat().st_size)
    victim = blobs[0]
    victim.write_bytes(victim.read_bytes()[:100])  # truncated in place
    monkeypatch.setattr(retriever, "_RETRIEVERS", {})
    before = len(remote_hub.requests)
    second = recall("tokenizer", memory=REPO, half_life=0)
    assert _ids(second) == _ids(first)
    assert len(remote_hub.resolve_gets(before)) == 1
    import hashlib

    assert hashlib.sha256(victim.read_bytes()).hexdigest() == victim.name


def test_multi_memory_recall_fuses_dedups_and_names_each_hits_memory(remote_hub, models, monkeypatch, tmp_path):
    from funes import render
    from funes.commands.get import get
    from funes.commands.recall import recall
    from funes.memory import Memory, indexes

    mem = _publisher(2)
    publish(mem, REPO)
    mem.append_chunks(_new_turn())  # indexed here, not published yet
    indexes.refresh(Memory.resolve(None))
    both = recall("zeppelin streaming parser", memory=f"local,{REPO}", half_life=0, k=20)
    ids = [h.id for h in both.hits]
    assert len(ids) == len(set(ids))
    assert {h.memory for h in both.hits} == {"local"}  # everything published is also local: local wins
    _reader(remote_hub, monkeypatch, tmp_path)
    Memory.resolve(None).append_chunks(_new_turn())  # this reader's own local memory
    indexes.refresh(Memory.resolve(None))
    mixed = recall("zeppelin streaming parser", memory=f"local,{REPO}", half_life=0, k=20)
    by_mem = {h.turn_uuid: h.memory for h in mixed.hits}
    assert by_mem["late-t0"] == "local" and set(by_mem.values()) == {"local", f"hf://datasets/{REPO}"}
    text = render.recall_agent(mixed)
    line = next(ln for ln in text.splitlines() if ln.startswith("  → get sess-"))
    assert line.endswith(f"--memory hf://datasets/{REPO}")
    _, sid, turn, _, label = line.split()[1:]
    assert get(sid, turn, memory=label).turns


def test_get_and_status_of_a_remote(remote_hub, models, monkeypatch, tmp_path):
    from funes.commands.get import get
    from funes.commands.status import status

    publish(_publisher(), REPO, max_rows=12)
    _reader(remote_hub, monkeypatch, tmp_path)
    g = get("sess-0002", "sess-0002-t2", memory=f"hf://datasets/{REPO}", window=1)
    assert [t.turn_uuid for t in g.turns] == ["sess-0002-t1", "sess-0002-t2", "sess-0002-t3"]
    assert g.label == f"hf://datasets/{REPO}"
    st = status(REPO)
    assert (st.state, st.chunks, st.sessions) == ("ready", 30, 6)
    assert st.by_harness == {"claude_code": 30}
    assert st.remote["shards"] == 3 and not st.remote["offline"] and st.remote["cache_bytes"] > 0


def test_remote_built_with_another_model_is_refused(remote_hub, models, monkeypatch, tmp_path):
    from funes.commands.recall import recall
    from funes.errors import MemoryIncompatible

    publish(_publisher(1), REPO)
    _reader(remote_hub, monkeypatch, tmp_path)
    monkeypatch.setenv("FUNES_EMBED_MODEL", "someone/else-v9")
    with pytest.raises(MemoryIncompatible, match="published with embedding model"):
        recall("x", memory=REPO)


def test_vectors_of_a_shard_are_searched_with_global_row_numbers(remote_hub, models, monkeypatch, tmp_path):
    """The vector leg alone ranks the same rows remote as local (faiss ids offset by shard)."""
    from funes.commands.recall import recall

    mem = _publisher()
    publish(mem, REPO, max_rows=7)
    target = np.asarray(mem.vectors().to_table()["vector"][20].as_py(), np.float32)
    models.queries["qqq"] = target
    local = recall("qqq", half_life=0, k=3)
    _reader(remote_hub, monkeypatch, tmp_path)
    remote = recall("qqq", memory=REPO, half_life=0, k=3)
    assert _ids(local) == _ids(remote) and remote.hits[0].row == 20


def test_cli_remote_recall_get_line_pastes_and_status_prints(remote_hub, monkeypatch, tmp_path):
    """The real `funes` in subprocesses (real embedder): a remote hit's `→ get` line runs as printed."""
    import subprocess
    import sys

    from conftest import subprocess_env

    rows = _rows(3)
    vecs = unit_vectors(len(rows), dim=384, seed=5)
    publish(memory_with(rows, {i: vecs[i] for i in range(len(rows))}), REPO)
    _reader(remote_hub, monkeypatch, tmp_path)
    env = subprocess_env(tmp_path / "reader" / ".funes", **remote_hub.env())

    def funes(*args):
        return subprocess.run(
            [sys.executable, "-m", "funes.cli", *args], env=env, capture_output=True, text=True, timeout=300
        )

    out = funes("recall", "redis", "cache", "--memory", REPO, "--half-life", "0", "-k", "3")
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("  → get "))
    assert line.endswith(f"--memory hf://datasets/{REPO}")
    again = funes(*line.split()[1:], "--window", "0")
    assert again.returncode == 0 and again.stdout.count("\n---\n") == 1, again.stderr
    st = funes("status", REPO)
    assert st.returncode == 0, st.stderr
    assert st.stdout.startswith(f"memory: hf://datasets/{REPO}\nchunks: 15\nsessions: 3\n")
    assert "\ncommit: " in st.stdout and "\ncache: " in st.stdout
    gone = funes("recall", "x", "--memory", "alice/nope")
    assert gone.returncode == 1 and gone.stderr.startswith("funes: hf://datasets/alice/nope doesn't exist")
    assert "Traceback" not in out.stderr + again.stderr + st.stderr + gone.stderr
