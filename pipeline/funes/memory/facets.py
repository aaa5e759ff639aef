"""Per-row facets (session, seq, block type, harness, time) as append-only arrays beside the indexes.

Filters (--type, --harness), recency and neighbour lookups need a few small fields of EVERY row;
reading them from chunks.lance would scan the table per recall. They live in ``index/facets.<gen>/``
as raw little-endian arrays, one file per field, appended to as rows are indexed and memory-mapped
for reading (a reader maps only the rows its manifest covers, so appends never disturb it).
Categorical fields are stored as codes; their vocabularies sit in the index manifest (block types,
harnesses) or in ``sessions.jsonl`` (one JSON string per line, code = line number).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

FIELDS = {"session": np.int32, "seq": np.int64, "block_type": np.uint16, "harness": np.uint16, "ts": np.float64}
SESSIONS = "sessions.jsonl"


@dataclass
class Facets:
    rows: int
    session: np.ndarray
    seq: np.ndarray
    block_type: np.ndarray
    harness: np.ndarray
    ts: np.ndarray  # epoch seconds, NaN when the stamp is empty or unparseable
    block_types: list[str] = field(default_factory=list)
    harnesses: list[str] = field(default_factory=list)
    folder: Path | None = None
    n_sessions: int = 0
    _sessions: list[str] | None = None

    def sessions(self) -> list[str]:
        if self._sessions is None:
            self._sessions = read_sessions(self.folder, self.n_sessions) if self.folder else []
        return self._sessions

    def session_code(self, session_id: str) -> int | None:
        try:
            return self.sessions().index(session_id)
        except ValueError:
            return None

    def mask(self, block_type: str | None = None, harness: str | None = None) -> np.ndarray | None:
        """Rows allowed by the filters (None when there is no filter)."""
        out = None
        for value, vocab, codes in (
            (block_type, self.block_types, self.block_type),
            (harness, self.harnesses, self.harness),
        ):
            if value is None:
                continue
            m = codes == vocab.index(value) if value in vocab else np.zeros(self.rows, dtype=bool)
            out = m if out is None else out & m
        return out


def epoch(ts: str | None) -> float:
    """RFC 3339 / ISO 8601 (any offset; naive = UTC) or numeric epoch seconds/milliseconds -> seconds."""
    s = (ts or "").strip()
    if not s:
        return math.nan
    try:
        x = float(s)
        return x / 1000.0 if x > 1e11 else x
    except ValueError:
        pass
    try:
        d = datetime.fromisoformat(s.replace("z", "Z"))
    except ValueError:
        return math.nan
    if d.tzinfo is None:
        d = d.replace(tzinfo=UTC)
    return d.timestamp()


def read_sessions(folder: Path, count: int) -> list[str]:
    out: list[str] = []
    with (folder / SESSIONS).open(encoding="utf-8") as f:
        for line in f:
            if len(out) >= count:
                break
            out.append(json.loads(line))
    return out


def load(folder: Path, rows: int, meta: dict) -> Facets:
    arrays: dict[str, Any] = {}
    for name, dtype in FIELDS.items():
        path = folder / f"{name}.bin"
        arrays[name] = np.memmap(path, dtype=dtype, mode="r", shape=(rows,)) if rows else np.empty(0, dtype)
    return Facets(
        rows=rows,
        block_types=list(meta.get("block_types", [])),
        harnesses=list(meta.get("harnesses", [])),
        folder=folder,
        n_sessions=int(meta.get("sessions", 0)),
        **arrays,
    )


def append(folder: Path, rows: int, meta: dict, table) -> dict:
    """Append facet values of `table` (session_id, seq, block_type, harness, ts) after row `rows`.

    Files are first cut back to `rows` entries (a crashed refresh may have left a longer tail).
    Returns the updated facet metadata for the manifest.
    """
    folder.mkdir(parents=True, exist_ok=True)
    meta = {
        "block_types": list(meta.get("block_types", [])),
        "harnesses": list(meta.get("harnesses", [])),
        "sessions": int(meta.get("sessions", 0)),
        "sessions_bytes": int(meta.get("sessions_bytes", 0)),
    }
    known = {s: i for i, s in enumerate(read_sessions(folder, meta["sessions"]))} if meta["sessions"] else {}
    new_sessions: list[str] = []

    def code_session(s: str) -> int:
        c = known.get(s)
        if c is None:
            c = known[s] = len(known)
            new_sessions.append(s)
        return c

    # each column's distinct values (first-seen order, as a row-by-row pass meets them) are coded
    # once and the codes gathered per row: a turn's chunks share their session, kind and time
    sessions, at = _distinct(table["session_id"])
    kinds, kind_at = _distinct(table["block_type"])
    harnesses, harness_at = _distinct(table["harness"])
    stamps, ts_at = _distinct(table["ts"])
    cols: dict[str, np.ndarray] = {
        "session": np.fromiter(map(code_session, sessions), np.int32, len(sessions))[at],
        "seq": np.asarray(table["seq"].fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64),
        "block_type": _codes(kinds, meta["block_types"])[kind_at],
        "harness": _codes(harnesses, meta["harnesses"])[harness_at],
        "ts": np.fromiter(map(epoch, stamps), np.float64, len(stamps))[ts_at],
    }
    for name, dtype in FIELDS.items():
        _append_bin(folder / f"{name}.bin", rows * np.dtype(dtype).itemsize, cols[name].astype(dtype))
    blob = "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in new_sessions).encode("utf-8")
    _append_raw(folder / SESSIONS, meta["sessions_bytes"], blob)
    meta["sessions"] += len(new_sessions)
    meta["sessions_bytes"] += len(blob)
    return meta


def _distinct(column) -> tuple[list, np.ndarray]:
    """(distinct values in first-seen order, None included; each row's place among them)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    enc = pc.dictionary_encode(column, null_encoding="encode")
    return enc.dictionary.to_pylist(), enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)


