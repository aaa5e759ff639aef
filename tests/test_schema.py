"""schemas/*.json are the single source of truth: the Arrow schemas and the stored tables agree."""

from __future__ import annotations

import pyarrow as pa
import pytest

from conftest import FIXTURES
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


@pytest.mark.parametrize("fixture", ["claude/projects", "codex/sessions", "pi/sessions", "hermes/sessions"])
def test_turn_columns_are_what_parsers_emit(fixture):
    """Every parser, on its fixture, emits exactly schemas/turns.json's columns and Arrow types."""
    from funes.traces import source
    from funes.traces.frame import as_arrow

    frames = [s.read(u).frame for s in source.resolve(FIXTURES / fixture) for u in s.units()]
    assert any(f.height for f in frames)
    for frame in frames:
        assert frame.columns == schema.columns("turns")
        assert as_arrow(frame).schema.equals(schema.arrow_schema("turns"), check_metadata=False)
