"""Claude Code transcripts: upstream-spec 1.3 and the 1.9 edge cases, on a hand-written fixture."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from funes.errors import SourceError
from funes.traces import Unit, claude, jsonl

PROJECTS = FIXTURES / "claude" / "projects"
SESSION = "5b3a1c2e-0001-4b8e-9a51-2f0c4d6e7a10"
MAIN = PROJECTS / "-home-ada-funes" / f"{SESSION}.jsonl"
SUB = PROJECTS / "-home-ada-funes" / SESSION / "subagents" / "agent-a1b2c3d.jsonl"


def read(path: Path):
    return claude.read(Unit(key=str(path), harness="claude_code", path=path, signature=None))


def turns(frame):
    return frame.group_by("seq", maintain_order=True).agg("turn_uuid", "role", "block_type", "text")


def test_session_workdir_harness_and_source_path():
    frame = read(MAIN).frame
    assert set(frame["session_id"]) == {SESSION}
    assert set(frame["workdir"]) == {"-home-ada-funes"}  # the first usable cwd
    assert set(frame["harness"]) == {"claude_code"}
    assert set(frame["source_path"]) == {str(MAIN)}


def test_only_user_and_assistant_records_with_blocks_count():
    frame = read(MAIN).frame
    # summary, snapshot, progress, system, last-prompt and the whitespace-only reply are dropped
    assert frame["seq"].unique().sort().to_list() == list(range(6))
    assert frame.filter(frame["turn_uuid"] == "u-4").height == 0


def test_string_content_is_one_text_block():
    first = read(MAIN).frame.row(0, named=True)
    assert (first["role"], first["block_type"], first["text"]) == ("user", "text", "what is in this repo?")
    assert first["parent_uuid"] is None and first["ts"] == "2026-02-01T10:00:00.000Z"


def test_thinking_and_tool_use_in_one_turn_with_compact_input():
    rows = read(MAIN).frame.filter(turn_uuid="u-2").rows(named=True)
    assert [r["block_type"] for r in rows] == ["thinking", "tool_use"]
    assert [r["block_idx"] for r in rows] == [0, 1]
    assert rows[1]["text"] == '{"command":"ls","description":"list files"}'  # key order kept
    assert (rows[1]["tool_name"], rows[1]["tool_use_id"]) == ("Bash", "toolu_1")
    assert rows[0]["parent_uuid"] == "u-1"


def test_tool_result_is_role_user_flattened_and_named_by_backfill():
    row = read(MAIN).frame.filter(block_type="tool_result").row(0, named=True)
    assert row["role"] == "user"
    assert row["text"] == "README.md\nsrc"  # the image part between the texts is dropped
    assert (row["tool_name"], row["tool_use_id"]) == ("Bash", "toolu_1")


def test_uuidless_records_get_distinct_deterministic_uuids():
    frame = read(MAIN).frame
    tail = frame.filter(frame["seq"] >= 4)["turn_uuid"].to_list()
    assert tail == [f"{SESSION}-4", f"{SESSION}-5"]
    assert frame.select("session_id", "turn_uuid", "block_idx").is_unique().all()


def test_reparse_is_identical():
    assert read(MAIN).frame.equals(read(MAIN).frame)


def test_subagent_session_id_is_agent_stem_and_workdir_falls_back_to_projects_dir(tmp_path):
    frame = read(SUB).frame
    assert set(frame["session_id"]) == {"agent-a1b2c3d"}
    assert set(frame["workdir"]) == {"-home-ada-funes"}  # no cwd in the file: path fallback


def test_units_newest_first_subagents_last_and_limit(tmp_path):
    root = tmp_path / "projects"
    shutil.copytree(PROJECTS, root)
    older = root / "-home-ada-funes" / "old.jsonl"
    older.write_text('{"type":"user","uuid":"o","message":{"role":"user","content":"old"}}\n')
    sub, main = root / SUB.relative_to(PROJECTS), root / MAIN.relative_to(PROJECTS)
    for path, mtime in ((older, 1), (main, 2000), (sub, 3000)):
        os.utime(path, (mtime, mtime))
    units = claude.units(root)
    assert [u.path.name for u in units] == [MAIN.name, "old.jsonl", SUB.name]
    assert all(u.signature == f"{u.path.stat().st_size}:{u.path.stat().st_mtime_ns}" for u in units)
    # as upstream: --limit keeps the N newest, then subagent files move last
    assert [u.path.name for u in claude.units(root, limit=2)] == [MAIN.name, SUB.name]
    assert "meta.json" not in " ".join(u.key for u in units)  # sidecars are not transcripts


def test_damaged_lines_are_counted_and_good_ones_kept(tmp_path):
    path = tmp_path / "s.jsonl"
    good = MAIN.read_bytes()
    path.write_bytes(
        good
        + b"garbage line\n"
        + b'{"type":"user","uuid":"d-1","message":{"role":"user","content":"caf\xe9 \\ud800"}}'
        + b'{"type":"user","uuid":"d-2","message":{"role":"user","content":"second"}}\n'
        + b'{"type":"assistant","uuid":"d-3","message":{"role":"assistant","content":[{"type":"te'
    )
    parsed = read(path)
    assert parsed.skipped == {
        jsonl.MALFORMED: 1, jsonl.INVALID_UTF8: 1, jsonl.LONE_SURROGATE: 1,
        jsonl.TWO_OBJECTS: 1, jsonl.TRUNCATED: 1,
    }  # fmt: skip
    texts = dict(parsed.frame.select("turn_uuid", "text").iter_rows())
    assert texts["d-1"] == "caf\ufffd \ufffd" and texts["d-2"] == "second"


def test_empty_file_is_counted_not_an_error(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    parsed = read(path)
    assert parsed.frame.height == 0 and parsed.skipped == {jsonl.EMPTY_FILE: 1}


def test_file_without_conversation_is_counted_no_turns(tmp_path):
    path = tmp_path / "meta-only.jsonl"
    path.write_text('{"type":"summary","summary":"s","leafUuid":"x"}\n')
    assert read(path).skipped == {"no turns": 1}


def test_missing_file_is_an_error_not_empty(tmp_path):
    with pytest.raises(SourceError):
        read(tmp_path / "gone.jsonl")