def _codes(values: list, vocab: list[str]) -> np.ndarray:
    index = {v: i for i, v in enumerate(vocab)}
    out = np.empty(len(values), dtype=np.uint16)
    for i, v in enumerate(values):
        v = v or ""
        c = index.get(v)
        if c is None:
            c = index[v] = len(vocab)
            vocab.append(v)
        out[i] = c
    return out


def _append_bin(path: Path, keep_bytes: int, values: np.ndarray) -> None:
    _append_raw(path, keep_bytes, values.tobytes())


def _append_raw(path: Path, keep_bytes: int, blob: bytes) -> None:
    with open(path, "ab+") as f:
        f.truncate(keep_bytes)
        f.seek(keep_bytes)
        f.write(blob)
        f.flush()


def concat(parts: list[Facets]) -> Facets:
    """Facets of several row ranges laid end to end (remote shards), vocabularies and codes remapped."""
    sessions: dict[str, int] = {}
    kinds: dict[str, int] = {}
    harnesses: dict[str, int] = {}
    arrays: dict[str, list[np.ndarray]] = {name: [] for name in FIELDS}
    for p in parts:
        arrays["session"].append(_remap(p.session, p.sessions(), sessions))
        arrays["block_type"].append(_remap(p.block_type, p.block_types, kinds))
        arrays["harness"].append(_remap(p.harness, p.harnesses, harnesses))
        for name in ("seq", "ts"):
            arrays[name].append(np.asarray(getattr(p, name)))
    joined = {
        name: np.concatenate(a).astype(FIELDS[name]) if a else np.empty(0, FIELDS[name]) for name, a in arrays.items()
    }
    return Facets(
        rows=sum(p.rows for p in parts),
        session=joined["session"],
        seq=joined["seq"],
        block_type=joined["block_type"],
        harness=joined["harness"],
        ts=joined["ts"],
        block_types=list(kinds),
        harnesses=list(harnesses),
        n_sessions=len(sessions),
        _sessions=list(sessions),
    )


def _remap(codes: np.ndarray, vocab: list[str], into: dict[str, int]) -> np.ndarray:
    table = np.fromiter((into.setdefault(v, len(into)) for v in vocab), np.int64, len(vocab))
    return table[np.asarray(codes, dtype=np.int64)] if len(vocab) else np.zeros(len(codes), np.int64)
