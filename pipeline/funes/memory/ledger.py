"""Incremental-index bookkeeping: per-unit change stamps in state.json and the writer lock."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from funes import vocab
from funes.errors import LockBusy

BUSY = "another funes memory operation is in progress; retry in a moment"


def load_state(path: Path) -> dict[str, dict]:
    """state.json as a dict; unreadable or old-shaped files count as empty (the next run re-reads)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict) and v.get("level") in vocab.TIERS}


def save_state(path: Path, state: dict[str, dict]) -> None:
    """Atomic rewrite: a kill mid-write leaves the previous file intact."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".state.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(state, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def is_current(state: dict[str, dict], key: str, signature: str | None, tier: str) -> bool:
    entry = state.get(key)
    if signature is None or not entry or entry.get("sig") != signature:
        return False
    return vocab.TIERS.index(entry["level"]) >= vocab.TIERS.index(tier)


@contextmanager
def writer_lock(path: Path):
    """Exclusive, non-blocking: a second writer fails loudly instead of interleaving appends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockBusy(BUSY, "another `funes index` is running; wait for it to finish") from None
        yield
    finally:
        os.close(fd)
