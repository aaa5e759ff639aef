"""A parsed unit's frame -> the block rows the chunk stage takes: Arrow, `repo` added, tiers selected.

One definition for both engines (commands/index.py on one machine, funes/scale on Ray), so they
feed the very same rows to `run.chunk_blocks`.
"""

from __future__ import annotations

import pyarrow as pa

from funes.ingest import stages
from funes.traces import Unit
from funes.traces import repo as repos
from funes.traces.frame import as_arrow


def unit_blocks(frame, unit: Unit, tiers, include_thinking: bool) -> pa.Table:
    return arrow_blocks(as_arrow(frame), unit, tiers, include_thinking)


def arrow_blocks(table: pa.Table, unit: Unit, tiers, include_thinking: bool) -> pa.Table:
    """The same from the frame already in Arrow (the local path reads its tallies from it)."""
    repo = repos.repo_for_unit(unit) if table.num_rows else ""
    table = table.append_column("repo", pa.array([repo] * table.num_rows, pa.string()))
    return stages.select(table, set(tiers), include_thinking=include_thinking)


def tally_of(frame) -> tuple[str, list[str], int] | None:
    """(harness, session ids, turn count) of a parsed frame; None when it holds no rows."""
    if not frame.height:
        return None
    sessions = frame["session_id"].unique().to_list()
    return frame["harness"][0], sessions, frame.select(["session_id", "turn_uuid"]).n_unique()
