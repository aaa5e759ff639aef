"""`funes publish` against the local test Hub with the real huggingface_hub / datasets clients."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import HUB_READ_TOKEN, subprocess_env
from retrieval_support import DIM, add_vectors, chunk_rows, memory_with, session, unit_vectors

FUNES = [sys.executable, "-m", "funes.cli"]
GITHUB = "ghp_Zq8Xv3Lm9Tb2Wc7Yd4Pk1Rf6Hs0Ja5NeQu8V"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ7mPl2Xk9"
ANTHROPIC = "sk-ant-api03-Qm7Zt9Xv2Lp8Wc4Yd1Rk6Hs3Ja0NeBu5Tf8Gi2Ov7Mx9Pq4Zr1Sl6Kd3Hw8Jb5Fy0Ec2Vn7Au4Tx9Gq1Lm-8AAA"


def _memory(n_sessions: int = 3, turns: int = 4, embed: bool = True):
    rows = [r for s in range(n_sessions) for r in session(f"s{s}", [f"turn {i} of session {s}" for i in range(turns)])]
    n = len(rows)
    return memory_with(rows, dict(enumerate(unit_vectors(n))) if embed else None, refresh=False)


def _add_turn(mem, sid: str, seq: int, text: str, **kw) -> int:
    start = mem.chunks.append(
        chunk_rows([{"session_id": sid, "turn_uuid": f"{sid}-t{seq}", "seq": seq, "text": text, **kw}])
    )
    add_vectors(mem, [start], unit_vectors(1, seed=seq + 100))
    return start


def _publish(hub, **kw):
    from funes.commands import publish

    return publish.publish(publish.Options(memory=hub.repo_id, **kw))


def _remote_ids(hub) -> list[str]:
    ids = []
    for path, e in hub.files().items():
        if path.endswith(".parquet"):
            ids += pq.read_table(hub.server.store.blob_path(e["sha256"]), columns=["id"])["id"].to_pylist()
    return ids


def _run(funes_home, hub, *args, **env):
    return subprocess.run(
        [*FUNES, *args], env=subprocess_env(funes_home, **hub.env(**env)), capture_output=True, text=True, timeout=180
    )


def test_first_publish_creates_a_private_repo_only_with_consent(hub):
    from funes.errors import FunesError

    _memory()
    with pytest.raises(FunesError, match="doesn't exist on the Hub") as e:
        _publish(hub)
    assert "--create" in e.value.hint
    assert hub.server.store.load(*hub.repo_id.split("/")) is None
    asked = []
    r = _publish(hub, confirm=lambda q: asked.append(q) or True)
    assert asked and "private" in asked[0]
    assert r.created and r.published == 12 and r.shards == 1 and len(r.commit) == 40
    assert hub.server.store.load(*hub.repo_id.split("/"))["private"] is True
    files = sorted(hub.files())
    assert files[:2] == [".gitattributes", "README.md"] and "funes.json" in files
    assert next(f for f in files if f.startswith("data/")).startswith("data/000000-")


def test_existing_public_repo_keeps_its_visibility(hub):
    from huggingface_hub import HfApi

    HfApi().create_repo(hub.repo_id, repo_type="dataset", private=False)
    _memory()
    assert _publish(hub).published == 12
    assert hub.server.store.load(*hub.repo_id.split("/"))["private"] is False


def test_second_publish_uploads_only_the_new_turn_and_a_third_is_up_to_date(hub):
    mem = _memory()
    _publish(hub, create=True)
    commits = hub.commits()
    _add_turn(mem, "s1", 9, "one new turn")
    r = _publish(hub)
    assert (r.published, r.remote_chunks, hub.commits()) == (1, 13, commits + 1)
    new = [p for p in hub.files() if p.startswith("data/000001-")]
    assert len(new) == 1
    assert pq.read_table(hub.server.store.blob_path(hub.files()[new[0]]["sha256"]))["text"].to_pylist() == [
        "one new turn"
    ]
    again = _publish(hub)
    assert again.published == 0 and hub.commits() == commits + 1
    assert sorted(_remote_ids(hub)) == sorted(mem.chunks.scan(["id"])["id"].to_pylist())


def test_remote_manifest_is_the_truth_when_receipts_are_lost(hub, funes_home):
    mem = _memory()
    _publish(hub, create=True)
    shutil.rmtree(funes_home / "pushed")
    _add_turn(mem, "s0", 9, "after the receipts were lost")
    hub.server.requests.clear()
    assert _publish(hub).published == 1
    # the shard's ids were read by ranges (footer + id column), never the whole file
    shard_reads = [m for m, path, status in hub.server.requests if "/resolve/" in path and "data/" in path]
    assert shard_reads and all(
        status == 206 or m == "HEAD" for m, path, status in hub.server.requests if "/data/" in path
    )
    assert len(_remote_ids(hub)) == len(set(_remote_ids(hub))) == 13


def test_load_dataset_returns_every_embedded_row_with_the_schema(hub):
    import datasets

    from funes import models, schema

    mem = _memory()
    mem.chunks.append(chunk_rows(session("unembedded", ["no vector yet"])))  # waits, is not published
    r = _publish(hub, create=True, no_embed=True)
    assert r.pending == 1 and r.published == 12
    ds = datasets.load_dataset(hub.repo_id, split="train")
    assert ds.num_rows == mem.vectors.count() == 12
    assert ds.column_names == [*schema.CHUNK_COLUMNS, "vector"]
    assert ds.features["vector"].length == DIM and ds.features["vector"].feature.dtype == "float32"
    assert ds.features["seq"].dtype == "int64"
    local = mem.chunks.scan(["id"]).to_pylist()[:12]
    assert sorted(ds["id"]) == sorted(x["id"] for x in local)
    shard = next(e for p, e in hub.files().items() if p.endswith(".parquet"))
    meta = pq.read_schema(hub.server.store.blob_path(shard["sha256"])).metadata
    assert meta[b"embedding_model"].decode() == models.embedder_id() and meta[b"dim"] == str(DIM).encode()


def test_card_parses_refreshes_between_markers_and_hand_edits_are_left_alone(hub):
    from huggingface_hub import DatasetCard, HfApi

    mem = _memory()
    r = _publish(hub, create=True)
    assert r.card_note == "dataset card created"
    text = (hub.server.store.blob_path(hub.files()["README.md"]["sha256"])).read_text()
    card = DatasetCard(text)
    assert {"funes", "agent-memory"} <= set(card.data.tags) and card.data.size_categories == ["n<1K"]
    assert card.data.configs[0]["data_files"][0]["path"] == "data/*.parquet"
    assert "| Chunks | 12 |" in text and "| `vector` |" in text
    edited = text.replace("## Recall from it", "## Recall from it\n\nOur team's notes.")
    HfApi().upload_file(
        path_or_fileobj=edited.encode(), path_in_repo="README.md", repo_id=hub.repo_id, repo_type="dataset"
    )
    _add_turn(mem, "s0", 9, "new")
    assert _publish(hub).card_note == "dataset card refreshed"
    now = hub.server.store.blob_path(hub.files()["README.md"]["sha256"]).read_text()
    assert "Our team's notes." in now and "| Chunks | 13 |" in now
    hand = "# our memory\n\nwritten by a person\n"
    HfApi().upload_file(
        path_or_fileobj=hand.encode(), path_in_repo="README.md", repo_id=hub.repo_id, repo_type="dataset"
    )
    _add_turn(mem, "s0", 10, "newer")
    assert "left as is" in _publish(hub).card_note
    assert hub.server.store.blob_path(hub.files()["README.md"]["sha256"]).read_text() == hand


@pytest.mark.parametrize(
    ("token", "expect"),
    [(None, "no Hugging Face token"), ("hf_bad", "token was rejected"), (HUB_READ_TOKEN, "read-only for your token")],
)
def test_token_problems_are_one_line_and_upload_nothing(hub, funes_home, token, expect):
    from huggingface_hub import HfApi

    HfApi().create_repo(hub.repo_id, repo_type="dataset", private=True)
    _memory()
    before = {p.name for p in (hub.server.store.root / "blobs").iterdir()}
    p = _run(funes_home, hub, "publish", hub.repo_id, HF_TOKEN=token or "")
    assert p.returncode == 1, p.stderr
    lines = [x for x in p.stderr.splitlines() if x.startswith("funes:")]
    assert len(lines) == 1 and expect in lines[0] and "Traceback" not in p.stderr
    assert sorted(hub.files()) == [".gitattributes"]
    assert {p.name for p in (hub.server.store.root / "blobs").iterdir()} == before


def test_a_dropped_connection_leaves_nothing_partial_and_the_next_publish_completes(hub):
    from funes.hub import HubError

    _memory()
    _publish(hub, create=True)
    mem_files = dict(hub.files())
    from funes.memory import Memory

    _add_turn(Memory.resolve(None), "s2", 9, "dropped once")
    hub.server.faults["drop_commit"] = [True]
    with pytest.raises(HubError, match="cannot reach the Hub"):
        _publish(hub)
    assert hub.files() == mem_files
    assert _publish(hub).published == 1
    assert len(_remote_ids(hub)) == len(set(_remote_ids(hub))) == 13
    # a shard upload cut halfway is retried by the client; the publish still lands once
    _add_turn(Memory.resolve(None), "s2", 10, "upload cut once")
    hub.server.faults["drop_upload"] = [True]
    assert _publish(hub).published == 1 and not hub.server.faults["drop_upload"]
    assert len(_remote_ids(hub)) == len(set(_remote_ids(hub))) == 14


def _second_home(funes_home, extra_session: str):
    """A copy of this test's FUNES_HOME (another host with the same history) plus one session of its own."""
    other = funes_home.parent.parent / f"other-{extra_session}" / ".funes"
    shutil.copytree(funes_home, other)
    return other


