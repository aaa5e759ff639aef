"""An index run's refreshes of the lexical index: in this process, or begun in the refresher.

A budgeted run that scans in a worker (a large first index) also refreshes in a child process
(memory/refresher.py), so that tokenising and indexing what is stored runs on the core the scan
worker leaves idle while this one reads on. A refresh asked for while one runs is not queued: what
was stored since waits for the next (the run asks again every INDEX_EVERY chunks and when it
stops). `finish` returns only once everything stored is indexed. If the child fails, nothing is
lost: this process refreshes from then on (a refresh indexes every row the table holds).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from funes.commands.budget import Clock

WAIT_SLACK_S = 10.0

if TYPE_CHECKING:
    from funes.memory.refresher import Refresher


class Refreshes:
    def __init__(self, clock: Clock, refresh_here: Callable[[], None]):
        self.clock, self._refresh_here = clock, refresh_here
        self.unindexed = 0  # chunks stored that no refresh has begun on
        self.indexing = 0  # chunks stored before the running refresh (the child's) began
        self.child: Refresher | None = None

    def start_child(self, memory) -> None:
        """Refresh in a child process from now on (FUNES_INDEX_REFRESHER=off: never)."""
        from funes.memory import refresher

        if self.child is None and refresher.wanted():
            try:
                self.child = refresher.Refresher(memory)
            except OSError:
                self.child = None  # this process refreshes, as without one
            self.clock.refresher = self.child is not None

    def stored(self, chunks: int) -> None:
        self.unindexed += chunks

    def refresh(self) -> None:
        """Index what is stored: begun in the child and not waited for (skipped while it is busy),
        or here, now."""
        self.collect()
        if self.child is not None:
            if self.child.busy or self._begin():
                return
            self._lost()
        self._here()

    def collect(self) -> None:
        """Note the child's answer if it came (its rate goes to the clock)."""
        if self.child is not None:
            self._took(self.child.poll())

    def keep_busy(self, least: int) -> None:
        """Note the child's answer if it came and, once it is free, begin the next refresh when at
        least `least` chunks wait. Asked only at flush points, a child that answered early idled
        until the next one, and the clock kept pricing the tail at the first refresh's rate, which
        a cold piece cache makes 2-4x the later ones' per chunk: a 30 s round here stopped at 13.6 s
        on a forecast of 18.6 s that really took 6.8 s."""
        self.collect()
        if self.child is not None and self.unindexed >= least:
            self._begin()  # (not begun while one runs or once the child failed)

    def finish(self) -> None:
        """Everything stored is indexed when this returns."""
        if self.child is not None:
            self._wait()
            if self.child is not None and self.unindexed and self._begin():
                self._wait()
        if self.child is not None and (self.child.failed or self.unindexed):
            self._lost()
        if self.child is None:
            self._here()

    def close(self) -> None:
        child, self.child = self.child, None
        if child is not None:
            child.close()
        self.clock.index_done()
        self.clock.refresher = False

    def _begin(self) -> bool:
        assert self.child is not None
        if not self.child.begin():
            return False
        self.indexing, self.unindexed = self.unindexed, 0
        self.clock.index_begun(time.monotonic(), self.indexing)
        return True

    def _wait(self) -> None:
        assert self.child is not None
        # a hung child is not waited for past the budget (and a few seconds): it is killed, and
        # this process refreshes instead
        self._took(self.child.wait(max(self.clock.deadline - time.monotonic(), 0.0) + WAIT_SLACK_S))

    def _took(self, answer: tuple[float, int, float] | None) -> None:
        if answer is not None:
            self._noted(answer)
        elif self.child is not None and self.child.failed:
            self._lost()

    def _noted(self, answer: tuple[float, int, float]) -> None:
        seconds, added, cpu = answer
        self.clock.note("index", seconds, added)
        self.clock.note("index_cpu", cpu, added)
        self.clock.index_done()
        # the child indexes every row committed when it read the table, some stored after it began
        self.unindexed = max(self.unindexed - max(added - self.indexing, 0), 0)
        self.indexing = 0

    def _lost(self) -> None:
        """The child failed: its rows are indexed here (now or at the next refresh)."""
        self.unindexed += self.indexing
        self.indexing = 0
        self.close()
        self.clock.index_here()

    def _here(self) -> None:
        import bm25s  # noqa: F401  (its import is paid once, not a rate of the index refresh)

        t0 = time.monotonic()
        self._refresh_here()
        self.clock.note("index", time.monotonic() - t0, self.unindexed)
        self.unindexed = 0
