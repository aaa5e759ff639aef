"""Incremental-index bookkeeping: per-unit change stamps in state.json (which tier each unit is stored to)."""

from __future__ import annotations

from pathlib import Path

from funes import vocab
from funes.memory.atomic import read_json, write_json

TABLE = "_chunks_table"  # not a unit: the chunk table's rows and version when the ledger was saved


def load_state(path: Path) -> dict[str, dict]:
    """state.json as a dict; unreadable or old-shaped files count as empty (the next run re-reads)."""
    data = read_json(path)
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict) and v.get("level") in vocab.TIERS}


def save_state(path: Path, state: dict[str, dict]) -> None:
    """Atomic, durable rewrite: a kill mid-write leaves the previous file intact."""
    write_json(path, state, sort_keys=True)


def is_current(state: dict[str, dict], key: str, signature: str | None, tier: str) -> bool:
    entry = state.get(key)
    if signature is None or not entry or entry.get("sig") != signature:
        return False
    return vocab.TIERS.index(entry["level"]) >= vocab.TIERS.index(tier)


def table_mark(path: Path) -> dict | None:
    """{"rows", "version"} of the chunk table as of the last save, if the ledger recorded it."""
    data = read_json(path)
    mark = data.get(TABLE) if isinstance(data, dict) else None
    if isinstance(mark, dict) and isinstance(mark.get("rows"), int) and isinstance(mark.get("version"), int):
        return mark
    return None


def ahead_of(mark: dict | None, rows: int, version: int | None) -> bool:
    """The ledger promises rows the table no longer has (a lost last commit, a restored copy):
    then every unit it calls current may be missing chunks."""
    if mark is None:
        return False
    return rows < mark["rows"] or (version is not None and version < mark["version"])
