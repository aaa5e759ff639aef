"""Crash-safe JSON state files: written beside, fsync'd, renamed over, the folder fsync'd.

Every JSON file the memory owns (state.json, memory/manifest.json, index/manifest.json) goes
through `write_json`, so a kill or a power cut at any point leaves either the previous file or
the new one, never a torn or empty one. Readers use `read_json` and treat a missing or unreadable
file as absent (the writers rebuild what it described).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_json(path: Path, value: Any, *, sort_keys: bool = False) -> None:
    """Callers hold the memory's writer lock, so any other temp file of this name is a leftover
    of a killed write (it may hold a copy of the ledger): removed first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for left in path.parent.glob(f".{path.name}.*.tmp"):
        left.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=1, sort_keys=sort_keys)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_path(path.parent)


def read_json(path: Path) -> Any | None:
    """The parsed file, or None when it is missing or not valid JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def fsync_path(path: Path | str) -> None:
    """Best-effort fsync of a file or folder (a rename is durable only once its directory entry is;
    some filesystems refuse to fsync an O_RDONLY directory)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
