"""Never a silently wrong answer, derived data that repairs itself, damaged tables refused with the
fix: each class of the reliability report on real Lance tables, real index files and the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import subprocess_env
from retrieval_support import FakeEmbedder, add_vectors, chunk_rows, memory_with, session, unit_vectors

FUNES = [sys.executable, "-m", "funes.cli"]
TEXTS = ["alpha parsers", "beta zebra crossing", "gamma quokka", "delta marmalade", "epsilon wombat", "zeta"]


@pytest.fixture(autouse=True)
def _small_models(monkeypatch):
    """In-process commands embed queries with the 16-d test embedder the memories are built with."""
    from funes import models
    from funes.commands import recall as recall_cmd

    monkeypatch.setenv("FUNES_RERANK", "off")
    monkeypatch.setattr(recall_cmd, "WAIT_S", 0.0)
    monkeypatch.setattr(models, "load_embedder", lambda *a, **k: FakeEmbedder())


def _cli(funes_home: Path, *args: str) -> subprocess.CompletedProcess:
    env = subprocess_env(funes_home, FUNES_RERANK="off", FUNES_RECALL_WAIT="0", FUNES_KINGFISHER="off")
    return subprocess.run([*FUNES, *args], env=env, capture_output=True, text=True, timeout=300)


def _one_line_refusal(p: subprocess.CompletedProcess) -> str:
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert (
        lines[0].startswith("funes: ") and len(lines) <= 2 and all(line.startswith("  hint: ") for line in lines[1:])
    ), p.stderr
    return p.stderr


def _embedded_memory(n: int = 6, vectors: bool = True):
    rows = session("s1", TEXTS[:n])
    vecs = unit_vectors(n, seed=3)
    return memory_with(rows, vectors=dict(enumerate(vecs)) if vectors else None), rows, vecs


def _vectors_match(mem) -> bool:
    mem.vectors.reload()
    mem.chunks.reload()
    vt = mem.vectors.dataset().to_table(columns=["id", "row"])
    ids = mem.chunks.dataset().to_table(columns=["id"])["id"].to_pylist()
    return all(ids[r] == i for r, i in zip(vt["row"].to_pylist(), vt["id"].to_pylist()))


# ---- B2: vectors belong to their chunks -----------------------------------------------------


def test_rebuilt_chunk_table_never_answers_from_other_chunks_vectors(funes_home):
    from funes import render
    from funes.commands.recall import recall
    from funes.commands.status import status
    from funes.memory import Memory
    from funes.retrieval.retriever import Retriever

    mem, rows, vecs = _embedded_memory()
    shutil.rmtree(mem.chunks.path)  # the chunk table is rebuilt in another order; vectors.lance is kept
    mem = Memory.resolve(None)
    mem.chunks.append(chunk_rows(list(reversed(rows))))
    assert not _vectors_match(mem)
    st = status()  # says so, never "up to date"
    assert "other rows" in st.index_problem and "needs repair" in render.status_text(st)
    recall("zebra", half_life=0)  # the recall command repairs: it holds the lock
    assert _vectors_match(mem) and mem.vectors.count() == 6
    # the vector leg now finds the chunk whose own vector matches the query
    r = Retriever(mem, embedder=FakeEmbedder({"crossing": vecs[1]}), reranker=None)
    hit = r.recall("crossing", k=1, half_life=0, neighbors=0, legs=("vector",)).hits[0]
    assert hit.text == "beta zebra crossing"
    assert status().index_problem is None


def test_mismatch_that_cannot_be_repaired_answers_by_keyword_and_says_so(funes_home):
    import pyarrow as pa

    from funes.commands.recall import recall
    from funes.memory import indexes
    from funes.memory import lance as lt

    mem, _, _ = _embedded_memory()
    # vectors.lance is replaced (a sync, a copy from another machine) by one whose rows hold other ids
    table = mem.vectors.dataset().to_table()
    swapped = table.set_column(0, "id", pa.array(table["id"].to_pylist()[::-1], pa.string()))
    lt.overwrite(mem.vectors.path, swapped)
    mem.vectors.reload()
    assert indexes.problem(mem) == "6 vectors point at other chunks"
    with mem.lock():  # another writer is busy: nothing can be re-mapped now
        res = recall("quokka", half_life=0)
    assert "vectors point at other chunks" in res.note and "keyword" in res.note
    assert res.hits[0].text == "gamma quokka" and set(res.hits[0].ranks) == {"bm25"}
    assert recall("quokka", half_life=0).note is None  # lock free: re-mapped, hybrid again


def test_a_rebuilt_chunk_table_is_never_searched_with_the_old_index(funes_home):
    from funes.commands.recall import recall
    from funes.errors import FunesError
    from funes.memory import Memory

    mem, rows, _ = _embedded_memory()
    shutil.rmtree(mem.chunks.path)
    mem = Memory.resolve(None)
    mem.chunks.append(chunk_rows(list(reversed(rows))))
    with mem.lock(), pytest.raises(FunesError, match="other rows"):
        recall("quokka", half_life=0)
    assert recall("quokka", half_life=0).hits[0].text == "gamma quokka"


def test_index_remaps_and_drops_vectors_and_reports_it(funes_home):
    from funes.memory import Memory

    mem, rows, _ = _embedded_memory()
    shutil.rmtree(mem.chunks.path)
    mem = Memory.resolve(None)
    mem.chunks.append(chunk_rows(list(reversed(rows[2:]))))  # two chunks are gone
    with mem.lock():
        fixed = mem.repair_vectors()
    assert fixed["dropped"] == 2 and fixed["mismatched"] >= 1
    assert _vectors_match(mem) and mem.vectors.count() == 4 and len(mem.pending_rows()) == 0


# ---- B3/B17: damaged derived index files -----------------------------------------------------


def _damage(folder: Path, how: str) -> None:
    man = json.loads((folder / "manifest.json").read_text())
    if how == "bm25-truncated":
        f = folder / man["bm25"][0]["dir"] / "data.csc.index.npy"
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    elif how == "bm25-vocab-deleted":
        (folder / man["bm25"][0]["dir"] / "vocab.hash.npy").unlink()
    elif how == "bm25-dir-deleted":
        shutil.rmtree(folder / man["bm25"][0]["dir"])
    elif how == "faiss-truncated":
        f = folder / man["faiss"][0]["file"]
        f.write_bytes(f.read_bytes()[:40])
    elif how == "faiss-deleted":
        (folder / man["faiss"][0]["file"]).unlink()
    elif how == "facets-truncated":
        f = folder / f"facets.{man['generation']}" / "session.bin"
        f.write_bytes(f.read_bytes()[:3])
    elif how == "facets-sessions-deleted":
        (folder / f"facets.{man['generation']}" / "sessions.jsonl").unlink()
    elif how == "manifest-wrong-types":
        man["chunks"] = []
        (folder / "manifest.json").write_text(json.dumps(man))


DAMAGE = [
    "bm25-truncated",
    "bm25-vocab-deleted",
    "bm25-dir-deleted",
    "faiss-truncated",
    "faiss-deleted",
    "facets-truncated",
    "facets-sessions-deleted",
    "manifest-wrong-types",
]


@pytest.mark.parametrize("how", DAMAGE)
def test_a_damaged_index_file_is_rebuilt_by_the_next_command_that_needs_it(funes_home, how):
    from funes.commands.get import get
    from funes.commands.recall import recall
    from funes.commands.status import status
    from funes.memory import indexes

    mem, _, _ = _embedded_memory()
    before = [(h.turn_uuid, round(h.score, 6)) for h in recall("quokka marmalade", half_life=0).hits]
    _damage(indexes.index_dir(mem), how)
    st = status()  # never a traceback; says what is wrong (a wrong-typed manifest reads as not built)
    assert st.index_problem or not st.index["built"]
    assert get("s1", "s1-t2", window=0).turns[0].blocks[0].text == "gamma quokka"  # the table answers
    after = [(h.turn_uuid, round(h.score, 6)) for h in recall("quokka marmalade", half_life=0).hits]
    assert after == before
    assert indexes.problem(mem) is None


def test_a_damaged_index_is_refused_in_one_line_when_it_cannot_be_rebuilt(funes_home):
    from funes.commands.recall import recall
    from funes.errors import FunesError
    from funes.memory import indexes

    mem, _, _ = _embedded_memory()
    _damage(indexes.index_dir(mem), "faiss-deleted")
    with mem.lock(), pytest.raises(FunesError) as e:
        recall("quokka", half_life=0)
    assert "damaged" in str(e.value) and "funes index" in (e.value.hint or "")


def test_funes_index_repairs_a_damaged_index_even_when_nothing_is_new(funes_home, tmp_path):
    from funes.commands import index
    from funes.memory import Memory, indexes

    (tmp_path / "empty").mkdir()
    mem, _, _ = _embedded_memory()
    _damage(indexes.index_dir(mem), "bm25-vocab-deleted")
    report = index.index(index.Options(path=str(tmp_path / "empty"), no_embed=True))
    assert any("search index: damaged" in r for r in report.repairs)
    assert indexes.problem(Memory.resolve(None)) is None


@pytest.mark.parametrize("how", ["bm25-truncated", "facets-truncated", "manifest-wrong-types"])
def test_cli_status_recall_get_never_print_a_traceback_on_a_damaged_index(funes_home, how):
    from funes.memory import indexes

    mem, _, _ = _embedded_memory(vectors=False)  # the CLI embeds queries with the real model
    _damage(indexes.index_dir(mem), how)
    p = _cli(funes_home, "status")
    assert p.returncode == 0 and "Traceback" not in p.stderr
    assert "search index: needs repair" in p.stdout or "not built yet" in p.stdout
    p = _cli(funes_home, "get", "s1", "s1-t2", "--window", "0")
    assert p.returncode == 0 and "gamma quokka" in p.stdout
    p = _cli(funes_home, "recall", "quokka", "-k", "1")
    assert p.returncode == 0 and "gamma quokka" in p.stdout, p.stderr


# ---- B6: a recall that cannot search says why -----------------------------------------------


def test_recall_without_an_index_it_cannot_build_says_why(funes_home):
    from funes.commands.recall import recall
    from funes.errors import FunesError
    from funes.memory import indexes

    mem, _, _ = _embedded_memory()
    shutil.rmtree(indexes.index_dir(mem))
    with mem.lock(), pytest.raises(FunesError) as e:
        recall("quokka", half_life=0)
    assert "not built yet" in str(e.value) and "6 chunks stored" in str(e.value)
    assert recall("quokka", half_life=0).hits  # once the writer is gone, the recall builds it


def test_recall_waits_for_a_writer_that_finishes(funes_home, monkeypatch):
    import threading
    import time

    from funes.commands import recall as recall_cmd
    from funes.memory import indexes

    monkeypatch.setattr(recall_cmd, "WAIT_S", 20.0)
    mem, _, _ = _embedded_memory()
    shutil.rmtree(indexes.index_dir(mem))
    held, release = threading.Event(), threading.Event()

    def writer():
        with mem.lock():
            held.set()
            release.wait(10)

    t = threading.Thread(target=writer)
    t.start()
    held.wait(5)
    threading.Timer(1.0, release.set).start()
    t0 = time.monotonic()
    res = recall_cmd.recall("quokka", half_life=0)
    t.join()
    assert res.hits and res.note is None and 0.8 < time.monotonic() - t0 < 15


# ---- B7: a ledger ahead of its table ---------------------------------------------------------


def _tree(tmp_path: Path, sessions: int = 4) -> Path:
    from transcripts import prose, write_claude_session

    root = tmp_path / "projects"
    for s in range(sessions):
        write_claude_session(root, f"sess-{s}", [prose(s * 10 + t, 30) for t in range(3)])
    return root


def test_a_lost_last_commit_is_detected_and_its_sessions_stored_again(funes_home, tmp_path, monkeypatch):
    from funes.commands import index
    from funes.commands.recall import recall
    from funes.memory import Memory

    monkeypatch.setattr(index, "FLUSH_BLOCKS", 3)  # one commit per session
    root = _tree(tmp_path)
    index.index(index.Options(path=str(root), no_embed=True))
    mem = Memory.resolve(None)
    full = mem.chunks.count()
    ids = set(mem.chunks.ids())
    versions = mem.chunks.path / "_versions"
    newest = sorted(p for p in versions.iterdir() if p.name.endswith(".manifest"))[0]
    newest.unlink()  # what a power cut can do to the last Lance commit
    (versions / "latest_version_hint.json").unlink(missing_ok=True)
    mem.chunks.reload()
    assert mem.chunks.count() < full
    report = index.index(index.Options(path=str(root), no_embed=True))
    assert any(r.startswith("ledger:") for r in report.repairs)
    mem.chunks.reload()
    assert mem.chunks.count() == full and set(mem.chunks.ids()) == ids
    assert recall("parser", half_life=0).hits


def test_an_index_covering_more_rows_than_the_table_is_rebuilt(funes_home):
    from funes.commands.recall import recall
    from funes.memory import Memory, indexes

    mem = memory_with(session("a", ["kept row one", "kept row two"]))
    mem.chunks.append(chunk_rows(session("b", ["lost later row about otters"])))
    indexes.refresh(mem)
    versions = mem.chunks.path / "_versions"
    newest = sorted(p for p in versions.iterdir() if p.name.endswith(".manifest"))[0]
    newest.unlink()
    (versions / "latest_version_hint.json").unlink(missing_ok=True)
    mem = Memory.resolve(None)
    assert "covers 3 of 2" in indexes.problem(mem)
    assert recall("otters", half_life=0).hits == []
    assert [h.session_id for h in recall("kept", half_life=0).hits] == ["a", "a"]


# ---- B5/B8/B11: damaged tables, refused with the fix, never deleted --------------------------


def _uncommit(table: Path) -> None:
    """What a kill inside a table's first commit leaves: Lance's manifest temp, no manifest."""
    versions = table / "_versions"
    for p in list(versions.iterdir()):
        if p.name.endswith(".manifest"):
            p.rename(versions / (p.name + "#1"))
        else:
            p.unlink()


def test_vectors_killed_in_their_first_commit_are_set_aside_and_re_embedded(funes_home, tmp_path):
    from funes.commands.recall import recall
    from funes.commands.status import status
    from funes.memory import Memory

    mem, _, _ = _embedded_memory()
    _uncommit(mem.vectors.path)
    mem = Memory.resolve(None)
    st = status()
    assert st.state == "ready" and st.vectors == 0 and st.pending_vectors == 6
    assert recall("quokka", half_life=0).hits  # the recall's repair sets the table aside
    assert list(mem.path.glob("vectors.lance.set-aside-*"))  # moved, not deleted
    assert not mem.vectors.path.exists()
    add_vectors(mem, list(range(6)), unit_vectors(6, seed=3))  # a later run embeds again
    assert mem.vectors.count() == 6


@pytest.mark.parametrize("how", ["first-commit-killed", "versions-lost"])
def test_a_chunk_table_without_a_version_is_refused_and_never_deleted(funes_home, tmp_path, how):
    mem = memory_with(session("a", ["precious only copy of an old session"]))
    table = mem.chunks.path
    if how == "first-commit-killed":
        _uncommit(table)
    else:
        shutil.rmtree(table / "_versions")
    data = sorted(p.name for p in (table / "data").iterdir())
    (tmp_path / "src").mkdir()
    for args in (["status"], ["recall", "precious"], ["get", "a", "a-t0"], ["index", str(tmp_path / "src")]):
        err = _one_line_refusal(_cli(funes_home, *args))
        assert "no committed version" in err and "aside" in err
    assert sorted(p.name for p in (table / "data").iterdir()) == data


def test_a_missing_data_file_is_refused_and_repair_restores_the_last_intact_version(funes_home):
    from funes.memory import Memory

    mem = memory_with(session("a", ["first commit text about herons"]))
    mem.chunks.append(chunk_rows(session("b", ["second commit text about egrets"])))
    newest = max((mem.chunks.path / "data").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    newest.unlink()
    for args in (["status"], ["recall", "herons"], ["index", str(funes_home)]):
        err = _one_line_refusal(_cli(funes_home, *args))
        assert "missing" in err and "funes repair" in err and "version 1" in err
    p = _cli(funes_home, "repair")
    assert p.returncode == 0 and "version 1" in p.stdout, p.stderr
    p = _cli(funes_home, "recall", "herons", "-k", "1")
    assert p.returncode == 0 and "herons" in p.stdout, p.stderr
    assert Memory.resolve(None).chunks.count() == 1


def test_a_truncated_newest_manifest_is_refused_and_repaired(funes_home):
    mem = memory_with(session("a", ["first commit text about herons"]))
    mem.chunks.append(chunk_rows(session("b", ["second commit text about egrets"])))
    versions = mem.chunks.path / "_versions"
    newest = sorted(p for p in versions.iterdir() if p.name.endswith(".manifest"))[0]
    newest.write_bytes(newest.read_bytes()[:10])
    err = _one_line_refusal(_cli(funes_home, "status"))
    assert "funes repair" in err and ".rs:" not in err  # no Lance build paths
    p = _cli(funes_home, "repair")
    assert p.returncode == 0, p.stderr
    assert _cli(funes_home, "status").returncode == 0
    assert list(mem.path.glob("chunks.lance.damaged-manifests-*/*.manifest"))  # moved, not deleted


# ---- B13/B16/B18: the error contract ---------------------------------------------------------


def test_malformed_model_stamp_is_ignored(funes_home):
    mem, _, _ = _embedded_memory(vectors=False)
    (mem.path / "manifest.json").write_text("[1, 2, 3]")
    for args in (["status"], ["recall", "quokka"], ["get", "s1", "s1-t2"]):
        p = _cli(funes_home, *args)
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize("where", ["state.json", "store.lock"])
def test_a_folder_where_a_state_file_goes_is_one_line(funes_home, tmp_path, where):
    root = _tree(tmp_path, 1)
    (funes_home / where).mkdir(parents=True)
    err = _one_line_refusal(_cli(funes_home, "index", str(root), "--no-embed"))
    assert "folder" in err or "directory" in err.lower()


def test_a_full_disk_is_one_line_and_keeps_what_was_stored(funes_home, tmp_path, monkeypatch, capsys):
    """ENOSPC at the file-system edge (no tmpfs can be mounted here): the ledger write fails."""
    import errno
    import os

    from funes import cli
    from funes.memory import atomic

    root = _tree(tmp_path, 2)
    real = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fsync", full)
    rc = cli.main(["index", str(root), "--no-embed"])
    err = capsys.readouterr().err
    assert rc == 1 and "No space left on device" in err and "Traceback" not in err
    monkeypatch.setattr(atomic.os, "fsync", real)
    assert not list(funes_home.glob(".state.json.*.tmp"))
    assert cli.main(["index", str(root), "--no-embed"]) == 0


@pytest.mark.parametrize(
    "args",
    [
        ["recall", "x", "--half-life", "nan"],
        ["recall", "x", "--recency-floor", "nan"],
        ["recall", "x", "--recency-floor", "5"],
        ["recall", "x", "--recency-floor", "-3"],
        ["recall", "x", "--harness", ""],
        ["index", "/tmp", "--limit", "-1"],
        ["index", "/tmp", "--limit", "0"],
    ],
)
def test_invalid_flags_exit_2_with_one_line(funes_home, args):
    memory_with(session("a", ["x marks the spot"]))
    p = _cli(funes_home, *args)
    assert p.returncode == 2, p.stderr
    _one_line_refusal(p)


def test_leftover_ledger_temp_files_are_removed(funes_home, tmp_path):
    from funes.commands import index

    root = _tree(tmp_path, 1)
    funes_home.mkdir(parents=True, exist_ok=True)
    (funes_home / ".state.json.abcd1234.tmp").write_text("{}")  # a killed run's copy of the ledger
    index.index(index.Options(path=str(root), no_embed=True))
    assert not list(funes_home.glob(".state.json.*.tmp"))


def test_vectors_helpers_keep_dtype(funes_home):
    mem, _, _ = _embedded_memory(3)
    assert mem.vectors.check(mem.chunks) == 0 and isinstance(mem.vectors.mismatched(mem.chunks), np.ndarray)


# ---- durability: the ledger never runs ahead of the data -------------------------------------


def test_the_chunk_commit_is_fsynced_before_the_ledger_names_it(funes_home, tmp_path, monkeypatch):
    import os

    from funes.commands import index
    from funes.memory import atomic
    from funes.memory import lance as lt

    synced: list[str] = []
    real_open, real_fsync = os.open, os.fsync
    names: dict[int, str] = {}

    def tracking_open(path, flags, *a, **k):
        fd = real_open(path, flags, *a, **k)
        names[fd] = str(path)
        return fd

    def tracking_fsync(fd):
        synced.append(names.get(fd, "?"))
        return real_fsync(fd)

    assert lt.os is atomic.os  # one `os` module: the seam sees every fsync, named by what it opened
    monkeypatch.setattr(os, "open", tracking_open)
    monkeypatch.setattr(os, "fsync", tracking_fsync)
    index.index(index.Options(path=str(_tree(tmp_path, 2)), no_embed=True))
    first_ledger = next(i for i, p in enumerate(synced) if ".state.json." in p)
    before = synced[:first_ledger]
    assert any("/chunks.lance/data/" in p for p in before), before
    assert any("/chunks.lance/_versions/" in p and p.endswith(".manifest") for p in before), before


@pytest.mark.parametrize(
    "code, words",
    [
        ("ENOSPC", "free some space"),
        ("EROFS", "read-only"),
        ("EACCES", "permissions"),
        ("EISDIR", "folder sits where"),
    ],
)
def test_file_system_refusals_name_the_cause(funes_home, tmp_path, monkeypatch, capsys, code, words):
    import errno
    import os

    from funes import cli
    from funes.memory import lock

    num = getattr(errno, code)

    def refuse(path, *a, **k):
        raise OSError(num, os.strerror(num), str(path))

    monkeypatch.setattr(lock.os, "open", refuse)  # the first write of an index: the lock file
    rc = cli.main(["index", str(_tree(tmp_path, 1)), "--no-embed"])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err and os.strerror(num) in err and words in err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("funes: ") and lines[1].startswith("  hint: ")


def test_a_lance_io_error_without_errno_is_one_line(funes_home, monkeypatch, capsys):
    from funes import cli
    from funes.commands import status as status_cmd

    def boom(*a, **k):
        raise OSError("LanceError(IO): No space left on device (os error 28), /home/runner/lance/x.rs:190:9")

    monkeypatch.setattr(status_cmd, "status", boom)
    assert cli.main(["status"]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and ".rs:" not in err and "free some space" in err


def test_a_first_commit_in_flight_is_not_called_damage(funes_home, tmp_path):
    """While another process holds the lock, a table with files and no manifest is being written."""
    from funes.commands.status import status

    mem = memory_with(session("a", ["row"]))
    _uncommit(mem.chunks.path)
    lock = mem.path.parent / "store.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import fcntl,sys,time; f=open({str(lock)!r},'a'); fcntl.flock(f,2); print(1, flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        holder.stdout.readline()
        st = status()
        assert st.state == "empty" and "being written by another funes command" in st.message
    finally:
        holder.kill()
        holder.wait()
    from funes.errors import MemoryUnreadable

    with pytest.raises(MemoryUnreadable, match="no committed version"):  # nobody writing: it is damage
        status()
