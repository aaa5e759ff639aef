"""One bad transcript never blocks the rest: an undecodable file name, a line nested deeper than
Python can walk, a Hermes database written while it is read. The unit is read, skipped or read
again with a counted, named reason; every other unit is indexed."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from funes.errors import SourceError
from funes.traces import hermes, jsonl
from test_traces_hermes import make_db
from transcripts import claude_record, prose, write_claude_session


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [1000, 5000, 200_000])
def test_a_line_nested_too_deep_is_counted_not_fatal(depth):
    skipped: Counter = Counter()
    line = '{"type": "user", "toolUseResult": ' + _nested(depth) + "}"
    assert jsonl.parse_line(line, False, skipped) == []
    assert skipped == Counter({jsonl.TOO_DEEP: 1})


def test_deep_line_with_escapes_is_counted_not_fatal():
    # json.loads takes depth 900, but the lone-surrogate sanitiser walks it recursively and would die
    skipped: Counter = Counter()
    line = '{"a": ' + "[" * 900 + '"\\ud800"' + "]" * 900 + "}"
    assert jsonl.parse_line(line, False, skipped) == []
    assert skipped == Counter({jsonl.TOO_DEEP: 1})
    shallow: Counter = Counter()
    assert jsonl.parse_line('{"a": ' + "[" * 50 + '"\\ud800"' + "]" * 50 + "}", False, shallow)
    assert shallow == Counter({jsonl.LONE_SURROGATE: 1})


def _index(root: Path):
    from funes.commands import index

    return index.index(index.Options(path=str(root), no_embed=True))


def _stored(funes_home: Path):
    import lance

    return lance.dataset(str(funes_home / "memory" / "chunks.lance")).to_table(
        columns=["session_id", "source_path", "text"]
    )


def test_poisoned_units_never_block_the_others(funes_home, tmp_path):
    root = tmp_path / "projects"
    write_claude_session(root, "good-one", [prose(1, 40), prose(2, 40)])
    proj = root / "-home-u-proj"
    # a Latin-1 file name: not valid UTF-8, so Python holds it with surrogate escapes
    odd = os.fsencode(proj) + b"/caf\xe9.jsonl"
    with open(odd, "w") as f:
        f.write(json.dumps(claude_record("cafe-session", 0, "the cafe session talks about espresso")) + "\n")
    deep = proj / "deep.jsonl"
    with deep.open("w") as f:
        f.write(json.dumps(claude_record("deep", 0, "before the deep line, about quokkas")) + "\n")
        rec = claude_record("deep", 1, "x")
        f.write(json.dumps(rec)[:-1] + ', "toolUseResult": ' + _nested(3000) + "}\n")
        f.write(json.dumps(claude_record("deep", 2, "after the deep line, about wombats")) + "\n")
    report = _index(root)
    rows = _stored(funes_home)
    sessions = set(rows["session_id"].to_pylist())
    assert {"good-one", "deep", "caf\\xe9"} <= sessions
    assert any(p.endswith("caf\\xe9.jsonl") for p in rows["source_path"].to_pylist())
    texts = " ".join(rows["text"].to_pylist())
    assert "quokkas" in texts and "wombats" in texts and "espresso" in texts
    assert report.skipped[jsonl.TOO_DEEP] == 1
    assert not report.failed


def test_two_undecodable_names_stay_two_sessions(funes_home, tmp_path):
    root = tmp_path / "projects" / "-p"
    root.mkdir(parents=True)
    for raw, word in ((b"caf\xe9", "latte"), (b"caf\xe8", "mocha")):
        with open(os.fsencode(root) + b"/" + raw + b".jsonl", "w") as f:
            f.write(json.dumps(claude_record("x", 0, f"a session about {word}")) + "\n")
    _index(tmp_path / "projects")
    assert set(_stored(funes_home)["session_id"].to_pylist()) == {"caf\\xe9", "caf\\xe8"}


# ---- Hermes: a database that changes while it is read -------------------------------------------


def _add_row(db: Path, session: str, text: str) -> None:
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)",
        (session, text, time.time()),
    )
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def test_a_session_changed_mid_read_is_read_again(tmp_path, monkeypatch):
    db = make_db(tmp_path / "state.db", wal=True)
    unit = next(u for u in hermes.units(db) if u.session == "s-b")
    real = hermes._read_once
    calls = []

    def read_then_write(u):
        out = real(u)
        calls.append(out.frame.height)
        if len(calls) == 1:  # hermes writes and checkpoints while the first read is in flight
            _add_row(db, "s-b", "written during the read")
        return out

    monkeypatch.setattr(hermes, "_read_once", read_then_write)
    parsed = hermes.read(unit)
    assert len(calls) == 2
    assert "written during the read" in parsed.frame["text"].to_list()
    assert parsed.skipped[hermes.CHANGED_MID_READ] == 1
    assert parsed.frame["seq"].to_list() == list(range(parsed.frame.height))


def test_a_database_that_never_holds_still_fails_that_unit_alone(tmp_path, monkeypatch):
    db = make_db(tmp_path / "state.db", wal=True)
    unit = next(u for u in hermes.units(db) if u.session == "s-b")
    real = hermes._read_once

    def always_written(u):
        out = real(u)
        _add_row(db, "s-other", "noise")
        return out

    monkeypatch.setattr(hermes, "_read_once", always_written)
    monkeypatch.setattr(hermes.time, "sleep", lambda s: None)
    with pytest.raises(SourceError, match="kept changing"):
        hermes.read(unit)


_WRITER = """
import sqlite3, sys, time
db, stop = sys.argv[1], time.time() + float(sys.argv[2])
conn = sqlite3.connect(db)
n = 0
while time.time() < stop:
    conn.execute("BEGIN")
    for _ in range(50):
        n += 1
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('live', 'user', ?, ?)",
                     ("message %d" % n, float(n)))
    conn.commit()
    if n % 200 == 0:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
"""


def test_reads_during_a_live_writer_are_self_consistent(tmp_path):
    db = make_db(tmp_path / "state.db", wal=True)
    _add_row(db, "live", "message 0")
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(db), "4"])
    try:
        reads = 0
        while writer.poll() is None and reads < 40:
            try:
                unit = next(u for u in hermes.units(db) if u.session == "live")
                frame = hermes.read(unit).frame
            except SourceError as e:
                # the unit fails alone, with a named reason, and is read at the next index
                assert "kept changing" in str(e) or "malformed" in str(e) or "readable" in str(e), e
                continue
            reads += 1
            texts = frame["text"].to_list()
            uuids = frame["turn_uuid"].to_list()
            assert len(set(uuids)) == len(uuids)  # no phantom turn
            assert frame["seq"].to_list() == list(range(frame.height))
            numbers = [int(t.split()[1]) for t in texts]
            assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    finally:
        writer.kill()
        writer.wait()
