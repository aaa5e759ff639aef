"""When a budgeted index run must flush what it has read and stop, so that it ends within its budget.

Checking the clock only after a flush let a run overrun by a whole flush: reading is the cheap
part, and the scan + chunk + append of what was read and the lexical index of everything stored
come on top. So the run learns its own rates as it goes and, before reading the next unit, asks
whether reading it and then the round's tail would still end before the budget's end; when not,
it flushes now and stops. The tail, forecast step by step (`forecast`):

- the last flush begun (its rows' parent-side cost: scan inputs, chunk, append, ledger);
- a flush begun in this process and not finished yet (the probe's, its Kingfisher scan running
  beside the reading: `begun_here`), finished before the last and indexed with it;
- the scan worker's backlog: a large run's scans run in another process (scan/remote.py), one
  batch after another, so the last batch's findings arrive when the batches still in flight and
  then it are scanned, at the worker's own measured seconds per block (from when it was sent or the
  batch before it was answered, to its answer); the parent waits only for what is left of that;
- meanwhile the parent indexes what is already stored (`overlap`: the worker's core scans while
  this one refreshes, rather than each idling in turn), then finishes the flushes as their
  findings arrive, and indexes the rest, at the measured seconds per chunk (pending blocks
  converted at this run's chunks per block);
- a slack: MARGIN_S plus ERROR of the tail (the refresh's wall swings with the box's load).

When the run refreshes in another process (memory/refresher.py, `index_begun`), the refreshes are
off this process's timeline: the tail is this process finishing its flushes beside the refresher
ending the refresh it runs and indexing what is stored, then the last flushes' chunks.

The refresh is the tail's least predictable part (its wall per chunk doubles with load and with
the index it merges into), so a budgeted run also refreshes every INDEX_EVERY chunks stored, while
the worker scans the batch just sent: the rate the tail is priced at is recent, and the tail short.

Until a rate has been measured it is guessed from the read rate, pessimistically. The first
flush comes after only a second of warm reading, and what it stored is indexed as soon as its
scan is through: both rates are measured while most of the budget is still ahead (and that text
is searchable early).
"""

from __future__ import annotations

import time

# before the first flush / refresh of a run is measured: its cost per row relative to reading one
# (measured ~2x and ~1.1x on the day-zero bench; a first flush also pays the datasets import)
FLUSH_PER_READ = 3.0
INDEX_PER_READ = 1.5
# a flush whose scan runs in the worker costs this process only its start, chunking and append
# (~0.07 ms per block measured on day zero, about half a read): guessed as 3x reading, it stopped
# a 30 s round at 5 s, before its first batch to the worker was answered
FINISH_PER_READ = 0.6
# guess for the read rate until a unit after the first was read (the first pays the parsers' imports)
FIRST_READ_S = 0.002
# the worker's seconds per block until one of its batches was answered (0.12-0.2 ms measured on
# day-zero batches of 20k blocks at load 2-5), and what a batch costs it on top when it arrives at an
# idle worker: a Kingfisher start, not hidden behind the batch before (~0.9-1.2 CPU-s)
SCAN_PER_BLOCK_S = 0.00015
SCAN_FIXED_S = 1.0
# what a flush's measured time may subtract as its fixed part when its rate is noted (the wait
# for a scanner's start-up); a rate measured on a large flush spreads it thin
FLUSH_FIXED_S = 1.0
INDEX_FIXED_S = 0.5  # a refresh reads the table, saves a segment and may merge older ones
# a refresh's wall per chunk grows with the index it merges into and swings with the box's load
# (0.045-0.13 ms per chunk in day-zero traces at load 2-4, the stop's up to 2x the probe's): the
# tail is priced at the latest refresh's rate, and a budgeted run refreshes every INDEX_EVERY
# chunks (commands/index.py), so that the rate is recent and what is left for the tail small
INDEX_EVERY = 40_000
# a refresh of at least this many chunks gives the index rate alone (a smaller one joins it), and
# the refresher is asked for one as soon as it is free and this many wait (Refreshes.keep_busy)
INDEX_RATE_ROWS = INDEX_EVERY // 4
# the first (probe's) refresh of a few thousand chunks also warms what later ones reuse: per chunk
# it cost 1.5-2x the next refresh in 4 of 8 traced rounds, about the same in 3, less in one (a round
# 2 whose last refresh merged all of round 1, before INDEX_EVERY); its rate counts this much
INDEX_PROBE_WEIGHT = 0.75
CHUNKS_PER_BLOCK = 1.7  # chunks stored per block flushed, until a flush was committed (~1.6 measured)
EXIT_S = 0.3  # after the last refresh: the ledger, the no-op refresh, the stale-vector count, the lock
# the first flush of a budgeted run comes after this much reading: it pays the one-off imports early
PROBE_S = 1.0
# slack kept before the budget's end: a fixed part, and a share of the tail forecast (its rates
# wander with the machine's load; the 10 % of the whole budget kept before left ~3 s unused). The
# tail's real cost was 0.74-1.0x its forecast in day-zero rounds at load 2.4-5.8, 0.64-1.2x with a
# CPU hog beside (this process on ~0.2 of a core), where 0.1 of it let a round end at 30.8 s
MARGIN_S = 0.5
ERROR = 0.2
REFRESHER_EXIT_S = 0.2  # the refresher child's exit, waited for (0.11-0.16 s measured idle)
# in the tail the refresher shares the two cores with the worker alone, where during the run three
# processes did: its wall per chunk there is about 2/3 of the run's. The floor of the probe
# refresh's CPU rate while it is the only one measured (see Clock.tail_index_rate)
TAIL_SHARE = 2 / 3
# a new machine's Kingfisher rule compile (scan/rulecache.py), from when the run knows it is due:
# no scan ends before it. 6.4-7.0 CPU-s measured on one Xeon, ~6 s wall on another, ~11 s on an AMD
# EPYC; unforeseen, the probe's scan waited for it while a 10 s round read on, and ended at 10.17 s
COMPILE_S = 7.0