def test_two_racing_publishers_publish_every_row_once(hub, funes_home):
    _memory()
    other = _second_home(funes_home, "b")
    env_b = subprocess_env(other, **hub.env())
    code = "from retrieval_support import *; from funes.memory import Memory; import sys; " + (
        "m=Memory.resolve(None); s=m.chunks.append(chunk_rows(session('b-only', ['host b']))); add_vectors(m, [s], unit_vectors(1))"
    )
    subprocess.run([sys.executable, "-c", code], env=env_b, check=True, cwd=str(Path(__file__).parent), timeout=120)
    from huggingface_hub import HfApi

    HfApi().create_repo(hub.repo_id, repo_type="dataset", private=True)
    hub.server.faults["delay_commit"] = [1.5]  # the first commit waits, so the other lands first
    procs = [
        subprocess.Popen(
            [*FUNES, "publish", hub.repo_id], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for env in (subprocess_env(funes_home, **hub.env()), env_b)
    ]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert any("re-reading it" in err for _, err in outs), outs  # the race really happened
    ids = _remote_ids(hub)
    assert len(ids) == len(set(ids)) == 13


def test_kill_9_during_publish_then_rerun_has_no_duplicates(hub, funes_home):
    _memory()
    from huggingface_hub import HfApi

    HfApi().create_repo(hub.repo_id, repo_type="dataset", private=True)
    hub.server.faults["delay_commit"] = [3.0]
    p = subprocess.Popen([*FUNES, "publish", hub.repo_id], env=subprocess_env(funes_home, **hub.env()))
    deadline = time.monotonic() + 60
    while (
        not any(m == "POST" and "/lfs/objects/batch" in path for m, path, _ in hub.server.requests) and p.poll() is None
    ):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(1.0)  # the shard is uploaded and the commit is being held by the server
    p.kill()
    p.wait()
    time.sleep(2.5)  # the held commit lands after its publisher died: receipts never saw it
    r = _run(funes_home, hub, "publish", hub.repo_id)
    assert r.returncode == 0, r.stderr
    ids = _remote_ids(hub)
    assert len(ids) == len(set(ids)) == 12


def test_planted_secrets_never_reach_the_remote(hub, funes_home):
    mem = _memory()
    start = mem.chunks.append(
        chunk_rows(
            [
                {"session_id": "leaky", "turn_uuid": "leaky-t0", "seq": 0, "text": f"my token is {GITHUB} keep it"},
                # one AWS secret split across the two chunks of one block
                {"session_id": "leaky", "turn_uuid": "leaky-t1", "seq": 1, "block_idx": 0, "split_idx": 0,
                 "text": "export AWS_SECRET_ACCESS_KEY=" + AWS_SECRET[:3]},
                {"session_id": "leaky", "turn_uuid": "leaky-t1", "seq": 1, "block_idx": 0, "split_idx": 1,
                 "text": AWS_SECRET[3:] + " and then we ran the deploy"},
                # JSON-escaped inside a tool input
                {"session_id": "leaky", "turn_uuid": "leaky-t2", "seq": 2, "block_type": "tool_use", "tool_name": "Bash",
                 "text": '[tool_use Bash] {"command": "curl -H \\"Authorization: Bearer ' + ANTHROPIC + '\\" https://api"}'},
                {"session_id": "leaky", "turn_uuid": "leaky-t3", "seq": 3, "text": "a clean turn of the leaky session"},
            ]
        )
    )  # fmt: skip
    add_vectors(mem, list(range(start, start + 5)), unit_vectors(5, seed=7))
    p = _run(funes_home, hub, "publish", hub.repo_id, "--create")
    assert p.returncode == 2, p.stderr
    assert "published 13 chunks" in p.stdout and "held back 4 row(s)" in p.stdout
    assert "session leaky" in p.stdout and "GitHub" in p.stdout and "AWS" in p.stdout
    needles = [GITHUB, AWS_SECRET, AWS_SECRET[3:], ANTHROPIC]  # the 3-char head alone is too short to search for
    for path, data in hub.server.stored_bytes():
        assert not any(n.encode() in data for n in needles), path
        if data[:4] == b"PAR1":
            text = " ".join(pq.read_table(path, columns=["text"])["text"].to_pylist())
            assert not any(n in text for n in needles), path
    from funes.ingest.chunk import chunk_id

    assert chunk_id("leaky", "leaky-t3", 0, 0) in _remote_ids(hub)


def test_a_missing_scanner_publishes_nothing(hub, funes_home):
    _memory()
    p = _run(funes_home, hub, "publish", hub.repo_id, "--create", FUNES_KINGFISHER="off")
    assert p.returncode == 1 and "secret gate cannot run" in p.stderr and "hint:" in p.stderr
    assert hub.server.store.load(*hub.repo_id.split("/")) is None
    p = _run(funes_home, hub, "publish", hub.repo_id, "--create", FUNES_KINGFISHER="/bin/false")
    assert p.returncode == 1 and "nothing was published" in p.stderr, p.stderr
    assert sorted(hub.files()) in ([], [".gitattributes"])


def test_publish_target_must_be_a_hub_repo(funes_home):
    from funes.commands import publish
    from funes.errors import UsageError

    with pytest.raises(UsageError, match="Hub dataset"):
        publish.publish(publish.Options(memory="/tmp/somewhere"))
    assert np is not None


def test_push_alias_and_funes_remote_name_the_target(hub, funes_home):
    _memory()
    p = _run(funes_home, hub, "push", FUNES_REMOTE=hub.repo_id)
    assert p.returncode == 1 and f"funes: {hub.repo_id} doesn't exist on the Hub" in p.stderr
    assert "hint: re-run with --create" in p.stderr
    p = _run(funes_home, hub, "push", "--create", FUNES_REMOTE=hub.repo_id)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"{hub.repo_id}: published 12 chunks in 1 shard (commit ")
    assert "  created " in p.stdout and "  dataset card created" in p.stdout
    assert "%|" not in p.stderr  # no upload progress bars off a terminal
    p = _run(funes_home, hub, "publish", f"hf://datasets/{hub.repo_id}")
    assert p.returncode == 0 and p.stdout.startswith(f"{hub.repo_id}: already up to date (12 chunks, commit ")


