"""A parsed unit's frame -> the block rows the chunk stage takes: Arrow, `repo` added, tiers selected.

One definition for both engines (commands/index.py on one machine, funes/scale on Ray), so they
feed the very same rows to `run.chunk_blocks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import pyarrow as pa

from funes.ingest import stages
from funes.traces import Unit
from funes.traces import repo as repos
from funes.traces.frame import Rows, as_arrow, turns_schema


@dataclass(slots=True)
class Blocks:
    """`arrow_blocks`' rows (turns columns, `repo`, `command`) as column lists: `concat` builds one
    Arrow table for a whole flush instead of one per transcript."""

    columns: dict[str, list]

    @property
    def num_rows(self) -> int:
        return len(self.columns["block_type"])

    def table(self) -> pa.Table:
        return pa.Table.from_pydict(self.columns, schema=blocks_schema())


@cache
def blocks_schema() -> pa.Schema:
    """What `arrow_blocks` returns: the turns schema, then `repo` and `command`."""
    return turns_schema().append(pa.field("repo", pa.string())).append(pa.field("command", pa.string()))


def unit_blocks(frame, unit: Unit, tiers, include_thinking: bool) -> pa.Table:
    return arrow_blocks(as_arrow(frame), unit, tiers, include_thinking)


def arrow_blocks(table: pa.Table, unit: Unit, tiers, include_thinking: bool) -> pa.Table:
    """The same from the frame already in Arrow (the local path reads its tallies from it)."""
    table = table.append_column("repo", pa.array([_repo(unit, table.num_rows)] * table.num_rows, pa.string()))
    return stages.select(table, set(tiers), include_thinking=include_thinking)  # select_lists' rule


def row_blocks(rows: Rows, unit: Unit, tiers, include_thinking: bool) -> Blocks:
    """`arrow_blocks` of a unit's rows still as lists: the same rows, not yet Arrow."""
    n = len(rows)
    cols = {**rows.columns, "repo": [_repo(unit, n, rows.source)] * n}
    return Blocks(stages.select_lists(cols, set(tiers), include_thinking))


def _repo(unit: Unit, rows: int, source: bytes | None = None) -> str:
    """The repo of a unit's rows ("" when it has none); `source`: the transcript's bytes already read."""
    if not rows:
        return ""
    if source is not None:  # a transcript file: its cwd line is in the bytes already read
        return repos.repo_of_cwd(repos.cwd_of_transcript(unit.path, source))
    return repos.repo_for_unit(unit)


def concat(parts: list) -> pa.Table:
    """Block rows of many units (`Blocks` or Arrow tables of `blocks_schema`) -> one Arrow table."""
    if all(isinstance(p, Blocks) for p in parts):
        cols: dict[str, list] = {name: [] for name in blocks_schema().names}
        for p in parts:
            for c, v in p.columns.items():
                cols[c].extend(v)
        return pa.Table.from_pydict(cols, schema=blocks_schema())
    return pa.concat_tables([p.table() if isinstance(p, Blocks) else p for p in parts]).combine_chunks()


def tally_of(frame) -> tuple[str, list[str], int] | None:
    """(harness, session ids, turn count) of a parsed frame; None when it holds no rows."""
    if not frame.height:
        return None
    sessions = frame["session_id"].unique().to_list()
    return frame["harness"][0], sessions, frame.select(["session_id", "turn_uuid"]).n_unique()
