"""Incremental-index bookkeeping: per-unit change stamps in state.json (which tier each unit is stored to)."""

from __future__ import annotations

from pathlib import Path

from funes import vocab
from funes.memory.atomic import read_json, write_json


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
