"""Codex rollouts: enveloped (upstream-spec 1.4, 1.9) and the legacy un-enveloped layout."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES
from funes.traces import Unit, codex, jsonl

SESSIONS = FIXTURES / "codex" / "sessions"
MODERN = next((SESSIONS / "2026").rglob("*.jsonl"))
LEGACY = next((SESSIONS / "2025").rglob("*.jsonl"))
MODERN_ID = "019c372e-0000-7e72-83e1-9cba8efad18d"
LEGACY_ID = "40cb0000-9557-4cb0-b9cf-f6661872da35"


def read(path: Path):
    return codex.read(Unit(key=str(path), harness="codex", path=path, signature=None))


def test_session_id_workdir_and_uuids():
    frame = read(MODERN).frame
    assert set(frame["session_id"]) == {MODERN_ID}
    assert set(frame["workdir"]) == {"-home-ada-dotfiles"}
    n = frame["seq"].max() + 1
    assert frame["turn_uuid"].unique(maintain_order=True).to_list() == [f"{MODERN_ID}-{i}" for i in range(n)]
    assert frame["parent_uuid"].null_count() == frame.height


def test_turn_sequence_and_roles():
    frame = read(MODERN).frame
    seq = frame.select("role", "block_type").rows()
    assert seq == [
        ("developer", "text"),
        ("user", "text"),  # the input_image part is ignored
        ("assistant", "thinking"),  # the reasoning with an empty summary is dropped, seq not advanced
        ("assistant", "tool_use"),
        ("tool", "tool_result"),
        ("assistant", "tool_use"),
        ("tool", "tool_result"),  # the empty output after it is dropped
        ("assistant", "text"),  # web_search_call makes no turn
    ]
    assert frame["seq"].to_list() == list(range(8))


def test_reasoning_summary_joined_and_ciphertext_never_leaks():
    frame = read(MODERN).frame
    assert frame.filter(block_type="thinking")["text"].to_list() == ["plan a\nplan b"]
    assert not frame["text"].str.contains("ciphertext").any()


def test_arguments_verbatim_custom_input_and_structured_output():
    frame = read(MODERN).frame
    uses = frame.filter(block_type="tool_use").select("text", "tool_name", "tool_use_id").rows()
    assert uses[0] == ('{"cmd": "ls -a",  "yield_time_ms":1000}', "exec_command", "call_A1")
    assert uses[1][0].startswith("*** Begin Patch") and uses[1][1:] == ("apply_patch", "call_B2")
    results = frame.filter(block_type="tool_result").select("text", "tool_name").rows()
    assert results[0] == ("Chunk ID: 1\nOutput:\n.zshrc\n.config\n", "exec_command")  # backfilled
    assert results[1] == ('{"output":"Success","metadata":{"exit_code":0}}', "apply_patch")


def test_garbage_and_control_lines_tolerated_and_counted():
    parsed = read(MODERN)
    assert parsed.skipped == {jsonl.MALFORMED: 1}
    assert parsed.frame.filter(parsed.frame["ts"] == "").height == 0


def test_legacy_rollout_is_indexed():
    frame = read(LEGACY).frame
    assert set(frame["session_id"]) == {LEGACY_ID}
    assert set(frame["workdir"]) == {"-Users-ada-labs"}  # from <environment_context>
    assert set(frame["ts"]) == {"2025-08-31T11:51:11.655Z"}  # the header's timestamp
    rows = frame.select("role", "block_type", "tool_name").rows()
    assert rows == [
        ("user", "text", None),
        ("user", "text", None),
        ("assistant", "tool_use", "shell"),
        ("tool", "tool_result", "shell"),
        ("assistant", "thinking", None),
        ("assistant", "text", None),
    ]
    assert frame.filter(block_type="thinking")["text"].to_list() == ["The date tool said 2025-08-31."]


def test_header_only_legacy_rollout_has_no_turns(tmp_path):
    path = tmp_path / "rollout-x.jsonl"
    path.write_text(LEGACY.read_text().splitlines()[0])  # one line, no trailing newline
    parsed = read(path)
    assert parsed.frame.height == 0 and parsed.skipped == {"no turns": 1}


def test_without_session_meta_the_stem_and_day_dir_are_used(tmp_path):
    day = tmp_path / "2026" / "02" / "23"
    day.mkdir(parents=True)
    path = day / "rollout-abc.jsonl"
    body = [line for line in MODERN.read_text().splitlines() if '"session_meta"' not in line]
    path.write_text("\n".join(body) + "\n")
    frame = read(path).frame
    assert set(frame["session_id"]) == {"rollout-abc"}
    assert set(frame["workdir"]) == {"23"}
    assert frame["turn_uuid"][0] == "rollout-abc-0"


def test_units_and_reparse():
    units = codex.units(SESSIONS)
    assert {u.path for u in units} == {MODERN, LEGACY}
    assert read(MODERN).frame.equals(read(MODERN).frame)
