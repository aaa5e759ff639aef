"""What a memory is and what state it is in: location, label, model stamp, tables, refusals."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import numpy as np
import pyarrow as pa

from funes import models, paths, schema
from funes.errors import (
    MemoryIncompatible,
    MemoryMissing,
    MemoryOffline,
    MemoryUnauthorized,
    MemoryUnreadable,
)
from funes.memory import lance as lt

MANIFEST = "manifest.json"


class State(Enum):
    READY = "ready"
    EMPTY = "empty"  # the folder exists but holds no chunks yet
    MISSING = "missing"  # nothing at that location
    INCOMPATIBLE = "incompatible"  # built with another embedding model or schema
    UNREADABLE = "unreadable"
    OFFLINE = "offline"  # a remote the Hub cannot be asked about, with nothing usable cached
    UNAUTHORIZED = "unauthorized"  # a remote the Hub will not show this token (or no token)


def refusal(state: State, message: str):
    """The FunesError a non-ready state raises, its message the memory's own sentence."""
    kinds = {
        State.INCOMPATIBLE: MemoryIncompatible,
        State.UNREADABLE: MemoryUnreadable,
        State.OFFLINE: MemoryOffline,
        State.UNAUTHORIZED: MemoryUnauthorized,
    }
    return kinds.get(state, MemoryMissing)(message)


@dataclass
class Memory:
    path: Path  # the memory folder (holds chunks.lance, vectors.lance, index/)
    default: bool = True  # the default local memory under FUNES_HOME

    remote = False

    @classmethod
    def resolve(cls, spec: str | None = None):
        """`local`/None -> $FUNES_HOME/memory; `owner/name` or `hf://datasets/owner/name[@rev]` -> a
        RemoteMemory; anything else is a local path (~ expanded)."""
        from funes.memory import spec as specs

        parsed = specs.parse(spec)
        if parsed.kind == "local":
            return cls(paths.memory_dir(), default=True)
        if parsed.is_hub:
            from funes.memory.remote import RemoteMemory

            return RemoteMemory(parsed.repo_id, parsed.revision)
        spec = (spec or "").strip()
        p = Path(spec).expanduser()
        # accept both the memory folder and its parent FUNES_HOME-like folder
        if not (p / "chunks.lance").exists() and (p / "memory" / "chunks.lance").exists():
            p = p / "memory"
        return cls(p.resolve(), default=False)

    @property
    def label(self) -> str:
        return "local" if self.default else str(self.path)

    @property
    def key(self) -> str:
        return f"{self.path}|{self.default}"

    # ---- state -------------------------------------------------------------------------------

    def manifest(self) -> dict:
        try:
            return json.loads((self.path / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def state(self) -> tuple[State, str]:
        """Ask, never parse an exception: the state plus the sentence a refusal should print."""
        table = paths.chunks_table(self.path)
        if not table.exists():
            if self.default:
                return State.MISSING, "no memory yet — run `funes index` to build one from your agent sessions"
            return State.MISSING, f"no memory at {self.path} — build one with `FUNES_HOME=... funes index`"
        model = self.manifest().get("embedding_model")
        want = models.embedder_id()
        if model and model != want:
            return State.INCOMPATIBLE, (
                f'memory built with embedding model "{model}", not "{want}" — set FUNES_EMBED_MODEL={model}, '
                f"or move {self.path} aside and run `funes index` to rebuild it from your transcripts"
            )
        try:
            ds = lt.open_table(table)
        except Exception as e:
            return State.UNREADABLE, f"memory at {self.path} cannot be read ({type(e).__name__}: {e})"
        if ds is None or ds.count_rows() == 0:
            return State.EMPTY, f"memory at {self.path} holds no chunks yet — run `funes index`"
        return State.READY, ""

    def require(self) -> Memory:
        """Raise the memory's own refusal unless it is ready to read."""
        st, msg = self.state()
        if st is State.READY:
            return self
        raise refusal(st, msg)

    # ---- tables ------------------------------------------------------------------------------

    def chunks(self):
        return lt.open_table(paths.chunks_table(self.path))

    def vectors(self):
        return lt.open_table(paths.vectors_table(self.path))

    def chunk_count(self) -> int:
        ds = self.chunks()
        return ds.count_rows() if ds is not None else 0

    def vector_count(self) -> int:
        ds = self.vectors()
        return ds.count_rows() if ds is not None else 0

    def pending_rows(self) -> np.ndarray:
        """Chunk rows that have no vector yet (cheap: counts first, one int column otherwise)."""
        n = self.chunk_count()
        vec = self.vectors()
        if vec is None:
            return np.arange(n, dtype=np.int64)
        if vec.count_rows() >= n:
            return np.empty(0, dtype=np.int64)
        done = np.zeros(n, dtype=bool)
        rows = lt.column(vec, "row").to_numpy()
        done[rows[rows < n]] = True
        return np.flatnonzero(~done).astype(np.int64)

    def stored_ids(self, session_ids: list[str] | None = None) -> pa.Array:
        ds = self.chunks()
        if ds is None:
            return pa.array([], pa.string())
        flt = None
        if session_ids is not None and len(session_ids) <= 64:
            flt = "session_id IN (" + ", ".join(lt.quote(s) for s in session_ids) + ")"
        return lt.column(ds, "id", flt).combine_chunks()

    # ---- writes (callers hold the writer lock) ---------------------------------------------

    def _stamp(self, dim: int) -> None:
        m = self.manifest()
        if m.get("embedding_model"):
            return
        m.update(
            {
                "embedding_model": models.embedder_id(),
                "dim": dim,
                "schemas": {n: schema.version(n) for n in ("chunks", "vectors")},
            }
        )
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.path / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(m, indent=1), encoding="utf-8")
        tmp.replace(self.path / MANIFEST)

    def append_chunks(self, table: pa.Table) -> int:
        """Append chunk rows; returns the row position of the first appended row."""
        self.path.mkdir(parents=True, exist_ok=True)
        start = self.chunk_count()
        lt.append(paths.chunks_table(self.path), table.cast(schema.arrow_schema("chunks")))
        return start

    def append_vectors(self, rows: np.ndarray, ids: list[str], vectors: np.ndarray, model_id: str) -> None:
        dim = int(vectors.shape[1])
        self._stamp(dim)
        meta = {"embedding_model": model_id, "dim": str(dim)}
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
        table = pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "row": pa.array(rows, pa.int64()),
                "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
            },
            schema=schema.arrow_schema("vectors", dim=dim, metadata=meta),
        )
        lt.append(paths.vectors_table(self.path), table)
