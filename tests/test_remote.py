"""Remote memories end to end: publish from one FUNES_HOME, recall/get/status from another through the HF cache.

Real pieces only: the local test Hub (conftest `hub`) with the real huggingface_hub client, the
real `funes publish`, real Parquet shards, real faiss/bm25 segments; requests are counted at the
server. "Another machine" is another FUNES_HOME and an empty HF cache (remote_support.Remote).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from remote_support import Remote
from retrieval_support import FakeEmbedder, add_vectors, chunk_rows, memory_with, session, unit_vectors

WORDS = ["streaming parser", "redis cache", "eviction storms", "tokenizer", "lance fragments", "faiss ivf"]


@pytest.fixture
def remote(hub, monkeypatch, tmp_path) -> Remote:
    r = Remote(hub, monkeypatch, tmp_path)
    r.machine("publisher")
    return r


@pytest.fixture
def models(monkeypatch):
    """No cross-encoder (fused order) and a fake embedder for every Retriever of the process."""
    from funes import models

    emb = FakeEmbedder({"why streaming parser": unit_vectors(1, seed=7)[0]})
    monkeypatch.setenv("FUNES_RERANK", "off")
    monkeypatch.setattr(models, "load_embedder", lambda *a, **kw: emb)
    return emb


def _rows(sessions: range, turns: int = 5) -> list[dict]:
    rows = []
    for s in sessions:
        texts = [f"turn {t} of session {s}: we discussed the {WORDS[(s + t) % len(WORDS)]}" for t in range(turns)]
        rows += session(f"sess-{s:04d}", texts, ts=f"2026-06-{10 + s:02d}T01:29:59.000Z")
    return rows


def _add(rows: list[dict], dim: int = 16, seed: int = 3) -> None:
    """Append embedded rows to this machine's local memory (indexes refreshed)."""
    from funes.memory import Memory, indexes

    mem = Memory.resolve(None)
    start = mem.chunks.append(chunk_rows(rows))
    add_vectors(mem, range(start, start + len(rows)), unit_vectors(len(rows), dim, seed + start))
    indexes.refresh(mem)


def _publish_in_steps(remote: Remote, steps=((0, 2), (2, 4), (4, 6))) -> list[str]:
    """Three publishes of two sessions each: three shards, like a host publishing at session ends."""
    heads = []
    for lo, hi in steps:
        _add(_rows(range(lo, hi)))
        heads.append(remote.publish())
    return heads


def _ids(result):
    return [(h.id, h.session_id, h.turn_uuid) for h in result.hits]


def _scores(result):
    return [round(h.score, 6) for h in result.hits]


def test_remote_recall_equals_the_publishers_local_recall_and_a_warm_call_downloads_nothing(remote, models):
    from funes.commands.recall import recall

    _publish_in_steps(remote)
    queries = ["streaming parser", "why streaming parser", "redis eviction", "turn 3 tokenizer"]
    local = [recall(q, half_life=0, k=6) for q in queries]
    remote.machine("reader")
    mark = len(remote.requests)
    far = [recall(q, memory=remote.repo, half_life=0, k=6) for q in queries]
    for a, b in zip(local, far):
        assert _ids(a) and _ids(a) == _ids(b) and _scores(a) == _scores(b)
    assert far[0].label == remote.uri
    assert len(remote.shard_gets(mark)) == 3

    remote.restart()  # a new process at the same head: one head lookup, no file request at all
    mark = len(remote.requests)
    again = recall("streaming parser", memory=remote.uri, half_life=0, k=6)
    assert _ids(again) == _ids(far[0])
    assert remote.since(mark) == [("HEAD", f"/datasets/{remote.repo}/resolve/main/funes.json")]


def test_a_new_publish_costs_the_reader_exactly_the_new_shard(remote, models):
    from funes.commands.recall import recall
    from funes.paths import remote_dir

    _publish_in_steps(remote, ((0, 3),))
    remote.machine("reader")
    assert "late-t0" not in [h.turn_uuid for h in recall("zeppelin", memory=remote.repo).hits]
    segments = {p.name for p in remote_dir(remote.repo).iterdir()}

    remote.machine("publisher")
    _add(session("late", ["the zeppelin decision, finally"], ts="2026-06-30T00:00:00.000Z"))
    remote.publish()

    remote.machine("reader")
    mark = len(remote.requests)
    found = recall("zeppelin", memory=remote.repo, half_life=0)
    gets = remote.shard_gets(mark)
    assert len(gets) == 1 and "/data/000001-" in gets[0]
    assert found.hits[0].turn_uuid == "late-t0"
    now = {p.name for p in remote_dir(remote.repo).iterdir()}
    assert segments < now and len({n for n in now - segments if len(n) == 64}) == 1  # one new segment


