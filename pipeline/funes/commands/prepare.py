"""Read owed units and turn their blocks into chunk rows, in this process and a worker process.

Day zero owes thousands of transcripts, and parsing, redaction and chunking are most of its CPU
(bench/README.md "## Day zero"). `Pool` hands the units out in groups, in order, to a spawned
worker and works on groups itself whenever the worker's next result is not back yet, and gives
the results back in submission order, so the chunk rows are appended exactly as the serial path
appends them (tests/test_index_workers.py compares the two). Workers are spawned, never forked:
the parent already runs polars and Lance thread pools, and a fork of a threaded process can hang.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from dataclasses import dataclass, field

from funes.errors import SourceError

# below this many owed transcript files a pool's start-up (~2 s of imports per worker) costs more than it saves
POOL_MIN_UNITS = 64
# transcript bytes per group. Every group pays one Kingfisher start (~0.8 CPU-s whatever its size,
# about what 5 MB of transcript costs to parse, scan and chunk), so groups grow from a small first
# one (rates measured early) to as large as a budget stop can afford to throw away
GROUP_BYTES = 3 << 20
GROUP_MIN_BYTES = 4 << 20
GROUP_MAX_BYTES = 32 << 20


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
    """(the unit's blocks of `tiers` plus `repo` and `command` — `blocks.Blocks` or an Arrow
    table, `blocks.concat` joins them — or None when unreadable; its UnitInfo)."""
    from funes.ingest import blocks

    info = UnitInfo(unit.key)
    try:
        parsed = src.read(unit)
    except SourceError as e:
        info.failure = str(e)
        return None, info
    info.skipped = Counter(parsed.skipped)
    rows = parsed.rows
    if rows is not None:
        cols = rows.columns
        sessions, turns, harness = cols["session_id"], cols["turn_uuid"], cols["harness"][:1]
    else:
        table = parsed.table
        sessions, turns = table["session_id"].to_pylist(), table["turn_uuid"].to_pylist()
        harness = table["harness"][:1].to_pylist()
    if sessions:
        # plain Python over a few dozen rows: a polars unique/n_unique per unit cost more than its parse
        info.harness = harness[0]
        info.sessions = list(dict.fromkeys(sessions))
        info.turns = len(set(zip(sessions, turns)))
    # the one definition of block rows both engines use (ingest/blocks.py)
    if rows is not None:
        return blocks.row_blocks(rows, unit, tiers, include_thinking), info
    return blocks.arrow_blocks(table, unit, tiers, include_thinking), info


def chunk(tables: list):
    """Block tables -> (chunk rows, secrets removed): one scanner pass over all of them."""
    return Flush(tables).finish()


class Flush:
    """`chunk(tables)`, begun: the blocks' redaction is started at once (`redact.start`), so that
    Kingfisher scans them in its own process while this one reads the next units; `finish()`
    returns the chunk rows and secrets removed (`chunk` is a flush finished at once, which costs
    what starting and waiting for one scan costs). With a `scanner` (a scan worker) the whole scan
    runs in that process instead, only the findings are applied here. `close()` (also done by
    `finish`) stops waiting for a scan still running and is safe to repeat."""

    def __init__(self, tables: list, units: list | None = None, scanner=None):
        import time

        from funes.ingest import blocks, redact, run, stages

        t0 = time.monotonic()
        self.units = units or []  # what the caller stores with the rows (commands/index.py: its ledger entries)
        # a scan worker (`scan.remote.Scanner`) runs the whole scan once it is up; until then (the
        # budgeted run's first flush, ~1 s in) this process scans, as waiting for its start-up costs more
        self.scanner = scanner if scanner is not None and scanner.ready() else None
        self.waited = 0.0  # seconds `finish` waited for the scanner
        self._answered_at: float | None = None  # when the worker's answer came (`answered_at`)
        self._compiled = 0.0  # of the worker's time on it, what went on the rule compile (`compiled`)
        self.redaction: redact.Redaction | None = None
        self.inputs: tuple[list[str], list[str | None]] | None = None
        self.blocks = blocks.concat(tables)
        self.rows = self.blocks.num_rows
        try:
            # a flush larger than one clean batch is redacted batch by batch as it always was, none of it begun early
            if 0 < self.rows <= run.CLEAN_BATCH:
                self.inputs = stages.scan_inputs(self.blocks)  # computed once: `finish` hands them to clean
                self.redaction = redact.start(*self.inputs, self.scanner)
        except BaseException:
            self.close()  # a child started before a Ctrl-C is stopped here: nothing else holds it yet
            raise
        self.spent = time.monotonic() - t0  # seconds beginning it took (the scan's start included)

    def scanned(self) -> bool:
        """Whether `finish` would not wait for the scanner."""
        return self.redaction is None or self.redaction.done()

    def answered_at(self) -> float | None:
        """When the scan worker's answer to this flush was read (None: not yet, or no worker)."""
        return self.redaction.answered_at if self.redaction is not None else self._answered_at

    def compiled(self) -> float:
        """Of the scan worker's time on this flush's batch, the seconds its Kingfisher waited for the
        rule compile of a new machine (`scan.rulecache`): not the worker's scanning rate."""
        return self.redaction.compiled if self.redaction is not None else self._compiled

    def finish(self):
        from funes.ingest import run

        try:
            return run.chunk_blocks(self.blocks, self._redact, self.inputs)
        finally:
            self.close()

    def _redact(self, texts: list[str], commands: list[str | None] | None):
        from funes.ingest.redact import redact_texts

        if self.redaction is None:
            return redact_texts(texts, commands, self.scanner)  # a flush of several clean batches: each scanned now
        # a begun flush is one clean batch, cleaned once with the inputs its scan was started on
        if len(texts) != len(self.redaction.texts):
            raise ValueError(f"{len(texts)} texts to redact, the scan begun has {len(self.redaction.texts)}")
        pending, self.redaction = self.redaction, None
        try:
            return pending.result()
        finally:
            self.waited, self._answered_at, self._compiled = pending.waited, pending.answered_at, pending.compiled
            pending.close()

    def close(self) -> None:
        if self.redaction is not None:
            self.redaction.close()
            self.redaction = None


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
    """Processes preparing groups in a large run, this one included: FUNES_INDEX_WORKERS, else 1.
    Measured on an idle 2-core box, this process + a worker still stores less text in a budgeted
    round than one process alone (the worker's start-up, its Kingfisher calls and the groups cut off
    at a budget stop; bench/README.md "## Day zero"), so the pool is opt-in (0/1 = serial)."""
    raw = os.environ.get("FUNES_INDEX_WORKERS", "").strip()
    return int(raw) if raw.isdigit() else 1


