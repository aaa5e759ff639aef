"""$FUNES_HOME/integrations/<agent>.json: what `add` wrote, with the bytes before, so `remove` can undo it exactly."""

from __future__ import annotations

import json
from pathlib import Path

from funes import paths
from funes.agents.edit import read, sha, write_atomic


def path_for(agent: str) -> Path:
    return paths.integrations_dir() / f"{agent}.json"


def load(agent: str) -> dict | None:
    try:
        doc = json.loads(path_for(agent).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def save(agent: str, doc: dict) -> None:
    write_atomic(path_for(agent), json.dumps(doc, indent=1, sort_keys=True) + "\n")


def drop(agent: str) -> None:
    path_for(agent).unlink(missing_ok=True)
    backups = paths.integrations_dir() / "backups" / agent
    if backups.is_dir():
        for f in backups.iterdir():
            f.unlink()
        backups.rmdir()
    for d in (paths.integrations_dir() / "backups", paths.integrations_dir()):
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()


def record_before(agent: str, doc: dict, path: Path, before: str | None) -> None:
    """The first `add` that touches a file keeps its original bytes; later adds never overwrite them."""
    files = doc.setdefault("files", {})
    if str(path) in files:
        return
    entry: dict = {"before": sha(before), "backup": None}
    if before is not None:
        backup = paths.integrations_dir() / "backups" / agent / f"{len(files):02d}-{path.name}"
        write_atomic(backup, before)
        entry["backup"] = str(backup)
    files[str(path)] = entry


def original(entry: dict) -> str | None:
    """The bytes the file had before the first `add` (None: it did not exist)."""
    if entry.get("backup") is None:
        return None
    return read(Path(entry["backup"]))