def test_a_long_lived_reader_sees_a_publish_on_its_next_call(remote, models):
    """The MCP server's case: the head check overlaps the recall, and a moved head is never missed."""
    from funes.commands.get import get
    from funes.commands.recall import recall

    _publish_in_steps(remote, ((0, 2),))
    remote.machine("server")
    assert recall("redis cache", memory=remote.repo, half_life=0).hits
    mark = len(remote.requests)
    recall("redis cache", memory=remote.repo, half_life=0)
    assert [m for m, _ in remote.since(mark)] == ["HEAD"]  # warm: one head probe, nothing else
    remote.visit("publisher")
    _add(session("late", ["the zeppelin decision, finally"], ts="2026-06-30T00:00:00.000Z"))
    remote.publish()
    remote.visit("server")
    found = recall("zeppelin", memory=remote.repo, half_life=0)
    assert found.hits[0].turn_uuid == "late-t0"
    assert get("late", "late-t0", memory=remote.repo).turns[0].blocks[0].text == "the zeppelin decision, finally"


def test_offline_warm_cache_answers_and_a_cold_cache_says_offline(remote, models):
    from funes.commands.recall import recall
    from funes.commands.status import status
    from funes.errors import MemoryOffline

    heads = _publish_in_steps(remote, ((0, 3),))
    remote.machine("reader")
    online = recall("redis cache", memory=remote.repo, half_life=0)
    remote.offline()
    remote.restart()
    mark = len(remote.requests)
    offline = recall("redis cache", memory=remote.repo, half_life=0)
    assert _ids(offline) == _ids(online) and remote.since(mark) == []
    st = status(remote.repo)
    assert st.state == "ready" and st.remote["offline"] and st.remote["commit"] == heads[-1]

    remote.machine("cold")
    with pytest.raises(MemoryOffline, match="offline"):
        recall("redis cache", memory=remote.repo)
    _add(session("mine", ["my own redis cache note"]))
    both = recall("redis cache", memory=f"local,{remote.repo}", half_life=0)
    assert [h.turn_uuid for h in both.hits] == ["mine-t0"] and {h.memory for h in both.hits} == {"local"}
    assert both.note.startswith(f"{remote.uri} is unreachable") and "other memories" in both.note


def test_unauthorized_missing_and_empty_remotes_name_the_fix(remote, models):
    from funes import hub
    from funes.commands.recall import recall
    from funes.errors import MemoryMissing, MemoryUnauthorized

    _publish_in_steps(remote, ((0, 1),))
    bare = remote.repo + "-bare"
    hub.create_private(bare)
    remote.machine("reader")
    with pytest.raises(MemoryMissing, match="doesn't exist on the Hub"):
        recall("x", memory=remote.repo + "-nope")
    with pytest.raises(MemoryMissing, match=r"no funes memory yet.*funes publish"):
        recall("x", memory=f"hf://datasets/{bare}")
    remote.token(None)  # private: the Hub answers 401 to an anonymous reader
    with pytest.raises(MemoryUnauthorized, match=r"HF_TOKEN.*hf auth login"):
        recall("x", memory=remote.repo)


def test_a_corrupted_cached_shard_is_detected_and_fetched_again(remote, models):
    from funes.commands.recall import recall

    _publish_in_steps(remote)
    cache = remote.machine("reader")
    first = recall("tokenizer", memory=remote.repo, half_life=0)
    blobs = [
        p for p in (cache / f"datasets--{remote.repo.replace('/', '--')}" / "blobs").iterdir() if len(p.name) == 64
    ]
    victim = max(blobs, key=lambda p: p.stat().st_size)
    victim.write_bytes(victim.read_bytes()[:100])  # truncated in place
    remote.restart()
    mark = len(remote.requests)
    second = recall("tokenizer", memory=remote.repo, half_life=0)
    assert _ids(second) == _ids(first) and _scores(second) == _scores(first)
    assert len(remote.shard_gets(mark)) == 1
    assert hashlib.sha256(victim.read_bytes()).hexdigest() == victim.name


