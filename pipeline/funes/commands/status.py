"""`funes status`: what the memory holds, how fresh its indexes are, which models recall would use."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from funes.memory import Memory, State, indexes


@dataclass
class Status:
    label: str
    state: str  # ready | empty | missing
    message: str = ""  # what to do when not ready
    chunks: int = 0
    sessions: int = 0
    by_harness: dict[str, int] = field(default_factory=dict)
    by_type: dict[str, int] = field(default_factory=dict)
    vectors: int = 0
    pending_vectors: int = 0
    last_indexed: float | None = None  # epoch seconds of the chunks table's head version
    index: dict = field(default_factory=dict)  # indexes.freshness()
    embedder: str = ""
    reranker: str | None = None
    reranker_note: str = ""
    now: float = 0.0
    last_hook: dict | None = None  # the last hook worker run (commands/sync.py), None before any


def status(memory: str | None = None) -> Status:
    mem = Memory.resolve(memory)
    state, message = mem.state()
    from funes.commands.sync import last_run

    st = Status(label=mem.label, state=state.value, message=message, now=time.time(), last_hook=last_run())
    if state in (State.MISSING, State.EMPTY):
        return st
    mem.require()
    from funes import models

    ds = mem.chunks()
    st.chunks = ds.count_rows()
    st.last_indexed = ds.get_version()["timestamp"].timestamp()
    st.vectors = mem.vector_count()
    st.pending_vectors = len(mem.pending_rows())
    st.index = indexes.freshness(mem)
    st.sessions, st.by_harness, st.by_type = _counts(mem, ds, st.chunks)
    st.embedder = models.embedder_id()
    st.reranker, st.reranker_note = models.reranker_status()
    return st


def _counts(mem: Memory, ds, chunks: int) -> tuple[int, dict[str, int], dict[str, int]]:
    """Sessions, chunks per harness and per block type: from the index facets when they cover every row."""
    import numpy as np

    ix = indexes.load(mem)
    if ix is not None and ix.rows == chunks:
        fac = ix.facets
        harness = _named(np.bincount(np.asarray(fac.harness), minlength=len(fac.harnesses)), fac.harnesses)
        kinds = _named(np.bincount(np.asarray(fac.block_type), minlength=len(fac.block_types)), fac.block_types)
        return fac.n_sessions, harness, kinds
    cols = [c for c in ("session_id", "harness", "block_type") if c in ds.schema.names]
    table = ds.to_table(columns=cols)
    sessions = len(set(table["session_id"].to_pylist()))
    harness = dict(Counter(table["harness"].to_pylist())) if "harness" in cols else {}
    kinds = dict(Counter(table["block_type"].to_pylist()))
    return sessions, _sorted(harness), _sorted(kinds)


def _named(counts, names: list[str]) -> dict[str, int]:
    return _sorted({names[i] or "(none)": int(c) for i, c in enumerate(counts) if c})


def _sorted(d: dict) -> dict[str, int]:
    return dict(sorted(((k or "(none)"), v) for k, v in d.items()))
