"""Read owed units and turn their blocks into chunk rows, in this process or in worker processes.

Day zero owes thousands of transcripts, and parsing, redaction and chunking are two thirds of its
CPU (bench/README.md "## Day zero"). `Pool` hands the units out in groups, in order, to processes
on the other cores and gives the results back in the same order, so the chunk rows are appended
exactly as the serial path appends them (tests/test_index_workers.py compares the two). Workers are spawned, never forked: the
parent already runs polars and Lance thread pools, and a fork of a threaded process can hang.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from funes.errors import SourceError

# below this many owed transcript files a pool's start-up (~2 s of imports per worker) costs more than it saves
POOL_MIN_UNITS = 64
# transcript bytes per worker task: large enough for one scanner pass to pay off, small enough that
# a budget stop loses little and results stream back steadily
GROUP_BYTES = 3 << 20


@dataclass
class UnitInfo:
    """What one unit read contributes to the report, whatever process read it."""

    key: str
    harness: str | None = None
    sessions: list[str] = field(default_factory=list)
    turns: int = 0
    skipped: Counter = field(default_factory=Counter)
    failure: str | None = None


def read_unit(src, unit, tiers, include_thinking: bool):
    """(the unit's blocks of `tiers` plus `repo`, or None when unreadable; its UnitInfo)."""
    from funes.ingest.blocks import arrow_blocks

    info = UnitInfo(unit.key)
    try:
        parsed = src.read(unit)
    except SourceError as e:
        info.failure = str(e)
        return None, info
    info.skipped = Counter(parsed.skipped)
    table = parsed.table
    if table.num_rows:
        # plain Python over a few dozen rows: a polars unique/n_unique per unit cost more than its parse
        sessions, turns = table["session_id"].to_pylist(), table["turn_uuid"].to_pylist()
        info.harness = table["harness"][0].as_py()
        info.sessions = list(dict.fromkeys(sessions))
        info.turns = len(set(zip(sessions, turns)))
    # the one definition of block rows both engines use (ingest/blocks.py)
    return arrow_blocks(table, unit, tiers, include_thinking), info


def chunk(tables: list):
    """Block tables -> (chunk rows, secrets removed): one scanner pass over all of them."""
    import pyarrow as pa

    from funes.ingest import run
    from funes.ingest.redact import redact_texts

    return run.chunk_blocks(pa.concat_tables(tables).combine_chunks(), redact_texts)


def prepare_group(work: list, tiers, include_thinking: bool):
    """A worker's task: [(source, unit)] -> (chunk rows, secrets removed, [UnitInfo], [unit read ok])."""
    tables, infos, ok = [], [], []
    for src, unit in work:
        blocks, info = read_unit(src, unit, tiers, include_thinking)
        infos.append(info)
        ok.append(blocks is not None)
        if blocks is not None:
            tables.append(blocks)
    if not tables:
        return None, Counter(), infos, ok
    chunks, removed = chunk(tables)
    return chunks, removed, infos, ok


def workers() -> int:
    """Worker processes for a large run: FUNES_INDEX_WORKERS, else one per core (at most 2) when
    the cores are free. On a busy machine extra processes only add their start-up and the
    per-group scanner start to the CPU bill (measured in bench/README.md "## Day zero"), so it
    stays serial (0/1 = serial)."""
    raw = os.environ.get("FUNES_INDEX_WORKERS", "").strip()
    if raw.isdigit():
        return int(raw)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    busy = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return min(cores, 2) if busy < cores - 0.5 else 1


def groups(owed: list, group_bytes: int = GROUP_BYTES) -> list[list]:
    """Consecutive runs of owed (source, unit) pairs of about group_bytes of transcript each."""
    out: list[list] = [[]]
    size = 0
    for pair in owed:
        try:
            n = pair[1].path.stat().st_size
        except OSError:
            n = 0
        if out[-1] and size + n > group_bytes:
            out.append([])
            size = 0
        out[-1].append(pair)
        size += n
    return [g for g in out if g]


class Pool:
    """Spawned workers running `prepare_group`; `run` yields results in submission order."""

    def __init__(self, n: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.n = n
        self.broken = False  # a worker died; the rest of the run is serial
        self.ex = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"))

    def run(self, work_groups: list[list], tiers, include_thinking: bool):
        from collections import deque

        pending: deque = deque()
        todo = iter(work_groups)
        try:
            # a bounded window: results wait in the parent only while it appends the previous one
            for g in todo:
                pending.append((g, self.ex.submit(prepare_group, g, tiers, include_thinking)))
                if len(pending) > self.n + 1:
                    g0, fut = pending.popleft()
                    yield g0, fut.result()
            while pending:
                g0, fut = pending.popleft()
                yield g0, fut.result()
        finally:
            for _, fut in pending:
                fut.cancel()

    def close(self) -> None:
        self.ex.shutdown(wait=True, cancel_futures=True)
