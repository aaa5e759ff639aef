"""The memory's two Lance tables as objects: chunk rows (text + coordinates) and their vectors.

Commands and retrieval read and write the memory only through these; the Lance calls stay in
this module, `lance.py` (open / append / quote) and the index mechanics (`indexes.py`).

A table object caches its opened dataset (one pinned version: every read of a recall sees the
same rows) until `reload()`; its own appends reload it. Writes assume the caller holds the
memory's writer lock (`memory.lock`), which is also why `ChunkTable.append_new` may keep the ids
it has seen between calls.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from funes import schema
from funes.memory import fragments
from funes.memory import lance as lt

_FILTER_MAX_SESSIONS = 64  # past this many sessions one id scan of the whole table beats an IN filter


class _Table:
    def __init__(self, path: Path):
        self.path = path
        self._ds: Any = None

    def dataset(self) -> Any:
        """The Lance dataset (None when nothing was committed yet); for memory mechanics only."""
        if self._ds is None:
            self._ds = lt.open_table(self.path)
        return self._ds

    def damage(self) -> str | None:
        """Why the table cannot be trusted (no complete version, an unopenable version, missing or
        short data files), or None; a few stats, cheap enough for every command."""
        if lt.uncommitted_leftovers(self.path):
            return f"{self.path.name} holds files but no committed version (no complete manifest in _versions/)"
        try:
            ds = self.dataset()
        except Exception as e:
            return f"{self.path.name} cannot be opened ({_short(e)})"
        if ds is None:
            return None
        bad = lt.damaged_files(ds, self.path)
        return (
            f"{self.path.name} data file {bad[0]}" + (f" (+{len(bad) - 1} more)" if len(bad) > 1 else "")
            if bad
            else None
        )

    def restore(self, version: int) -> int:
        """Make an older version the newest again (a new commit; nothing is deleted)."""
        new = lt.restore(self.path, version)
        self.reload()
        return new

    def last_intact_version(self) -> int | None:
        try:
            head = self.dataset().version if self.dataset() is not None else None
        except Exception:
            head = None
        return lt.last_intact_version(self.path, below=head)

    def reload(self) -> None:
        """See commits made since the dataset was opened (by this process or another)."""
        self._ds = None

    def count(self) -> int:
        ds = self.dataset()
        return ds.count_rows() if ds is not None else 0

    def version(self) -> int | None:
        ds = self.dataset()
        return ds.version if ds is not None else None

    def head_time(self) -> float | None:
        """Epoch seconds of the head version's commit (when rows were last added)."""
        ds = self.dataset()
        return ds.get_version()["timestamp"].timestamp() if ds is not None else None

    def take(self, rows: Iterable[int], columns: list[str]) -> pa.Table:
        """Rows by position, in the order asked."""
        return self.dataset().take([int(r) for r in rows], columns=columns)

    def scan(self, columns: list[str]) -> pa.Table:
        """Whole columns (the names the table lacks, an older schema's, are left out)."""
        ds = self.dataset()
        if ds is None:
            return pa.table({})
        return ds.to_table(columns=[c for c in columns if c in ds.schema.names])

    def rewrite(self, table: pa.Table) -> None:
        """Replace the whole table, same row order, in one commit; older versions are deleted.
        Only scrub calls this (the one audited rewrite); the caller holds the writer lock."""
        lt.overwrite_purged(self.path, table)
        self.reload()

    def _append(self, table: pa.Table) -> int:
        """One atomic commit; returns the row position of the first appended row."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        start = self.count()
        lt.append(self.path, table)
        self.reload()
        return start


class ChunkTable(_Table):
    """chunks.lance: one row per chunk (schemas/chunks.json), appended, never rewritten."""

    def __init__(self, path: Path):
        super().__init__(path)
        self._known: set[str] | None = None  # every stored id, loaded once when a batch spans many sessions
        self._added: set[str] = set()  # ids this object appended

    @classmethod
    def pinned(cls, path: Path, version: int) -> ChunkTable:
        """The table as of one version (a Ray worker reads the version its run started from)."""
        table = cls(path)
        table._ds = lt.open_version(path, version)
        return table

    def session_rows(self, session_id: str, columns: list[str]) -> pa.Table:
        """Every stored row of one session, by a filtered scan."""
        ds = self.dataset()
        if ds is None:
            return self.empty(columns)
        return ds.to_table(columns=columns, filter=f"session_id = {lt.quote(session_id)}")

    def sessions_rows(self, session_ids: list[str], columns: list[str]) -> pa.Table:
        """Every stored row of these sessions, by one filtered scan (callers bound the list)."""
        ds = self.dataset()
        if ds is None or not session_ids:
            return self.empty(columns)
        flt = "session_id IN (" + ", ".join(lt.quote(s) for s in session_ids) + ")"
        return ds.to_table(columns=columns, filter=flt)

    def vector_inputs(self, rows: Iterable[int]) -> tuple[list[str], list[str]]:
        """(ids, what their vectors embed) of these rows, in the order asked: each row's context
        line + its text (memory/contexts.py), the same document its BM25 side indexes."""
        from funes.memory import contexts

        ds = self.dataset()
        have = set(ds.schema.names)
        table = self.take(rows, ["id", *(c for c in contexts.COLUMNS if c in have)])
        return table["id"].to_pylist(), contexts.stored_documents(ds, table)

    def empty(self, columns: list[str]) -> pa.Table:
        return schema.arrow_schema("chunks").empty_table().select(columns)

    def ids(self, session_ids: list[str] | None = None) -> set[str]:
        """The stored chunk ids (of these sessions only, when there are few)."""
        ds = self.dataset()
        if ds is None:
            return set()
        flt = None
        if session_ids is not None and len(session_ids) <= _FILTER_MAX_SESSIONS:
            flt = "session_id IN (" + ", ".join(lt.quote(s) for s in session_ids) + ")"
        return set(lt.column(ds, "id", flt).to_pylist())

    def append(self, chunks: pa.Table) -> int:
        """Append chunk rows as they are; returns the row position of the first one."""
        return self._append(chunks.cast(schema.arrow_schema("chunks")))

    def prepare_fragments(self) -> None:
        """Ready the table for fragments written apart (memory/fragments.py): a first, empty version."""
        fragments.ensure(self.path, schema.arrow_schema("chunks"))
        self.reload()

    def commit_fragments(self, frags: list[str], since: float) -> int:
        """Commit chunk fragments written apart since `since` in one step; returns the row
        position of their first row."""
        if not frags:
            return self.count()
        start = fragments.commit(self.path, frags, since)
        self.reload()
        return start

    def append_new(self, chunks: pa.Table) -> pa.Table:
        """Append the rows whose id is not stored yet (nor repeated within `chunks`); returns those rows.

        Ids depend only on coordinates, so this is what makes a re-read after a kill, a rerun or
        per-turn indexing store each chunk exactly once.
        """
        known = self._known_ids(chunks["session_id"].unique().to_pylist())
        keep, fresh = [], set()
        for i, cid in enumerate(chunks["id"].to_pylist()):
            if cid not in known and cid not in fresh:
                keep.append(i)
                fresh.add(cid)
        new = chunks.take(pa.array(keep, pa.int64()))
        if new.num_rows:
            self.append(new)
            self._added.update(fresh)
        return new

    def _known_ids(self, sessions: list[str]) -> set[str]:
        if not sessions:
            return self._added
        if self._known is None and len(sessions) <= _FILTER_MAX_SESSIONS:
            return self.ids(sessions) | self._added
        if self._known is None:
            self._known = self.ids()
        # a union copies; past a few thousand ids added this run, merging them in once is cheaper
        if len(self._added) >= 1000:
            self._known |= self._added
            self._added = set()
        return self._known | self._added if self._added else self._known


class VectorTable(_Table):
    """vectors.lance: (id, row, vector) for chunk rows that have been embedded, in any order.

    Derived data: a damaged vectors table reads as absent (`dataset()` is None, so every chunk is
    pending), and the next writer sets it aside and re-embeds."""

    def dataset(self) -> Any:
        if self._ds is None:
            try:
                self._ds = lt.open_table(self.path)
            except Exception:
                self._ds = None
            if self._ds is not None and lt.damaged_files(self._ds, self.path):
                self._ds = None
        return self._ds

    def set_aside_if_damaged(self) -> str | None:
        """Move a damaged table out of the way (caller holds the lock); returns why, or None."""
        why = self.damage()
        if why is None or not self.path.exists():
            return None
        lt.set_aside(self.path)
        self.reload()
        return why

    def check(self, chunks: ChunkTable, probes: int = 16) -> int:
        """How many vectors point at a chunk row holding another id: 0 after a few `take`s when the
        probes agree, else the exact count from one scan of both id columns."""
        ds, cds = self.dataset(), chunks.dataset()
        if ds is None or cds is None:
            return 0
        m, n = ds.count_rows(), cds.count_rows()
        if m == 0:
            return 0
        pos = sorted({int(i) for i in np.linspace(0, m - 1, min(probes, m))} | {m - 1})
        sample = ds.take(pos, columns=["id", "row"])
        rows = sample["row"].to_numpy()
        if (rows < n).all() and cds.take(rows.tolist(), columns=["id"])["id"].to_pylist() == sample["id"].to_pylist():
            return 0
        return len(self.mismatched(chunks))

    def mismatched(self, chunks: ChunkTable) -> np.ndarray:
        """Positions (in this table) of the vectors whose row holds another chunk id."""
        vt = self.dataset().to_table(columns=["id", "row"])
        ids = chunks.dataset().to_table(columns=["id"])["id"].to_numpy(zero_copy_only=False)
        rows = vt["row"].to_numpy()
        vid = vt["id"].to_numpy(zero_copy_only=False)
        ok = rows < len(ids)
        ok[ok] = ids[rows[ok]] == vid[ok]
        return np.flatnonzero(~ok)

    def remap(self, chunks: ChunkTable) -> tuple[int, int]:
        """Point every vector at the chunk row that holds its id now; drop the vectors whose id is
        no longer stored. One overwrite commit (caller holds the lock). Returns (moved, dropped)."""
        vt = self.dataset().to_table()
        ids = chunks.dataset().to_table(columns=["id"])["id"].to_pylist()
        where = {cid: i for i, cid in enumerate(ids)}
        old_rows = vt["row"].to_pylist()
        new_rows = [where.get(v) for v in vt["id"].to_pylist()]
        keep = [i for i, r in enumerate(new_rows) if r is not None]
        moved = sum(1 for i in keep if new_rows[i] != old_rows[i])
        table = vt.take(pa.array(keep, pa.int64()))
        table = table.set_column(
            table.schema.get_field_index("row"), "row", pa.array([new_rows[i] for i in keep], pa.int64())
        )
        lt.overwrite(self.path, table)
        self.reload()
        return moved, len(new_rows) - len(keep)

    def rows(self) -> np.ndarray:
        """The chunk row each stored vector belongs to."""
        ds = self.dataset()
        return lt.column(ds, "row").to_numpy() if ds is not None else np.empty(0, np.int64)

    def append(self, rows: np.ndarray, ids: list[str], vectors: np.ndarray, model_id: str) -> None:
        self._append(vector_rows(rows, ids, vectors, model_id))

    def head(self, n: int) -> pa.Table:
        """(id, row) of the first n vectors, in table order."""
        return self.dataset().to_table(columns=["id", "row"], limit=n)

    def replace(self, rows: np.ndarray, ids: list[str], vectors: np.ndarray, model_id: str) -> None:
        """New vectors for stored ids, one commit (Lance appends the updated rows at the end)."""
        lt.upsert(self.path, vector_rows(rows, ids, vectors, model_id), "id")
        self.reload()

    def prepare_fragments(self, dim: int, model_id: str) -> None:
        meta = {"embedding_model": model_id, "dim": str(dim)}
        fragments.ensure(self.path, schema.arrow_schema("vectors", dim=dim, metadata=meta))
        self.reload()

    def commit_fragments(self, frags: list[str], since: float) -> None:
        """Commit vector fragments written apart since `since` in one step."""
        if frags:
            fragments.commit(self.path, frags, since)
            self.reload()


def vector_rows(rows: np.ndarray, ids: list[str], vectors: np.ndarray, model_id: str) -> pa.Table:
    """The rows of vectors.lance for these chunk rows, the model named in the schema metadata."""
    dim = int(vectors.shape[1])
    meta = {"embedding_model": model_id, "dim": str(dim)}
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    return pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "row": pa.array(rows, pa.int64()),
            "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
        },
        schema=schema.arrow_schema("vectors", dim=dim, metadata=meta),
    )


def _short(e: BaseException) -> str:
    """An exception in one line, without Lance's build paths."""
    text = str(e).split("\n")[0]
    text = re.sub(r",?\s*/\S+\.rs:\d+:\d+", "", text)
    return f"{type(e).__name__}: {text[:200]}"


def pending_rows(chunks: ChunkTable, vectors: VectorTable) -> np.ndarray:
    """Chunk rows that have no vector yet (cheap: counts first, one int column otherwise)."""
    n = chunks.count()
    if vectors.dataset() is None:
        return np.arange(n, dtype=np.int64)
    if vectors.count() >= n:
        return np.empty(0, dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    rows = vectors.rows()
    done[rows[rows < n]] = True
    return np.flatnonzero(~done).astype(np.int64)
