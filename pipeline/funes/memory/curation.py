"""Project memories: which local sessions may ship to one Hub memory, in a plain-text file a person can edit.

$FUNES_HOME/curation/<owner>--<name>.txt holds, one per line (`#` starts a comment):
    project OWNER/REPO          this remote is that repository's project memory
    include SESSION CHUNKS      reviewed and shipped while it holds at most CHUNKS chunks
    exclude SESSION             never shipped
The last line about a session wins, so appending a decision never needs a rewrite of the person's edits.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from funes import paths
from funes.errors import UsageError

_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass
class Decisions:
    project: str | None = None
    include: dict[str, int] = field(default_factory=dict)  # session -> chunks it held at review
    exclude: set[str] = field(default_factory=set)


@dataclass
class Partition:
    ship: set[str] = field(default_factory=set)
    grown: set[str] = field(default_factory=set)  # included, but holds more chunks than at review
    excluded: set[str] = field(default_factory=set)
    undecided: set[str] = field(default_factory=set)


def path_for(repo_id: str) -> Path:
    return paths.home() / "curation" / (repo_id.replace("/", "--") + ".txt")


def load(repo_id: str) -> Decisions:
    d = Decisions()
    try:
        text = path_for(repo_id).read_text(encoding="utf-8")
    except FileNotFoundError:
        return d
    for n, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] == "project" and len(words) == 2:
            d.project = words[1]
        elif words[0] == "include" and len(words) in (2, 3) and (len(words) == 2 or words[2].isdigit()):
            d.exclude.discard(words[1])
            d.include[words[1]] = int(words[2]) if len(words) == 3 else 0
        elif words[0] == "exclude" and len(words) == 2:
            d.include.pop(words[1], None)
            d.exclude.add(words[1])
        else:
            raise UsageError(
                f"{path_for(repo_id)}:{n}: cannot read {raw.strip()!r}",
                "lines are `project OWNER/REPO`, `include SESSION CHUNKS` or `exclude SESSION`",
            )
    return d


def record(repo_id: str, lines: list[str], project: str | None = None) -> None:
    """Append decisions (and a project line) after whatever the person wrote."""
    if project is not None and not _REPO.match(project):
        raise UsageError(f'"{project}" is not a repository name', "give owner/name, e.g. acme/widget")
    path = path_for(repo_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = f"# sessions funes may publish to {repo_id}; the last line about a session wins\n"
    if text and not text.endswith("\n"):
        text += "\n"
    if project is not None and load(repo_id).project != project:
        text += f"project {project}\n"
    _write(path, text + "".join(line + "\n" for line in lines))


def partition(d: Decisions, chunks_per_session: dict[str, int]) -> Partition:
    p = Partition()
    for sid, n in chunks_per_session.items():
        if sid in d.exclude:
            p.excluded.add(sid)
        elif sid not in d.include:
            p.undecided.add(sid)
        elif n > d.include[sid]:
            p.grown.add(sid)
        else:
            p.ship.add(sid)
    return p


def _write(path: Path, text: str) -> None:
    """Whole-file replace: a person's editor or a second `curate` never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
