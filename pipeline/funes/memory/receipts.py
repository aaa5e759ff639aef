"""Per-remote receipts under FUNES_HOME/pushed/: the shards this host has read and the chunk ids they hold.

The remote manifest is the source of truth; receipts only save re-reading shards already seen.
A receipt can lag behind the remote (a publish killed after its commit), never run ahead of it:
ids are recorded only after the commit that carries them succeeded, or after reading a shard.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from funes import paths
from funes.memory.atomic import read_json, write_json


@dataclass
class Receipt:
    shards: set[str] = field(default_factory=set)  # shard paths whose ids are in `ids`
    ids: set[str] = field(default_factory=set)


def folder(uri: str, base: Path | None = None) -> Path:
    return (base or paths.home()) / "pushed" / re.sub(r"[^A-Za-z0-9._-]+", "_", uri)


def load(uri: str) -> Receipt:
    d = folder(uri)
    shards = read_json(d / "shards.json")
    try:
        ids = (d / "ids").read_text(encoding="utf-8").split()
    except OSError:
        return Receipt()
    return Receipt(set(shards), set(ids)) if isinstance(shards, list) else Receipt(set(), set(ids))


def _write_lines(path: Path, data: str) -> None:
    # the id list is plain lines (millions of ids parse faster than JSON); same crash safety as write_json
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def save(uri: str, receipt: Receipt) -> None:
    """ids first, then the shard list: a kill in between leaves extra ids, never a shard marked read
    whose ids are missing."""
    d = folder(uri)
    d.mkdir(parents=True, exist_ok=True)
    _write_lines(d / "ids", "".join(i + "\n" for i in sorted(receipt.ids)))
    write_json(d / "shards.json", sorted(receipt.shards))
