"""Lance fragments written apart from the memory (by distributed workers) and committed in one step.

A worker writes a table's rows as data files under the dataset's folder and hands back only the
fragment metadata (small JSON); nothing is visible until the driver commits them all in one Lance
transaction. Files of a worker that died before its fragments were committed are orphans no
version references: a retry writes new ones, so a kill never leaves partial or duplicate rows.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa

from funes.memory import lance as lt

ROWS_PER_GROUP = 1024  # as memory/lance.append, so a scan reads either kind of fragment alike


def write(path: Path, table: pa.Table) -> list[str]:
    """Data files for `table` under the dataset at `path` (which may not exist yet); uncommitted."""
    from lance.fragment import write_fragments

    if table.num_rows == 0:
        return []
    path.parent.mkdir(parents=True, exist_ok=True)
    frags = write_fragments(table, str(path), schema=table.schema, max_rows_per_group=ROWS_PER_GROUP)
    return [json.dumps(f.to_json()) for f in frags]


def ensure(path: Path, schema: pa.Schema) -> None:
    """Commit an empty first version when the table has none, before any worker writes into it:
    a run killed before its commit then leaves orphan files in a committed table (ignored), never
    a folder of files without a version (which memory/lance.py reports as damage)."""
    import lance

    if lt.manifests(path) or lt.uncommitted_leftovers(path):
        return  # the leftovers case is the caller's to refuse or repair, as for any writer
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.time()
    lance.LanceDataset.commit(str(path), lance.LanceOperation.Overwrite(schema, []))
    lt.sync(path, started)


def commit(path: Path, fragments: list[str], since: float) -> int:
    """Commit fragments in the order given as one new version of the (ensured) table, fsync'd with
    every file written since `since`; returns the row position of the first new row.

    The table is append-only, so a new fragment's rows follow every committed row in that order.
    """
    import lance
    from lance.fragment import FragmentMetadata

    frags = [FragmentMetadata.from_json(f) for f in fragments]
    ds = lance.dataset(str(path))
    start = ds.count_rows()
    lance.LanceDataset.commit(str(path), lance.LanceOperation.Append(frags), read_version=ds.version)
    lt.sync(path, since)
    return start


def rows_in(fragments: list[str]) -> int:
    return sum(int(json.loads(f)["physical_rows"]) for f in fragments)


def known_ids(path: Path, version: int | None, sessions: list[str], all_below: int = 64) -> set[str]:
    """Chunk ids a pinned version of the chunk table holds for these sessions (all ids past `all_below`)."""
    import lance

    if version is None or not sessions:
        return set()
    ds = lance.dataset(str(path), version=version)
    flt = None
    if len(sessions) <= all_below:
        flt = "session_id IN (" + ", ".join(lt.quote(s) for s in sessions) + ")"
    return set(lt.column(ds, "id", flt).to_pylist())
