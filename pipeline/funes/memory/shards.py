"""Index segments of published Parquet shards, cached by content hash, and one table view over the shards.

A remote memory is an ordered list of immutable Parquet shards (the chunk columns + `vector`).
Each shard gets its own segment folder, named by the shard's sha256:

    segment.json    format, rows, vector rows, dim, facet vocabularies, faiss kind
    facets/         facets of the shard's rows (memory/facets.py)
    bm25/           BM25 segment over the shard's rows (memory/bm25.py), rows numbered from 0
    faiss.index     faiss segment over the shard's vectors (memory/vecindex.py), id = row in shard

These are the local memory's segment kinds, built by the same code. A BM25 document carries its
chunk's context line (memory/contexts.py), which reads earlier rows of the chunk's session, and
those can lie in earlier shards: a segment is therefore named by a key chained over the shards up
to its own (`segment_key`), so it is rebuilt exactly when a shard before it changed. A folder is built in a
temporary sibling and renamed into place, so a reader sees a whole segment or none, and it never
changes afterwards (the shard cannot). A snapshot lays the shards end to end: shard i holds rows
[offset_i, offset_i + rows_i) of one virtual table, the order the publisher's memory had them in,
and BM25 scores every segment with the statistics of all shards, so rankings match the publisher's.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from funes.memory import bm25, contexts, facets, vecindex
from funes.memory.indexes import DOC_COLUMNS, DOCUMENTS, Indexes
from funes.memory.tokenize import Numbering

FORMAT = 2  # 2: BM25 documents are context line + text (indexes.DOCUMENTS), folders keyed by segment_key
SEGMENT = "segment.json"
READ_BATCH = 20_000  # rows read + tokenised per step while building a segment (bounds memory)


@dataclass(frozen=True)
class Shard:
    """One published shard as a reader has it: where it sits in the repo and in the local HF cache."""

    path: str  # path in the repo, e.g. data/000001-3f2a….parquet
    sha256: str
    rows: int
    local: Path  # the verified file in the HF cache


# ---- one shard -> one segment folder ---------------------------------------------------------


def read_segment(folder: Path) -> dict | None:
    try:
        meta = json.loads((folder / SEGMENT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and meta.get("format") == FORMAT else None


def segment_key(previous: str, shard_sha: str) -> str:
    """The folder name of a shard's segment: its sha chained with the key of the shard before it."""
    import hashlib

    return hashlib.sha256(f"{DOCUMENTS}:{previous}:{shard_sha}".encode()).hexdigest()


