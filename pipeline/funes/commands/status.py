"""`funes status`: what the memory holds, how fresh its indexes are, which models recall would use."""

from __future__ import annotations

import time
from collections import Counter

from funes.memory import Memory, State, indexes
from funes.results import Status


def status(memory: str | None = None) -> Status:
    mem = Memory.resolve(memory)
    state, message = mem.state()
    from funes.commands.sync import last_run

    st = Status(label=mem.label, state=state.value, message=message, now=time.time(), last_hook=last_run())
    if state in (State.MISSING, State.EMPTY):
        return st
    if state is not State.READY:
        mem.require()  # raises the memory's own refusal (incompatible, unreadable)
    from funes import models

    st.chunks = mem.chunks.count()
    st.last_indexed = mem.chunks.head_time()
    st.vectors = mem.vectors.count()
    st.pending_vectors = len(mem.pending_rows())
    st.index = indexes.freshness(mem)
    st.sessions, st.by_harness, st.by_type = _counts(mem, st.chunks)
    st.embedder = models.embedder_id()
    st.reranker, st.reranker_note = models.reranker_status()
    return st


def _counts(mem: Memory, chunks: int) -> tuple[int, dict[str, int], dict[str, int]]:
    """Sessions, chunks per harness and per block type: from the index facets when they cover every row."""
    import numpy as np

    ix = indexes.load(mem)
    if ix is not None and ix.rows == chunks:
        fac = ix.facets
        harness = _named(np.bincount(np.asarray(fac.harness), minlength=len(fac.harnesses)), fac.harnesses)
        kinds = _named(np.bincount(np.asarray(fac.block_type), minlength=len(fac.block_types)), fac.block_types)
        return fac.n_sessions, harness, kinds
    table = mem.chunks.scan(["session_id", "harness", "block_type"])
    sessions = len(set(table["session_id"].to_pylist()))
    harness = dict(Counter(table["harness"].to_pylist())) if "harness" in table.column_names else {}
    kinds = dict(Counter(table["block_type"].to_pylist()))
    return sessions, _sorted(harness), _sorted(kinds)


def _named(counts, names: list[str]) -> dict[str, int]:
    return _sorted({names[i] or "(none)": int(c) for i, c in enumerate(counts) if c})


def _sorted(d: dict) -> dict[str, int]:
    return dict(sorted(((k or "(none)"), v) for k, v in d.items()))
