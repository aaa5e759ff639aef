"""schemas/*.json -> pyarrow schemas and column constants (the single source of truth for tables)."""

from __future__ import annotations

import json
from functools import cache

import pyarrow as pa

from funes import paths

_SCALARS = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}


@cache
def spec(name: str) -> dict:
    return json.loads((paths.schemas_dir() / f"{name}.json").read_text(encoding="utf-8"))


def _arrow_type(type_name: str, dim: int | None) -> pa.DataType:
    if type_name.startswith("fixed_size_list<float32>"):
        if not dim:
            raise ValueError("vector column needs a dimension")
        return pa.list_(pa.field("item", pa.float32()), dim)
    return _SCALARS[type_name]


def arrow_schema(name: str, dim: int | None = None, metadata: dict[str, str] | None = None) -> pa.Schema:
    s = spec(name)
    fields = [pa.field(c["name"], _arrow_type(c["type"], dim), nullable=c["nullable"]) for c in s["columns"]]
    meta = {"funes_schema": f"{name}/{s['version']}"}
    meta.update(metadata or {})
    return pa.schema(fields, metadata=meta)


def columns(name: str) -> list[str]:
    return [c["name"] for c in spec(name)["columns"]]


def version(name: str) -> int:
    return int(spec(name)["version"])


def __getattr__(name: str) -> list[str]:
    # TURN_COLUMNS / CHUNK_COLUMNS are read on first use, so importing this module reads no file
    tables = {"TURN_COLUMNS": "turns", "CHUNK_COLUMNS": "chunks"}
    if name in tables:
        return columns(tables[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