def ensure_segment(shard: Shard, folder: Path, say=None, earlier: list[Shard] | None = None) -> tuple[dict, bool]:
    """The shard's segment metadata, building the folder first when it is not there; (meta, built).
    `earlier`: the shards before it, in order (their rows can change its context lines)."""
    meta = read_segment(folder)
    if meta is not None:
        return meta, False
    if say:
        say(f"indexing {shard.path} ({shard.rows} chunks)", True)
    tmp = folder.with_name(f".{folder.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        meta = build_segment(shard.local, tmp, [e.local for e in earlier or []])
        if folder.exists():  # a partial folder of an older format, or a concurrent builder's
            shutil.rmtree(folder, ignore_errors=True)
        try:
            os.replace(tmp, folder)
        except OSError:  # another reader renamed its identical build first
            if read_segment(folder) is None:
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return meta, True


def build_segment(parquet: Path, folder: Path, earlier: list[Path] | None = None) -> dict:
    """Facets, one BM25 segment and one faiss segment over every row of one Parquet shard;
    `earlier` = the Parquet files of the shards before it, in order."""
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    pf = pq.ParquetFile(parquet)
    have = set(pf.schema_arrow.names)
    fac: dict = {}
    parts: list[bm25.Segment] = []
    rows = 0
    state = _state_rows(earlier or [], pq.read_table(parquet, columns=["session_id"])["session_id"])
    # the rows so far that a context line reads, as column lists (`contexts.column_lines`, as `stored_lines`)
    before = {c: [r[c] for r in state] for c in contexts.COLUMNS}
    numbering = Numbering()  # this segment's piece cache: released when it is built
    for batch in pf.iter_batches(batch_size=READ_BATCH, columns=[c for c in DOC_COLUMNS if c in have]):
        table = _with_defaults(pa.Table.from_batches([batch]))
        fac = facets.append(folder / "facets", rows, fac, table)
        cols = {c: table[c].to_pylist() for c in contexts.COLUMNS}
        # the refresh's definition of a row's document: its context line, a newline, its text
        lines = contexts.column_lines({c: before[c] + cols[c] for c in contexts.COLUMNS})[len(before["text"]) :]
        parts.append(bm25.build_documents(lines, table["text"], rows, numbering))
        keep = [i for i, (r, b) in enumerate(zip(cols["role"], cols["block_type"])) if contexts.carries_state(r, b)]
        for c in contexts.COLUMNS:
            before[c] += [cols[c][i] for i in keep]
        rows += table.num_rows
    seg = bm25.merge(parts) if len(parts) > 1 else parts[0] if parts else bm25.build([], 0)
    bm25.save(seg, folder / "bm25")
    meta = {"format": FORMAT, "rows": rows, "facets": fac, "vector_rows": 0, "dim": None, "faiss": None}
    if "vector" in have:
        meta.update(_build_faiss(pf, folder / "faiss.index"))
    (folder / SEGMENT).write_text(json.dumps(meta, indent=1), encoding="utf-8")
    return meta


def _state_rows(files: list[Path], sessions: pa.ChunkedArray) -> list[dict]:
    """Rows of earlier shards, in order, of the given sessions that a context line reads."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    wanted = pc.unique(sessions)
    out: list[dict] = []
    for f in files:
        # most sessions lie in one shard, so most files stop at their (cached) session list
        names, with_state = _state_sessions(f)
        if not pc.any(pc.is_in(with_state, wanted)).as_py():
            continue
        full = _with_defaults(pq.read_table(f, columns=[c for c in DOC_COLUMNS if c in names]))
        out += full.filter(pc.and_(pc.is_in(full["session_id"], wanted), contexts.state_mask(full))).to_pylist()
    return out


def _state_sessions(f: Path) -> tuple[frozenset[str], pa.Array]:
    """A shard's column names and the sessions with rows a context line reads. Cached per process
    and file version: a cold start that builds N segments would otherwise read these columns of
    every earlier shard again for each one (N² reads)."""
    st = os.stat(f)
    return _state_sessions_at(str(f), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=4096)
def _state_sessions_at(f: str, _mtime_ns: int, _size: int) -> tuple[frozenset[str], pa.Array]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    names = frozenset(pq.read_schema(f).names)
    t = _with_defaults(pq.read_table(f, columns=[c for c in ("session_id", "role", "block_type") if c in names]))
    return names, pc.unique(t["session_id"].filter(contexts.state_mask(t)))


def _with_defaults(table: pa.Table) -> pa.Table:
    return contexts.padded(table, DOC_COLUMNS)  # a shard without a facet column: empty values


def _build_faiss(pf, path: Path) -> dict:
    """Vectors of the rows that have one (a row published before it was embedded has a null vector)."""
    rows_out, vecs_out, lo = [], [], 0
    for batch in pf.iter_batches(batch_size=READ_BATCH, columns=["vector"]):
        col = batch.column(0)
        valid = np.flatnonzero(col.is_valid().to_numpy(zero_copy_only=False)) if col.null_count else None
        present = col.filter(col.is_valid()) if col.null_count else col
        dim = present.type.list_size
        flat = present.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        vecs_out.append(flat.reshape(-1, dim))
        rows_out.append((valid if valid is not None else np.arange(len(col))) + lo)
        lo += len(col)
    vecs = np.concatenate(vecs_out) if vecs_out else np.empty((0, 0), np.float32)
    if not len(vecs):
        return {}
    index = vecindex.build(vecs, np.concatenate(rows_out).astype(np.int64))
    vecindex.save(index, path)
    out = {"vector_rows": len(vecs), "dim": int(vecs.shape[1]), "faiss": vecindex.kind(index)}
    if out["faiss"] == "ivf":
        out["nprobe"] = int(index.nprobe)
    return out


# ---- a snapshot: shards end to end -----------------------------------------------------------


def load_indexes(shards: list[Shard], folders: list[Path], metas: list[dict], stamp: tuple) -> Indexes:
    """One Indexes over all shards (rows renumbered by shard offset), as the Retriever reads a local one."""
    offsets = np.cumsum([0] + [m["rows"] for m in metas])[:-1].tolist()
    fac = facets.concat([facets.load(f / "facets", m["rows"], m["facets"]) for f, m in zip(folders, metas)])
    segs = [bm25.load(f / "bm25", off) for f, m, off in zip(folders, metas, offsets) if m["rows"]]
    vec = [(f, m, off) for f, m, off in zip(folders, metas, offsets) if m.get("faiss")]
    dims = {m["dim"] for _, m, _ in vec}
    manifest = {
        "chunks": {"rows": int(sum(m["rows"] for m in metas))},
        "vectors": {"rows": int(sum(m["vector_rows"] for m in metas)), "dim": dims.pop() if len(dims) == 1 else None},
        "shards": [s.path for s in shards],
    }
    faiss = [vecindex.load(f / "faiss.index", m["faiss"], m.get("nprobe")) for f, m, _ in vec]
    return Indexes(
        Path(folders[0]).parent if folders else Path(), manifest, fac, segs, faiss, stamp, [o for *_, o in vec]
    )


class ShardTable:
    """The shards read as one table, the part of the Lance dataset API the read path uses.

    Rows are fetched by row group and kept for the life of the object (a long-lived server reads
    each group once); the `vector` column is never read here.
    """

    def __init__(self, shards: list[Shard]):
        import pyarrow.parquet as pq

        self.shards = shards
        self._files = [pq.ParquetFile(s.local, memory_map=True) for s in shards]
        self._starts = np.cumsum([0] + [s.rows for s in shards])
        self._group_starts = [
            np.cumsum([0] + [f.metadata.row_group(g).num_rows for g in range(f.num_row_groups)]) for f in self._files
        ]
        self._groups: dict[tuple[int, int], pa.Table] = {}
        full = self._files[0].schema_arrow if self._files else pa.schema([])
        self.schema = pa.schema([f for f in full if f.name != "vector"])
        self._columns = self.schema.names

    def count(self) -> int:
        return int(self._starts[-1])

    def reload(self) -> None:
        """Nothing to see: a snapshot's shards never change."""

    def empty(self, columns: list[str]) -> pa.Table:
        return self.schema.empty_table().select(columns)

    def take(self, rows, columns: list[str]) -> pa.Table:
        rows = np.asarray(list(rows), dtype=np.int64)
        if not len(rows):
            return self.empty(columns)
        shard = np.searchsorted(self._starts, rows, side="right") - 1
        pieces, order = [], []
        for s in np.unique(shard):
            pick = np.flatnonzero(shard == s)
            pieces.append(self._take_in(int(s), rows[pick] - self._starts[s], columns))
            order.append(pick)
        table = pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]
        back = np.empty(len(rows), np.int64)
        back[np.concatenate(order)] = np.arange(len(rows))
        return table.take(pa.array(back))

    def _take_in(self, s: int, local: np.ndarray, columns: list[str]) -> pa.Table:
        starts = self._group_starts[s]
        group = np.searchsorted(starts, local, side="right") - 1
        pieces, order = [], []
        for g in np.unique(group):
            pick = np.flatnonzero(group == g)
            pieces.append(self._group(s, int(g)).select(columns).take(pa.array(local[pick] - starts[g])))
            order.append(pick)
        table = pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]
        back = np.empty(len(local), np.int64)
        back[np.concatenate(order)] = np.arange(len(local))
        return table.take(pa.array(back))

    def _group(self, s: int, g: int) -> pa.Table:
        key = (s, g)
        if key not in self._groups:
            self._groups[key] = self._files[s].read_row_group(g, columns=self._columns)
        return self._groups[key]

    def session_rows(self, session_id: str, columns: list[str]) -> pa.Table:
        """Every row of one session (a scan of the session column; readers normally go through the facets)."""
        import pyarrow.compute as pc

        found = []
        for i, f in enumerate(self._files):
            col = f.read(columns=["session_id"])["session_id"]
            found.append(np.flatnonzero(pc.equal(col, session_id).to_numpy(zero_copy_only=False)) + self._starts[i])
        rows = np.concatenate(found) if found else np.empty(0, np.int64)
        return self.take(rows, columns)
