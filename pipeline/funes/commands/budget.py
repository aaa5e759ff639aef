"""When a budgeted index run must flush what it has read and stop, so that it ends within its budget.

Checking the clock only after a flush let a run overrun by a whole flush: reading is the cheap
part, and the scan + chunk + append of what was read costs about twice as long again (bench/
README.md "## Day zero"), then the lexical index of everything stored comes on top. So the run
learns its own rates as it goes (seconds per block read, per block flushed, per chunk indexed)
and, before reading the next unit, asks whether reading it, flushing everything pending and
indexing what is stored would still end before the deadline; when not, it flushes now and stops.
Until a rate has been measured it is guessed from the read rate, pessimistically. The first
flush comes after only a second of warm reading, and what it stored is indexed as soon as its
scan is through: both rates are measured while most of the budget is still ahead (and that text
is searchable early). A flush pending while the next units are read (commands/index.py) is work
still owed: the caller counts its rows among those to flush.
"""

from __future__ import annotations

import time

# before the first flush / refresh of a run is measured: its cost per row relative to reading one
# (measured ~2x and ~1.1x on the day-zero bench; a first flush also pays the datasets import)
FLUSH_PER_READ = 3.0
INDEX_PER_READ = 1.5
# guess for the read rate until a unit after the first was read (the first pays the parsers' imports)
FIRST_READ_S = 0.002
# what every flush costs whatever its size (a scanner process start); a rate measured on a large
# flush spreads it thin, the last small flush pays it whole. The serial path's flushes overlap
# their scans with the next reads and count only what they still waited; the last one before a
# stop has nothing to overlap with, and waits about this long
FLUSH_FIXED_S = 1.0
INDEX_FIXED_S = 0.5  # a refresh reads the table, saves a segment and may merge older ones
# the first flush of a budgeted run comes after this much reading: it pays the one-off imports early
PROBE_S = 1.0
# slack kept before the deadline: rates wander with the machine's load
MARGIN = 0.1


class Clock:
    """A budgeted run's deadline and the rates it has observed (all in wall seconds)."""

    def __init__(self, started: float, budget_s: float, budgeted: bool):
        self.deadline = started + budget_s * (1 - MARGIN)
        self.budgeted = budgeted
        self._rate = {"read": [0.0, 0], "flush": [0.0, 0], "index": [0.0, 0]}
        self.unit_rows = 1.0  # blocks per unit read so far (what one more unit adds)
        self._cold = {"read"}
        self.probed = False  # the first (probe) flush has begun

    def note(self, what: str, seconds: float, rows: int, fixed: float | None = None) -> None:
        """`seconds` spent on `rows`; `fixed`: of those, what did not depend on the rows (at most
        FLUSH_FIXED_S / INDEX_FIXED_S, the default: a flush that waited for its scanner's start-up)."""
        if what == "flush":
            self.probed = True
        if what in self._cold:
            # the first read pays the parsers' imports: not a rate (the first flush pays the
            # scanner's and datasets' start-up too, but counting it errs on the safe side)
            self._cold.discard(what)
            return
        if rows > 0:
            # what every flush / refresh costs whatever its size is not a per-row cost (a small
            # probe would otherwise look many times dearer per row than a large step)
            most = {"flush": FLUSH_FIXED_S, "index": INDEX_FIXED_S}.get(what, 0.0)
            fixed = most if fixed is None else min(fixed, most)
            r = self._rate[what]
            r[0] += max(seconds - fixed, 0.0)
            r[1] += rows

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
        read = self.per_row("read") if what != "read" else FIRST_READ_S
        return read * (FLUSH_PER_READ if what == "flush" else INDEX_PER_READ)

    def flush_after(self, default_s: float) -> float:
        """Seconds of reading before the next flush: short until a flush has been measured."""
        return PROBE_S if self.budgeted and not self.probed else default_s

    def read_units(self, units: int, rows: int) -> None:
        self.unit_rows = max(rows / max(units, 1), 1.0)

    def must_stop(self, pending_rows: int, unindexed_rows: int, now: float | None = None) -> bool:
        """Would reading one more unit, flushing `pending_rows` + it and indexing `unindexed_rows` +
        them end past the deadline? Always False for an unbudgeted run."""
        if not self.budgeted:
            return False
        now = time.monotonic() if now is None else now
        more = self.unit_rows
        cost = (
            more * self.per_row("read")
            + FLUSH_FIXED_S
            + (pending_rows + more) * self.per_row("flush")
            + INDEX_FIXED_S
            + (unindexed_rows + pending_rows + more) * self.per_row("index")
        )
        return now + cost > self.deadline