class Clock:
    """A budgeted run's deadline and the rates it has observed (all in wall seconds)."""

    def __init__(self, started: float, budget_s: float, budgeted: bool, overlap: bool = True):
        self.deadline = started + budget_s - MARGIN_S
        self.budgeted = budgeted
        self.overlap = overlap  # the caller indexes what is stored while its last scans run
        # per block read; per block flushed in this process (its scan included); per block flushed
        # through the worker (this process's part: `finish`; the worker's: `scan`); per chunk indexed
        # (and the refresher's CPU per chunk indexed: `index_cpu`)
        self._rate = {w: [0.0, 0] for w in ("read", "flush", "finish", "scan", "index", "index_cpu")}
        self.remote = False  # a batch went to the scan worker: the last one will too
        self.unit_rows = 1.0  # blocks per unit read so far (what one more unit adds)
        # the first read pays the parsers' imports, the first finish the datasets import: not rates
        self._cold = {"read", "finish"}
        self.probed = False  # the first (probe) flush has begun
        self._stored = [0, 0]  # blocks flushed, chunks they added
        self.in_flight: list[tuple[float, int]] = []  # (sent at, blocks) of batches the worker has not answered
        self.worker_free = started  # when the worker answered its last batch
        self.forecast_parts: dict[str, float] = {}  # the parts of the last forecast (bench --trace)
        # the run refreshes in another process (memory/refresher.py): the refresh is off this
        # process's timeline, and the one running is (began at, chunks it indexes)
        self.background = False
        self.indexing: tuple[float, int] | None = None
        self.refreshes_noted = 0  # refreshes whose rate was noted (the first is the probe's: cold)
        # the flushes begun in this process and not finished, in order: key -> (begun at, blocks).
        # Their Kingfisher scans run beside the reading; left out of the tail, the probe's flush,
        # finished and indexed after the stop, took a 10 s round to 11 s
        self.local: dict[object, tuple[float, int]] = {}
        self.refresher = False  # a refresher child runs: its exit is waited for at the end
        self.compiled_by = 0.0  # no scan ends before this (`compiling`): 0 once one has

    def note(self, what: str, seconds: float, rows: int, fixed: float | None = None) -> None:
        """`seconds` spent on `rows`; `fixed`: of those, what did not depend on the rows (at most
        FLUSH_FIXED_S / INDEX_FIXED_S, the default: a flush that waited for its scanner's start-up)."""
        if what in ("flush", "finish"):
            self.probed = True
        if what in self._cold:
            # (the first in-process flush pays the scanner's and datasets' start-up too, but
            # counting it errs on the safe side)
            self._cold.discard(what)
            return
        if rows > 0:
            # what every flush / refresh costs whatever its size is not a per-row cost (a small
            # probe would otherwise look many times dearer per row than a large step)
            most = {"flush": FLUSH_FIXED_S, "index": INDEX_FIXED_S, "index_cpu": INDEX_FIXED_S}.get(what, 0.0)
            fixed = most if fixed is None else min(fixed, most)
            r = self._rate[what]
            weight = 1.0
            if what == "index":
                self.refreshes_noted += 1
            if what in ("index", "index_cpu"):
                weight = INDEX_PROBE_WEIGHT if not r[1] else 1.0
                # the latest large refresh's rate (see INDEX_EVERY); a small one (what a pass leaves
                # after its last 40k step) is mostly its fixed part, so it joins the rate instead of
                # replacing it: alone it priced the next pass's refresh at nothing per chunk
                if rows >= INDEX_RATE_ROWS:
                    r[0] = r[1] = 0
            r[0] += max(seconds - fixed, 0.0) * weight
            r[1] += rows

    def sent(self, now: float, blocks: int) -> None:
        """A batch of `blocks` went to the scan worker."""
        self.in_flight.append((now, blocks))
        self.remote = True

    def answered(self, now: float, compiled: float = 0.0) -> None:
        """The oldest batch in flight was answered (seen at `now`): the worker's rate, measured.
        `compiled`: of its time, what its Kingfisher waited for the rule compile of a new machine
        (~7 s, once): no part of the rate (taken as one, it stopped a 30 s round at 11 s)."""
        if not self.in_flight:
            return
        sent, blocks = self.in_flight.pop(0)
        self.compiled_by = 0.0  # a scan ended: the rules are compiled
        began = max(sent, self.worker_free)
        fixed = SCAN_FIXED_S if sent >= self.worker_free else 0.0  # it found the worker idle
        busy = max(now - began - compiled, 0.0)
        self.worker_free = now
        r = self._rate["scan"]
        r[0] += max(busy - min(fixed, busy / 2), 0.0)
        r[1] += blocks

    def begun_here(self, key: object, began: float, blocks: int) -> None:
        """A flush of `blocks` began in this process at `began` (its scan is this process's, not
        the worker's); `key` names it to `finished_here`."""
        self.local[key] = (began, blocks)
        self.probed = True

    def finished_here(self, key: object) -> None:
        self.local.pop(key, None)
        self.compiled_by = 0.0  # its scan ended: the rules are compiled

    def compiling(self, now: float) -> None:
        """Kingfisher's rules are not compiled on this machine yet: until COMPILE_S from `now`, no
        scan, here or in the worker, ends (each waits for the one compile)."""
        self.compiled_by = now + COMPILE_S

    def _local_tail(self, now: float, then: tuple[tuple[float, float], ...] = ()) -> tuple[float, float]:
        """The in-process flushes pending, and `then` (began at, blocks) after them: (when the last
        will be finished, their blocks). Each is finished at the rate of a flush from when it began,
        fixed part included, and no sooner than a finish of its rows after the one before (its scan
        may be through, its chunking is not)."""
        done, rows = now, 0.0
        for began, blocks in [*self.local.values(), *then]:
            scanned = max(began + FLUSH_FIXED_S, self.compiled_by) + blocks * self.per_row("flush")
            done = max(scanned, done + blocks * self.per_row("finish"))
            rows += blocks
        return done, rows

    def index_begun(self, now: float, chunks: int) -> None:
        """A refresh of `chunks` began in the refresher (it answers with its rate: `note`)."""
        self.background = True
        self.indexing = (now, chunks)

    def index_done(self) -> None:
        self.indexing = None

    def index_here(self) -> None:
        """The refresher failed: refreshes are this process's again, on its timeline (forecast on
        the refresher's, they would let the run overrun)."""
        self.indexing = None
        self.background = False

    def stored(self, blocks: int, chunks: int) -> None:
        """A flush of `blocks` added `chunks` (the index rate is per chunk; what is pending, blocks)."""
        self._stored[0] += blocks
        self._stored[1] += chunks

    @property
    def chunks_per_block(self) -> float:
        blocks, chunks = self._stored
        return max(chunks / blocks, 1.0) if blocks > 1000 else CHUNKS_PER_BLOCK

    def warm(self, what: str) -> None:
        """The next `what` is a rate after all (a pooled run's first group arrives well into the
        run; leaving its read unmeasured left the 3 ms-per-row guess to decide the stop)."""
        self._cold.discard(what)

    def measured(self, what: str) -> bool:
        return self._rate[what][1] > 0

    def per_row(self, what: str) -> float:
        s, n = self._rate[what]
        if n:
            return s / n
        if what == "scan":
            return SCAN_PER_BLOCK_S
        read = self.per_row("read") if what != "read" else FIRST_READ_S
        if what == "index":
            # INDEX_PER_READ was measured per block read, the index rate is per chunk: the tail
            # counts a pending block as chunks_per_block chunks, so the guess is divided back (not
            # dividing it priced a 10 s round's tail 0.9 s high, and it stopped before its probe)
            return read * INDEX_PER_READ / self.chunks_per_block
        return read * {"flush": FLUSH_PER_READ, "finish": FINISH_PER_READ}.get(what, 1.0)

    def flush_after(self, default_s: float) -> float:
        """Seconds of reading before the next flush: short until a flush has been measured."""
        return PROBE_S if self.budgeted and not self.probed else default_s

    def read_units(self, units: int, rows: int) -> None:
        self.unit_rows = max(rows / max(units, 1), 1.0)

    def forecast(self, batch_rows: int, unindexed_rows: int, now: float | None = None) -> dict[str, float]:
        """What the round's tail would cost if one more unit were read and then `batch_rows` blocks
        (read, not flushed) + it flushed as the last batch: each part in seconds, `margin` included."""
        now = time.monotonic() if now is None else now
        more = self.unit_rows
        last = batch_rows + more
        scan, index = self.per_row("scan"), self.per_row("index")
        cpb = self.chunks_per_block
        t = now + more * self.per_row("read")
        read_end = t
        local_done, local_rows = self._local_tail(t)
        exit_s = EXIT_S + (REFRESHER_EXIT_S if self.refresher else 0.0)
        if not self.remote:
            # scanned in this process (a small run, or before the worker is up): its flush rate
            # holds the scan, in series with the refresh (not counted on to overlap). The last
            # flush's scan begins at the stop, beside the pending one's; it is finished after it
            end, _ = self._local_tail(t, ((t, last),))
            refresh = INDEX_FIXED_S + (unindexed_rows + (local_rows + last) * cpb) * index
            parts = {
                "read": t - now,
                "pending": local_done - t,
                "finish": end - local_done,
                "index_last": refresh,
                "exit": exit_s,
            }
            # a share of the tail once its rates are measured, or once a flush pending here is (its
            # scan's guessed rate, the tail's largest part then, was 0.5-2x the real one on day-zero
            # boxes); the guesses before are pessimistic already (x3 reading), and a margin on top
            # stopped a 10 s round before its probe
            measured = self.measured("flush") or local_rows
            parts["margin"] = ERROR * sum(parts.values()) if measured else 0.0
            return parts
        flush = self.per_row("finish")
        # the worker, batch after batch: the ones in flight, then the last (sent once begun: its
        # parent-side start is small, counted in its finish)
        free = max(self.worker_free, self.compiled_by)
        # the flush pending here is finished before the worker's batches: as if its findings came
        # when what is left of it is a finish
        arrivals: list[tuple[float, float]] = [(local_done - local_rows * flush, local_rows)] if local_rows else []
        for sent, blocks in self.in_flight:
            start = max(free, sent)
            free = max(start + (SCAN_FIXED_S if sent >= free else 0.0) + blocks * scan, now)
            arrivals.append((free, blocks))
        start = max(free, t)
        scan_end = start + (SCAN_FIXED_S if t >= free else 0.0) + last * scan
        arrivals.append((scan_end, last))
        if self.background:
            return self._forecast_background(now, read_end, arrivals, unindexed_rows, flush, index)
        stored = float(unindexed_rows)
        if self.overlap and unindexed_rows:
            t += INDEX_FIXED_S + unindexed_rows * index  # indexed while the scans run
            stored = 0.0
        index_begin = t
        for at, n in arrivals:
            t = max(t, at) + n * flush
        waited = t - index_begin - sum(b for _, b in arrivals) * flush
        t += INDEX_FIXED_S + (stored + sum(b for _, b in arrivals) * cpb) * index + exit_s
        parts = {
            "read": read_end - now,
            "index_early": index_begin - read_end,
            "wait": max(waited, 0.0),
            "finish": sum(b for _, b in arrivals) * flush,
            "index_last": t - exit_s - (index_begin + max(waited, 0.0) + sum(b for _, b in arrivals) * flush),
            "exit": exit_s,
        }
        # (before the worker's first answer its rate is SCAN_PER_BLOCK_S, a loaded box's: no share)
        parts["margin"] = ERROR * (t - now) if self.measured("scan") else 0.0
        return parts

    def _forecast_background(self, now, read_end, arrivals, unindexed_rows, flush, index) -> dict[str, float]:
        """The tail when the refreshes run in another process: this one finishes the flushes as
        their scans arrive; the refresher ends the one running, then indexes what is stored now
        (begun when the run stops), then, once the last flush is committed, what the flushes add."""
        # every refresh of the tail, the one running included, at `tail_index_rate`: priced at the
        # probe refresh's wall rate (cold, beside three processes on two cores), the refresh running
        # at the stop was forecast at 2-3x what it took, and 30 s rounds stopped at 11.6-13.6 s
        index = self.tail_index_rate(index)
        free = now
        if self.indexing is not None:
            began, rows = self.indexing
            free = max(now, began + INDEX_FIXED_S + rows * index)
        if unindexed_rows:
            free = max(free, read_end) + INDEX_FIXED_S + unindexed_rows * index
        t = read_end
        for at, n in arrivals:
            t = max(t, at) + n * flush
        blocks = sum(b for _, b in arrivals)
        parts = {
            "read": read_end - now,
            "wait": max(t - read_end - blocks * flush, 0.0),
            "finish": blocks * flush,
            "index_early": max(free - t, 0.0),  # the refresher still busy when the last flush is in
            "index_last": INDEX_FIXED_S + blocks * self.chunks_per_block * index,
            "exit": EXIT_S + REFRESHER_EXIT_S,
        }
        parts["margin"] = ERROR * sum(parts.values()) if self.measured("scan") else 0.0
        return parts

    def tail_index_rate(self, wall: float) -> float:
        """The refresher's seconds per chunk for the tail's refreshes, once this process stops reading.

        After a second refresh: its wall rate during the run. There it shared two cores with this
        process reading and the worker scanning (wall 1.4-1.8x its CPU in day-zero traces); in the
        tail it runs beside the worker at most, at its CPU rate, but a tail refresh cost up to 1.7x
        the CPU rate of the refresh before it (traced; merging the large segments is one cause, not
        all of it): priced at that CPU rate, a 30 s round ended at 30.5 s.
        Until then, the probe's refresh alone: its wall rate is a cold piece cache's, beside three
        processes (2-4x a later refresh's per chunk), so its CPU rate, or TAIL_SHARE of that wall
        rate if more (a load beside funes slows the tail too)."""
        if self.refreshes_noted > 1 or not self.measured("index_cpu"):
            return wall
        return max(self.per_row("index_cpu"), wall * TAIL_SHARE)

    def must_stop(self, batch_rows: int, unindexed_rows: int, now: float | None = None) -> bool:
        """Would reading one more unit and the tail (`forecast`) end past the deadline? `batch_rows`:
        blocks read and not flushed; `unindexed_rows`: chunks stored and not indexed. Always False
        for an unbudgeted run."""
        if not self.budgeted:
            return False
        now = time.monotonic() if now is None else now
        self.forecast_parts = self.forecast(batch_rows, unindexed_rows, now)
        return now + sum(self.forecast_parts.values()) > self.deadline
