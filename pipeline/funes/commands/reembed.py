"""The background vector tier's second job: re-embed vectors made from an older embedding input.

A memory whose manifest predates `vector_input` (contexts.VECTOR_INPUT) holds vectors of the bare
chunk text; every vector made since embeds the chunk's context line + its text. `funes index`
replaces the old ones after it has embedded the pending chunks, in bounded steps, oldest first,
within the run's budget: each step embeds the rows' current inputs and replaces their vectors by id
in one Lance commit (memory.Memory.replace_vectors), so a kill loses at most a step's work, stored
rows are never touched, and every chunk keeps a vector throughout (recall reads the old index until
the run's index refresh picks up the new vectors).
"""

from __future__ import annotations

import time

from funes.memory import Memory

STEP = 512  # vectors replaced per commit


def reembed_stale(mem: Memory, progress, over_budget=lambda: False, step: int = STEP) -> int:
    """Replace stale vectors until none are left or the budget says stop (callers hold the writer
    lock and have embedded the pending rows first: new text before better vectors of old text)."""
    left = mem.stale_vectors()
    if not left or over_budget():
        return 0
    from funes import models
    from funes.ingest import run

    embedder = models.load_embedder()
    mem.stamp_vectors(embedder.dim)  # an unstamped memory counts its old vectors before the first replace
    left = mem.stale_vectors()
    t0, done = time.monotonic(), 0
    while left:
        head = mem.vectors.head(min(step, left))
        rows = head["row"].to_numpy()
        ids, texts = mem.chunks.vector_inputs(rows)
        if ids != head["id"].to_pylist():  # vectors that point at other chunks: repair's job first
            break
        mem.replace_vectors(ids, rows, run.embed_rows(texts, embedder), embedder.model_id, left - len(ids))
        done, left = done + len(ids), left - len(ids)
        rate = done / max(time.monotonic() - t0, 1e-9)
        progress(f"re-embedded {done} vectors with their context line, {left} left ({rate:.0f}/s)", True)
        if over_budget():
            break
    return done
