"""Lance mechanics for the memory's two tables: open, append (durably), read columns, find damage.

A table counts as committed only when `_versions/` holds a complete `*.manifest`: Lance writes a
`…manifest#N` temp file and links it into place, so a kill inside the first commit leaves only
the temp. Nothing here ever deletes table data: a folder that holds files but no complete version
is set aside (`set_aside`) or refused by the caller, never removed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pyarrow as pa

from funes.memory.atomic import fsync_path


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
    never need Arrow -> pandas conversions may call this (`funes index --no-embed` does too; a run
    that embeds does not: datasets.map imports pandas itself); once pandas or lance is imported it
    does nothing.
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


def manifests(path: Path) -> list[str]:
    """Names of the complete version manifests of a table (empty when none)."""
    try:
        return [n for n in os.listdir(path / "_versions") if n.endswith(".manifest")]
    except OSError:
        return []


def _committed(path: Path) -> bool:
    return bool(manifests(path))


def uncommitted_leftovers(path: Path) -> bool:
    """A table folder that holds files but no complete version: a first commit killed midway,
    or a `_versions/` that was lost (its data files may still be all the memory has)."""
    if _committed(path) or not path.is_dir():
        return False
    return any(True for _ in path.iterdir())


def set_aside(path: Path) -> Path:
    """Move a table folder out of the way (renamed beside itself), never deleting it."""
    dest = path.with_name(f"{path.name}.set-aside-{time.strftime('%Y%m%d-%H%M%S')}")
    n = 1
    while dest.exists():
        n += 1
        dest = path.with_name(f"{path.name}.set-aside-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
    path.rename(dest)
    return dest


def open_table(path: Path):
    """The dataset at `path`, or None when nothing was ever committed there."""
    if not _committed(path):
        return None
    import lance

    return lance.dataset(str(path))


def open_version(path: Path, version: int):
    import lance

    return lance.dataset(str(path), version=version)


def append(path: Path, table: pa.Table):
    """Append rows (creating the dataset on first write); one atomic Lance commit, made durable
    (fsync'd) before this returns, so a ledger saved afterwards never runs ahead of it."""
    import lance

    if table.num_rows == 0:
        return open_table(path)
    if uncommitted_leftovers(path):
        raise RuntimeError(f"{path} holds files but no committed version")  # callers refuse before this
    mode = "append" if _committed(path) else "create"
    started = time.time()
    ds = lance.write_dataset(table, str(path), mode=mode, max_rows_per_group=1024)
    sync(path, started)
    return ds


def overwrite(path: Path, table: pa.Table):
    """Replace the table's rows with `table` as a new version (old versions stay until cleanup)."""
    import lance

    started = time.time()
    ds = lance.write_dataset(table, str(path), mode="overwrite", max_rows_per_group=1024)
    sync(path, started)
    return ds


def upsert(path: Path, table: pa.Table, key: str):
    """Replace the rows whose `key` matches (insert the others) in one commit, made durable."""
    import lance

    started = time.time()
    lance.dataset(str(path)).merge_insert(key).when_matched_update_all().when_not_matched_insert_all().execute(table)
    sync(path, started)


def sync(path: Path, since: float) -> None:
    """fsync every file written at or after `since` under the table, then its folders: Lance does
    not, and the ledger's promise ("this unit is stored") must not outlive a power cut."""
    dirs = {path}
    for root, _dirnames, files in os.walk(path):
        for name in files:
            p = os.path.join(root, name)
            try:
                if os.stat(p).st_mtime >= since - 1:
                    fsync_path(p)
                    dirs.add(Path(root))
            except OSError:
                continue
    for d in dirs:
        fsync_path(d)


def damaged_files(ds, path: Path) -> list[str]:
    """Data files the dataset's version names that are missing or shorter than recorded."""
    bad = []
    for frag in ds.get_fragments():
        for f in frag.metadata.files:
            p = path / "data" / f.path
            want = getattr(f, "file_size_bytes", None)
            try:
                size = p.stat().st_size
            except OSError:
                bad.append(f"{f.path} missing")
                continue
            if want and size != want:
                bad.append(f"{f.path} is {size} of {want} bytes")
    return bad


def versions(path: Path) -> list[int]:
    """Version numbers of the complete manifests, newest first (Lance names manifest N
    `<2**64 - 1 - N>.manifest`), read from the names so a damaged newest one cannot hide them."""
    out = []
    for name in manifests(path):
        stem = name[: -len(".manifest")]
        if stem.isdigit():
            n = int(stem)
            out.append(2**64 - 1 - n if n > 2**63 else n)
    return sorted(out, reverse=True)


def last_intact_version(path: Path, below: int | None = None) -> int | None:
    """The newest version (older than `below`, if given) that opens and whose data files are all
    intact, if any."""
    import lance

    for v in versions(path):
        if below is not None and v >= below:
            continue
        try:
            if not damaged_files(lance.dataset(str(path), version=v), path):
                return v
        except Exception:
            continue
    return None


def overwrite_purged(path: Path, table: pa.Table) -> None:
    """Replace every row in one commit, then delete every older version and the files only they
    referenced (scrub: no earlier bytes may survive on disk)."""
    import datetime

    ds = overwrite(path, table)
    ds.cleanup_old_versions(older_than=datetime.timedelta(0), delete_unverified=True)


def column(ds, name: str, filter: str | None = None) -> pa.ChunkedArray:
    return ds.to_table(columns=[name], filter=filter)[name]


def quote(value: str) -> str:
    """A SQL string literal for Lance filters."""
    return "'" + value.replace("'", "''") + "'"


def restore(path: Path, version: int) -> int:
    """Make `version` the table's newest (a new version with its rows); newer manifests that no
    longer open are moved into a sibling folder first, so Lance can commit. Returns the new version."""
    import lance

    aside = path.with_name(f"{path.name}.damaged-manifests-{time.strftime('%Y%m%d-%H%M%S')}")
    for v in versions(path):
        if v <= version:
            continue
        try:
            lance.dataset(str(path), version=v)
        except Exception:
            aside.mkdir(exist_ok=True)
            name = f"{2**64 - 1 - v:020d}.manifest"
            (path / "_versions" / name).rename(aside / name)
    hint = path / "_versions" / "latest_version_hint.json"
    if aside.exists() and hint.exists():
        hint.rename(aside / hint.name)
    started = time.time()
    ds = lance.dataset(str(path), version=version)
    ds.restore()
    sync(path, started)
    return lance.dataset(str(path)).version
