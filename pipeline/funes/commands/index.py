"""`funes index`: pick sources, store owed units' chunks, backfill vectors, refresh the indexes."""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from funes import paths, vocab
from funes.commands import budget, collector, prepare
from funes.commands.budget import Clock
from funes.commands.refreshes import Refreshes
from funes.errors import UsageError
from funes.memory import Memory, State, ledger, spec
from funes.memory.tables import ChunkTable
from funes.results import IndexReport, Tally
from funes.traces import source
from funes.traces.source import Source

if TYPE_CHECKING:
    from funes.scan.remote import Scanner

# a no-path run (day zero, hooks) stops storing/embedding after about this long (FUNES_INDEX_BUDGET)
BUDGET_S = 60.0
# blocks gathered before one chunk+append step (bounds memory and the work a kill can lose; FUNES_FLUSH_BLOCKS)
FLUSH_BLOCKS = 20000
FLUSH_S = 5.0
EMBED_STEP = 1024  # vectors appended per commit: a kill loses at most one step
TIER_PASSES = tuple((tier,) for tier in vocab.TIERS)  # budgeted: all text first, then tool calls, then output
ALL_TIERS = (vocab.TIERS,)
_EMBED_PRIORITY = {"text": 0, "thinking": 0, "tool_use": 1, "tool_result": 2}


@dataclass
class Options:
    path: str | None = None
    harness: str | None = None
    no_thinking: bool = False
    limit: int | None = None
    yes: bool = False
    auto: bool = False  # no path: sweep every known folder, or the bundled samples when none exists
    interactive: bool = False
    no_embed: bool = False  # store text only (benchmarks of time-to-searchable)
    engine: str = "local"  # "ray": the same stages on a Ray cluster (commands/scale_index.py)
    address: str | None = None  # the Ray cluster to join; none: start a local one
    num_cpus: int | None = None  # CPUs of a local Ray cluster (default: all)
    progress_bars: bool = False  # Ray Data's own progress bars (on a terminal)


def pick_sources(opts: Options) -> tuple[list[Source], bool]:
    """Upstream-spec 3.1 dispatch; returns (sources, whether this is a budgeted run).

    Discovery is `traces.source`'s; this keeps only the decisions: an automated run must name a
    target, and `--auto` on a machine with no agent sessions (no folders, or only empty ones, as
    a fresh install leaves them) indexes the bundled samples instead.
    """
    if opts.path:
        hub = spec.parse(opts.path)
        if hub.is_hub and not Path(opts.path).expanduser().exists():
            from funes.commands import hub_traces

            return [hub_traces.source(hub)], False
        return source.resolve(Path(opts.path), opts.harness), False
    harness = vocab.parse_harness(opts.harness)
    if not (harness or opts.interactive or opts.auto):
        raise UsageError("an automated run must name a target: a PATH, --harness H, or --auto")
    if opts.auto and not harness:
        found = source.resolve(None) if source.known_roots() else []
        if not source.holds_units(found):
            samples = paths.samples_dir()
            return [s for h in ("claude", "codex") for s in source.resolve(samples / h, h)], True
        return found, True
    return source.resolve(None, harness), True


def index(opts: Options, progress=lambda msg, transient=False: None) -> IndexReport:
    if opts.limit is not None and opts.limit < 1:
        raise UsageError(f"--limit must be at least 1 (got {opts.limit})")
    if opts.harness is not None and not opts.harness.strip():
        raise UsageError("--harness needs a value (claude, codex, pi or hermes)")
    _check_engine(opts)
    sources, budgeted = pick_sources(opts)
    return index_sources(sources, opts, budgeted, progress)


