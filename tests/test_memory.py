"""The memory's own mechanics on real Lance tables: id dedup on append, the lock of any location, state files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from funes import paths
from funes.errors import LockBusy
from funes.memory import Memory, State, ledger, lock
from funes.memory.atomic import read_json, write_json
from retrieval_support import chunk_rows, session, unit_vectors


def test_append_new_stores_each_id_once(funes_home):
    mem = Memory.resolve(None)
    rows = chunk_rows(session("s", ["one", "two", "three"]))
    doubled = chunk_rows(session("s", ["one", "two", "three"]) * 2)  # the same coordinates twice in one batch
    assert mem.chunks.append_new(doubled).num_rows == 3
    assert mem.chunks.append_new(rows).num_rows == 0  # this object's own appends
    again = Memory.resolve(None)  # a later run: only what is stored
    more = chunk_rows(session("s", ["one", "two", "three", "four"]))
    assert again.chunks.append_new(more)["text"].to_pylist() == ["four"]
    assert again.chunks.count() == 4 and len(again.chunks.ids()) == 4


def test_append_new_over_many_sessions_uses_one_id_scan(funes_home):
    mem = Memory.resolve(None)
    first = [r for s in range(80) for r in session(f"s{s:02d}", [f"text {s}"])]
    assert mem.chunks.append_new(chunk_rows(first)).num_rows == 80
    again = Memory.resolve(None)
    second = [r for s in range(100) for r in session(f"s{s:02d}", [f"text {s}"])]
    assert again.chunks.append_new(chunk_rows(second)).num_rows == 20
    assert again.chunks.append_new(chunk_rows(second)).num_rows == 0


def test_session_rows_head_time_and_pending_vectors(funes_home):
    mem = Memory.resolve(None)
    assert mem.chunks.count() == 0 and mem.chunks.head_time() is None
    mem.chunks.append(chunk_rows(session("a", ["x", "y"]) + session("b", ["z"])))
    assert mem.chunks.session_rows("a", ["text"])["text"].to_pylist() == ["x", "y"]
    assert mem.chunks.session_rows("it's", ["text"]).num_rows == 0  # quoted, not injected
    assert mem.chunks.head_time() is not None
    assert mem.pending_rows().tolist() == [0, 1, 2]
    ids = mem.chunks.take([2], ["id"])["id"].to_pylist()
    mem.append_vectors(np.array([2]), ids, unit_vectors(1), "m")
    assert mem.pending_rows().tolist() == [0, 1]
    assert mem.manifest()["dim"] == 16 and mem.state()[0] is State.READY


def test_a_path_memory_has_its_own_writer_lock(funes_home, tmp_path):
    other = Memory.resolve(str(tmp_path / "elsewhere" / "memory"))
    assert paths.lock_file_for(other.path) == tmp_path / "elsewhere" / "store.lock"
    assert paths.lock_file_for(Memory.resolve(None).path) == funes_home / "store.lock"
    with other.lock():
        with pytest.raises(LockBusy, match="another funes memory operation is in progress"):
            other.lock().__enter__()
        with lock.try_writer_lock(paths.lock_file_for(other.path)) as held:
            assert held is False
        with Memory.resolve(None).lock():  # the default memory is a different location
            pass
    with lock.try_writer_lock(paths.lock_file_for(other.path)) as held:
        assert held is True


def test_lock_is_held_across_processes(funes_home, tmp_path):
    where = paths.lock_file_for(tmp_path / "m" / "memory")
    code = (
        "import sys; from pathlib import Path; from funes.memory import lock\n"
        "with lock.try_writer_lock(Path(sys.argv[1])) as held: print(held)"
    )
    with lock.writer_lock(where):
        out = subprocess.run([sys.executable, "-c", code, str(where)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    out = subprocess.run([sys.executable, "-c", code, str(where)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_write_json_replaces_whole_files_only(tmp_path):
    target = tmp_path / "state" / "state.json"
    write_json(target, {"a": 1})
    with pytest.raises(TypeError):
        write_json(target, {"a": object()})  # fails mid-serialisation
    assert read_json(target) == {"a": 1}
    assert os.listdir(target.parent) == ["state.json"]  # no temp file left behind
    target.write_text("{torn", encoding="utf-8")
    assert read_json(target) is None
    assert ledger.load_state(target) == {}


def test_state_files_share_the_writer(funes_home):
    ledger.save_state(paths.state_file(), {"u": {"sig": "1", "level": "text"}, "old": {"level": "everything"}})
    assert json.loads(paths.state_file().read_text()) == {
        "old": {"level": "everything"},
        "u": {"sig": "1", "level": "text"},
    }
    assert ledger.load_state(paths.state_file()) == {"u": {"sig": "1", "level": "text"}}
    assert ledger.is_current({"u": {"sig": "1", "level": "tool_use"}}, "u", "1", "text")
    assert not ledger.is_current({"u": {"sig": "1", "level": "text"}}, "u", "1", "tool_result")