def test_publish_without_a_target_is_a_usage_error(hub, funes_home):
    p = _run(funes_home, hub, "publish", FUNES_REMOTE="")
    assert p.returncode == 2 and "funes: publish needs a Hub dataset" in p.stderr


def test_after_scrub_the_held_back_rows_publish_redacted(hub, funes_home, monkeypatch):
    from funes import models
    from funes.commands.scrub import scrub
    from retrieval_support import FakeEmbedder

    class Embedder(FakeEmbedder):
        def encode(self, texts, batch_size=64):
            return super().encode(texts)

    monkeypatch.setattr(models, "load_embedder", lambda: Embedder())
    mem = _memory()
    _add_turn(mem, "leaky", 0, f"my token is {GITHUB} keep it")
    r = _publish(hub, create=True)
    assert (r.published, r.held.rows, r.exit_code) == (12, 1, 2)
    assert scrub().rewritten == 1
    r = _publish(hub)
    assert (r.published, r.held.rows, r.exit_code) == (1, 0, 0)
    texts = []
    for path, e in hub.files().items():
        if path.endswith(".parquet"):
            texts += pq.read_table(hub.server.store.blob_path(e["sha256"]), columns=["text"])["text"].to_pylist()
    assert "my token is [REDACTED:GitHub] keep it" in texts and not any(GITHUB in t for t in texts)


