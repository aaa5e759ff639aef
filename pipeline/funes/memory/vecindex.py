"""faiss segments over vectors.lance rows: exact flat inner product when small, IVF above IVF_MIN vectors.

Each segment holds the vectors of a contiguous range of vectors.lance rows; faiss ids ARE chunk
row positions (IndexIDMap over IndexFlatIP, or IndexIVFFlat's own ids), so a hit needs no lookup
table. Files are written once and read memory-mapped (IO_FLAG_MMAP_IFC for flat codes, IO_FLAG_MMAP
for inverted lists). Single-query searches run on one OpenMP thread: on 2 cores a second thread
made a 100k flat search 4x slower (82 ms vs 17 ms, bench/README.md "Recall latency").
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

# A segment with at least this many vectors is an IVF index (bench/README.md, "Recall latency"):
# one-thread flat search costs ~0.25 ms per 1k vectors (6 ms at 25k, 28 ms at 100k), IVF stays
# under ~3 ms at 100k. Flat segments together hold < 2 x IVF_MIN vectors (the merge rule keeps every
# segment bigger than all younger ones combined), so the flat part of a search stays under ~15 ms.
IVF_MIN = 30_000


def ivf_params(n: int) -> tuple[int, int]:
    """(nlist, nprobe) for an IVF segment of n vectors: 2 sqrt(n) lists, an eighth of them probed.

    On real MiniLM vectors of the corpus, probing 1/8 of the lists kept ~0.95 of the exact top 30
    (1/4 kept ~0.985); the cap keeps a 1M-vector search near 64k vectors scanned.
    """
    nlist = max(64, int(2 * math.sqrt(n)))
    nprobe = min(128, max(16, nlist // 8))
    return nlist, nprobe


def build(vectors: np.ndarray, rows: np.ndarray, threads: int | None = None):
    import faiss

    faiss.omp_set_num_threads(threads or _cpus())
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    ids = np.ascontiguousarray(rows, dtype=np.int64)
    dim = x.shape[1]
    if len(x) < IVF_MIN:
        index: Any = faiss.IndexIDMap(faiss.IndexFlatIP(dim))
        index.add_with_ids(x, ids)
        return index
    nlist, nprobe = ivf_params(len(x))
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
    sample = x if len(x) <= 64 * nlist else x[np.random.default_rng(0).choice(len(x), 64 * nlist, replace=False)]
    index.train(sample)
    index.add_with_ids(x, ids)
    index.nprobe = nprobe
    return index


def kind(index) -> str:
    return "ivf" if hasattr(index, "nprobe") else "flat"


def save(index, path: Path) -> None:
    import faiss

    faiss.write_index(index, str(path))


def load(path: Path, kind: str = "flat", nprobe: int | None = None):
    import faiss

    # the two mmap modes do not combine: flat codes need MMAP_IFC, inverted lists need MMAP
    flags = faiss.IO_FLAG_READ_ONLY | (faiss.IO_FLAG_MMAP if kind == "ivf" else faiss.IO_FLAG_MMAP_IFC)
    index = faiss.read_index(str(path), flags)
    if nprobe and hasattr(index, "nprobe"):
        index.nprobe = nprobe
    return index


def search(indexes: list, query: np.ndarray, limit: int, allowed: np.ndarray | None = None, offsets=None):
    """Top `limit` (rows, scores) over all segments, best first, ties by row, each row once.

    `offsets[i]` is added to segment i's ids (a remote shard's segment numbers its own rows from 0).
    """
    if not indexes or limit <= 0:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    import faiss

    faiss.omp_set_num_threads(1)
    q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
    rows_out, scores_out = [], []
    for i, index in enumerate(indexes):
        if index.ntotal == 0:
            continue
        offset = int(offsets[i]) if offsets is not None else 0
        params = _selector(allowed[offset:] if allowed is not None else None)
        if params is None:
            scores, rows = index.search(q, min(limit, index.ntotal))
        else:
            sp = (
                faiss.SearchParametersIVF(sel=params[0], nprobe=index.nprobe)  # type: ignore[call-arg]
                if hasattr(index, "nprobe")
                else faiss.SearchParameters(sel=params[0])  # type: ignore[call-arg]
            )
            scores, rows = index.search(q, min(limit, index.ntotal), params=sp)
        ok = rows[0] >= 0
        rows_out.append(rows[0][ok] + offset)
        scores_out.append(scores[0][ok])
    if not rows_out:
        return np.empty(0, np.int64), np.empty(0, np.float32)
    rows, scores = np.concatenate(rows_out), np.concatenate(scores_out)
    order = np.lexsort((rows, -scores))
    rows, scores = rows[order], scores[order]
    _, first = np.unique(rows, return_index=True)  # a re-embedded row counts once, at its best
    keep = np.sort(first)[:limit]
    return rows[keep].astype(np.int64), scores[keep]


def _selector(allowed: np.ndarray | None):
    """A faiss bitmap selector over a boolean row mask, with the bytes it points into (keep both alive)."""
    if allowed is None:
        return None
    import faiss

    bits = np.packbits(allowed, bitorder="little")
    return (faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bits)), bits)  # n counts bytes


def _cpus() -> int:
    import os

    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
