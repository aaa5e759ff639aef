"""The ingest pipeline: blocks -> clean -> chunks, batch by batch; chunks -> vectors as a datasets.map stage.

The chunk stages run straight over Arrow slices: `datasets.map` gave them nothing on one machine
(no cache on disk, no workers) and cost ~0.1 ms per block of set-up, writing and importing
(bench/README.md "## Day zero"); the batches are the ones it made, so the rows are its rows."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

from funes.ingest import stages

# one batch per flush: the scanner subprocess costs ~0.9 s of start-up per call
CLEAN_BATCH = 65536


def chunk_blocks(blocks: pa.Table, redact, inputs=None) -> tuple[pa.Table, Counter]:
    """Canonical block rows (plus `repo`) -> chunk rows of schemas/chunks.json, and secrets removed.
    `inputs`: `stages.scan_inputs(blocks)` when the caller has them (then `blocks` is one batch)."""
    out = stages.schema.arrow_schema("chunks")
    if blocks.num_rows == 0:
        return out.empty_table(), Counter()
    if inputs is not None and blocks.num_rows > CLEAN_BATCH:
        raise ValueError(f"scan inputs given for {blocks.num_rows} rows, more than one batch")
    # a batch's redaction may depend on the whole batch (the scanner's lowering mode), so the
    # batches stay consecutive slices of CLEAN_BATCH rows
    cleaned = [
        stages.clean(blocks.slice(at, CLEAN_BATCH), redact, inputs) for at in range(0, blocks.num_rows, CLEAN_BATCH)
    ]
    removed = Counter(k for t in cleaned for ks in t["redactions"].to_pylist() for k in ks)
    return pa.concat_tables([stages.split(t) for t in cleaned]).cast(out), removed


def embed_rows(texts: list[str], embedder, batch_size: int = 256) -> np.ndarray:
    """What chunk rows' vectors embed (memory/contexts.py `stored_documents`) -> float32 vectors, in order."""
    from funes.ingest.embed import embed_texts

    if not texts:
        return np.empty((0, embedder.dim), dtype=np.float32)

    def stage(b: pa.Table) -> pa.Table:
        vec = embed_texts(b["text"].to_pylist(), embedder)
        flat = pa.array(np.ascontiguousarray(vec, dtype=np.float32).reshape(-1))
        return pa.table({"vector": pa.FixedSizeListArray.from_arrays(flat, embedder.dim)})

    col = _embed_map(pa.table({"text": pa.array(texts, pa.string())}), stage, batch_size)["vector"].combine_chunks()
    return col.flatten().to_numpy(zero_copy_only=False).reshape(-1, embedder.dim)


def _embed_map(table: pa.Table, stage, batch_size: int) -> pa.Table:
    """`stage` over `table` as a datasets.map stage, `batch_size` rows a call: the table it returns."""
    import datasets
    from datasets.table import InMemoryTable

    datasets.disable_progress_bars()
    # named fingerprints: without them, datasets pickles and hashes the whole table and the
    # closure over the model; nothing is cached on disk (keep_in_memory), so the names only label it
    ds = datasets.Dataset(InMemoryTable(table), fingerprint="funes-rows").with_format("arrow")
    out = ds.map(
        stage,
        batched=True,
        batch_size=batch_size,
        keep_in_memory=True,
        new_fingerprint="embed",
        remove_columns=ds.column_names,
    )
    return out.data.table
