"""The shared JSONL reader and the canonical frame: damaged input is counted, never fatal."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from funes.errors import SourceError
from funes.schema import TURN_COLUMNS, arrow_schema
from funes.traces import jsonl
from funes.traces.frame import Block, Turn, as_arrow, build_frame, empty_frame, munge_workdir, polars_schema


def write(tmp_path: Path, data: bytes, name: str = "t.jsonl") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_clean_file_reads_every_object(tmp_path):
    p = write(tmp_path, b'{"a":1}\r\n\n  {"b":2}  \n')
    records, skipped = jsonl.read_records(p)
    assert records == [{"a": 1}, {"b": 2}]
    assert not skipped


def test_malformed_line_is_counted_and_the_rest_kept(tmp_path):
    p = write(tmp_path, b'{"a":1}\nnot json\n{"b":2}\n')
    records, skipped = jsonl.read_records(p)
    assert records == [{"a": 1}, {"b": 2}]
    assert skipped == {jsonl.MALFORMED: 1}


def test_truncated_last_line_has_its_own_reason(tmp_path):
    p = write(tmp_path, b'{"a":1}\n{"b":2, "c": "half wri')
    records, skipped = jsonl.read_records(p)
    assert records == [{"a": 1}]
    assert skipped == {jsonl.TRUNCATED: 1}


def test_bad_last_line_ending_in_newline_is_malformed_not_truncated(tmp_path):
    _, skipped = jsonl.read_records(write(tmp_path, b'{"a":1}\n{"b":\n'))
    assert skipped == {jsonl.MALFORMED: 1}


def test_two_objects_on_one_line_are_both_recovered(tmp_path):
    p = write(tmp_path, b'{"a":1}{"b":2} {"c":3}\n{"d":4}\n')
    records, skipped = jsonl.read_records(p)
    assert records == [{"a": 1}, {"b": 2}, {"c": 3}, {"d": 4}]
    assert skipped == {jsonl.TWO_OBJECTS: 1}


def test_object_then_garbage_keeps_the_object(tmp_path):
    records, skipped = jsonl.read_records(write(tmp_path, b'{"a":1}{"b":\n{"c":3}\n'))
    assert records == [{"a": 1}, {"c": 3}]
    assert skipped == {jsonl.MALFORMED: 1}


def test_invalid_utf8_is_replaced_and_counted_per_line(tmp_path):
    p = write(tmp_path, b'{"t":"caf\xe9"}\n{"t":"ok \xe2\x82\xac"}\n{"t":"\xff\xfe"}\n')
    records, skipped = jsonl.read_records(p)
    assert [r["t"] for r in records] == ["caf\ufffd", "ok \u20ac", "\ufffd\ufffd"]
    assert skipped == {jsonl.INVALID_UTF8: 2}


def test_lone_surrogate_is_sanitised_not_dropped(tmp_path):
    p = write(tmp_path, b'{"t":"a\\ud800b","k":["\\udfff"]}\n{"e":"\\ud83d\\ude00"}\n')
    records, skipped = jsonl.read_records(p)
    assert records == [{"t": "a\ufffdb", "k": ["\ufffd"]}, {"e": "\U0001f600"}]
    assert skipped == {jsonl.LONE_SURROGATE: 1}


def test_lines_split_on_newline_only(tmp_path):
    # U+2028 and U+0085 are legal raw inside JSON strings; splitlines() would cut them
    text = '{"t":"a\u2028b\u0085c"}\n'
    records, skipped = jsonl.read_records(write(tmp_path, text.encode()))
    assert records == [{"t": "a\u2028b\u0085c"}] and not skipped


def test_non_object_values_are_counted(tmp_path):
    records, skipped = jsonl.read_records(write(tmp_path, b'[1,2]\n"s"\n{"a":1}\n'))
    assert records == [{"a": 1}]
    assert skipped == {jsonl.NOT_OBJECT: 2}


def test_empty_file_is_counted(tmp_path):
    records, skipped = jsonl.read_records(write(tmp_path, b""))
    assert records == [] and skipped == {jsonl.EMPTY_FILE: 1}
    _, skipped = jsonl.read_records(write(tmp_path, b"\n \n", "blank.jsonl"))
    assert skipped == {jsonl.EMPTY_FILE: 1}


def test_missing_file_is_a_source_error(tmp_path):
    with pytest.raises(SourceError):
        jsonl.read_records(tmp_path / "gone.jsonl")


@pytest.mark.parametrize(
    ("cwd", "want"),
    [
        ("/home/ubuntu/funes", "-home-ubuntu-funes"),
        ("/home/ubuntu/llama.cpp", "-home-ubuntu-llama-cpp"),
        ("C:\\Users\\d\\dev\\funes", "C--Users-d-dev-funes"),
        ("D:\\physics\\earth", "D--physics-earth"),
        ("  /a/b  ", "-a-b"),
        ("/home/é", "-home--"),
        ("", None),
        ("/", None),
        ("///", None),
        ("  ", None),
        (None, None),
    ],
)
def test_munge_workdir(cwd, want):
    assert munge_workdir(cwd) == want


def test_fallback_workdir():
    assert jsonl.fallback_workdir(Path("/h/.claude/projects/-h-x/s.jsonl")) == "-h-x"
    assert jsonl.fallback_workdir(Path("/h/.claude/projects/-h-x/s/subagents/agent-a.jsonl")) == "-h-x"
    assert jsonl.fallback_workdir(Path("/h/.codex/sessions/2026/02/23/r.jsonl")) == "23"


def test_frame_has_exactly_the_schema_columns_and_dtypes():
    turns = [Turn("u1", "user", "t", [Block("text", "hi")]), Turn("", "assistant", "t", [])]
    frame = build_frame("s", "w", turns, "/p", "claude_code")
    assert frame.columns == TURN_COLUMNS
    assert dict(frame.schema) == polars_schema()
    assert frame["seq"].to_list() == [0]
    assert as_arrow(frame).schema.equals(arrow_schema("turns"), check_metadata=False)


def test_empty_frame_has_the_schema():
    frame = empty_frame()
    assert frame.height == 0 and frame.columns == TURN_COLUMNS
    assert dict(frame.schema) == {"seq": pl.Int64, "block_idx": pl.Int64} | {
        c: pl.String for c in TURN_COLUMNS if c not in ("seq", "block_idx")
    }
    assert as_arrow(frame).num_rows == 0


def test_missing_and_repeated_uuids_get_session_seq():
    turns = [Turn("", "user", "", [Block("text", "a")]), Turn("x", "user", "", [Block("text", "b")])]
    turns += [Turn("x", "user", "", [Block("text", "c")])]
    frame = build_frame("s", "w", turns, "/p", "claude_code")
    assert frame["turn_uuid"].to_list() == ["s-0", "x", "s-2"]


def test_compact_json_matches_serde():
    """Literals as serde_json::to_string (preserve_order) writes them, not a restatement of the code."""
    from funes.traces.frame import compact_json

    value = {"command": "ls -la", "n": [1, "é", None, True, 0.5, -2], "nested": {"z": {}, "a": []}, "q": 'say "hi"\n'}
    assert (
        compact_json(value)
        == '{"command":"ls -la","n":[1,"é",null,true,0.5,-2],"nested":{"z":{},"a":[]},"q":"say \\"hi\\"\\n"}'
    )
    assert compact_json({"b": 1, "a": 2}) == '{"b":1,"a":2}'  # insertion order, as upstream's preserve_order
    assert compact_json(1.0) == "1.0" and compact_json("\u2028") == '"\u2028"'
    # a known difference, kept: exponents are Python's (serde writes 1e-7 and 1e16); it changes
    # only the text of a tool call that carries such a float, never a chunk id
    assert compact_json([1e-07, 1e16]) == "[1e-07,1e+16]"
