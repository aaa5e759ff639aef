"""The Parquet mirror of a memory: published row schema, streamed shard files, the `funes.json` manifest.

A published row is a chunk row plus its `vector`; the embedding model and dimension ride in the
Arrow schema metadata of every shard. Shards are written batch by batch (bounded memory), closed
at a row bound, and named `data/<NNNNNN>-<sha256[:12]>.parquet` by sequence number and content,
so a shard name is never reused for other bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from funes import schema

MANIFEST = "funes.json"
FORMAT = "funes-memory"
SHARD_ROWS = 100_000  # ~0.2 GB of Parquet at 384 dims: small enough for any client to fetch whole


@dataclass(frozen=True)
class Shard:
    path: str  # in the repo: data/<NNNNNN>-<hash>.parquet
    rows: int
    sha256: str
    bytes: int


def row_schema(dim: int, model: str) -> pa.Schema:
    chunks = schema.arrow_schema("chunks")
    vector = schema.arrow_schema("vectors", dim=dim).field("vector")
    meta = {
        "funes_schema": f"chunks/{schema.version('chunks')}+vector",
        "embedding_model": model,
        "dim": str(dim),
    }
    return pa.schema([*chunks, vector], metadata=meta)


class ShardWriter:
    """Streams record batches into shard files under `folder`, numbering them from `first_seq`."""

    def __init__(self, folder: Path, row_schema: pa.Schema, first_seq: int, max_rows: int = SHARD_ROWS):
        self.folder, self.schema, self.seq, self.max_rows = Path(folder), row_schema, first_seq, max_rows
        self.folder.mkdir(parents=True, exist_ok=True)
        self.shards: list[tuple[Shard, Path]] = []
        self._writer: Any = None
        self._tmp = self.folder / ".shard.tmp"
        self._rows = 0

    def write(self, table: pa.Table) -> None:
        table = table.select(self.schema.names).cast(self.schema)
        start = 0
        while start < table.num_rows:
            if self._writer is None:
                import pyarrow.parquet as pq

                self._tmp = self.folder / f".shard-{self.seq:06d}.tmp"
                self._writer = pq.ParquetWriter(self._tmp, self.schema, compression="zstd")
            take = min(self.max_rows - self._rows, table.num_rows - start)
            self._writer.write_table(table.slice(start, take), row_group_size=8192)
            self._rows += take
            start += take
            if self._rows >= self.max_rows:
                self._close_one()

    def _close_one(self) -> None:
        self._writer.close()
        digest = hashlib.sha256()
        with open(self._tmp, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        sha = digest.hexdigest()
        name = f"data/{self.seq:06d}-{sha[:12]}.parquet"
        final = self.folder / Path(name).name
        os.replace(self._tmp, final)
        self.shards.append((Shard(name, self._rows, sha, final.stat().st_size), final))
        self.seq += 1
        self._writer, self._rows = None, 0

    def close(self) -> list[tuple[Shard, Path]]:
        if self._writer is not None:
            self._close_one()
        return self.shards


def read_ids(source) -> list[str]:
    """The `id` column of one shard (a path or a seekable file; only that column is read)."""
    import pyarrow.parquet as pq

    return pq.read_table(source, columns=["id"])["id"].to_pylist()


def empty_manifest(model: str, dim: int) -> dict:
    return {
        "format": FORMAT,
        "version": 1,
        "schemas": {"chunks": schema.version("chunks"), "vectors": schema.version("vectors")},
        "embedding_model": model,
        "dim": dim,
        "chunks": 0,
        "shards": [],
    }


def parse_manifest(data: bytes | None) -> dict | None:
    """The remote manifest, or None when absent; a file that is not ours is refused, never overwritten."""
    if data is None:
        return None
    try:
        man = json.loads(data)
    except ValueError:
        man = None
    if not isinstance(man, dict) or man.get("format") != FORMAT or not isinstance(man.get("shards"), list):
        raise ValueError(f"{MANIFEST} on the remote is not a funes manifest")
    return man


def extend_manifest(man: dict, shards: list[Shard], updated: str, vector_input: str) -> dict:
    """`vector_input`: what the new shards' vectors embed (contexts.VECTOR_INPUT, or `mixed` when
    some were made from the bare text before the local memory re-embedded them); a shard entry
    without it predates the stamp (bare text)."""
    out = dict(man)
    out["shards"] = [*man["shards"], *({**asdict(s), "vector_input": vector_input} for s in shards)]
    out["chunks"] = sum(int(s["rows"]) for s in out["shards"])
    out["updated"] = updated
    return out


def next_seq(man: dict) -> int:
    return len(man["shards"])


def encode_manifest(man: dict) -> bytes:
    return (json.dumps(man, indent=1, sort_keys=True) + "\n").encode()
