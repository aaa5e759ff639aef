"""What a memory is and what state it is in: location, label, model stamp, refusals; its tables by name.

`Memory` is the domain object (resolve a spec, label it, ask its state, refuse with its own
sentence, stamp the embedding model). Table mechanics live in `tables.py` (`memory.chunks`,
`memory.vectors`), the writer lock in `lock.py`, crash-safe state files in `atomic.py`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from funes import models, paths, schema
from funes.errors import (
    MemoryIncompatible,
    MemoryMissing,
    MemoryOffline,
    MemoryUnauthorized,
    MemoryUnreadable,
    UsageError,
)
from funes.memory import contexts, tables
from funes.memory import spec as specs
from funes.memory.atomic import read_json, write_json
from funes.memory.lock import held_elsewhere, writer_lock
from funes.memory.tables import ChunkTable, VectorTable

if TYPE_CHECKING:
    from funes.memory.remote import RemoteMemory

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
    """One memory: where it is, how it is labelled in `→ get` lines, its state, its tables."""

    path: Path  # the memory folder (holds chunks.lance, vectors.lance, index/)
    default: bool = True  # the default local memory under FUNES_HOME
    _chunks: ChunkTable | None = field(default=None, init=False, repr=False, compare=False)
    _vectors: VectorTable | None = field(default=None, init=False, repr=False, compare=False)

    remote = False

    @classmethod
    def open(cls, spec: str | None = None) -> Memory | RemoteMemory:
        """The memory a read command names: a local one (as `resolve`), or a published one on the Hub
        (`owner/name`, `hf://datasets/owner/name[@rev]`) read through the HF cache."""
        parsed = specs.parse(spec)
        if parsed.is_hub:
            from funes.memory.remote import RemoteMemory

            return RemoteMemory(parsed.repo_id or "", parsed.revision)
        return cls.resolve(spec)

    @classmethod
    def resolve(cls, spec: str | None = None) -> Memory:
        """A local memory from a spec (`memory.spec.parse`): `local`/None -> $FUNES_HOME/memory, or a path."""
        parsed = specs.parse(spec)
        if parsed.kind == "local":
            return cls(paths.memory_dir(), default=True)
        if parsed.path is None:  # a Hub repo: reading one is remote recall's job
            raise UsageError(
                f"{parsed.uri} is a Hub memory; this command reads a local memory",
                "give `local` or a folder path (publish to the Hub with `funes publish owner/name`)",
            )
        p: Path = parsed.path
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

    @property
    def chunks(self) -> ChunkTable:
        """chunks.lance (text and coordinates of every chunk)."""
        if self._chunks is None:
            self._chunks = ChunkTable(paths.chunks_table(self.path))
        return self._chunks

    @property
    def vectors(self) -> VectorTable:
        """vectors.lance (the embedded chunks' vectors, backfilled after the text)."""
        if self._vectors is None:
            self._vectors = VectorTable(paths.vectors_table(self.path))
        return self._vectors

    def repair_vectors(self) -> dict | None:
        """Make vectors.lance provably belong to chunks.lance (caller holds the writer lock): a
        damaged table is set aside (everything is re-embedded), vectors whose row now holds
        another chunk are re-mapped by id, those whose chunk is gone are dropped. None when all
        was well; else what was done, for the report."""
        why = self.vectors.set_aside_if_damaged()
        if why:
            self.set_stale_vectors(0)  # every vector is made again, of the current input
            return {"set_aside": why}
        bad = self.vectors.check(self.chunks)
        if not bad:
            return None
        moved, dropped = self.vectors.remap(self.chunks)
        return {"mismatched": bad, "remapped": moved, "dropped": dropped}

    def pending_rows(self) -> np.ndarray:
        """Chunk rows that have no vector yet."""
        return tables.pending_rows(self.chunks, self.vectors)

    def lock(self) -> AbstractContextManager[None]:
        """The writer lock of this memory's location (raises LockBusy when another writer holds it)."""
        return writer_lock(paths.lock_file_for(self.path))

    # ---- state -------------------------------------------------------------------------------

    def manifest(self) -> dict:
        """The model stamp (memory/manifest.json): embedding model, dimension, schema versions."""
        found = read_json(self.path / MANIFEST)
        return found if isinstance(found, dict) else {}

    def vector_input(self) -> str | None:
        """What this memory's vectors embed (contexts.VECTOR_INPUT), None before the first vector;
        a memory stamped before the stamp existed embedded the bare text."""
        m = self.manifest()
        return m.get("vector_input") or (contexts.BARE_TEXT if m.get("embedding_model") else None)

    def stale_vectors(self) -> int:
        """How many vectors still embed an older input: the first that many rows of vectors.lance
        (a replaced vector is appended, so those not yet replaced stay in front, in order)."""
        m = self.manifest()
        if not m.get("embedding_model"):
            return 0
        n = self.vectors.count()
        if m.get("vector_input") != contexts.VECTOR_INPUT:
            return n
        return min(int(m.get("stale_vectors") or 0), n)

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
        self.chunks.reload()  # the state is asked now, not as of an earlier open
        why = self.chunks.damage()
        if why is None:
            try:
                rows = self.chunks.count()
            except Exception as e:  # any Lance failure to read is the same answer: unreadable
                why = f"{paths.chunks_table(self.path).name} cannot be read ({tables._short(e)})"
        if why is not None and self._writer_busy():
            # a first commit in flight looks exactly like one that was killed: ask the lock
            return State.EMPTY, f"memory at {self.path} is being written by another funes command; retry in a moment"
        if why is not None:
            return State.UNREADABLE, self._damaged(why)
        if rows == 0:
            return State.EMPTY, f"memory at {self.path} holds no chunks yet — run `funes index`"
        return State.READY, ""

    def _writer_busy(self) -> bool:
        return held_elsewhere(paths.lock_file_for(self.path))

    def _damaged(self, why: str) -> str:
        """The refusal for a damaged chunk table: what is wrong and the fix; never a deletion."""
        table = paths.chunks_table(self.path)
        good = self.chunks.last_intact_version()
        where = "" if self.default else f" --memory {self.path}"
        if good is not None:
            fix = f"run `funes repair{where}` to go back to version {good}, the last intact one (nothing is deleted)"
        else:
            fix = (
                f"move {table} aside (nothing else has its rows) and run `funes index` to rebuild from your transcripts"
            )
        return f"memory at {self.path} is damaged: {why} — {fix}"

    def require(self) -> Memory:
        """Raise the memory's own refusal unless it is ready to read."""
        st, msg = self.state()
        if st is State.READY:
            return self
        raise refusal(st, msg)

    # ---- writes (callers hold the writer lock) ---------------------------------------------

    def append_vectors(self, rows: np.ndarray, ids: list[str], vectors: np.ndarray, model_id: str) -> None:
        """Store vectors, stamping the memory with the embedding model on the first ones."""
        self.stamp_vectors(int(vectors.shape[1]))
        self.vectors.append(rows, ids, vectors, model_id)

    def prepare_vector_fragments(self, dim: int, model_id: str) -> None:
        """Stamp the model (as append_vectors does) and ready vectors.lance for fragments written apart."""
        self.stamp_vectors(dim)
        self.vectors.prepare_fragments(dim, model_id)

    def replace_vectors(self, ids: list[str], rows: np.ndarray, vectors: np.ndarray, model_id: str, left: int) -> None:
        """Replace stale vectors by id in one commit, then record how many stale ones are left and
        how many were replaced in all (the search index rebuilds its vector side when that moves).
        A kill between the two leaves the count high by one step: those rows are re-embedded again."""
        self.vectors.replace(rows, ids, vectors, model_id)
        self.set_stale_vectors(left, replaced=len(ids))

    def set_stale_vectors(self, n: int, replaced: int = 0) -> None:
        m = self.manifest()
        if m.get("vector_input") == contexts.VECTOR_INPUT and (int(m.get("stale_vectors") or 0) != n or replaced):
            total = int(m.get("vectors_replaced") or 0) + replaced
            write_json(self.path / MANIFEST, {**m, "stale_vectors": n, "vectors_replaced": total})

    def stamp_vectors(self, dim: int) -> None:
        """Stamp the model and the vector input before vectors land; a memory stamped before
        `vector_input` existed counts its bare-text vectors (`stale_vectors`) here, once."""
        m = self.manifest()
        if m.get("embedding_model") and m.get("vector_input") == contexts.VECTOR_INPUT:
            return
        if m.get("embedding_model"):
            # vectors stored before the stamp embedded the bare text: counted before any new one lands
            m.update({"vector_input": contexts.VECTOR_INPUT, "stale_vectors": self.vectors.count()})
        else:
            m.update(
                {
                    "embedding_model": models.embedder_id(),
                    "dim": dim,
                    "vector_input": contexts.VECTOR_INPUT,
                    "schemas": {n: schema.version(n) for n in ("chunks", "vectors")},
                }
            )
        write_json(self.path / MANIFEST, m)
