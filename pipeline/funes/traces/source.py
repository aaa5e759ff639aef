"""Which transcripts a path (or this machine) holds, and which parser reads each unit (upstream-spec 1.1).

`resolve(path, harness)` returns Sources; a Source enumerates units (`units`) and reads one
(`read`). Dispatch for a path, in order: `*.parquet` -> parquet; forced `hermes`, a `.hermes`
dir, a file that is an SQLite database (whatever its name: `state.db`, `state.db.backup`) or a
`.hermes/sessions` dir -> hermes; otherwise a JSONL tree. The tree's harness is the forced one,
else the known root it is (suffix match as upstream), else each file is sniffed on its own
(upstream sniffs only the first file for the whole tree, so a mixed folder was misread). The
sniff extends upstream's: a legacy Codex header and Hermes log lines are recognised too. A
single non-JSONL file that is not a transcript (a `*.meta.json` sidecar, ...) is read as an
empty unit counted "not a transcript" rather than failing.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from funes import paths, vocab
from funes.errors import SourceError, UsageError
from funes.traces import Parsed, Unit, claude, codex, hermes, hermes_logs, parquet, pi
from funes.traces.frame import empty_frame, path_text
from funes.traces.jsonl import any_jsonl, file_units, walk_jsonl

UNKNOWN = "unknown"  # the harness of a file that is not a transcript
NOT_TRANSCRIPT = hermes_logs.NOT_TRANSCRIPT
_ROOT_SUFFIXES = {".claude/projects": "claude_code", ".codex/sessions": "codex", ".pi/agent/sessions": "pi"}
_FILE_READERS: dict[str, Callable[[Unit], Parsed]] = {
    "claude_code": claude.read,
    "codex": codex.read,
    "pi": pi.read,
    "hermes": hermes_logs.read,
}
_SNIFF_LINES = 20


# ---- sources ---------------------------------------------------------------------------------


@dataclass
class FilesSource:
    """A tree of transcript files, or one file of any kind; without `forced`, each file is sniffed."""

    root: Path
    forced: str | None = None

    @property
    def harness(self) -> str:
        return self.forced or "auto"

    def describe(self) -> str:
        facet = f"{self.forced} " if self.forced else ""
        return f"scanning {facet}transcripts under {self.root}"

    def units(self, limit: int | None = None) -> list[Unit]:
        return file_units(walk_jsonl(self.root), self.forced or sniff, limit)

    def read(self, unit: Unit) -> Parsed:
        reader = _FILE_READERS.get(unit.harness)
        if reader is None:
            return Parsed(empty_frame(), Counter({NOT_TRANSCRIPT: 1}))
        return guarded(reader, unit)


@dataclass
class HermesSource:
    """A hermes state.db and/or a hermes sessions/ folder; the database wins on shared ids."""

    root: Path
    db: Path | None = None
    logs: Path | None = None
    harness: str = field(default="hermes", init=False)

    def describe(self) -> str:
        where = " and ".join(str(p) for p in (self.db, self.logs) if p is not None)
        return f"scanning hermes sessions in {where or self.root}"

    def units(self, limit: int | None = None) -> list[Unit]:
        db_units = hermes.units(self.db) if self.db is not None else []
        known = {u.session for u in db_units if u.session is not None}
        log_units = hermes_logs.units(self.logs, None, known) if self.logs is not None else []
        found = db_units + log_units  # database sessions first: that is where hermes writes now
        return found if limit is None else found[: max(limit, 0)]

    def read(self, unit: Unit) -> Parsed:
        return guarded(hermes.read if unit.session is not None else hermes_logs.read, unit)


@dataclass
class ParquetSource:
    root: Path
    harness: str = field(default="parquet", init=False)

    def describe(self) -> str:
        return f"indexing parquet dataset {self.root}"

    def units(self, limit: int | None = None) -> list[Unit]:
        # a folder is a dataset of shards, one unit per file (an export split into train-0000x.parquet)
        files = sorted(self.root.rglob("*.parquet")) if self.root.is_dir() else [self.root]
        return [u for f in files for u in parquet.units(f, limit)]

    def read(self, unit: Unit) -> Parsed:
        return guarded(parquet.read, unit)


def guarded(reader: Callable[[Unit], Parsed], unit: Unit) -> Parsed:
    """One unit read so that content no parser foresaw fails that unit alone, with a named
    reason (SourceError), and never the whole index run."""
    try:
        return reader(unit)
    except SourceError:
        raise
    except RecursionError:
        raise SourceError(f"{path_text(unit.key)} is nested too deep to parse") from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, pl.exceptions.PolarsError) as e:
        raise SourceError(f"cannot parse {path_text(unit.key)} ({type(e).__name__})") from None


Source = FilesSource | HermesSource | ParquetSource | parquet.ShardsSource


# ---- discovery --------------------------------------------------------------------------------


def known_roots() -> list[tuple[str, Path]]:
    """The agent session folders that exist on this machine, in sweep order."""
    roots = []
    for facet, root in paths.home_roots().items():
        if facet == "hermes":
            present = (root / "state.db").is_file() or (root / "sessions").is_dir()
        else:
            present = root.is_dir()
        if present:
            roots.append((facet, root))
    return roots


def resolve(path: Path | None, harness: str | None = None) -> list[Source]:
    """The sources for a path given on the command line, or for this machine's known roots."""
    facet = vocab.parse_harness(harness)
    if path is None:
        return _home_sources(facet)
    path = Path(path).expanduser()
    if not path.exists():
        if path.is_symlink():
            # exists() is False for a dangling link and for a link loop alike; both read as "missing"
            raise UsageError(f"{path} is a symbolic link that leads nowhere (dangling or a loop)")
        raise UsageError(f"no such path: {path}")
    return [source_for(path.absolute(), facet)]