def test_multi_memory_recall_fuses_dedups_and_names_each_hits_memory(remote, models):
    from funes import render
    from funes.commands.get import get
    from funes.commands.recall import recall

    _publish_in_steps(remote, ((0, 2),))
    both = recall("streaming parser", memory=f"local,{remote.repo}", half_life=0, k=20)
    ids = [h.id for h in both.hits]
    assert ids and len(ids) == len(set(ids))
    assert {h.memory for h in both.hits} == {"local"}  # all of it is local too: the first memory named wins

    remote.machine("reader")
    _add(session("late", ["our own streaming parser note"], ts="2026-06-30T00:00:00.000Z"))  # local only
    mixed = recall("streaming parser", memory=f"local,{remote.repo}", half_life=0, k=20)
    by_turn = {h.turn_uuid: h.memory for h in mixed.hits}
    assert by_turn["late-t0"] == "local" and set(by_turn.values()) == {"local", remote.uri}
    line = next(ln for ln in render.recall_agent(mixed).splitlines() if ln.startswith("  → get sess-"))
    assert line.endswith(f"--memory {remote.uri}")
    _, sid, turn, _, label = line.split()[1:]
    assert get(sid, turn, memory=label).turns
    assert get(sid, turn, memory=f"local,{remote.repo}").label == remote.uri  # the first memory holding it
    assert get("late", "late-t0", memory=f"local,{remote.repo}").label == "local"


def test_get_and_status_of_a_remote(remote, models):
    from funes.commands.get import get
    from funes.commands.status import status

    _publish_in_steps(remote)
    remote.machine("reader")
    g = get("sess-0002", "sess-0002-t2", memory=remote.uri, window=1)
    assert [t.turn_uuid for t in g.turns] == ["sess-0002-t1", "sess-0002-t2", "sess-0002-t3"]
    assert g.label == remote.uri
    st = status(remote.repo)
    assert (st.state, st.chunks, st.sessions, st.by_harness) == ("ready", 30, 6, {"claude_code": 30})
    assert st.remote["shards"] == 3 and not st.remote["offline"] and st.remote["cache_bytes"] > 0
    assert st.last_indexed is not None
    assert (st.vector_input, st.stale_vectors) == ("context-line-1", 0)  # each shard says what its vectors embed


def test_a_remote_built_with_another_model_is_refused(remote, models, monkeypatch):
    from funes.commands.recall import recall
    from funes.errors import MemoryIncompatible

    _publish_in_steps(remote, ((0, 1),))
    remote.machine("reader")
    monkeypatch.setenv("FUNES_EMBED_MODEL", "someone/else-v9")
    with pytest.raises(MemoryIncompatible, match="published with embedding model"):
        recall("x", memory=remote.repo)


def test_the_vector_leg_numbers_shard_rows_globally(remote, models):
    """A query equal to one row's vector finds that row first, remote as local (faiss ids offset by shard)."""
    from funes.commands.recall import recall
    from funes.memory import Memory

    _publish_in_steps(remote)
    target = np.asarray(Memory.resolve(None).vectors.dataset().to_table()["vector"][23].as_py(), np.float32)
    models.queries["qqq"] = target
    local = recall("qqq", half_life=0, k=3)
    remote.machine("reader")
    far = recall("qqq", memory=remote.repo, half_life=0, k=3)
    assert _ids(local) == _ids(far) and far.hits[0].row == 23


def test_cli_remote_recall_get_line_pastes_and_status_prints(remote):
    """The real `funes` in subprocesses (real embedder): a remote hit's `→ get` line runs as printed."""
    import subprocess
    import sys

    from conftest import subprocess_env

    rows = _rows(range(3))
    vecs = unit_vectors(len(rows), dim=384, seed=5)
    memory_with(rows, dict(enumerate(vecs)))
    remote.publish()
    remote.machine("reader")
    env = subprocess_env(remote.tmp / "reader" / ".funes", **remote.env())

    def funes(*args):
        return subprocess.run(
            [sys.executable, "-m", "funes.cli", *args], env=env, capture_output=True, text=True, timeout=300
        )

    out = funes("recall", "redis", "cache", "--memory", remote.repo, "--half-life", "0", "-k", "3")
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("  → get "))
    assert line.endswith(f"--memory {remote.uri}")
    again = funes(*line.split()[1:], "--window", "0")
    assert again.returncode == 0 and again.stdout.count("\n---\n") == 1, again.stderr
    st = funes("status", remote.repo)
    assert st.returncode == 0, st.stderr
    assert st.stdout.startswith(f"memory: {remote.uri}\nchunks: 15\nsessions: 3\n")
    assert "\ncommit: " in st.stdout and "\ncache: " in st.stdout and "\nlast publish: " in st.stdout
    gone = funes("recall", "x", "--memory", remote.repo + "-nope")
    assert gone.returncode == 1 and gone.stderr.startswith(f"funes: {remote.uri}-nope doesn't exist")
    assert "Traceback" not in out.stderr + again.stderr + st.stderr + gone.stderr