def group_bytes(read_bytes: int, elapsed_s: float, remaining_s: float | None) -> int:
    """The next group's size from the rate so far: a budget stop throws the groups in flight away,
    so in a budgeted run each is at most an eighth of what the rest of the budget reads (a quarter
    of what one of the two processes reads)."""
    if remaining_s is None:
        return GROUP_MAX_BYTES
    if not read_bytes or elapsed_s <= 0:
        return GROUP_MIN_BYTES
    return int(min(max(read_bytes / elapsed_s * remaining_s / 8, GROUP_MIN_BYTES), GROUP_MAX_BYTES))


def size_of(group: list) -> int:
    total = 0
    for pair in group:
        with contextlib.suppress(OSError):  # a file gone since discovery counts 0, as in `stream`
            total += pair[1].path.stat().st_size
    return total


def groups(owed: list, group_bytes: int = GROUP_BYTES) -> list[list]:
    """Consecutive runs of owed (source, unit) pairs of about group_bytes of transcript each."""
    return list(stream(owed, lambda: group_bytes))


def stream(owed, next_bytes):
    """`groups`, lazily: each group is as large as `next_bytes()` says when it is started."""
    group: list = []
    size, limit = 0, next_bytes()
    for pair in owed:
        try:
            n = pair[1].path.stat().st_size
        except OSError:
            n = 0
        if group and size + n > limit:
            yield group
            group, size, limit = [], 0, next_bytes()
        group.append(pair)
        size += n
    if group:
        yield group


def _worker_start() -> None:
    # tqdm (under datasets) otherwise makes a multiprocessing lock, a named semaphore that a worker
    # killed at a budget stop never unlinks: the resource tracker then warns on the user's terminal
    import threading

    from tqdm import tqdm  # type: ignore[import-untyped]

    tqdm.set_lock(threading.RLock())


class Pool:
    """`n` processes preparing groups: this one and n - 1 spawned workers running `prepare_group`;
    `run` yields results in submission order. On two cores a second worker left the parent idle
    while it waited and paid a second set of imports (bench/README.md "## Day zero")."""

    def __init__(self, n: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.n = n
        self.broken = False  # a worker died; the rest of the run is serial
        self.ex = ProcessPoolExecutor(
            max(n - 1, 1), mp_context=multiprocessing.get_context("spawn"), initializer=_worker_start
        )
        self.abandoned = False  # groups were left in flight (a budget stop): close kills, not waits

    def run(self, work_groups, tiers, include_thinking: bool, may_start=lambda: True):
        """`may_start()`: whether another group still fits the budget (asked before each is
        started; a group this process starts is work the caller's budget check cannot see)."""
        from collections import deque

        # (group, future or this process's result); a bounded window keeps each worker one group ahead
        pending: deque = deque()
        todo = iter(work_groups)
        window = 2 * max(self.n - 1, 1)
        in_flight, here = 0, False
        try:
            while True:
                while in_flight < window and may_start() and (g := next(todo, None)) is not None:
                    pending.append((g, self.ex.submit(prepare_group, g, tiers, include_thinking)))
                    in_flight += 1
                if not pending:
                    return
                g0, head = pending[0]
                # the worker's next result is not back: prepare one group here meanwhile (one, so
                # the caller checks its budget between any two groups done here)
                waiting = not isinstance(head, tuple) and not head.done()
                if waiting and not here and may_start() and (g := next(todo, None)) is not None:
                    pending.append((g, prepare_group(g, tiers, include_thinking)))
                    here = True
                    continue
                here = False
                pending.popleft()
                if isinstance(head, tuple):
                    yield g0, head
                else:
                    in_flight -= 1
                    yield g0, head.result()
        finally:
            for _, fut in pending:
                if not isinstance(fut, tuple):
                    self.abandoned = True
                    fut.cancel()

    def close(self) -> None:
        if self.abandoned:
            # a budget stop throws the groups in flight away: waiting for them only overruns the
            # budget (a killed worker's Kingfisher scratch dir is swept by the next scan)
            procs = list((getattr(self.ex, "_processes", None) or {}).values())
            self.ex.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.join(5)  # reaped here, so its CPU is on this process's children's bill
        self.ex.shutdown(wait=True, cancel_futures=True)
