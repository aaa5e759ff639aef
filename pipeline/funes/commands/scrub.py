"""`funes scrub`: redact, in place, every secret the publish gate finds in the local memory.

The one audited rewrite of an append-only memory. Each block is reassembled from its pieces and
scanned like the gate does; every piece that holds part of a finding gets `[REDACTED:<kind>]`
in place of that part (so a secret split across two chunks is cut out of both). Row positions
and chunk ids stay as they are (ids are coordinates), so only the affected rows change: their
text, their re-embedded vectors. Then older Lance versions, the files only they referenced and
the search-index segments are deleted and the indexes rebuilt, so no copy of a secret is left
under FUNES_HOME. Never touches a remote or the source transcripts.
"""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from funes import paths, scan, schema
from funes.commands import gate
from funes.ingest.chunk import reconstruct_spans
from funes.ingest.redact import MARKER, apply
from funes.memory import Memory, State, indexes

_BLOCKS_PER_SCAN = 4096


@dataclass
class ScrubReport:
    label: str
    state: str = "ready"  # ready | missing | empty
    rows: int = 0  # rows in the memory
    rewritten: int = 0  # rows whose text (or a provenance value) changed
    secrets: int = 0
    blocks: int = 0
    kinds: Counter = field(default_factory=Counter)
    reembedded: int = 0


def scrub(memory: str | None = None, progress=lambda msg, transient=False: None) -> ScrubReport:
    mem = Memory.resolve(memory)
    report = ScrubReport(mem.label)
    with mem.lock():
        st, _ = mem.state()
        if st in (State.MISSING, State.EMPTY):
            report.state = st.value
            return report
        mem.require()
        gate.require_scanners()
        table = mem.chunks.scan(schema.CHUNK_COLUMNS)
        report.rows = table.num_rows
        progress(f"scanning {table.num_rows:,} chunks for secrets", True)
        new = _redact_column(table, "text", _redacted_texts(table, report))
        for col in gate.PROVENANCE:
            new = _redact_column(new, col, _redacted_values(new[col].to_pylist(), report))
        changed = np.flatnonzero(_differs(table, new, ("text", *gate.PROVENANCE)))
        report.rewritten = len(changed)
        if not report.rewritten:
            return report
        progress(f"rewriting {len(changed):,} chunk(s)", True)
        # in this order, so a kill at any point leaves a state the next scrub (or index) completes:
        # the indexes go first (they are rebuilt from the tables), the vectors of the redacted text
        # before the text itself (a rerun still finds the secret and does both again)
        shutil.rmtree(paths.index_dir(mem.path), ignore_errors=True)
        gate.forget(mem)
        report.reembedded = _reembed(mem, changed, new)
        mem.chunks.rewrite(new.cast(schema.arrow_schema("chunks")))
        progress("rebuilding search indexes", True)
        indexes.refresh(mem)
    return report


def _redacted_texts(table: pa.Table, report: ScrubReport) -> list[str]:
    """Every row's text, with each secret found in its reassembled block replaced by a marker."""
    texts = table["text"].to_pylist()
    keys = list(zip(*(table[c].to_pylist() for c in gate.BLOCK_KEY)))
    splits = table["split_idx"].to_pylist()
    blocks: dict[tuple, list[tuple[int, int]]] = {}
    for row, (k, s) in enumerate(zip(keys, splits)):
        blocks.setdefault(k, []).append((s, row))
    order = list(blocks.values())
    for lo in range(0, len(order), _BLOCKS_PER_SCAN):
        part = [sorted(b) for b in order[lo : lo + _BLOCKS_PER_SCAN]]
        joined = [reconstruct_spans([texts[r] for _, r in b]) for b in part]
        for b, (_, starts), found in zip(part, joined, scan.find([j[0] for j in joined])):
            if found:
                report.blocks += 1
                report.secrets += len(found)
                report.kinds.update({f.kind for f in found})
                for (_, row), start in zip(b, starts):
                    texts[row] = _cut(texts[row], start, found)
    return texts


def _redacted_values(values: list[str | None], report: ScrubReport) -> list[str | None]:
    """A provenance column (paths, repo names) with each secret inside a value replaced by a marker."""
    distinct = sorted({v for v in values if v})
    fixed = {}
    for v, found in zip(distinct, scan.find(distinct) if distinct else []):
        if found:
            fixed[v] = apply(v, found)
            report.secrets += len(found)
            report.kinds.update({f.kind for f in found})
    return [fixed.get(v, v) if v else v for v in values]


def _differs(a: pa.Table, b: pa.Table, columns) -> np.ndarray:
    mask = np.zeros(a.num_rows, dtype=bool)
    for c in columns:
        mask |= np.array([x != y for x, y in zip(a[c].to_pylist(), b[c].to_pylist())], dtype=bool)
    return mask


def _redact_column(table: pa.Table, name: str, values: list) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, pa.array(values, table.schema.field(name).type))


def _cut(piece: str, start: int, found: list[scan.Finding]) -> str:
    """The piece with every part of a finding that falls inside it replaced by the finding's marker."""
    end, out, pos = start + len(piece), [], 0
    for f in found:  # sorted, non-overlapping (scan merges them)
        a, b = max(f.start, start) - start, min(f.end, end) - start
        if a < b:
            out += [piece[pos:a], MARKER.format(kind=f.kind)]
            pos = b
    return "".join(out) + piece[pos:] if out else piece


def _reembed(mem: Memory, changed: np.ndarray, chunks: pa.Table) -> int:
    """New vectors for the changed rows that had one; the vectors table is rewritten without the old."""
    vec = mem.vectors.scan(["id", "row", "vector"])
    if not vec.num_rows:
        return 0
    stale = np.isin(vec["row"].to_numpy(), changed)
    if not stale.any():
        return 0
    from funes import models
    from funes.ingest import run
    from funes.memory import contexts

    rows = np.unique(vec["row"].to_numpy()[stale])
    fresh = chunks.take(pa.array(rows))
    embedder = models.load_embedder()
    # the redacted rows' own context lines: their sessions' earlier rows as the rewrite stores them
    vectors = run.embed_rows(contexts.stored_documents(chunks, fresh), embedder)
    keep = vec.filter(pa.array(~stale))
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    added = pa.table(
        {
            "id": fresh["id"],
            "row": pa.array(rows, pa.int64()),
            "vector": pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1]),
        }
    )
    target = mem.vectors.dataset().schema
    mem.vectors.rewrite(pa.concat_tables([keep.cast(target), added.cast(target)]))
    return len(rows)
