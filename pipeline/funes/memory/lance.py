"""Lance mechanics for the memory's two tables: open, append, read columns, take rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa


def _committed(path: Path) -> bool:
    versions = path / "_versions"
    return versions.is_dir() and any(versions.iterdir())


def open_table(path: Path):
    """The dataset at `path`, or None when nothing was ever committed there."""
    if not _committed(path):
        return None
    import lance

    return lance.dataset(str(path))


def append(path: Path, table: pa.Table):
    """Append rows (creating the dataset on first write); one atomic Lance commit."""
    import lance

    if table.num_rows == 0:
        return open_table(path)
    if not _committed(path) and path.exists():
        # a create killed before its first commit leaves only orphan data files: nothing to keep
        shutil.rmtree(path)
    mode = "append" if _committed(path) else "create"
    return lance.write_dataset(table, str(path), mode=mode, max_rows_per_group=1024)


def overwrite(path: Path, table: pa.Table) -> None:
    """Replace every row in one commit, then delete every older version and the files only they
    referenced (scrub: no earlier bytes may survive on disk)."""
    import datetime

    import lance

    ds = lance.write_dataset(table, str(path), mode="overwrite", max_rows_per_group=1024)
    ds.cleanup_old_versions(older_than=datetime.timedelta(0), delete_unverified=True)


def column(ds, name: str, filter: str | None = None) -> pa.ChunkedArray:
    return ds.to_table(columns=[name], filter=filter)[name]


def quote(value: str) -> str:
    """A SQL string literal for Lance filters."""
    return "'" + value.replace("'", "''") + "'"
