"""schemas/*.json are the single source of truth: the Arrow schemas and the stored tables agree."""

from __future__ import annotations

import pyarrow as pa

from funes import schema


def test_chunk_schema_keeps_the_original_column_names_in_order():
    assert schema.CHUNK_COLUMNS == [
        "id",
        "text",
        "session_id",
        "workdir",
        "turn_uuid",
        "parent_uuid",
        "seq",
        "ts",
        "role",
        "block_type",
        "tool_name",
        "source_path",
        "block_idx",
        "split_idx",
        "harness",
        "repo",
    ]


def test_vectors_schema_needs_a_dimension_and_stamps_version():
    s = schema.arrow_schema("vectors", dim=384)
    assert s.field("vector").type == pa.list_(pa.field("item", pa.float32()), 384)
    assert s.metadata[b"funes_schema"] == b"vectors/1"


def test_turn_columns_are_what_parsers_emit():
    assert schema.TURN_COLUMNS[:3] == ["session_id", "workdir", "turn_uuid"]
    assert set(schema.TURN_COLUMNS) >= {"block_idx", "block_type", "text", "tool_use_id", "harness"}
