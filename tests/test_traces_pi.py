"""pi sessions: v3 tree layout (upstream-spec 1.5, 1.9) and the older linear layout."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES
from funes.traces import Unit, jsonl, pi

DIR = FIXTURES / "pi" / "sessions" / "--home-ada-pi-share--"
TREE = DIR / "2026-04-13T09-28-54-581Z_7028acdd.jsonl"
LINEAR = DIR / "2025-12-17T19-39-21-535Z_5fd1e58c.jsonl"


def read(path: Path):
    return pi.read(Unit(key=str(path), harness="pi", path=path, signature=None))


def test_tree_session_ids_parents_and_workdir():
    frame = read(TREE).frame
    assert set(frame["session_id"]) == {TREE.stem}  # the file stem, not the session record's id
    assert set(frame["workdir"]) == {"-home-ada-pi-share"}
    turns = frame.unique("turn_uuid", maintain_order=True).select("turn_uuid", "parent_uuid", "role").rows()
    assert turns == [
        ("765a0228", "585a9c0a", "user"),
        ("0ace2c8d", "765a0228", "assistant"),
        ("16c31112", "0ace2c8d", "tool"),
        ("16c31113", "16c31112", "assistant"),
    ]  # control lines and the unknown "custom" role are skipped


def test_tree_blocks():
    frame = read(TREE).frame
    assistant = frame.filter(turn_uuid="0ace2c8d").select("block_type", "text", "tool_name").rows()
    assert assistant == [
        ("thinking", "Look at the files first.", None),
        ("tool_use", '{"command":"ls -la"}', "bash"),  # the whitespace-only text part is dropped
        ("tool_use", "{}", "list"),  # missing arguments
    ]
    result = frame.filter(role="tool").row(0, named=True)
    assert (result["block_type"], result["tool_name"], result["tool_use_id"]) == ("tool_result", "bash", "call_e07f")


def test_timestamps_string_or_stringified_number():
    frame = read(TREE).frame
    ts = dict(frame.select("turn_uuid", "ts").iter_rows())
    assert ts["765a0228"] == "2026-04-13T09:29:18.815Z"
    assert ts["16c31113"] == "1776072560000"


def test_linear_session_gets_chained_fallback_uuids():
    parsed = read(LINEAR)
    frame = parsed.frame
    sid = LINEAR.stem
    turns = frame.unique("turn_uuid", maintain_order=True).select("turn_uuid", "parent_uuid", "role").rows()
    assert [t[0] for t in turns] == [f"{sid}-{i}" for i in range(len(turns))]
    assert [t[1] for t in turns] == [None] + [f"{sid}-{i}" for i in range(len(turns) - 1)]
    assert [t[2] for t in turns] == ["user", "assistant", "tool", "user", "assistant", "user"]
    assert parsed.skipped == {jsonl.TWO_OBJECTS: 1}  # the reply and the compaction share a line


def test_bash_execution_and_string_user_content_are_kept():
    frame = read(LINEAR).frame
    bash = frame.filter(seq=3).select("block_type", "text", "tool_name").rows()
    assert bash == [("tool_use", '{"command":"ls ~/.pi/agent/tools"}', "bash"), ("tool_result", "hello.ts\n", "bash")]
    assert frame.filter(seq=5)["text"].to_list() == ["thanks!"]
    assert not frame["text"].str.contains("User asked about custom tools").any()  # compaction skipped


def test_units_and_reparse():
    assert {u.path for u in pi.units(FIXTURES / "pi")} == {TREE, LINEAR}
    assert read(TREE).frame.equals(read(TREE).frame)
