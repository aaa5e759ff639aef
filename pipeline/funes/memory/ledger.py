"""Incremental-index bookkeeping: per-unit change stamps in state.json (which tier each unit is stored to)."""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii
from pathlib import Path

from funes import vocab
from funes.memory.atomic import read_json, write_text

TABLE = "_chunks_table"  # not a unit: the chunk table's rows and version when the ledger was saved


def load_state(path: Path) -> dict[str, dict]:
    """state.json as a dict; unreadable or old-shaped files count as empty (the next run re-reads)."""
    data = read_json(path)
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict) and v.get("level") in vocab.TIERS}


def save_state(path: Path, state: dict[str, dict]) -> None:
    """Atomic, durable rewrite: a kill mid-write leaves the previous file intact."""
    write_text(path, encode(state))


def encode(state: dict) -> str:
    """`json.dumps(state, indent=1, sort_keys=True)`, byte for byte (tests/test_ledger_encode.py).

    The ledger is rewritten after every flush and holds an entry per unit ever stored (20,000 on
    day zero): json's indenting encoder is pure Python, ~2x slower than formatting the usual
    shape here (str keys -> flat dicts of str or int) with json's own C string escaper. Any other
    shape is json's."""
    try:
        body = ",\n".join([f" {_string(k)}: {_flat(state[k])}" for k in sorted(state)])
    except _OtherShape:
        return json.dumps(state, indent=1, sort_keys=True)
    return "{\n" + body + "\n}" if state else "{}"


class _OtherShape(Exception):
    pass


def _string(s: object) -> str:
    if type(s) is not str:
        raise _OtherShape
    return encode_basestring_ascii(s)


def _flat(entry: object) -> str:
    if type(entry) is not dict:
        raise _OtherShape
    if not entry:
        return "{}"
    items = ",\n".join([f"  {_string(k)}: {_scalar(entry[k])}" for k in sorted(entry)])
    return "{\n" + items + "\n }"


def _scalar(v: object) -> str:
    if type(v) is str:
        return encode_basestring_ascii(v)
    if type(v) is int:  # not bool, not an int subclass: json writes those its own way
        return int.__repr__(v)
    raise _OtherShape


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