@pytest.mark.parametrize(("answer", "created"), [("n", False), ("y", True)])
def test_on_a_terminal_the_first_publish_asks_before_creating(hub, funes_home, answer, created):
    import os
    import pty

    _memory()
    master, slave = pty.openpty()
    p = subprocess.Popen(
        [*FUNES, "publish", hub.repo_id],
        env=subprocess_env(funes_home, **hub.env()),
        stdin=slave,
        stderr=slave,
        stdout=subprocess.PIPE,
        text=True,
    )
    os.close(slave)
    seen = b""
    while b"[y/N]" not in seen:
        seen += os.read(master, 1024)
    assert b"Create it as a private dataset?" in seen
    os.write(master, f"{answer}\n".encode())
    out, _ = p.communicate(timeout=120)
    os.close(master)
    assert (p.returncode == 0) is created
    assert (hub.server.store.load(*hub.repo_id.split("/")) is not None) is created
    if created:
        assert out.startswith(f"{hub.repo_id}: published 12 chunks")


def test_pending_chunks_are_embedded_first_then_published(hub, monkeypatch):
    from funes import models
    from retrieval_support import FakeEmbedder

    class Embedder(FakeEmbedder):
        def encode(self, texts, batch_size=64):
            return super().encode(texts)

    monkeypatch.setattr(models, "load_embedder", lambda: Embedder())
    mem = _memory()
    mem.chunks.append(chunk_rows(session("late", ["stored, not embedded yet", "me neither"])))
    seen = []
    from funes.commands import publish

    r = publish.publish(publish.Options(memory=hub.repo_id, create=True), progress=lambda m, t=False: seen.append(m))
    assert (r.embedded, r.pending, r.published) == (2, 0, 14)
    assert any(m.startswith("embedded 2/2 chunks") for m in seen) and any("for secrets" in m for m in seen)
    assert any(m.startswith("uploading 14 chunks") for m in seen)


def test_an_unreachable_hub_is_one_line_and_exit_1(hub, funes_home):
    _memory()
    p = _run(funes_home, hub, "publish", hub.repo_id, HF_ENDPOINT="http://127.0.0.1:9")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.splitlines()[0].startswith("funes: cannot reach the Hub at http://127.0.0.1:9")
