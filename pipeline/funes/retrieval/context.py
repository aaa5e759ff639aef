"""Context around hits and turns: neighbour chunks by seq (upstream 5.2 step 10) and get's turn window (5.4)."""

from __future__ import annotations

from itertools import groupby

import numpy as np

from funes.ingest.chunk import reconstruct
from funes.memory.shards import ShardTable
from funes.memory.tables import ChunkTable
from funes.results import Block, Hit, Neighbor, Turn

NEIGHBOR_COLUMNS = ["turn_uuid", "seq", "role", "block_type", "text", "block_idx", "split_idx"]
TURN_COLUMNS = ["turn_uuid", "seq", "ts", "role", "text", "block_type", "tool_name", "block_idx", "split_idx"]


def attach_neighbors(chunks: ChunkTable | ShardTable, fac, hits: list[Hit], window: int) -> None:
    """Give each hit the chunks of OTHER turns of its session within `window` seqs, in (seq, block, split) order."""
    if window <= 0 or not hits:
        return
    rows = np.array([h.row for h in hits], dtype=np.int64)
    codes, seqs = np.asarray(fac.session)[rows], np.asarray(fac.seq)[rows]
    session = np.asarray(fac.session)
    cand = np.flatnonzero(np.isin(session, np.unique(codes)))
    cs, cq = session[cand], np.asarray(fac.seq)[cand]
    picks = [cand[(cs == c) & (np.abs(cq - s) <= window)] for c, s in zip(codes, seqs)]
    need = np.unique(np.concatenate(picks)) if picks else np.empty(0, np.int64)
    if not len(need):
        return
    table = chunks.take(need, NEIGHBOR_COLUMNS).to_pylist()
    by_row = dict(zip(need.tolist(), table))
    for hit, pick in zip(hits, picks):
        recs = [(r, by_row[r]) for r in pick.tolist() if by_row[r]["turn_uuid"] != hit.turn_uuid]
        recs.sort(key=lambda x: (x[1]["seq"], x[1]["block_idx"], x[1]["split_idx"], x[0]))
        hit.neighbors = [Neighbor(r["role"], r["block_type"], int(r["seq"]), r["text"]) for _, r in recs]


def session_rows(chunks: ChunkTable | ShardTable, fac, covered: int, session_id: str):
    """Every stored row of one session (facets when they cover the table, else a filtered scan)."""
    if fac is not None and covered == chunks.count():
        code = fac.session_code(session_id)
        rows = np.flatnonzero(np.asarray(fac.session) == code) if code is not None else np.empty(0, np.int64)
        if not len(rows):
            return chunks.empty(TURN_COLUMNS)
        return chunks.take(rows, TURN_COLUMNS)
    return chunks.session_rows(session_id, TURN_COLUMNS)


def turn_window(table, turn_uuid: str, window: int) -> list[Turn] | None:
    """Turns within `window` seqs of `turn_uuid` (None when the session has no such turn)."""
    recs = table.to_pylist()
    center = next((r["seq"] for r in recs if r["turn_uuid"] == turn_uuid), None)
    if center is None:
        return None
    recs = [r for r in recs if abs(r["seq"] - center) <= window]
    recs.sort(key=lambda r: (r["seq"], r["turn_uuid"], r["block_idx"], r["split_idx"]))
    turns = []
    for (seq, uuid), grouped in groupby(recs, key=lambda r: (r["seq"], r["turn_uuid"])):
        group = list(grouped)
        blocks = [_block(list(pieces)) for _, pieces in groupby(group, key=lambda r: r["block_idx"])]
        turns.append(Turn(group[0]["ts"], group[0]["role"], int(seq), uuid, blocks))
    return turns


def _block(pieces: list[dict]) -> Block:
    text = reconstruct([p["text"] for p in pieces])
    return Block(pieces[0]["block_type"], pieces[0]["tool_name"], text)