def _home_sources(facet: str | None) -> list[Source]:
    roots = [(f, r) for f, r in known_roots() if facet is None or f == facet]
    if not roots and facet:
        raise UsageError(f"no {vocab.cli_name(facet)} session dir found on this machine")
    if not roots:
        where = ", ".join(f"~/{r.relative_to(Path.home())}" for r in paths.home_roots().values())
        raise UsageError(
            f"no agent sessions found on this machine (looked in {where})",
            "pass a PATH, or `--auto` to index the bundled sample sessions",
        )
    return [source_for(root, f) for f, root in roots]


def holds_units(sources: list[Source]) -> bool:
    """Whether any source has something to read (a fresh agent install leaves its folder empty)."""
    # a tree of files is asked for its first file only: listing and stating 10k transcripts to
    # learn that one exists was a third of discovering day zero's
    return any(any_jsonl(s.root) if isinstance(s, FilesSource) else s.units(1) for s in sources)


def source_for(path: Path, facet: str | None) -> Source:
    if path.suffix.lower() == ".parquet" or (facet is None and _parquet_folder(path)):
        return ParquetSource(path)
    if path.is_file() and (path.name == "state.db" or hermes.is_sqlite(path)):
        return HermesSource(path, db=path)
    if path.is_dir() and (facet == "hermes" or path.name == ".hermes" or _is_hermes_sessions(path)):
        return _hermes_dir(path)
    return FilesSource(path, facet or _known_root(path))


def _hermes_dir(path: Path) -> HermesSource:
    """~/.hermes (state.db + sessions/), a sessions/ folder, or any folder of hermes logs."""
    if _is_hermes_sessions(path):
        return HermesSource(path, logs=path)
    db, logs = path / "state.db", path / "sessions"
    if not db.is_file() and not logs.is_dir():
        return HermesSource(path, logs=path)
    return HermesSource(path, db=db if db.is_file() else None, logs=logs if logs.is_dir() else None)


def _is_hermes_sessions(path: Path) -> bool:
    return path.is_dir() and path.name == "sessions" and path.parent.name == ".hermes"


def _parquet_folder(path: Path) -> bool:
    """A folder of Parquet shards and no transcripts: an agent-traces dataset on disk."""
    if not path.is_dir() or _known_root(path):
        return False
    names = {p.suffix.lower() for p in path.rglob("*") if p.is_file()}
    return ".parquet" in names and not names & {".jsonl", ".json", ".db"}


def _known_root(path: Path) -> str | None:
    text = path.resolve().as_posix()
    return next((facet for suffix, facet in _ROOT_SUFFIXES.items() if text.endswith(suffix)), None)


# ---- sniffing --------------------------------------------------------------------------------


def sniff(path: Path) -> str:
    """The harness that wrote a transcript file, from its first parseable JSON object."""
    if path.suffix != ".jsonl":
        return "hermes" if path.suffix == ".json" and hermes_logs.sniff_json_log(path) else UNKNOWN
    first = _first_object(path)
    return "claude_code" if first is None else harness_of_record(first)


def harness_of_record(record: dict) -> str:
    kind = record.get("type")
    if kind in ("session_meta", "response_item", "event_msg", "turn_context"):
        return "codex"
    if kind == "session":
        return "pi"
    if kind is None and ("record_type" in record or "instructions" in record):
        return "codex"  # legacy rollout: bare header or state line
    if kind is None and "role" in record:
        return "hermes"
    return "claude_code"  # upstream's default, kept


def _first_object(path: Path) -> dict | None:
    try:
        with path.open("rb") as f:
            for _, raw in zip(range(_SNIFF_LINES), f):
                try:
                    value = json.loads(raw.decode("utf-8", errors="replace"))
                except (ValueError, RecursionError):
                    continue
                if isinstance(value, dict):
                    return value
    except OSError:
        return None
    return None