def index_sources(
    sources: list, opts: Options, budgeted: bool, progress=lambda msg, transient=False: None
) -> IndexReport:
    """Index already-resolved sources (the hook worker passes the transcripts its events name)."""
    report = IndexReport(sources=[s.describe() for s in sources])
    report.sample = bool(sources) and all(paths.samples_dir() in Path(s.root).parents for s in sources)
    started = time.monotonic()
    mem = Memory.resolve(None)
    with mem.lock(), collector.bulk():
        st, _msg = mem.state()
        if st in (State.INCOMPATIBLE, State.UNREADABLE):
            mem.require()
        fixed = mem.repair_vectors() if st is State.READY else None
        if fixed:
            report.repairs.append(_vectors_repair(fixed))
        if opts.engine == "ray":
            from funes.commands import scale_index

            scale_index.run(opts, mem, sources, report, progress)
            _refresh(mem, progress, report)
            report.vectors_pending = len(mem.pending_rows())
            report.vectors_stale = mem.stale_vectors()  # replaced by the local vector tier, not on Ray
            report.elapsed = time.monotonic() - started
            return report
        run = _Run(opts, mem, report, progress, started, budgeted and not opts.yes)

        def searchable() -> None:
            # each pass's text is searchable as soon as it is stored, before any of it is embedded
            run.refreshes.finish()
            if report.searchable_at is None:
                report.searchable_at = time.monotonic() - started

        from funes.memory import indexes

        with indexes.shared_pieces():  # the passes' refreshes share one piece cache, dropped before embedding
            run.store(sources, TIER_PASSES if budgeted else ALL_TIERS, after_pass=searchable)
        if not opts.no_embed:
            run.embed()
        report.vectors_pending = len(mem.pending_rows())
        report.vectors_stale = mem.stale_vectors()
        # every run, not only one that added rows: a damaged, rolled-back or stale index is
        # repaired here (cheap when all is well)
        _refresh(mem, progress, report)
    report.elapsed = time.monotonic() - started
    return report


def _check_engine(opts: Options) -> None:
    if opts.engine == "ray":
        from funes.scale import rayjob

        rayjob.require()  # before any source is read: a missing extra is the one thing to say
    elif opts.engine != "local":
        raise UsageError(f"unknown engine {opts.engine!r}", "--engine local (the default) or --engine ray")
    elif opts.address is not None or opts.num_cpus is not None:
        raise UsageError("--address and --num-cpus need --engine ray")
    if opts.num_cpus is not None and opts.num_cpus < 1:
        raise UsageError(f"--num-cpus must be at least 1 (got {opts.num_cpus})")


def _vectors_repair(fixed: dict) -> str:
    if "set_aside" in fixed:
        return f"vectors: {fixed['set_aside']}; set aside, every chunk is embedded again"
    return (
        f"vectors: {fixed['mismatched']} pointed at other chunks; {fixed['remapped']} re-mapped by id, "
        f"{fixed['dropped']} dropped (their chunks are gone or will be embedded again)"
    )


def _refresh(mem: Memory, progress, report: IndexReport | None = None) -> None:
    from funes.memory import indexes

    progress("updating search indexes", True)
    stats = indexes.refresh(mem)
    if report is None:
        return
    if stats.get("vectors_fixed"):
        report.repairs.append(_vectors_repair(stats["vectors_fixed"]))
    if stats.get("damaged"):
        report.repairs.append(f"search index: damaged ({stats['damaged']}); rebuilt")


