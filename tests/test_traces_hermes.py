"""Hermes: state.db across schema versions (upstream-spec 1.6, 1.9), damage, and the session logs."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest

from conftest import FIXTURES
from funes.errors import SourceError
from funes.traces import Unit, hermes, hermes_logs, source

LOGS = FIXTURES / "hermes" / "sessions"

V17_SESSIONS = "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, cwd TEXT, started_at REAL NOT NULL)"
V17_MESSAGES = """CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
    role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
    timestamp REAL NOT NULL, reasoning TEXT, reasoning_content TEXT, active INTEGER NOT NULL DEFAULT 1)"""
V6_SESSIONS = "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, started_at REAL NOT NULL)"
V6_MESSAGES = """CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
    role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
    timestamp REAL NOT NULL, reasoning TEXT)"""

CALLS = '[{"id":"c1","type":"function","function":{"name":"terminal","arguments":"{\\"command\\": \\"ls\\"}"}},' \
    '{"id":"c2","function":{"name":"memory","arguments":{"k":1}}},{"id":"c3","function":{"name":"noop"}}]'  # fmt: skip

# (session, role, content, tool_call_id, tool_calls, tool_name, timestamp, reasoning, reasoning_content, active)
V17_ROWS = [
    ("s-a", "session_meta", None, None, None, None, 1767225600.0, None, None, 1),
    ("s-a", "system", "you are hermes", None, None, None, 1767225600.0, None, None, 1),
    ("s-a", "user", "list my files", None, None, None, 1767225601.5, None, None, 0),  # inactive: kept
    ("s-a", "assistant", "", None, CALLS, None, 1767225602.123456, "ignored", "look first", 1),
    ("s-a", "tool", "a.txt\nb.txt", "c1", None, None, 1767225602.000000001, None, None, 1),
    ("s-a", "assistant", "   ", None, None, None, 1767225603.0, None, None, 1),  # whitespace: dropped
    ("s-a", "assistant", "Two files.", None, "not json", None, 1767225604.0, "shadowed", "", 1),
    ("s-b", "user", "hello", None, None, None, 1767225700.0, None, None, 1),
]


def make_db(path: Path, v6: bool = False, wal: bool = False) -> Path:
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(V6_SESSIONS if v6 else V17_SESSIONS)
    conn.execute(V6_MESSAGES if v6 else V17_MESSAGES)
    if v6:
        conn.executemany("INSERT INTO sessions VALUES (?, 'cli', 0)", [("s-a",), ("s-b",)])
        rows = [r[:8] + (r[7] if r[8] is None else r[8],) for r in V17_ROWS]  # v6 has only `reasoning`
        conn.executemany("INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name,"
                         " timestamp, reasoning) VALUES (?,?,?,?,?,?,?,?)", [r[:7] + (r[8],) for r in rows])  # fmt: skip
    else:
        conn.executemany("INSERT INTO sessions VALUES (?, 'cli', ?, 0)", [("s-a", "/home/ada/proj"), ("s-b", None)])
        conn.executemany("INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name,"
                         " timestamp, reasoning, reasoning_content, active) VALUES (?,?,?,?,?,?,?,?,?,?)", V17_ROWS)  # fmt: skip
    conn.commit()
    conn.close()
    return path


def frame_of(db: Path, session: str):
    unit = next(u for u in hermes.units(db) if u.session == session)
    return hermes.read(unit)


def test_units_keyed_by_db_and_session_newest_watermark_first(tmp_path):
    db = make_db(tmp_path / "state.db")
    units = hermes.units(db)
    assert [(u.key, u.signature, u.session) for u in units] == [
        (f"hermes:{db}#s-b", "8", "s-b"),
        (f"hermes:{db}#s-a", "7", "s-a"),
    ]
    assert [u.session for u in hermes.units(tmp_path, limit=1)] == ["s-b"]  # a dir means <dir>/state.db


def test_v17_session_rows(tmp_path):
    parsed = frame_of(make_db(tmp_path / "state.db"), "s-a")
    frame = parsed.frame
    assert set(frame["workdir"]) == {"-home-ada-proj"} and set(frame["harness"]) == {"hermes"}
    rows = frame.select("turn_uuid", "role", "block_type", "text", "tool_name", "tool_use_id").rows()
    assert rows == [
        ("3", "user", "text", "list my files", None, None),
        ("4", "assistant", "thinking", "look first", None, None),
        ("4", "assistant", "tool_use", '{"command": "ls"}', "terminal", "c1"),
        ("4", "assistant", "tool_use", '{"k":1}', "memory", "c2"),
        ("4", "assistant", "tool_use", "{}", "noop", "c3"),
        ("5", "tool", "tool_result", "a.txt\nb.txt", "terminal", "c1"),  # name backfilled from c1
        ("7", "assistant", "text", "Two files.", None, None),  # "" reasoning_content shadows reasoning
    ]
    assert frame["seq"].unique(maintain_order=True).to_list() == [0, 1, 2, 3]
    assert frame["parent_uuid"].null_count() == frame.height
    assert not parsed.skipped


def test_timestamps_are_rfc3339_utc(tmp_path):
    frame = frame_of(make_db(tmp_path / "state.db"), "s-a").frame
    ts = dict(frame.select("turn_uuid", "ts").iter_rows())
    assert ts["3"] == "2026-01-01T00:00:01.500+00:00"
    assert ts["4"].startswith("2026-01-01T00:00:02.123456") and ts["4"].endswith("+00:00")
    assert ts["7"] == "2026-01-01T00:00:04+00:00"


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (0.0, "1970-01-01T00:00:00+00:00"),
        (1.25, "1970-01-01T00:00:01.250+00:00"),
        (1.000002, "1970-01-01T00:00:01.000002+00:00"),
        (None, ""),
        (float("nan"), ""),
        (1e20, ""),
        ("2026-01-01", ""),
    ],
)
def test_rfc3339(value, want):
    assert hermes.rfc3339(value) == want


def test_v6_schema_without_cwd_and_reasoning_content(tmp_path):
    db = make_db(tmp_path / "state.db", v6=True)
    frame = frame_of(db, "s-a").frame
    assert set(frame["workdir"]) == {"hermes"}  # no sessions.cwd: the literal fallback
    thinking = frame.filter(block_type="thinking")["text"].to_list()
    assert thinking == ["look first"]  # from `reasoning`


def test_garbage_file_is_a_source_error_not_a_crash(tmp_path):
    bad = tmp_path / "state.db"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(SourceError):
        hermes.units(bad)
    with pytest.raises(SourceError):
        source.resolve(tmp_path / "state.db")[0].units()


def test_corrupt_pages_are_a_source_error(tmp_path):
    good = make_db(tmp_path / "good.db")
    unit = hermes.units(good)[-1]
    bad = tmp_path / "state.db"
    data = bytearray(good.read_bytes())
    data[100:] = os.urandom(len(data) - 100)  # keep the header, scramble every page
    bad.write_bytes(bytes(data))
    with pytest.raises(SourceError):
        hermes.units(bad)
    with pytest.raises(SourceError):
        hermes.read(Unit(unit.key, unit.harness, bad, unit.signature, unit.mtime, unit.session))


def test_read_only_directory_gets_no_extra_files(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    db = make_db(folder / "state.db", wal=True)  # a WAL database: plain readers create -wal/-shm
    before = sorted(os.listdir(folder))
    db.chmod(stat.S_IRUSR | stat.S_IRGRP)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        for unit in hermes.units(db):
            assert hermes.read(unit).frame.height
        assert sorted(os.listdir(folder)) == before == ["state.db"]
    finally:
        folder.chmod(stat.S_IRWXU)


def test_jsonl_log():
    path = LOGS / "20260404_110946_8657dc.jsonl"
    parsed = hermes_logs.read(Unit(str(path), "hermes", path, None))
    frame = parsed.frame
    assert set(frame["session_id"]) == {"20260404_110946_8657dc"} and set(frame["workdir"]) == {"hermes"}
    rows = frame.select("turn_uuid", "role", "block_type", "tool_name", "ts").rows()
    sid = "20260404_110946_8657dc"
    assert rows == [
        (f"{sid}-0", "user", "text", None, "2026-04-04T11:10:02.513530"),
        (f"{sid}-1", "assistant", "thinking", None, "2026-04-04T11:10:05.000000"),
        (f"{sid}-1", "assistant", "tool_use", "terminal", "2026-04-04T11:10:05.000000"),
        (f"{sid}-2", "tool", "tool_result", "terminal", "2026-04-04T11:10:06.000000"),
        (f"{sid}-3", "assistant", "text", None, "2026-04-04T11:10:08.000000"),
        (f"{sid}-4", "user", "text", None, "2026-04-04T12:00:01.000000"),
    ]  # both session_meta lines skipped


def test_json_log():
    path = LOGS / "session_cron_5ef95dfc9c7b_20260410_020048.json"
    [src] = source.resolve(path)
    frame = src.read(src.units()[0]).frame
    assert set(frame["session_id"]) == {"cron_5ef95dfc9c7b_20260410_020048"}
    assert set(frame["ts"]) == {"2026-04-10T02:00:48.354252"}  # no per-message time: session_start
    rows = frame.select("role", "block_type", "text", "tool_name").rows()
    assert rows == [
        ("user", "text", "Backup the Hermes config to GitHub.", None),
        ("assistant", "thinking", "Run git add, commit and push.", None),
        ("assistant", "tool_use", '{"command":"git push"}', "terminal"),
        ("tool", "tool_result", "[main 4b38a2c] Auto-backup", "terminal"),
        ("assistant", "text", "Backup complete.", None),
    ]  # the system message is dropped


def test_broken_json_log_is_counted(tmp_path):
    path = tmp_path / "session_x.json"
    path.write_text('{"session_id": "x", "messages": [')
    [src] = source.resolve(path, "hermes")
    parsed = src.read(src.units()[0])
    assert parsed.frame.height == 0 and parsed.skipped == {"malformed json": 1}


def hermes_home(tmp_path: Path) -> Path:
    home = tmp_path / ".hermes"
    shutil.copytree(LOGS, home / "sessions")
    db = make_db(home / "state.db")
    conn = sqlite3.connect(db)
    conn.executemany(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
        [("20260501_090000_aaaa1111", "user", "this session is also in state.db", 1777626001.0)],
    )
    conn.commit()
    conn.close()
    return home


def test_logs_are_not_duplicated_with_state_db(tmp_path):
    home = hermes_home(tmp_path)
    [src] = source.resolve(home)
    units = src.units()
    keys = [u.key for u in units]
    assert keys[:3] == [f"hermes:{home / 'state.db'}#{s}" for s in ("20260501_090000_aaaa1111", "s-b", "s-a")]
    assert sorted(Path(k).name for k in keys[3:]) == [
        "20260404_110946_8657dc.jsonl",  # preferred over session_20260404_110946_8657dc.json
        "session_cron_5ef95dfc9c7b_20260410_020048.json",
    ]  # aaaa1111.jsonl is in the database; request_dump_*.json is not a transcript
    sessions = [s for u in units for s in src.read(u).frame["session_id"].unique()]
    assert len(sessions) == len(set(sessions)) == 5


def test_known_roots_counts_hermes_with_only_sessions(funes_home, tmp_path):
    home = funes_home.parent
    (home / ".hermes" / "sessions").mkdir(parents=True)
    assert source.known_roots() == [("hermes", home / ".hermes")]
    [src] = source.resolve(None, "hermes")
    assert src.units() == []
