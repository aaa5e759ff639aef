"""Lance mechanics for the memory's two tables: open, append, read columns, take rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa


class _NoPandas:
    """A meta-path finder that answers "not installed" for pandas."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("pandas is skipped on the read path", name=name)
        return None


def import_for_reading() -> None:
    """Import lance for a process that only reads (recall, get): without pandas.

    pyarrow.dataset (which lance imports) probes for pandas while it initialises and so imports
    all of it, ~0.8 s of a cold recall's ~2 s, though nothing on the read path converts to pandas.
    Hiding pandas for that one import makes pyarrow record it as absent. Only a process that will
    never need Arrow -> pandas conversions may call this (datasets.map in `index` does not convert
    either, but it imports pandas itself); once pandas or lance is imported it does nothing.
    """
    import sys

    if "pandas" in sys.modules or "lance" in sys.modules:
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        import lance  # noqa: F401
    finally:
        sys.meta_path.remove(finder)


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
