"""Agent-traces Parquet import (upstream-spec 1.7) on a table built from a hand-written fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import FIXTURES
from funes.errors import SourceError
from funes.traces import parquet, source

ROWS = json.loads((FIXTURES / "parquet" / "rows.json").read_text(encoding="utf-8"))
SCHEMA = pa.schema(
    [("session_id", pa.string()), ("sent_at", pa.string()), ("harness", pa.string()), ("file_path", pa.string()),
     ("metadata", pa.string()), ("messages", pa.list_(pa.string()))]
)  # fmt: skip


def write(tmp_path: Path, table: pa.Table, name: str = "traces.parquet") -> Path:
    path = tmp_path / name
    pq.write_table(table, path)
    return path


def read(path: Path):
    [src] = source.resolve(path)
    [unit] = src.units()
    return src.read(unit)


def test_rows_become_sessions(tmp_path):
    path = write(tmp_path, pa.Table.from_pylist(ROWS, schema=SCHEMA))
    parsed = read(path)
    frame = parsed.frame
    assert parsed.skipped == {"malformed json": 1}
    one = frame.filter(session_id="trace-001")
    assert set(one["workdir"]) == {"-home-ada-kb"} and set(one["harness"]) == {"claude_code"}
    assert set(one["source_path"]) == {ROWS[0]["file_path"]} and set(one["ts"]) == {"2026-03-01T12:00:00Z"}
    rows = one.select("turn_uuid", "parent_uuid", "role", "block_type", "text", "tool_name", "tool_use_id").rows()
    assert rows == [
        ("trace-001-0", None, "user", "text", "index the docs folder", None, None),
        ("trace-001-1", "trace-001-0", "assistant", "thinking", "Use the indexer.", None, None),
        ("trace-001-1", "trace-001-0", "assistant", "tool_use", '{"cmd":"funes index docs"}', "bash", None),
        ("trace-001-1", "trace-001-0", "assistant", "tool_use", "{}", "noop", None),
        ("trace-001-2", "trace-001-1", "tool", "text", "indexed 12 files", None, None),  # never a tool_result
        ("trace-001-3", "trace-001-2", "assistant", "text", "Done: 12 files.", None, None),
    ]


def test_repeated_session_rows_continue_one_session(tmp_path):
    frame = read(write(tmp_path, pa.Table.from_pylist(ROWS, schema=SCHEMA))).frame
    two = frame.filter(session_id="trace-002")
    assert two.select("turn_uuid", "parent_uuid", "ts").rows() == [
        ("trace-002-0", None, "2026-03-02T08:00:00Z"),
        ("trace-002-1", "trace-002-0", "2026-03-02T09:00:00Z"),
    ]
    assert set(two["workdir"]) == {"traces"}  # metadata without cwd: the parquet file's stem
    assert set(two["source_path"]) == {str(tmp_path / "traces.parquet")}
    assert frame.select("session_id", "turn_uuid", "block_idx").is_unique().all()


def test_large_string_items_and_missing_optional_columns(tmp_path):
    table = pa.table(
        {"session_id": ["s"], "messages": pa.array([['{"role":"user","content":"hi"}']], pa.list_(pa.large_string()))}
    )
    frame = read(write(tmp_path, table)).frame
    assert frame.select("harness", "ts", "text").rows() == [("", "", "hi")]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (pa.table({"messages": pa.array([["{}"]], pa.list_(pa.string()))}), "no session_id"),
        (pa.table({"session_id": ["s"], "messages": ["{}"]}), "list<string>"),
        (pa.table({"session_id": ["s"], "messages": pa.array([["{}"]], pa.large_list(pa.string()))}), "list<string>"),
        (pa.table({"session_id": ["s"]}), "no messages"),
    ],
)
def test_bad_layouts_are_source_errors(tmp_path, table, message):
    with pytest.raises(SourceError, match=message):
        read(write(tmp_path, table))


def test_not_parquet_is_a_source_error(tmp_path):
    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1 nope")
    with pytest.raises(SourceError):
        read(path)


def test_unit_signature_is_size_and_mtime(tmp_path):
    path = write(tmp_path, pa.Table.from_pylist(ROWS, schema=SCHEMA))
    [unit] = parquet.units(path)
    st = path.stat()
    assert (unit.key, unit.signature, unit.harness) == (str(path), f"{st.st_size}:{st.st_mtime_ns}", "parquet")


def test_a_folder_of_shards_is_one_dataset_with_a_unit_per_file(tmp_path):
    table = pa.Table.from_pylist(ROWS, schema=SCHEMA)
    (tmp_path / "data" / "more").mkdir(parents=True)
    for name in ("data/train-00001.parquet", "data/more/train-00000.parquet"):
        write(tmp_path, table, name)
    [src] = source.resolve(tmp_path / "data")
    units = src.units()
    assert isinstance(src, source.ParquetSource)
    assert [Path(u.key).name for u in units] == ["train-00000.parquet", "train-00001.parquet"]
    assert src.read(units[0]).frame.height == read(tmp_path / "data" / "train-00001.parquet").frame.height
