"""The ingest pipeline as datasets.map stages: blocks -> clean -> chunks; chunks -> vectors."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

from funes.ingest import stages


def _dataset(table: pa.Table):
    import datasets
    from datasets.table import InMemoryTable

    datasets.disable_progress_bars()
    # a named fingerprint: without one, datasets pickles and hashes the whole table (~5 % of a
    # day-zero run's CPU); nothing is cached on disk (keep_in_memory), so the name only labels it
    return datasets.Dataset(InMemoryTable(table), fingerprint="funes-rows").with_format("arrow")


def _map(ds, fn, tag: str, batch_size: int, drop: bool = False):
    # an explicit fingerprint: hashing closures over models/scanners is slow and pointless here
    return ds.map(
        fn,
        batched=True,
        batch_size=batch_size,
        keep_in_memory=True,
        new_fingerprint=tag,
        remove_columns=ds.column_names if drop else None,
    )


def chunk_blocks(blocks: pa.Table, redact) -> tuple[pa.Table, Counter]:
    """Canonical block rows (plus `repo`) -> chunk rows of schemas/chunks.json, and secrets removed."""
    if blocks.num_rows == 0:
        return stages.schema.arrow_schema("chunks").empty_table(), Counter()
    ds = _dataset(blocks)
    # one batch per flush: the scanner subprocess costs ~0.9 s of start-up per call
    ds = _map(ds, lambda b: stages.clean(b, redact), "clean", 65536)
    removed = Counter(k for ks in ds.data.table["redactions"].to_pylist() for k in ks)
    ds = _map(ds, stages.split, "split", 512, drop=True)
    return ds.data.table.cast(stages.schema.arrow_schema("chunks")), removed


def embed_rows(texts: list[str], embedder, batch_size: int = 256) -> np.ndarray:
    """What chunk rows' vectors embed (memory/contexts.py `stored_documents`) -> float32 vectors, in order."""
    from funes.ingest.embed import embed_texts

    if not texts:
        return np.empty((0, embedder.dim), dtype=np.float32)

    def stage(b: pa.Table) -> pa.Table:
        vec = embed_texts(b["text"].to_pylist(), embedder)
        flat = pa.array(np.ascontiguousarray(vec, dtype=np.float32).reshape(-1))
        return pa.table({"vector": pa.FixedSizeListArray.from_arrays(flat, embedder.dim)})

    out = _map(_dataset(pa.table({"text": pa.array(texts, pa.string())})), stage, "embed", batch_size, drop=True)
    col = out.data.table["vector"].combine_chunks()
    return col.flatten().to_numpy(zero_copy_only=False).reshape(-1, embedder.dim)