class _Run:
    """One index run's mutable state: the ledger, the tallies, the budget clock."""

    def __init__(self, opts: Options, mem: Memory, report: IndexReport, progress, started: float, budgeted: bool):
        self.opts, self.mem, self.report, self.progress = opts, mem, report, progress
        self.started, self.budgeted = started, budgeted
        rows = mem.chunks.count()
        self.state = ledger.load_state(paths.state_file()) if rows else {}
        mark = ledger.table_mark(paths.state_file())
        if self.state and mark is not None and ledger.ahead_of(mark, rows, mem.chunks.version()):
            # chunk ids dedup, so re-reading every unit stores exactly the missing chunks
            report.repairs.append(
                f"ledger: it recorded {mark['rows']} chunks but the table holds {rows} (a lost commit?); "
                "every source is read again and the missing chunks stored"
            )
            self.state = {}
        self.seen: set[str] = set()  # units counted in the tallies this run
        self.budget_s = _env_number("FUNES_INDEX_BUDGET", BUDGET_S)
        self.flush_blocks = max(int(_env_number("FUNES_FLUSH_BLOCKS", FLUSH_BLOCKS)), 1)
        self.clock = Clock(started, self.budget_s, budgeted)
        # the lexical index refreshed as the run goes; `unindexed`: chunks stored that no refresh has begun on
        self.refreshes = Refreshes(self.clock, lambda: _refresh(mem, progress))
        # the flush begun last, finished once its scan is through: (its Flush, its units, seconds spent so far)
        self.pending: prepare.Flush | None = None  # a flush begun, finished later (`_flush`)
        self.scanner: Scanner | None = None  # the scan worker of a large run (`store`)
        # flushes whose batch the clock counts in the worker's queue and whose answer it has not
        # noted yet: the objects, not their ids (an id is reused once its flush is collected)
        self.unanswered: set[prepare.Flush] = set()
        self.ending = False  # the pass has begun its last flush (`_index_while_scanning`)

    def over_budget(self) -> bool:
        if self.report.budget_stopped:
            return True
        if self.budgeted and time.monotonic() - self.started > self.budget_s:
            self.report.budget_stopped = True
            return True
        return False

    def must_stop(self, batch_rows: int = 0) -> bool:
        """Over budget, or one more unit could not be read, stored and indexed within it
        (`batch_rows`: blocks read and not flushed yet; the flushes begun, the clock knows). A
        stop asked only by the guessed worker rate may first wait for and commit the pending flush."""
        if self.over_budget() or (
            self.clock.must_stop(batch_rows, self.refreshes.unindexed) and not self._learned_the_scan(batch_rows)
        ):
            self.report.budget_stopped = True
            return True
        return False

    def _learned_the_scan(self, batch_rows: int) -> bool:
        """A stop that the worker's guessed rate asks for, with its first batch in flight: wait for
        that answer (at most what the guess gives it) and decide again on the measured rate. The
        guess, a slower machine's, stopped a 10 s round at 1.6 s that then ended at 6.8 s; waiting
        costs little, as the tail would wait for that batch anyway. True when the stop is off."""
        flush = self.pending
        if self.clock.measured("scan") or flush is None or flush not in self.unanswered:
            return False
        if not _scanned_by(flush, time.monotonic() + self.clock.forecast_parts.get("wait", 0.0) / 2):
            return False
        self._answered(flush, time.monotonic())
        self._finish_pending()
        return not self.clock.must_stop(batch_rows, self.refreshes.unindexed)

    # ---- phase 1: chunks -----------------------------------------------------------------

    def store(self, sources, passes, after_pass=lambda: None) -> None:
        units = [(s, u) for s in sources for u in s.units(self.opts.limit)]
        self.report.units_total = len(units)
        self.report.units_current = sum(
            ledger.is_current(self.state, u.key, u.signature, "tool_result") for _, u in units
        )
        pool = None
        try:
            for tiers in passes:
                target = tiers[-1]
                owed = [(s, u) for s, u in units if not ledger.is_current(self.state, u.key, u.signature, target)]
                if pool is None and self._poolable(owed) and (n := prepare.workers()) > 1:
                    pool = prepare.Pool(n)
                pooled = pool is not None and not pool.broken
                if owed and not pooled and self.scanner is None:
                    from funes.scan import kingfisher, remote, rulecache  # owed units are scanned anyway

                    if self.budgeted and not rulecache.compiled(kingfisher.binary()[0]):
                        self.clock.compiling(time.monotonic())
                    # started now, its imports run on the other core while this one reads
                    files = sum(isinstance(s, source.FilesSource) for s, _ in owed)  # as `wanted` counts
                    self.scanner = remote.Scanner() if remote.wanted(files) else None
                    if self.scanner is not None and self.budgeted:
                        # its other core also indexes what is stored (the worker leaves it half idle)
                        self.refreshes.start_child(self.mem)
                stopped = self._store_pooled(pool, owed, tiers) if pooled else self._store_serial(owed, tiers)
                if stopped:
                    return after_pass()
                if self.report.chunks_added:
                    after_pass()
                self.report.tier_done[target] = time.monotonic() - self.started
                if self.must_stop():
                    return
        finally:
            if pool is not None:
                pool.close()
            scanner, self.scanner = self.scanner, None
            try:
                if scanner is not None:
                    scanner.close()
            finally:
                self.refreshes.close()

    def _poolable(self, owed) -> bool:
        # only transcript files travel to workers; hermes databases and Hub shards stay in this process
        return len(owed) >= prepare.POOL_MIN_UNITS and all(isinstance(s, source.FilesSource) for s, _ in owed)

    def _store_serial(self, owed, tiers) -> bool:
        """Read, chunk and append owed units here; True when the budget stopped the pass. Every
        flush but the last is left pending while the next units are read, and is finished as
        soon as its scan is through, or at the next flush point (`_flush`); the pass ends with
        none pending, and an error (a scanner failure, an interrupt) stops a pending one's scan
        and commits nothing of it: its units were not ledgered, so they are read again."""
        try:
            return self._read_serial(owed, tiers)
        finally:
            self._drop_pending()

    def _read_serial(self, owed, tiers) -> bool:
        self.ending = False
        target = tiers[-1]
        batch: list = []
        rows, last = 0, time.monotonic()
        read_units = read_rows = 0
        for i, (src, unit) in enumerate(owed, 1):
            if batch and self.must_stop(rows):
                # flushing now still ends within the budget; one more unit might not
                self._flush(batch, last=True)
                return True
            self.refreshes.keep_busy(budget.INDEX_RATE_ROWS)
            if self.pending is not None and self.pending.scanned():
                self._answered(self.pending, time.monotonic())
                self._finish_pending()  # its rows are stored, and its rates measured, at once
            self.progress(f"{target} [{i}/{len(owed)}] {unit.key}", True)
            t0 = time.monotonic()
            blocks, info = prepare.read_unit(src, unit, tiers, not self.opts.no_thinking)
            self._note(info)
            if blocks is None:
                continue
            self.clock.note("read", time.monotonic() - t0, blocks.num_rows)
            if not read_units:
                last = time.monotonic()  # the first read paid the imports: the probe reads a warm second
            read_units, read_rows = read_units + 1, read_rows + blocks.num_rows
            self.clock.read_units(read_units, read_rows)
            batch.append((unit, target, blocks))
            rows += blocks.num_rows
            if rows >= self.flush_blocks or time.monotonic() - last > self.clock.flush_after(FLUSH_S):
                self._flush(batch)
                batch, rows, last = [], 0, time.monotonic()
                if self.must_stop():
                    self._index_while_scanning()
                    self._finish_pending()
                    return True
        self._flush(batch, last=True)
        return False

    def _store_pooled(self, pool, owed, tiers) -> bool:
        """The same in this process and a worker: groups come back in order and are appended as they arrive."""
        from concurrent.futures.process import BrokenProcessPool

        target, done = tiers[-1], 0
        started = last = time.monotonic()
        arrived, arrived_rows, arrived_bytes = 0, 0, 0

        def next_bytes() -> int:
            now = time.monotonic()
            remaining = self.clock.deadline - now if self.budgeted else None
            return prepare.group_bytes(arrived_bytes, now - started, remaining)

        self.clock.warm("read")  # a whole group, imports included: pessimistic, not a guess

        starts = 0

        def may_start() -> bool:
            # the first group always starts, as the serial path always reads its first unit
            nonlocal starts
            ok = not starts or (not self.over_budget() and not self.clock.must_stop(0, self.refreshes.unindexed))
            starts += ok
            return ok

        results = pool.run(prepare.stream(owed, next_bytes), tiers, not self.opts.no_thinking, may_start)
        try:
            for group, (chunks, removed, infos, ok) in results:
                for info in infos:
                    self._note(info)
                done += len(group)
                self.progress(f"{target} [{done}/{len(owed)}]", True)
                # the processes read and flush: to the parent, waiting for a group is reading it
                rows = chunks.num_rows if chunks is not None else 0
                t0 = time.monotonic()
                self.clock.note("read", t0 - last, rows)
                self._commit(chunks, removed, [(u, target) for (_, u), read in zip(group, ok) if read])
                self.clock.note("flush", time.monotonic() - t0, rows)
                # the first group is thousands of rows: indexed at once, so its index rate is measured
                # rather than guessed (a guess stopped a 30 s run at 6 s)
                self._probe_index(force=True)
                # "one more unit" is one more group here: the next result the parent waits for
                arrived, arrived_rows = arrived + 1, arrived_rows + rows
                arrived_bytes += prepare.size_of(group)
                self.clock.read_units(arrived, arrived_rows)
                last = time.monotonic()
                if self.must_stop():
                    return True
        except BrokenProcessPool:
            # a worker died (killed, out of memory): what it was given is read again here
            pool.broken = True
            return self._store_serial(owed[done:], tiers)
        finally:
            results.close()  # groups still in flight are abandoned now, not when this is collected
        if done < len(owed):  # the pool started no more groups: they did not fit the budget
            self.report.budget_stopped = True
            return True
        return False

    def _note(self, info) -> None:
        if info.failure is not None:
            self.report.failed.append((info.key, info.failure))
            return
        if info.key in self.seen:
            return
        self.seen.add(info.key)
        self.report.skipped.update(info.skipped)
        if info.harness is not None:
            tally = self.report.tallies.setdefault(info.harness, Tally())
            tally.sessions.update(info.sessions)
            tally.turns += info.turns

    def _flush(self, batch, last: bool = False) -> None:
        """Begin this batch's flush (its Kingfisher scan starts), then finish the one pending, so
        that scan runs on another core while this process finishes the other and reads on. The
        new one is left pending unless `last`: at most one is, and the reading loop finishes it
        once its scan is through (the first one too: its rates, measured then, still come early)."""
        flush = None
        if batch:
            done, tables = [(u, target) for u, target, _ in batch], [b for _, _, b in batch]
            # closes itself if interrupted; from here on this closes it
            flush = prepare.Flush(tables, done, self.scanner)
        try:
            if flush is not None:
                self.clock.probed = True  # the next flush comes after the usual interval, not the probe's
                if flush.scanner is not None and not flush.scanned():  # its batch is in the worker's queue
                    self.clock.sent(time.monotonic(), flush.rows)
                    self.unanswered.add(flush)
                else:  # scanned here: the clock's tail finishes it before the last flush
                    self.clock.begun_here(flush, time.monotonic() - flush.spent, flush.rows)
            if last:
                self._index_while_scanning(flush)
            self._finish_pending()
            if not last and flush is not None and self.budgeted and self.refreshes.unindexed >= budget.INDEX_EVERY:
                self.refreshes.refresh()  # while the worker scans the batch just sent
        except BaseException:
            if flush is not None:
                self._forget(flush)
                flush.close()
            raise
        self.pending = flush
        if last:
            self._finish_pending()

    def _index_while_scanning(self, last: prepare.Flush | None = None) -> None:
        """A budgeted run about to stop indexes what is stored while the worker scans its last
        batches, rather than wait for them idle and then index everything with the worker's core
        idle (the clock's forecast counts on it: budget.Clock `overlap`)."""
        begun = [f for f in (self.pending, last) if f is not None]
        self.ending = True  # the pass's last flushes: what is stored is indexed as soon as the refresher is free
        if self.budgeted and self.refreshes.unindexed and any(not f.scanned() for f in begun):
            self.refreshes.refresh()

    def _answered(self, flush: prepare.Flush, at: float) -> None:
        """The worker's answer to `flush` was there by `at`: the clock notes it, once, at when it
        was read (an answer that came during a 2 s refresh, noted when seen, priced the worker's
        batches ~1.5x dearer and stopped a 30 s round at 21 s)."""
        if flush in self.unanswered:
            self.unanswered.discard(flush)
            came = flush.answered_at()
            self.clock.answered(min(at, came) if came is not None else at, compiled=flush.compiled())

    def _forget(self, flush: prepare.Flush) -> None:
        """A flush closed unfinished: the worker's answer to it, or its finish here, is no longer counted on."""
        self.clock.finished_here(flush)
        if flush in self.unanswered:
            self.clock.in_flight.clear()  # at most the one pending is, and the run ends
        self.unanswered.discard(flush)

    def _finish_pending(self) -> None:
        if self.pending is None:
            return
        flush, t0 = self.pending, time.monotonic()
        try:
            fed = self._feed_while_scanning(flush)
            chunks, removed = flush.finish()
        finally:
            self.pending = None  # finished or closed: until then an interrupt's `_drop_pending` closes it
            self.clock.finished_here(flush)
        waited = fed + flush.waited
        remote = flush.scanner is not None  # scanned by the worker, whenever its answer came
        self._answered(flush, t0 + waited)  # its answer came when the wait for it ended (or before)
        added = self.report.chunks_added
        self._commit(chunks, removed, flush.units)
        self.clock.stored(flush.rows, self.report.chunks_added - added)
        # one flush's cost is its start and its finish: the scan between them ran on another core,
        # and what this process still waited for it is the flush's fixed part. The first flush
        # pays one-off imports instead (datasets, the scanners' patterns: ~2 s, no per-row cost);
        # counted as per-row, a 30 s round stopped at 10 s
        spent = flush.spent + time.monotonic() - t0
        if remote:  # this process's part only: the worker's is its own rate (`Clock.answered`)
            self.clock.note("finish", spent - waited, flush.rows)
        else:
            fixed = waited if self.clock.measured("flush") else None
            self.clock.note("flush", spent, flush.rows, fixed=fixed)
        self._probe_index()

    def _feed_while_scanning(self, flush: prepare.Flush) -> float:
        """With a refresher, wait for `flush`'s scan here rather than in `finish`: a refresh that
        ends meanwhile is followed at once by the next (at a pass's end, of whatever is stored;
        the clock's tail counts on it, and waiting in `finish` left the child idle until the last
        flush was in). Seconds waited; a hung worker is left to `finish`'s timeout."""
        if self.refreshes.child is None or flush.scanned():
            return 0.0

        def feed() -> None:
            self.refreshes.collect()
            unindexed = self.refreshes.unindexed
            if unindexed and (self.ending or unindexed >= budget.INDEX_EVERY):
                self.refreshes.refresh()  # begun only when the child is free (no empty ones)

        t0 = time.monotonic()
        _scanned_by(flush, t0 + (flush.scanner.timeout if flush.scanner is not None else 60.0), feed)
        return time.monotonic() - t0

    def _drop_pending(self) -> None:
        if self.pending is not None:
            flush, self.pending = self.pending, None
            self._forget(flush)
            flush.close()

    def _probe_index(self, force: bool = False) -> None:
        """A budgeted run indexes what its first flush stored at once: that text is searchable
        early, and the clock measures the index rate before it decides how much more fits."""
        if not (self.budgeted and self.refreshes.unindexed) or self.clock.measured("index"):
            return
        if not self.over_budget() and (force or not self.clock.must_stop(0, self.refreshes.unindexed)):
            self.refreshes.refresh()  # (a run about to stop indexes once, when it stops)

    def _commit(self, chunks, removed, done) -> None:
        if chunks is not None:
            self.report.redacted.update(removed)
            new = self.mem.chunks.append_new(chunks)
            if new.num_rows:
                self.report.chunks_added += new.num_rows
                self.refreshes.stored(new.num_rows)
                for h, n in Counter(new["harness"].to_pylist()).items():
                    self.report.tallies.setdefault(h, Tally()).chunks += n
        # the ledger moves only after the rows are committed: a kill re-reads, ids dedup
        for unit, target in done:
            if unit.signature is not None:
                self.state[unit.key] = {"sig": unit.signature, "level": target}
        # the rows above are fsync'd by the append; the ledger that names them is written after
        self.state[ledger.TABLE] = {"rows": self.mem.chunks.count(), "version": self.mem.chunks.version() or 0}
        ledger.save_state(paths.state_file(), self.state)
        self.progress(f"stored {self.report.chunks_added} chunks", False)

    # ---- phase 2: vectors ----------------------------------------------------------------

    def embed(self) -> None:
        from funes.commands.reembed import reembed_stale

        if not self.over_budget():
            self.report.vectors_added += embed_pending(self.mem, self.progress, self.over_budget)
        self.report.vectors_reembedded += reembed_stale(self.mem, self.progress, self.over_budget)


