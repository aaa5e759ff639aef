"""The index command on real Lance tables: idempotency, per-turn equivalence, kill -9, locks, refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import subprocess_env
from funes import paths
from funes.errors import UsageError
from transcripts import append_claude_turn, prose, write_claude_session

FUNES = [sys.executable, "-m", "funes.cli"]


def _index(path: Path, **kw):
    from funes.commands import index

    return index.index(index.Options(path=str(path), **kw))


def _rows(home: Path):
    import lance

    ds = lance.dataset(str(home / "memory" / "chunks.lance"))
    return ds.to_table(columns=["id", "text", "session_id", "turn_uuid", "block_idx", "split_idx", "seq"])


def _tree(tmp_path: Path, sessions: int = 3, turns: int = 6, words: int = 60) -> Path:
    root = tmp_path / "projects"
    for s in range(sessions):
        write_claude_session(root, f"sess-{s:04d}", [prose(s * 100 + t, words) for t in range(turns)])
    return root


def test_index_twice_writes_and_embeds_nothing_new(funes_home, tmp_path):
    root = _tree(tmp_path)
    first = _index(root)
    assert first.chunks_added > 0 and first.vectors_added == first.chunks_added
    second = _index(root)
    assert (second.chunks_added, second.vectors_added, second.units_current) == (0, 0, 3)
    assert _rows(funes_home).num_rows == first.chunks_added


def test_noop_rerun_loads_no_model(funes_home, tmp_path):
    root = _tree(tmp_path, sessions=2, turns=2)
    _index(root)
    code = (
        "import sys; from funes.commands import index as ix;"
        f"r = ix.index(ix.Options(path={str(root)!r}));"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'onnxruntime', 'datasets') if m in sys.modules];"
        "print(r.chunks_added, r.vectors_added, heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], env=subprocess_env(funes_home), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0 0 []"


def test_per_turn_indexing_equals_one_sweep(funes_home, tmp_path, monkeypatch):
    texts = [prose(t, 40 + 90 * (t % 3)) for t in range(7)]
    once_root = tmp_path / "once"
    write_claude_session(once_root, "sess-x", texts)
    monkeypatch.setenv("FUNES_HOME", str(tmp_path / "once-home"))
    _index(once_root)
    once = _rows(tmp_path / "once-home")

    monkeypatch.setenv("FUNES_HOME", str(tmp_path / "turn-home"))
    turn_root = tmp_path / "turns"
    path = write_claude_session(turn_root, "sess-x", texts[:1])
    _index(turn_root)
    for i, t in enumerate(texts[1:], 1):
        os.utime(path, (time.time() + i, time.time() + i))  # mtime moves even within one second
        append_claude_turn(path, "sess-x", i, t)
        _index(turn_root)
    per_turn = _rows(tmp_path / "turn-home")
    assert sorted(per_turn.to_pylist(), key=lambda r: r["id"]) == sorted(once.to_pylist(), key=lambda r: r["id"])


def test_large_import_stores_every_chunk_it_reports(funes_home, tmp_path):
    from funes.ingest import chunk

    root = tmp_path / "projects"
    expected = 0
    for s in range(150):
        texts = [prose(s + t, 30 + (s * 37 + t * 101) % 700) for t in range(20)]
        write_claude_session(root, f"big-{s:04d}", texts)
        expected += sum(len(chunk.split(t)) for t in texts)
    report = _index(root, no_embed=True)
    rows = _rows(funes_home)
    assert report.chunks_added == expected == rows.num_rows
    assert len(set(rows["id"].to_pylist())) == rows.num_rows
    assert len(set(rows["session_id"].to_pylist())) == 150


def _wait_for_commit(table: Path, proc, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        versions = table / "_versions"
        if versions.is_dir() and any(versions.iterdir()):
            return
        time.sleep(0.05)
    raise AssertionError(f"{table.name} never got a commit before the run ended")


@pytest.mark.parametrize("phase", ["chunks.lance", "vectors.lance"])
def test_kill_9_then_rerun_has_no_duplicates_and_no_lost_sessions(funes_home, tmp_path, phase):
    """Kill the writer right after its first commit to each table, then let a second run finish."""
    root = _tree(tmp_path, sessions=20, turns=6, words=100)
    env = subprocess_env(funes_home, FUNES_FLUSH_BLOCKS="20")
    proc = subprocess.Popen([*FUNES, "index", str(root)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _wait_for_commit(funes_home / "memory" / phase, proc)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    done = subprocess.run([*FUNES, "index", str(root)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = _rows(funes_home)
    assert len(set(rows["id"].to_pylist())) == rows.num_rows == 20 * 6
    assert len(set(rows["session_id"].to_pylist())) == 20
    import lance

    vec = lance.dataset(str(funes_home / "memory" / "vectors.lance")).to_table(columns=["id", "row"])
    assert sorted(vec["row"].to_pylist()) == list(range(rows.num_rows))


def test_second_writer_fails_loudly(funes_home, tmp_path):
    from funes import paths
    from funes.memory import lock

    root = _tree(tmp_path, sessions=1, turns=2)
    with lock.writer_lock(paths.lock_file_for(paths.memory_dir())):
        out = subprocess.run(
            [*FUNES, "index", str(root)], env=subprocess_env(funes_home), capture_output=True, text=True
        )
    assert out.returncode != 0
    assert "another funes memory operation is in progress" in out.stderr
    assert not (funes_home / "memory" / "chunks.lance").exists()


def test_memory_of_another_model_is_refused(funes_home, tmp_path):
    from funes.errors import MemoryIncompatible

    root = _tree(tmp_path, sessions=1, turns=2)
    _index(root)
    manifest = funes_home / "memory" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["embedding_model"] = "BAAI/bge-small-en-v1.5"
    manifest.write_text(json.dumps(data))
    write_claude_session(root, "sess-new", ["a new session"])
    with pytest.raises(MemoryIncompatible, match="rebuild"):
        _index(root)


def test_automated_run_must_name_a_target(funes_home):
    out = subprocess.run(
        [*FUNES, "index"], env=subprocess_env(funes_home), capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    assert out.returncode == 2
    assert "must name a target" in out.stderr and "Traceback" not in out.stderr


def test_missing_path_is_one_line_error(funes_home, tmp_path):
    out = subprocess.run(
        [*FUNES, "index", str(tmp_path / "nope")], env=subprocess_env(funes_home), capture_output=True, text=True
    )
    assert out.returncode == 2 and out.stderr.startswith("funes: no such path")


def test_day_zero_stores_text_before_vectors_then_backfills(funes_home, tmp_path):
    sessions = funes_home.parent / ".claude" / "projects"
    for s in range(4):
        write_claude_session(sessions, f"day0-{s}", [prose(s * 10 + t, 80) for t in range(4)])
    env = subprocess_env(funes_home, FUNES_INDEX_BUDGET="0")
    first = subprocess.run([*FUNES, "index", "--auto"], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "waiting for vectors" in first.stdout
    import lance

    chunks = lance.dataset(str(funes_home / "memory" / "chunks.lance")).count_rows()
    assert chunks > 0
    second = subprocess.run([*FUNES, "index", "--auto", "--yes"], env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    vec = lance.dataset(str(funes_home / "memory" / "vectors.lance")).count_rows()
    assert vec == lance.dataset(str(funes_home / "memory" / "chunks.lance")).count_rows() >= chunks


@pytest.mark.parametrize("layout", ["absent", "empty"])
def test_auto_without_sessions_indexes_the_bundled_samples(funes_home, layout):
    """`make index` on a fresh machine: no agent folders, or the empty ones a fresh install leaves."""
    if layout == "empty":
        for root in paths.home_roots().values():
            root.mkdir(parents=True)
        (funes_home.parent / ".hermes" / "sessions").mkdir()
    env = subprocess_env(funes_home, FUNES_RERANK="off")
    out = subprocess.run([*FUNES, "index", "--auto", "--yes"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "bundled sample sessions" in out.stdout
    assert "claude" in out.stdout and "codex" in out.stdout
    recall = subprocess.run([*FUNES, "recall", "streaming parser", "-k", "1"], env=env, capture_output=True, text=True)
    assert recall.returncode == 0, recall.stderr
    assert "→ get " in recall.stdout


def test_interactive_run_without_sessions_names_the_fix(funes_home):
    from funes.commands import index

    with pytest.raises(UsageError, match="no agent sessions found on this machine") as e:
        index.pick_sources(index.Options(interactive=True))
    assert "--auto" in (e.value.hint or "")
    with pytest.raises(UsageError, match="no codex session dir found"):
        index.pick_sources(index.Options(harness="codex"))