def test_a_pinned_revision_reads_that_commit_and_its_get_lines_keep_it(remote, models):
    from funes.commands.get import get
    from funes.commands.recall import recall

    first = _publish_in_steps(remote, ((0, 2),))[0]
    _add(session("late", ["the zeppelin decision, finally"], ts="2026-06-30T00:00:00.000Z"))
    remote.publish()
    remote.machine("reader")
    pinned = f"{remote.uri}@{first}"
    old = recall("zeppelin redis", memory=pinned, half_life=0, k=20)
    assert old.label == pinned and "late-t0" not in [h.turn_uuid for h in old.hits]
    assert "late-t0" in [h.turn_uuid for h in recall("zeppelin redis", memory=remote.uri, half_life=0, k=20).hits]
    mark = len(remote.requests)
    assert get("sess-0000", "sess-0000-t1", memory=pinned).label == pinned
    assert remote.since(mark) == []  # a commit sha needs no head lookup


def test_a_hub_bound_mcp_server_recalls_local_and_hub_turns_as_one_ranking(remote):
    """What `funes add <agent> acme/mem` registers (`funes mcp local,acme/mem`), driven by the SDK's
    stdio client: this host's unpublished turn and another machine's published ones in one answer."""
    import asyncio
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from conftest import subprocess_env
    from mcp_support import text

    rows = _rows(range(3))
    memory_with(rows, dict(enumerate(unit_vectors(len(rows), dim=384, seed=5))))
    remote.publish()
    remote.machine("reader")
    late = session("late", ["our own redis cache note, not published yet"], ts="2026-06-30T00:00:00.000Z")
    memory_with(late, {0: unit_vectors(1, dim=384, seed=9)[0]})
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "funes.cli", "mcp", f"local,{remote.repo}", "--backend", "local"],
        env=subprocess_env(remote.tmp / "reader" / ".funes", **remote.env()),
        cwd=str(remote.tmp),
    )

    async def go():
        async with Client(params) as c:
            return await c.call_tool("recall", {"query": "redis cache", "k": 20})

    result = asyncio.run(go())
    assert not result.is_error, text(result)
    out = text(result)
    assert "get late late-t0 --memory local\n" in out
    assert f"--memory {remote.uri}\n" in out


def test_context_lines_span_shards_and_rank_as_the_publishers(remote, models):
    """A session's first request is published in one shard, its later tool result in the next: the
    reader's segment for the second shard reads the first, so BM25 ranks as the publisher's memory."""
    from dataclasses import replace

    from funes.commands.recall import answer, request

    call = '[tool_use Read] {"file_path": "/srv/app/billing/invoice_totals.py"}'
    first = session("ctx", ["Plan the zeppelin migration of the billing service", call], ts="2026-06-20T00:00:00.000Z")
    first[1] |= {"block_type": "tool_use", "tool_name": "Read"}
    _add(first + _rows(range(2)))
    remote.publish()
    later = [{**session("ctx", ["x"] * 3)[2], "text": "[tool_result Read] def total(): ...", "role": "user"}]
    _add([later[0] | {"block_type": "tool_result", "tool_name": "Read", "ts": "2026-06-20T00:00:01.000Z"}])
    remote.publish()
    queries = ["zeppelin migration", "invoice_totals.py"]

    def lexical(q: str, spec: str | None):  # the BM25 leg alone, through the real answer path
        req = replace(request(q, 6, 30, 0, 0.98, 0, None, None), legs=("bm25",))
        return answer(spec, lambda r: r.run(req))

    local = [lexical(q, None) for q in queries]
    remote.machine("reader")
    far = [lexical(q, remote.repo) for q in queries]
    for a, b in zip(local, far):
        assert _ids(a) == _ids(b) and _scores(a) == _scores(b)
        assert "ctx-t2" in [h.turn_uuid for h in b.hits]  # its own text names neither