def embed_pending(mem: Memory, progress, over_budget=lambda: False) -> int:
    """Embed the memory's pending chunks in bounded steps (callers hold the writer lock); returns how many."""
    pending = mem.pending_rows()
    if not len(pending):
        return 0
    from funes import models
    from funes.ingest import run

    embedder = models.load_embedder()
    order = _embed_order(mem.chunks, pending)
    t0, done = time.monotonic(), 0
    for lo in range(0, len(order), EMBED_STEP):
        rows = order[lo : lo + EMBED_STEP]
        ids, texts = mem.chunks.vector_inputs(rows)
        vectors = run.embed_rows(texts, embedder)
        mem.append_vectors(rows, ids, vectors, embedder.model_id)
        done += len(rows)
        rate = done / max(time.monotonic() - t0, 1e-9)
        progress(f"embedded {done}/{len(order)} chunks ({rate:.0f}/s)", True)
        if over_budget():
            break
    return done


def _scanned_by(flush: prepare.Flush, until: float, between=lambda: None) -> bool:
    """Whether `flush`'s scan is through by `until` (monotonic), polled; `between` runs at each poll."""
    while not flush.scanned() and time.monotonic() < until:
        between()
        time.sleep(0.005)
    return flush.scanned()


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise UsageError(f"{name}={raw} is not a number", f"unset {name} for the default ({default:g})") from None


def _embed_order(chunks: ChunkTable, pending):
    """Text before tool calls before tool output; newest first within a tier."""
    import numpy as np

    meta = chunks.take(pending, ["block_type", "ts"])
    prio = np.array([_EMBED_PRIORITY.get(b, 0) for b in meta["block_type"].to_pylist()])
    ts = meta["ts"].to_pylist()
    order = sorted(range(len(pending)), key=lambda i: (prio[i], not ts[i], _neg(ts[i])))
    return pending[np.array(order, dtype=np.int64)] if order else pending


def _neg(ts: str) -> tuple:
    # newest first without parsing: invert the characters of the (ISO-like) stamp
    return tuple(-ord(c) for c in (ts or ""))
