"""Trace sources: each agent's transcripts -> the canonical turn/block rows (schemas/turns.json).

The contract every source module (claude.py, codex.py, pi.py, hermes.py, parquet.py) keeps:

    units(root: Path, limit: int | None = None) -> list[Unit]   cheap enumeration, newest first
    read(unit: Unit) -> Parsed                                    whole unit -> its rows (`frame.Rows`,
                                                                  an Arrow table or a polars frame)

`read` never raises on bad content: malformed lines are counted in `Parsed.skipped` by a short
reason ("malformed json", "truncated last line", ...). It raises `funes.errors.SourceError` only
when the unit itself cannot be read (missing file, not a database). Source files are opened
read-only and never written to.

Modules: frame.py (Turn/Block -> the frame), jsonl.py (line reader, file units), one parser per
format (claude, codex, pi, hermes, hermes_logs, parquet), source.py (what a path holds, which
parser reads it; the entry point for commands), repo.py (git remote attribution).
Skip reasons in `Parsed.skipped`: "malformed json", "truncated last line", "two objects on one
line" (both objects kept), "lone surrogate" (kept, as U+FFFD), "invalid utf-8" (kept, as
U+FFFD), "not a json object", "empty file", "nested too deep" (a line deeper than Python can
walk: dropped), "no turns", "not a transcript", "corrupt row", "read again: database changed
mid-read" (hermes). Names that are not valid UTF-8 (file names, hence session ids) are stored
with each undecodable byte written `\\xNN`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa

if TYPE_CHECKING:
    from funes.traces.frame import Rows


@dataclass(frozen=True)
class Unit:
    """What the indexer tracks incrementally: one transcript file, one hermes session, one parquet file."""

    key: str  # state.json key; stable across runs
    harness: str  # claude_code | codex | pi | hermes | parquet
    path: Path  # the file (transcript, state.db, parquet) this unit lives in
    signature: str | None  # changes whenever the unit's content may have changed; None = always re-read
    mtime: float = 0.0  # newest-first ordering
    session: str | None = None  # hermes: the session id inside the database


@dataclass
class Parsed:
    """A unit read into the canonical frame, plus what was skipped and why.

    A parser may hand over the rows as an Arrow table of the same schema, or as `frame.Rows`
    (column lists) instead: the indexer reads them as lists and builds Arrow once per flush, and
    building a polars frame per unit only to convert it back cost ~1 ms per transcript on day
    zero (bench/README.md "## Day zero"); `frame` and `table` convert on demand."""

    data: pl.DataFrame | pa.Table | Rows
    skipped: Counter = field(default_factory=Counter)

    @property
    def frame(self) -> pl.DataFrame:
        if not isinstance(self.data, pl.DataFrame):
            self.data = pl.from_arrow(self.table)
        return self.data  # type: ignore[return-value]

    @property
    def table(self) -> pa.Table:
        """The rows as an Arrow table with exactly the schemas/turns.json schema."""
        if isinstance(self.data, pl.DataFrame):
            from funes.traces.frame import as_arrow

            return as_arrow(self.data)
        if not isinstance(self.data, pa.Table):
            self.data = self.data.table()
        return self.data

    @property
    def rows(self) -> Rows | None:
        """The rows as column lists when the parser handed them over so, else None."""
        return None if isinstance(self.data, (pl.DataFrame, pa.Table)) else self.data
